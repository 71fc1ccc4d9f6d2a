// Connection reuse for client-node's calls (src/sidecar/adapters/kube/dispatcher.ts), on a real KubeConfig:
// one dispatcher per TLS material, a new one when the material changes. No network.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KubeConfig } from '@kubernetes/client-node';
import { Agent } from 'undici';
import { MAX_API_CONNECTIONS, reuseDispatchers } from '../../../../src/sidecar/adapters/kube/dispatcher.ts';

type Create = (cluster: unknown, options: Record<string, unknown>) => { close?: () => Promise<void> } | undefined;
const createOf = (kc: KubeConfig) => (kc as unknown as { createDispatcher: Create }).createDispatcher.bind(kc);
const cluster = { name: 'c', server: 'https://127.0.0.1:6443', skipTLSVerify: false };

test('client-node alone builds a new dispatcher for every request (why this exists)', async () => {
  const create = createOf(new KubeConfig());
  const a = create(cluster, { ca: Buffer.from('ca-1') });
  const b = create(cluster, { ca: Buffer.from('ca-1') });
  assert.ok(a && b);
  assert.notEqual(a, b, 'if this fails, client-node caches dispatchers itself and reuseDispatchers can go');
  await Promise.all([a.close?.(), b.close?.()]);
});

test('reused: the same TLS material gets the same dispatcher; a rotated CA or client key a new one; at most four kept', async () => {
  const kc = reuseDispatchers(new KubeConfig());
  assert.equal(reuseDispatchers(kc), kc, 'patching twice is harmless');
  const create = createOf(kc);
  const a = create(cluster, { ca: Buffer.from('ca-1'), cert: Buffer.from('c'), key: Buffer.from('k') });
  assert.equal(create(cluster, { ca: Buffer.from('ca-1'), cert: Buffer.from('c'), key: Buffer.from('k') }), a);
  assert.ok(a instanceof Agent, `an undici Agent bounded to ${MAX_API_CONNECTIONS} connections`);
  const rotatedCa = create(cluster, { ca: Buffer.from('ca-2'), cert: Buffer.from('c'), key: Buffer.from('k') });
  const rotatedKey = create(cluster, { ca: Buffer.from('ca-1'), cert: Buffer.from('c'), key: Buffer.from('k2') });
  assert.notEqual(rotatedCa, a);
  assert.notEqual(rotatedKey, a);
  assert.notEqual(
    create(
      { ...cluster, server: 'https://127.0.0.2:6443' },
      { ca: Buffer.from('ca-1'), cert: Buffer.from('c'), key: Buffer.from('k') },
    ),
    a,
  );
  const extra = [create(cluster, { ca: Buffer.from('ca-3') }), create(cluster, { ca: Buffer.from('ca-4') })];
  assert.notEqual(
    create(cluster, { ca: Buffer.from('ca-1'), cert: Buffer.from('c'), key: Buffer.from('k') }),
    a,
    'the oldest was dropped after four others',
  );
  await Promise.all([a, rotatedCa, rotatedKey, ...extra].map(async (d) => d?.close?.()));
});

// Connection reuse for client-node's API calls. client-node 2.0 builds a new undici Agent, and so
// a new TCP connection and TLS handshake, for every request it sends with TLS options (any real
// cluster: a CA at least); the Lease renewals alone are a few per second, the handshakes were most
// of an idle sidecar's CPU, and each abandoned Agent kept its socket until its keep-alive timeout.
// This keeps one dispatcher per distinct TLS material, so a rotated CA or client certificate still
// gets a fresh one.
// Invariant: if client-node no longer has the method (a later release), nothing is changed.
import { createHash } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';

type CreateDispatcher = (cluster: unknown, agentOptions: Record<string, unknown>) => unknown;

/** How many distinct TLS materials are remembered (a rotation adds one; older ones are dropped). */
const MAX_DISPATCHERS = 4;

function materialKey(cluster: unknown, options: Record<string, unknown>): string {
  const h = createHash('sha256');
  h.update(JSON.stringify({ server: (cluster as { server?: string } | null)?.server ?? '' }));
  for (const k of Object.keys(options).sort()) {
    const v = options[k];
    if (v === undefined) continue;
    h.update(`\0${k}=`);
    if (Buffer.isBuffer(v) || typeof v === 'string') h.update(v);
    else h.update(JSON.stringify(v) ?? '');
  }
  return h.digest('hex');
}

const PATCHED = Symbol('redis-operator.reuseDispatchers');

export function reuseDispatchers(kc: KubeConfig): KubeConfig {
  const target = kc as unknown as { createDispatcher?: CreateDispatcher; [PATCHED]?: true };
  const original = target.createDispatcher;
  if (typeof original !== 'function' || target[PATCHED]) return kc;
  target[PATCHED] = true;
  const cache = new Map<string, unknown>();
  target.createDispatcher = (cluster, agentOptions) => {
    const key = materialKey(cluster, agentOptions);
    if (cache.has(key)) return cache.get(key);
    const dispatcher = original.call(kc, cluster, agentOptions);
    cache.set(key, dispatcher);
    if (cache.size > MAX_DISPATCHERS) cache.delete(cache.keys().next().value!);
    return dispatcher;
  };
  return kc;
}

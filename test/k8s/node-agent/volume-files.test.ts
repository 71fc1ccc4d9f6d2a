// What the node agent puts in secret/configMap/downwardAPI/projected volumes (pure), and how a
// directory is made to hold exactly those files. No API server.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { V1Pod, V1Volume } from '@kubernetes/client-node';
import { syncDir } from './pod-volumes.ts';
import { referencedObjects, tokenKey, volumeFiles, type Files, type Sources } from './volume-files.ts';

const MACHINE = { memoryBytes: 8 * 2 ** 30, cpus: 4 };
const b64 = (s: string) => Buffer.from(s).toString('base64');

const pod: V1Pod = {
  metadata: { name: 'web-0', namespace: 'ns', uid: 'u-1', labels: { app: 'web', tier: 'db' }, annotations: { note: 'say "hi"' } },
  spec: {
    serviceAccountName: 'runner',
    containers: [
      {
        name: 'main',
        env: [
          { name: 'P', valueFrom: { secretKeyRef: { name: 'auth', key: 'password' } } },
          { name: 'M', valueFrom: { configMapKeyRef: { name: 'env-cm', key: 'mode' } } },
        ],
        envFrom: [{ secretRef: { name: 'bulk' } }],
        resources: { limits: { memory: '512Mi' } },
      },
    ],
  },
};

const sources: Sources = {
  secrets: new Map([
    ['auth', { data: { password: b64('s3cret'), user: b64('bob') } }],
    ['gone', undefined],
  ]),
  configMaps: new Map([
    ['cfg', { data: { 'redis.conf': 'dir /data\n' }, binaryData: { blob: b64('\u0001\u0002') } }],
    ['kube-root-ca.crt', { data: { 'ca.crt': 'CA' } }],
  ]),
  tokens: new Map([[tokenKey({ audience: '', expirationSeconds: 3607 }), 'tok-123']]),
};

function files(v: V1Volume): Record<string, string> {
  const out = volumeFiles(pod, v, sources, MACHINE);
  assert.ok(out && !('error' in out), `expected files, got ${JSON.stringify(out)}`);
  return Object.fromEntries([...(out as Files)].map(([k, f]) => [k, `${f.content.toString()}@${f.mode.toString(8)}`]));
}

describe('volumeFiles', () => {
  test('a secret volume: every key a file, decoded, mode 0644 unless defaultMode says otherwise', () => {
    assert.deepEqual(files({ name: 'v', secret: { secretName: 'auth' } }), { password: 's3cret@644', user: 'bob@644' });
    assert.deepEqual(files({ name: 'v', secret: { secretName: 'auth', defaultMode: 0o400 } }), { password: 's3cret@400', user: 'bob@400' });
  });

  test('items remap keys to paths (with their own mode); a missing key fails unless optional', () => {
    assert.deepEqual(files({ name: 'v', configMap: { name: 'cfg', items: [{ key: 'redis.conf', path: 'conf/redis.conf', mode: 0o600 }] } }), {
      'conf/redis.conf': 'dir /data\n@600',
    });
    assert.deepEqual(volumeFiles(pod, { name: 'v', configMap: { name: 'cfg', items: [{ key: 'nope', path: 'x' }] } }, sources, MACHINE), {
      error: 'MountVolume.SetUp failed for volume "v" : configmap references non-existent config key: nope',
    });
  });

  test('configMap binaryData is a file too', () => {
    const out = volumeFiles(pod, { name: 'v', configMap: { name: 'cfg' } }, sources, MACHINE) as Files;
    assert.deepEqual(out.get('blob')?.content, Buffer.from([1, 2]));
  });

  test("a missing source is the kubelet's FailedMount message; optional makes it an empty volume", () => {
    assert.deepEqual(volumeFiles(pod, { name: 'auth', secret: { secretName: 'gone' } }, sources, MACHINE), {
      error: 'MountVolume.SetUp failed for volume "auth" : secret "gone" not found',
    });
    assert.deepEqual(volumeFiles(pod, { name: 'c', configMap: { name: 'other' } }, sources, MACHINE), {
      error: 'MountVolume.SetUp failed for volume "c" : configmap "other" not found',
    });
    assert.deepEqual(files({ name: 'v', secret: { secretName: 'gone', optional: true } }), {});
  });

  test('downwardAPI: names, a label, whole label/annotation maps (key="value" lines, sorted), a resource limit', () => {
    assert.deepEqual(
      files({
        name: 'v',
        downwardAPI: {
          items: [
            { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
            { path: 'ns', fieldRef: { fieldPath: 'metadata.namespace' } },
            { path: 'app', fieldRef: { fieldPath: "metadata.labels['app']" } },
            { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
            { path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations' } },
            { path: 'mem', resourceFieldRef: { containerName: 'main', resource: 'limits.memory', divisor: '1Mi' } },
          ],
        },
      }),
      {
        name: 'web-0@644',
        ns: 'ns@644',
        app: 'web@644',
        labels: 'app="web"\ntier="db"\n@644',
        annotations: 'note="say \\"hi\\""\n@644',
        mem: '512@644',
      },
    );
  });

  test('projected: the service-account volume the API server injects (token, CA bundle, namespace)', () => {
    assert.deepEqual(
      files({
        name: 'kube-api-access-x',
        projected: {
          defaultMode: 0o644,
          sources: [
            { serviceAccountToken: { path: 'token', expirationSeconds: 3607 } },
            { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
            { downwardAPI: { items: [{ path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
          ],
        },
      }),
      { token: 'tok-123@644', 'ca.crt': 'CA@644', namespace: 'ns@644' },
    );
  });

  test('volumes that are not files answer undefined (emptyDir, claims)', () => {
    assert.equal(volumeFiles(pod, { name: 'v', emptyDir: {} }, sources, MACHINE), undefined);
    assert.equal(volumeFiles(pod, { name: 'v', persistentVolumeClaim: { claimName: 'c' } }, sources, MACHINE), undefined);
  });
});

test('referencedObjects: what one fetch must cover (env, envFrom, volumes, projected sources, tokens)', () => {
  const p: V1Pod = {
    ...pod,
    spec: {
      ...pod.spec!,
      volumes: [
        { name: 'a', secret: { secretName: 'vol-secret' } },
        { name: 'b', configMap: { name: 'cfg' } },
        {
          name: 'c',
          projected: {
            sources: [{ serviceAccountToken: { path: 't', audience: 'vault', expirationSeconds: 600 } }, { configMap: { name: 'kube-root-ca.crt' } }],
          },
        },
      ],
    },
  };
  const r = referencedObjects(p);
  assert.deepEqual(r.secrets.sort(), ['auth', 'bulk', 'vol-secret']);
  assert.deepEqual(r.configMaps.sort(), ['cfg', 'env-cm', 'kube-root-ca.crt']);
  assert.deepEqual(r.tokens, [{ audience: 'vault', expirationSeconds: 600 }]);
});

test('syncDir writes changed files with their mode and removes the ones no longer there', (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'node-agent-vol-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(path.join(dir, 'stale'), 'old');
  syncDir(
    dir,
    new Map([
      ['a', { content: Buffer.from('1'), mode: 0o600 }],
      ['sub/b', { content: Buffer.from('2'), mode: 0o644 }],
    ]),
  );
  assert.deepEqual(readdirSync(dir, { recursive: true }).sort(), ['a', 'sub', 'sub/b']);
  assert.equal(statSync(path.join(dir, 'a')).mode & 0o777, 0o600);
  syncDir(dir, new Map([['a', { content: Buffer.from('changed'), mode: 0o600 }]]));
  assert.equal(readFileSync(path.join(dir, 'a'), 'utf8'), 'changed');
  assert.equal((readdirSync(dir, { recursive: true }) as string[]).includes('sub/b'), false);
});

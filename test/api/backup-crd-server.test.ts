// spec.backup as the real kube-apiserver takes it from the committed CRDs (manifests/*.yaml): a
// Redis's backup needs storage only (on-demand backups; a schedule adds the CronJob), while a
// RedisCluster's, which has no on-demand backups, still needs its schedule. Dry-run creates on a
// control plane of API server and etcd only (test/k8s/control-plane.ts, ~3 s); skips, with the
// reason, when it is not built or does not start.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { isBuilt } from '../k8s/build.ts';
import { startControlPlane, type ControlPlane } from '../k8s/control-plane.ts';
import { BARE_SUBNET } from '../k8s/api-server.ts';
import { REPO_ROOT } from '../k8s/operator.ts';

const CRDS = ['manifests/crd.yaml', 'manifests/rediscluster-crd.yaml'].map((f) => path.join(REPO_ROOT, f));
const STORAGE = { s3: { bucket: 'redis-backups', region: 'us-east-1' } };

let missing: string | undefined;
try {
  missing = isBuilt() ? undefined : 'the control plane is not built (npm run cluster:build)';
} catch (err) {
  missing = `the control plane cannot be located: ${err instanceof Error ? err.message : String(err)}`;
}
let cp: ControlPlane | undefined;
if (missing === undefined) {
  try {
    cp = await startControlPlane({ subnet: BARE_SUBNET, controllers: false });
    await cp.kubectl(['apply', ...CRDS.flatMap((f) => ['-f', f])]);
    await cp.kubectl(['wait', '--for=condition=Established', '--timeout=60s', ...CRDS.flatMap((f) => ['-f', f])]);
  } catch (err) {
    missing = `the control plane did not start: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}`;
  }
}
after(() => cp?.stop());

/** A dry-run create: '' when the server accepts the object, else what it says. */
async function refusal(kind: 'Redis' | 'RedisCluster', spec: object): Promise<string> {
  const object = { apiVersion: 'redis.example.com/v1', kind, metadata: { name: 'r', namespace: 'default' }, spec };
  return cp!.kubectl(['create', '--dry-run=server', '-o', 'name', '-f', '-'], JSON.stringify(object)).then(
    () => '',
    (err: unknown) => String((err as { stderr?: string }).stderr ?? err),
  );
}

describe('spec.backup on the real kube-apiserver', { skip: missing ?? false }, () => {
  test('a Redis: storage alone is accepted (on-demand backups), with a schedule too', async () => {
    assert.equal(await refusal('Redis', { backup: { storage: STORAGE } }), '');
    assert.equal(await refusal('Redis', { backup: { storage: STORAGE, retentionCount: 5 } }), '');
    assert.equal(await refusal('Redis', { backup: { schedule: '@daily', storage: STORAGE } }), '');
  });
  test('a Redis: a backup without storage is still refused, naming it', async () => {
    assert.match(await refusal('Redis', { backup: { schedule: '@daily' } }), /spec\.backup\.storage: Required value/);
  });
  test('a RedisCluster: the schedule is still required, naming it', async () => {
    assert.match(
      await refusal('RedisCluster', { backup: { storage: STORAGE } }),
      /spec\.backup\.schedule: Required value/,
    );
    assert.equal(await refusal('RedisCluster', { backup: { schedule: '@daily', storage: STORAGE } }), '');
  });
});

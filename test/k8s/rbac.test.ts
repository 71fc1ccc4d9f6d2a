// manifests/ on the real API server: what installOperator left out (only the Deployment), and
// manifests/rbac.yaml: what the operator's ServiceAccount (the identity
// the sidecars run with on the real control plane) may and may not do, asked with
// `kubectl auth can-i` as that ServiceAccount. A grant the sidecar needs that the ClusterRole
// lacks, or a wildcard-like grant it should not have, fails here. Also what the installed CRD
// refuses, as the real API server says it (its CEL rules). Skips where the control plane is not built.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { isBuilt } from './build.ts';
import { startControlPlane, type ControlPlane } from './control-plane.ts';
import { installOperator, missingSharedReason, type InstalledOperator } from './operator.ts';
import { SUPPORTED_VERSION_MESSAGE } from '../../src/api/schema.ts';

const why = missingSharedReason() ?? (isBuilt() ? undefined : 'the control plane is not built (npm run cluster:build)');

describe('the operator ServiceAccount under the real RBAC of manifests/rbac.yaml', { skip: why ?? false, timeout: 180_000 }, () => {
  let cp: ControlPlane;
  let op: InstalledOperator;
  before(async () => {
    cp = await startControlPlane({ subnet: 48 });
    op = await installOperator(cp);
  });
  after(() => cp?.stop());

  const canI = async (verb: string, resource: string, namespace?: string): Promise<boolean> => {
    // `resource/status` would ask about an object NAMED status: a subresource is its own flag.
    const [kind, subresource] = resource.split('#');
    const args = [
      `--kubeconfig=${op.operatorKubeconfig}`,
      'auth',
      'can-i',
      verb,
      kind!,
      ...(subresource ? [`--subresource=${subresource}`] : []),
      ...(namespace ? ['-n', namespace] : ['--all-namespaces']),
    ];
    // kubectl answers yes/no on stdout and exits 1 for no; the admin kubeconfig flag of
    // cp.kubectl comes first and the operator's overrides it.
    const out = await cp.kubectl(args).catch((err: { stdout?: string }) => err.stdout ?? '');
    return out.trim() === 'yes';
  };

  test('everything of kubectl apply -k manifests/ is applied but the Deployment (no runtime for its image here)', () => {
    assert.deepEqual(op.skipped, ['Deployment/redis-operator/redis-operator']);
  });

  const table: Array<[verb: string, resource: string, namespace: string | undefined, allowed: boolean]> = [
    ['watch', 'redises.redis.example.com', undefined, true],
    ['patch', 'pods', 'default', true],
    ['get', 'secrets', 'default', true],
    ['create', 'secrets', 'default', true],
    ['create', 'events', 'default', true],
    ['update', 'leases.coordination.k8s.io', 'redis-operator', true],
    ['watch', 'leases.coordination.k8s.io', 'redis-operator', true],
    // Day-2: a rollout deletes one pod at a time; a switchover request's outcome is an annotation.
    ['delete', 'pods', 'default', true],
    ['patch', 'redises.redis.example.com', 'default', true],
    // RedisCluster (issue 15): its records on the RedisCluster, and the shard count through the scale
    // subresource only (the memory autoscaler, as an HPA does).
    ['watch', 'redisclusters.redis.example.com', undefined, true],
    ['get', 'redisclusters.redis.example.com', 'default', true],
    ['patch', 'redisclusters.redis.example.com', 'default', true],
    ['get', 'redisclusters.redis.example.com#scale', 'default', true],
    ['patch', 'redisclusters.redis.example.com#scale', 'default', true],
    ['update', 'redisclusters.redis.example.com#status', 'default', false],
    ['patch', 'redisclusters.redis.example.com#status', 'default', false],
    ['update', 'redisclusters.redis.example.com', 'default', false],
    ['delete', 'redisclusters.redis.example.com', 'default', false],
    ['create', 'redisclusters.redis.example.com', 'default', false],
    // What it must not do: status belongs to the hook (through Metacontroller), pods are created by
    // the StatefulSet controller, Secrets are never changed or deleted, Leases elsewhere are not its own.
    ['update', 'redises.redis.example.com#status', 'default', false],
    ['patch', 'redises.redis.example.com#status', 'default', false],
    ['update', 'redises.redis.example.com', 'default', false],
    ['create', 'pods', 'default', false],
    // Listing or watching Secrets would be every Secret of the cluster: it reads its own by name.
    ['list', 'secrets', undefined, false],
    ['watch', 'secrets', undefined, false],
    ['update', 'secrets', 'default', false],
    ['delete', 'secrets', 'default', false],
    ['update', 'statefulsets.apps', 'default', false],
    ['update', 'leases.coordination.k8s.io', 'default', false],
  ];
  test('the API server refuses an unsupported Redis version with the CRD message that says which are supported', async () => {
    const manifest = JSON.stringify({
      apiVersion: 'redis.example.com/v1',
      kind: 'Redis',
      metadata: { name: 'old', namespace: 'default' },
      spec: { version: '6.2' },
    });
    const refused = await cp.kubectl(['apply', '-f', '-'], manifest).then(
      () => '',
      (err: { stderr?: string; message?: string }) => err.stderr ?? err.message ?? String(err),
    );
    assert.ok(refused.includes(SUPPORTED_VERSION_MESSAGE), `kubectl apply said: ${refused}`);
    assert.match(refused, /spec\.version/);
    const accepted = JSON.stringify({
      apiVersion: 'redis.example.com/v1',
      kind: 'Redis',
      metadata: { name: 'current', namespace: 'default' },
      spec: { version: '7.0' },
    });
    await cp.kubectl(['apply', '--dry-run=server', '-f', '-'], accepted);
  });

  test("the API server accepts the design article's RedisCluster as written, and refuses two shards naming the field", async () => {
    const example = readFileSync(new URL('../../manifests/examples/rediscluster.yaml', import.meta.url), 'utf8');
    await cp.kubectl(['apply', '--dry-run=server', '-f', '-'], example);
    const two = JSON.stringify({
      apiVersion: 'redis.example.com/v1',
      kind: 'RedisCluster',
      metadata: { name: 'two', namespace: 'default' },
      spec: { master: { replicas: 2 } },
    });
    const refused = await cp.kubectl(['apply', '--dry-run=server', '-f', '-'], two).then(
      () => '',
      (err: { stderr?: string; message?: string }) => err.stderr ?? err.message ?? String(err),
    );
    assert.match(refused, /spec\.master\.replicas/);
  });

  for (const [verb, resource, namespace, allowed] of table) {
    test(`${allowed ? 'may' : 'may not'} ${verb} ${resource}${namespace ? ` in ${namespace}` : ' in every namespace'}`, async () => {
      assert.equal(await canI(verb, resource, namespace), allowed);
    });
  }
});

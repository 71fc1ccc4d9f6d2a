// The names rule in both kinds' hooks: customize asks for the other kind's parents that could take
// the names; sync and finalize refuse the younger of two colliding parents (Ready and SpecValid
// say NameConflict, no child made, the children it has kept exactly as last applied) and leave
// the older one as it was; the monitoring decorator makes nothing for a refused parent; and
// every child a hook really makes is among the names the rule weighs (api/name-conflict.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NAME_CONFLICT_REASON, nameClaims, rivalNames } from '../../../src/api/name-conflict.ts';
import { customize, customizeRedisCluster, finalizeRedisCluster, finalize, sync } from '../../../src/hook/index.ts';
import { parseDecoratorRequest, syncMonitoring } from '../../../src/hook/index.ts';
import { lastAppliedOf } from '../../../src/hook/common/observed.ts';
import type { KubeObject } from '../../../src/hook/common/types.ts';
import { condition, desiredFor, designSpec, objectMap, redis, request as redisRequest, type Json } from './helpers.ts';
import {
  applied,
  articleSpec,
  observedFor,
  redisCluster,
  request as clusterRequest,
  sync as syncCluster,
} from '../rediscluster/helpers.ts';

const OLD = '2026-01-01T00:00:00Z';
const NEW = '2026-02-01T00:00:00Z';

const withAge = (parent: Json, at: string, uid: string): Json => ({
  ...parent,
  metadata: { ...(parent['metadata'] as Json), creationTimestamp: at, uid },
});
const key = (c: KubeObject) => `${c.kind}/${c.metadata.name}`;
const sorted = (children: readonly KubeObject[]) => [...children].sort((a, b) => (key(a) < key(b) ? -1 : 1));
const named = (children: readonly KubeObject[]) => children.map((c) => `${c.kind}/${c.metadata.name}`).sort();

test('customize asks each kind for the other kind of parent, by the names that could collide', async (t) => {
  await t.test('a Redis asks for RedisClusters', () => {
    const rules = customize({ controller: {}, parent: redis(designSpec(), { name: 'x' }) } as never).relatedResources;
    const rule = rules.find((r) => r.resource === 'redisclusters');
    assert.deepEqual(rule, {
      apiVersion: 'redis.example.com/v1',
      resource: 'redisclusters',
      namespace: 'default',
      names: rivalNames('Redis', 'x'),
    });
  });
  await t.test('a RedisCluster asks for Redises', () => {
    const rules = customizeRedisCluster({
      controller: {},
      parent: redisCluster(articleSpec(), { name: 'x' }),
    } as never).relatedResources;
    const rule = rules.find((r) => r.resource === 'redises');
    assert.equal(rule?.namespace, 'default');
    assert.deepEqual(rule?.names, rivalNames('RedisCluster', 'x'));
    assert.ok(rule?.names?.includes('x') && rule.names.includes('x-shard-0'));
  });
});

test('every child the hooks make is a name the rule weighs', async (t) => {
  await t.test('a Redis with every optional child', () => {
    const spec = {
      ...designSpec(),
      networkPolicy: { allowFrom: { app: 'shop' } },
      tls: { certManager: { issuerRef: { name: 'ca' } } },
      backup: { schedule: '0 */6 * * *', storage: { s3: { bucket: 'redis-backups', region: 'us-east-1' } } },
    };
    const made = named(desiredFor(spec, 'x'));
    for (const c of ['NetworkPolicy/x-ingress', 'CronJob/x-backup', 'Certificate/x-tls'])
      assert.ok(made.includes(c), c);
    const claims = new Set(nameClaims('Redis', 'x'));
    assert.deepEqual(
      made.filter((c) => !claims.has(c)),
      [],
    );
  });
  await t.test('a RedisCluster with backups', () => {
    const made = named(syncCluster({ parent: redisCluster(articleSpec(), { name: 'x' }) }).children);
    assert.ok(made.includes('CronJob/x-shard-0-backup') && made.includes('Service/x'));
    const claims = new Set(nameClaims('RedisCluster', 'x'));
    assert.deepEqual(
      made.filter((c) => !claims.has(c)),
      [],
    );
  });
});

const olderRedis = withAge(redis(designSpec(), { name: 'order-cache' }), OLD, 'uid-redis');
const youngerCluster = withAge(redisCluster(articleSpec()), NEW, 'uid-cluster');

test('a RedisCluster younger than a Redis of its name is refused: no child, NameConflict', () => {
  const response = syncCluster({ parent: youngerCluster, related: [olderRedis as unknown as KubeObject] });
  assert.deepEqual(response.children, []);
  const ready = condition(response.status, 'Ready');
  assert.equal(ready?.['status'], 'False');
  assert.equal(ready?.['reason'], NAME_CONFLICT_REASON);
  assert.match(String(ready?.['message']), /^Redis order-cache is older/);
  assert.equal(condition(response.status, 'SpecValid')?.['reason'], NAME_CONFLICT_REASON);
  assert.equal(response.status.phase, 'Failed');
});

test('a refused RedisCluster that has children (made before the upgrade) keeps each exactly as last applied', () => {
  const observed = observedFor(articleSpec());
  const response = syncCluster({
    parent: youngerCluster,
    children: observed,
    related: [olderRedis as unknown as KubeObject],
  });
  assert.deepEqual(sorted(response.children), sorted(observed.map(lastAppliedOf)));
  assert.equal(condition(response.status, 'Ready')?.['reason'], NAME_CONFLICT_REASON);
});

test('deleting a refused RedisCluster tears nothing down but keeps its volumes (Retain), as for an invalid spec', () => {
  const observed = observedFor({ ...articleSpec(), persistence: { whenDeleted: 'Delete' } });
  const response = finalizeRedisCluster(
    clusterRequest({
      parent: youngerCluster,
      children: observed,
      related: [olderRedis as unknown as KubeObject],
      finalizing: true,
    }),
  );
  assert.deepEqual(named(response.children), named(observed));
  const whenDeleted = (children: readonly KubeObject[]) =>
    children
      .filter((c) => c.kind === 'StatefulSet')
      .map((c) => ((c['spec'] as Json)['persistentVolumeClaimRetentionPolicy'] as Json | undefined)?.['whenDeleted']);
  assert.deepEqual(whenDeleted(observed), ['Delete', 'Delete', 'Delete']);
  assert.deepEqual(whenDeleted(response.children), ['Retain', 'Retain', 'Retain']);
  assert.equal(condition(response.status, 'Ready')?.['reason'], NAME_CONFLICT_REASON);
});

test('the older parent is not affected by the younger one', async (t) => {
  await t.test('a Redis older than a RedisCluster of its name syncs as if alone', () => {
    const alone = sync(redisRequest({ parent: olderRedis }));
    const beside = sync(redisRequest({ parent: olderRedis, related: [youngerCluster as unknown as KubeObject] }));
    assert.deepEqual(beside, alone);
    assert.ok(alone.children.length > 0);
  });
  await t.test('a RedisCluster older than a Redis of its name syncs as if alone', () => {
    const cluster = withAge(redisCluster(articleSpec()), OLD, 'uid-cluster');
    const redisLater = withAge(redis(designSpec(), { name: 'order-cache' }), NEW, 'uid-redis');
    const alone = syncCluster({ parent: cluster });
    const beside = syncCluster({ parent: cluster, related: [redisLater as unknown as KubeObject] });
    assert.deepEqual(beside, alone);
  });
});

test('a Redis younger than a RedisCluster it collides with is refused, in sync and finalize', async (t) => {
  const cluster = withAge(redisCluster(articleSpec(), { name: 'x-master' }), OLD, 'uid-cluster');
  const parent = withAge(redis(designSpec(), { name: 'x' }), NEW, 'uid-redis');
  const observed = applied(desiredFor(designSpec(), 'x'));
  await t.test('sync: nothing new, what it has as last applied', () => {
    const fresh = sync(redisRequest({ parent, related: [cluster as unknown as KubeObject] }));
    assert.deepEqual(fresh.children, []);
    const ready = condition(fresh.status, 'Ready');
    assert.equal(ready?.['reason'], NAME_CONFLICT_REASON);
    assert.match(String(ready?.['message']), /RedisCluster x-master is older .*Service\/x-master/);
    const kept = sync(redisRequest({ parent, children: observed, related: [cluster as unknown as KubeObject] }));
    assert.deepEqual(sorted(kept.children), sorted(observed.map(lastAppliedOf)));
  });
  await t.test('finalize: every child kept, finalized once no StatefulSet must change', () => {
    const response = finalize(redisRequest({ parent, related: [cluster as unknown as KubeObject], finalizing: true }));
    assert.deepEqual(response.children, []);
    assert.equal(response.finalized, true);
    assert.equal(condition(response.status, 'Ready')?.['reason'], NAME_CONFLICT_REASON);
  });
  await t.test('a related RedisCluster of another namespace counts for nothing', () => {
    const elsewhere = { ...cluster, metadata: { ...(cluster['metadata'] as Json), namespace: 'other' } };
    const response = sync(redisRequest({ parent, related: [elsewhere as unknown as KubeObject] }));
    assert.notEqual(condition(response.status, 'Ready')?.['reason'], NAME_CONFLICT_REASON);
    assert.ok(response.children.length > 0);
  });
});

test('the monitoring decorator makes nothing new for a refused parent and keeps what it had', () => {
  const refusedStatus = {
    conditions: [{ type: 'Ready', status: 'False', reason: NAME_CONFLICT_REASON, message: 'm' }],
  };
  const decorate = (status: unknown, attachments: KubeObject[]) => {
    const parsed = parseDecoratorRequest({
      object: redisCluster(articleSpec(), status === undefined ? {} : { status }),
      attachments: objectMap(attachments, 'v2', [
        'PodMonitor.monitoring.coreos.com/v1',
        'PrometheusRule.monitoring.coreos.com/v1',
      ]),
    });
    assert.ok(parsed.ok, JSON.stringify(parsed));
    return syncMonitoring(parsed.request).response.attachments;
  };
  const made = decorate(undefined, []);
  assert.deepEqual(named(made), ['PodMonitor/order-cache', 'PrometheusRule/order-cache']);
  assert.deepEqual(decorate(refusedStatus, []), []);
  const had = applied(made);
  assert.deepEqual(decorate(refusedStatus, had), had.map(lastAppliedOf));
});

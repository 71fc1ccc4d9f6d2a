// The names rule through the routes Metacontroller calls (app.inject): /customize and
// /rediscluster/customize name the other kind's parents; a RedisCluster younger than a Redis of
// its name gets a 200 with Ready NameConflict and no child from /rediscluster/sync, and the
// Redis's /sync answer is the same with or without the RedisCluster beside it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NAME_CONFLICT_REASON, rivalNames } from '../../src/api/name-conflict.ts';
import { buildApp } from '../../src/server/app.ts';
import { designSpec, objectMap, redis } from '../hook/common/helpers.ts';
import { articleSpec, redisCluster, type Json } from '../hook/rediscluster/helpers.ts';
import { silentLogger } from './helpers.ts';

const aged = (parent: Json, at: string, uid: string): Json => ({
  ...parent,
  metadata: { ...(parent['metadata'] as Json), creationTimestamp: at, uid },
});
const olderRedis = aged(redis(designSpec(), { name: 'order-cache' }), '2026-01-01T00:00:00Z', 'uid-r');
const youngerCluster = aged(redisCluster(articleSpec()), '2026-03-01T00:00:00Z', 'uid-c');

async function post(url: string, payload: Json): Promise<{ status: number; json: Json }> {
  const app = buildApp({ logger: silentLogger(), defaultMetrics: false });
  try {
    const r = await app.inject({ method: 'POST', url, payload });
    return { status: r.statusCode, json: r.json() as Json };
  } finally {
    await app.close();
  }
}

const body = (parent: Json, related: Json[]): Json => ({
  controller: { kind: 'CompositeController' },
  parent,
  children: {},
  related: objectMap(related as never),
  finalizing: false,
});

const readyOf = (json: Json) =>
  ((json['status'] as Json)['conditions'] as Json[]).find((c) => c['type'] === 'Ready') as Json;

test('the customize routes name the other kind of parent that could take the names', async (t) => {
  await t.test('/customize (Redis) asks for RedisClusters', async () => {
    const r = await post('/customize', { controller: {}, parent: olderRedis });
    assert.equal(r.status, 200);
    const rules = r.json['relatedResources'] as Json[];
    assert.deepEqual(
      rules.find((x) => x['resource'] === 'redisclusters'),
      {
        apiVersion: 'redis.example.com/v1',
        resource: 'redisclusters',
        namespace: 'default',
        names: rivalNames('Redis', 'order-cache'),
      },
    );
  });
  await t.test('/rediscluster/customize asks for Redises', async () => {
    const r = await post('/rediscluster/customize', { controller: {}, parent: youngerCluster });
    assert.equal(r.status, 200);
    const rule = (r.json['relatedResources'] as Json[]).find((x) => x['resource'] === 'redises');
    assert.deepEqual(rule?.['names'], rivalNames('RedisCluster', 'order-cache'));
  });
});

test('/rediscluster/sync refuses a RedisCluster younger than a Redis of its name: 200, NameConflict, no child', async () => {
  const r = await post('/rediscluster/sync', body(youngerCluster, [olderRedis]));
  assert.equal(r.status, 200);
  assert.deepEqual(r.json['children'], []);
  const ready = readyOf(r.json);
  assert.equal(ready['status'], 'False');
  assert.equal(ready['reason'], NAME_CONFLICT_REASON);
  assert.match(String(ready['message']), /Redis order-cache is older/);
  const alone = await post('/rediscluster/sync', body(youngerCluster, []));
  assert.ok((alone.json['children'] as Json[]).length > 0, 'alone, the same RedisCluster is built');
});

test('/sync of the older Redis answers the same with the younger RedisCluster beside it', async () => {
  const beside = await post('/sync', body(olderRedis, [youngerCluster]));
  const alone = await post('/sync', body(olderRedis, []));
  assert.equal(beside.status, 200);
  assert.deepEqual(beside.json, alone.json);
  assert.notEqual(readyOf(beside.json)['reason'], NAME_CONFLICT_REASON);
  assert.ok((beside.json['children'] as Json[]).length > 0);
});

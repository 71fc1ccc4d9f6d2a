// The RedisCluster controller's routes, /rediscluster/{sync,finalize,customize}, through
// app.inject(): the hook's answer as built, finalize routing by the request, invalid specs as a
// 200 that echoes the children, bad requests refused naming the field, a fault as a 500 (so
// Metacontroller retries and changes nothing), and the metrics' route labels.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseHookRequest, syncRedisCluster as syncCluster } from '../../src/hook/index.ts';
import { buildApp } from '../../src/server/app.ts';
import { objectMap } from '../hook/common/helpers.ts';
import {
  articleSpec,
  redisCluster as cluster,
  healthyRedisClusterPods as healthyClusterPods,
  observedFor,
  type Json,
} from '../hook/rediscluster/helpers.ts';
import { readFileSync } from 'node:fs';
import { CLUSTER_FIXTURE, clusterFixtureText } from '../fixtures/make-rediscluster-sync-request.ts';
import { capturingLogger, silentLogger } from './helpers.ts';

function body(spec: unknown = articleSpec(), finalizing = false): Json {
  return {
    controller: { kind: 'CompositeController', metadata: { name: 'redis-operator-clusters' } },
    parent: cluster(spec),
    children: objectMap(observedFor()),
    related: objectMap(healthyClusterPods()),
    finalizing,
  };
}

async function post(
  url: string,
  payload: unknown,
  options: Parameters<typeof buildApp>[0] = { logger: silentLogger(), defaultMetrics: false },
) {
  const app = buildApp(options);
  try {
    const r = await app.inject({ method: 'POST', url, payload: payload as Json });
    return { status: r.statusCode, json: r.json() as Json };
  } finally {
    await app.close();
  }
}

test('POST /rediscluster/sync answers what syncCluster builds, byte for byte', async () => {
  const app = buildApp({ logger: silentLogger(), defaultMetrics: false });
  try {
    const r = await app.inject({ method: 'POST', url: '/rediscluster/sync', payload: body() });
    assert.equal(r.statusCode, 200);
    const parsed = parseHookRequest(body());
    assert.ok(parsed.ok);
    assert.equal(r.body, JSON.stringify(syncCluster(parsed.request)));
    const answer = r.json() as Json;
    assert.deepEqual(Object.keys(answer), ['status', 'children']);
    assert.equal((answer['status'] as Json)['phase'], 'Running');
  } finally {
    await app.close();
  }
});

test("the README's curl fixture is current and answers the steady state of the article's RedisCluster", async () => {
  const text = readFileSync(CLUSTER_FIXTURE, 'utf8');
  assert.equal(text, clusterFixtureText(), 'regenerate it with node test/fixtures/make-rediscluster-sync-request.ts');
  const app = buildApp({ logger: silentLogger(), defaultMetrics: false });
  try {
    const r = await app.inject({
      method: 'POST',
      url: '/rediscluster/sync',
      payload: text,
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(r.statusCode, 200);
    const answer = r.json() as { status: Json; children: Array<{ kind: string; metadata: { name: string } }> };
    assert.deepEqual(
      [
        answer.status['phase'],
        answer.status['shards'],
        answer.status['readyMasters'],
        answer.status['readyReplicas'],
        answer.status['slotsCovered'],
      ],
      ['Running', 3, 3, 6, 16384],
    );
    assert.deepEqual(
      answer.status,
      (JSON.parse(text) as { parent: { status: Json } }).parent.status,
      'steady state: the status it carries',
    );
    assert.deepEqual(
      answer.children.filter((c) => c.kind === 'StatefulSet').map((c) => c.metadata.name),
      ['order-cache-shard-0', 'order-cache-shard-1', 'order-cache-shard-2'],
    );
  } finally {
    await app.close();
  }
});

test('finalize follows the request: /rediscluster/sync with finalizing runs finalize, /rediscluster/finalize without it runs sync', async () => {
  const viaSync = await post('/rediscluster/sync', body(articleSpec(), true));
  assert.equal(viaSync.status, 200);
  assert.equal(typeof viaSync.json['finalized'], 'boolean');
  const plain = await post('/rediscluster/finalize', body());
  assert.equal(plain.status, 200);
  assert.equal(plain.json['finalized'], undefined, 'never finalized outside a deletion');
});

test('an invalid spec is a 200 that echoes every observed child and says InvalidSpec', async () => {
  const r = await post('/rediscluster/sync', body({ ...articleSpec(), master: { replicas: 1 } }));
  assert.equal(r.status, 200);
  assert.equal((r.json['children'] as unknown[]).length, observedFor().length);
  assert.equal((r.json['status'] as Json)['phase'], 'Failed');
});

test('POST /rediscluster/customize: the related rules for the cluster, without Secrets', async () => {
  const r = await post('/rediscluster/customize', { controller: {}, parent: cluster() });
  assert.equal(r.status, 200);
  assert.deepEqual(
    (r.json['relatedResources'] as Json[]).map((x) => x['resource']),
    ['pods', 'persistentvolumeclaims', 'jobs', 'pods', 'redises'],
  );
});

// Metacontroller sends the hook, in plain HTTP, every object a customize answer names: a
// `secrets` rule would put passwords, S3 keys and tls.key on the wire at every sync.
test('POST /customize and /rediscluster/customize: no answer names the secrets resource, whatever Secrets the spec names', async () => {
  const spec = {
    ...articleSpec(),
    auth: { secretName: 'corp-auth' },
    backup: {
      ...(articleSpec()['backup'] as Json),
      storage: { s3: { bucket: 'b-1', region: 'r', credentialsSecret: { name: 's3' } } },
    },
  };
  const redisParent = {
    ...cluster(spec),
    kind: 'Redis',
    spec: {
      ...spec,
      tls: { secretName: 'corp-tls' },
      users: [{ name: 'app', rules: '+@read', passwordSecret: { name: 'app-pw' } }],
    },
  };
  for (const [url, parent] of [
    ['/rediscluster/customize', cluster(spec)],
    ['/customize', redisParent],
  ] as const) {
    const r = await post(url, { controller: {}, parent });
    assert.equal(r.status, 200, url);
    assert.equal(JSON.stringify(r.json).includes('"secrets"'), false, `${url}: ${JSON.stringify(r.json)}`);
  }
});

test('bad requests are refused with the field named; a fault is a 500', async (t) => {
  const cases: Array<[string, string, unknown, number, RegExp]> = [
    ['no parent', '/rediscluster/sync', { children: {} }, 400, /parent/],
    ['a parent without a namespace', '/rediscluster/sync', { parent: { metadata: { name: 'x' } } }, 400, /namespace/],
    ['customize without a parent', '/rediscluster/customize', {}, 400, /parent/],
  ];
  for (const [name, url, payload, status, message] of cases) {
    await t.test(name, async () => {
      const r = await post(url, payload);
      assert.equal(r.status, status);
      assert.equal(r.json['error'], 'not_a_hook_request');
      assert.match(String(r.json['message']), message);
    });
  }
  await t.test('the hook throws', async () => {
    const r = await post('/rediscluster/sync', body(), {
      logger: silentLogger(),
      defaultMetrics: false,
      clusterHooks: {
        sync: () => {
          throw new Error('boom');
        },
      },
    });
    assert.equal(r.status, 500);
  });
  await t.test('an answer without children is a 500, never a 200 that deletes everything', async () => {
    const r = await post('/rediscluster/sync', body(), {
      logger: silentLogger(),
      defaultMetrics: false,
      clusterHooks: { sync: () => ({ status: {} }) as never },
    });
    assert.equal(r.status, 500);
  });
});

test('metrics and the summary log line carry the rediscluster/ route labels', async () => {
  const { logger, lines } = capturingLogger();
  const app = buildApp({ logger, defaultMetrics: false });
  try {
    await app.inject({ method: 'POST', url: '/rediscluster/sync', payload: body() });
    await app.inject({ method: 'POST', url: '/rediscluster/sync', payload: body({ master: { replicas: 2 } }) });
    await app.inject({ method: 'POST', url: '/rediscluster/customize', payload: { parent: cluster() } });
    const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    for (const series of [
      'redis_operator_hook_requests_total{route="rediscluster/sync",outcome="ok"} 1',
      'redis_operator_hook_requests_total{route="rediscluster/sync",outcome="invalid_spec"} 1',
      'redis_operator_hook_requests_total{route="rediscluster/customize",outcome="ok"} 1',
      'redis_operator_hook_requests_total{route="rediscluster/finalize",outcome="error"} 0',
      'redis_operator_hook_requests_total{route="sync",outcome="ok"} 0',
    ])
      assert.ok(text.includes(series), series);
    const answered = lines.filter((l) => l['msg'] === 'hook request answered');
    assert.deepEqual(
      answered.map((l) => [l['route'], l['outcome'], l['name']]),
      [
        ['rediscluster/sync', 'ok', 'order-cache'],
        ['rediscluster/sync', 'invalid_spec', 'order-cache'],
        ['rediscluster/customize', 'ok', 'order-cache'],
      ],
    );
  } finally {
    await app.close();
  }
});

// The engine in the hook's output, for both kinds: the default image by engine and version (an
// unset version resolved by engine, spec.image still first), the engine and version labels of the
// pod template, one pod spec for both engines but the image (probes, start scripts and exporter name
// binaries both images have), and the transition rules judged against what the StatefulSets and
// pods run: an allowed change rolls the template, a refused one keeps every child as last applied.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINE_LABEL, VERSION_LABEL } from '../../../src/api/labels.ts';
import { lastAppliedOf } from '../../../src/hook/common/observed.ts';
import { sync, type KubeObject } from '../../../src/hook/index.ts';
import { condition, designSpec, desiredFor, find, get, healthyPods, redis, request, type Json } from './helpers.ts';
import { applied, articleSpec, sync as syncCluster, observedFor, redisCluster } from '../rediscluster/helpers.ts';

const MASTER_SET = 'my-redis-master';
const SHARD_SET = 'order-cache-shard-0';

const byName = (list: readonly KubeObject[]) =>
  [...list].sort((a, b) => `${a.kind}/${a.metadata.name}`.localeCompare(`${b.kind}/${b.metadata.name}`));
const template = (set: KubeObject) => get(set, 'spec', 'template') as Json;
const redisContainer = (set: KubeObject) =>
  (get(set, 'spec', 'template', 'spec', 'containers') as Json[]).find((c) => c['name'] === 'redis')!;
const labels = (set: KubeObject) => get(set, 'spec', 'template', 'metadata', 'labels') as Record<string, string>;

function redisSet(spec: Json): KubeObject {
  return find(desiredFor(spec), 'StatefulSet', MASTER_SET);
}

function shardSet(spec: Json): KubeObject {
  return find(syncCluster({ parent: redisCluster(spec) }).children, 'StatefulSet', SHARD_SET);
}

test('the image and the pod template labels follow the engine and version, for both kinds', async (t) => {
  // [spec fields, image, engine label, version label]
  const cases: Array<[Json, string, string, string]> = [
    [{ version: '7.2' }, 'redis:7.2', 'redis', '7.2'],
    [{ version: '7.0.15' }, 'redis:7.0.15', 'redis', '7.0.15'],
    [{ engine: 'valkey', version: '8.0.1' }, 'valkey/valkey:8.0.1', 'valkey', '8.0.1'],
    [{ engine: 'valkey' }, 'valkey/valkey:8.0', 'valkey', '8.0'],
    [
      { engine: 'valkey', image: 'registry.example.com/valkey:8.0.1-custom' },
      'registry.example.com/valkey:8.0.1-custom',
      'valkey',
      '8.0',
    ],
  ];
  const kinds: Array<[string, (fields: Json) => KubeObject]> = [
    ['Redis', (fields) => redisSet({ ...withoutVersion(designSpec()), ...fields })],
    ['RedisCluster', (fields) => shardSet({ ...withoutVersion(articleSpec()), ...fields })],
  ];
  for (const [kind, set] of kinds) {
    for (const [fields, image, engine, version] of cases) {
      await t.test(`${kind} ${JSON.stringify(fields)}`, () => {
        const s = set(fields);
        assert.equal(redisContainer(s)['image'], image);
        // Absent means redis: a label new on every template would roll every existing Redis once.
        assert.equal(labels(s)[ENGINE_LABEL], engine === 'redis' ? undefined : engine);
        assert.equal(labels(s)[VERSION_LABEL], version);
      });
    }
  }
  await t.test('Redis with no version at all is redis 7.2', () => {
    const s = redisSet(withoutVersion(designSpec()));
    assert.equal(redisContainer(s)['image'], 'redis:7.2');
    assert.equal(labels(s)[VERSION_LABEL], '7.2');
  });
});

function withoutVersion(spec: Json): Json {
  const { version: _version, ...rest } = spec;
  return rest;
}

test('one pod spec serves both engines: between redis 7.2 and valkey 8.0 only the image and the labels differ', async (t) => {
  const pairs: Array<[string, KubeObject, KubeObject]> = [
    ['Redis', redisSet(designSpec()), redisSet({ ...designSpec(), engine: 'valkey', version: '8.0' })],
    [
      'RedisCluster',
      shardSet({ ...articleSpec(), version: '7.2' }),
      shardSet({ ...articleSpec(), engine: 'valkey', version: '8.0' }),
    ],
  ];
  for (const [kind, onRedis, onValkey] of pairs) {
    await t.test(kind, () => {
      const strip = (set: KubeObject) => {
        const tpl = structuredClone(template(set));
        delete (tpl['metadata'] as Json)['labels'];
        for (const c of get(tpl, 'spec', 'containers') as Json[]) if (c['name'] === 'redis') delete c['image'];
        return tpl;
      };
      assert.deepEqual(strip(onValkey), strip(onRedis));
      assert.notDeepEqual(template(onValkey), template(onRedis), 'an engine change is a template change: a rollout');
      // The names both images have: redis-server and redis-cli (the valkey images link them).
      const text = JSON.stringify(redisContainer(onValkey));
      assert.match(text, /exec redis-server /);
      assert.match(text, /redis-cli/);
      assert.doesNotMatch(text, /valkey-(server|cli)/);
    });
  }
});

/** A Redis whose StatefulSets the hook applied for `running`, with pods labelled as their template. */
function redisRunning(running: Json, podVersion?: string) {
  const children = applied(desiredFor({ ...designSpec(), ...running }));
  const podLabels = labels(find(children, 'StatefulSet', MASTER_SET));
  const pods = healthyPods().map((p) => ({
    ...p,
    metadata: {
      ...p.metadata,
      labels: {
        ...p.metadata.labels,
        ...(podLabels[ENGINE_LABEL] !== undefined ? { [ENGINE_LABEL]: podLabels[ENGINE_LABEL] } : {}),
        [VERSION_LABEL]: podVersion ?? podLabels[VERSION_LABEL]!,
      },
    },
  }));
  return { children, pods };
}

test('Redis: a change of engine or version is judged against what runs; a refused one changes no child', async (t) => {
  // [running, some pods still at this version, wanted, the refusal or undefined]
  const cases: Array<[Json, string | undefined, Json, RegExp | undefined]> = [
    [{ version: '7.2' }, undefined, { engine: 'valkey', version: '8.0' }, undefined],
    [{ version: '7.2.6' }, undefined, { engine: 'valkey' }, undefined],
    [{ engine: 'valkey', version: '8.0.1' }, undefined, { version: '7.2.6' }, undefined],
    [{ version: '7.0' }, undefined, { version: '7.2' }, undefined],
    [
      { version: '7.0' },
      undefined,
      { engine: 'valkey', version: '8.0' },
      /^spec\.engine: cannot move from redis 7\.0 to valkey 8\.0: .*move to redis 7\.2 first/,
    ],
    [{ version: '7.2' }, undefined, { version: '7.0' }, /^spec\.version: cannot go from redis 7\.2 down to 7\.0/],
    // An upgrade not rolled out yet: a pod still runs 7.0, which cannot follow a valkey master.
    [
      { version: '7.2' },
      '7.0.15',
      { engine: 'valkey' },
      /^spec\.engine: cannot move from redis 7\.0\.15 to valkey 8\.0/,
    ],
  ];
  for (const [running, podVersion, wanted, refusal] of cases) {
    await t.test(
      `${JSON.stringify(running)}${podVersion ? ` (a pod at ${podVersion})` : ''} -> ${JSON.stringify(wanted)}`,
      () => {
        const { children, pods } = redisRunning(running, podVersion);
        const spec = { ...withoutVersion(designSpec()), ...wanted };
        const answer = sync(request({ parent: redis(spec), children, related: pods }));
        const specValid = condition(answer.status, 'SpecValid');
        if (refusal === undefined) {
          assert.equal(specValid?.['status'], 'True', JSON.stringify(specValid));
          const set = find(answer.children, 'StatefulSet', MASTER_SET);
          assert.equal(labels(set)[ENGINE_LABEL] ?? 'redis', wanted['engine'] ?? 'redis');
          return;
        }
        assert.equal(specValid?.['status'], 'False');
        assert.match(String(specValid?.['message']), refusal);
        assert.deepEqual(byName(answer.children), byName(children.map(lastAppliedOf)));
      },
    );
  }
});

test('RedisCluster: the move to valkey and back is allowed from redis 7.2, refused from 7.0, every shard as last applied', async (t) => {
  const at72 = { ...articleSpec(), version: '7.2' };
  const onValkey = { ...articleSpec(), engine: 'valkey', version: '8.0.1' };
  const cases: Array<[string, Json, Json, boolean]> = [
    ['redis 7.2 -> valkey 8.0.1', at72, onValkey, true],
    ['valkey 8.0.1 -> redis 7.2', onValkey, at72, true],
    ['redis 7.0 -> valkey 8.0.1', articleSpec(), onValkey, false],
    ['valkey 8.0.1 -> redis 7.0', onValkey, articleSpec(), false],
  ];
  for (const [name, from, to, allowed] of cases) {
    await t.test(name, () => {
      const observed = observedFor(from);
      const answer = syncCluster({ parent: redisCluster(to), children: observed });
      assert.equal(condition(answer.status, 'SpecValid')?.['status'], allowed ? 'True' : 'False');
      const set = find(answer.children, 'StatefulSet', SHARD_SET);
      const runs = allowed ? to : from;
      assert.equal(labels(set)[ENGINE_LABEL] ?? 'redis', runs['engine'] ?? 'redis');
      assert.equal(labels(set)[VERSION_LABEL], runs['version']);
      if (!allowed) {
        assert.match(String(condition(answer.status, 'SpecValid')?.['message']), /^spec\.engine: cannot move from /);
        assert.deepEqual(byName(answer.children), byName(observed.map(lastAppliedOf)));
      }
    });
  }
});

// The hostile input of hostile-input.test.ts is input the real kube-apiserver accepts: it stores
// it, and what it stores (read back as it serves it, the text Metacontroller forwards) is then
// sent to the hook through the real fastify app.
// - A Redis and a RedisCluster whose spec.affinity (a field that keeps unknown fields) nests 9000
//   levels: stored (the API server's own limit is 10000; its managedFields nest as deep), and the
//   hook answers InvalidSpec naming spec.affinity with every observed child kept.
// - Secret and ConfigMap data keys `__proto__` and `constructor`, label keys `constructor` and
//   `prototype`, and `__proto__` / `constructor.prototype` keys in a Redis's nodeSelector,
//   podAnnotations and affinity: stored, and the hook answers 200 with a valid spec, writing no
//   `__proto__` key into any child. (A `__proto__` label or annotation KEY is refused by the API
//   server itself, which this file checks too.)
// Owns: one control plane (API server and etcd only, Service CIDR 198.19.173.0/24), stopped in
// `after`. Skips, with the reason, when the control plane is not built.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { buildApp } from '../../src/server/app.ts';
import { isBuilt } from '../k8s/build.ts';
import { startControlPlane, type ControlPlane } from '../k8s/control-plane.ts';
import { isRecord } from '../support/records.ts';
import { childId, observedChildIds, REPO_ROOT, reportsInvalidSpec, silentLogger } from './helpers.ts';

const SUBNET = 173;
const DEPTH = 9000;
type Json = Record<string, unknown>;

function missing(): string | undefined {
  try {
    return isBuilt() ? undefined : 'the control plane is not built (npm run cluster:build)';
  } catch (err) {
    return `the control plane cannot be located: ${err instanceof Error ? err.message : String(err)}`;
  }
}

const fixtureText = (file: string) => readFileSync(new URL(`test/fixtures/${file}`, REPO_ROOT), 'utf8');
const deepText = (depth: number) => '{"a":'.repeat(depth) + '"leaf"' + '}'.repeat(depth);
const PLACEHOLDER = '"\\u0000stored\\u0000"';

/** A fixture request whose parent (or one object) is the stored text, spliced in as it came. */
function requestWith(file: string, place: (body: Json) => void, stored: string): string {
  const body = JSON.parse(fixtureText(file)) as Json;
  place(body);
  const text = JSON.stringify(body);
  assert.ok(text.includes(PLACEHOLDER));
  return text.replace(PLACEHOLDER, () => stored);
}
const asParent = (body: Json) => void (body['parent'] = '\u0000stored\u0000');

describe(
  'hostile input stored by the real kube-apiserver, then sent to the hook',
  { skip: missing() ?? false, timeout: 180_000 },
  () => {
    let cp: ControlPlane;
    const server = buildApp({ logger: silentLogger(), defaultMetrics: false });

    before(async () => {
      cp = await startControlPlane({ subnet: SUBNET, controllers: false });
      const crds = ['crd.yaml', 'rediscluster-crd.yaml'].flatMap((f) => [
        '-f',
        path.join(new URL('manifests', REPO_ROOT).pathname, f),
      ]);
      await cp.kubectl(['apply', ...crds]);
      await cp.kubectl(['wait', '--for=condition=Established', '--timeout=60s', ...crds]);
    });
    after(async () => {
      await server.close();
      await cp?.stop();
    });

    /** Creates the object from its JSON text; resolves with the stored object's text as the API server serves it. */
    const create = (url: string, text: string) => cp.kubectl(['create', '--raw', url, '-f', '-'], text);

    async function hook(url: string, text: string): Promise<Json> {
      const res = await server.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/json' },
        payload: text,
      });
      assert.equal(res.statusCode, 200, `${url}: ${res.statusCode} ${res.body.slice(0, 300)}`);
      return JSON.parse(res.body) as Json;
    }

    function conditionMessages(answer: Json): string {
      const status = isRecord(answer['status']) ? answer['status'] : {};
      const conditions = Array.isArray(status['conditions']) ? status['conditions'] : [];
      return conditions.map((c: unknown) => (isRecord(c) ? String(c['message']) : '')).join(' | ');
    }

    for (const [kind, plural, file, route] of [
      ['Redis', 'redises', 'sync-request.json', '/sync'],
      ['RedisCluster', 'redisclusters', 'rediscluster-sync-request.json', '/rediscluster/sync'],
    ] as const) {
      test(`${kind}: spec.affinity nested ${DEPTH} levels is stored, and the hook answers InvalidSpec naming it, every child kept`, async () => {
        const parent = (JSON.parse(fixtureText(file)) as { parent: { metadata: { name: string }; spec: Json } }).parent;
        const spec = JSON.stringify({ ...parent.spec, affinity: '\u0000deep\u0000' }).replace(
          '"\\u0000deep\\u0000"',
          () => `{"nodeAffinity":${deepText(DEPTH)}}`,
        );
        const text = `{"apiVersion":"redis.example.com/v1","kind":"${kind}","metadata":{"name":"${parent.metadata.name}","namespace":"default"},"spec":${spec}}`;
        const stored = await create(`/apis/redis.example.com/v1/namespaces/default/${plural}`, text);
        assert.ok(stored.length > DEPTH * 6, 'the deep field was stored, not pruned');

        const request = requestWith(file, asParent, stored);
        const answer = await hook(route, request);
        assert.ok(reportsInvalidSpec(answer));
        assert.match(conditionMessages(answer), /spec\.affinity: nests objects or lists more than 32 levels/);
        const returned = new Set((answer['children'] as unknown[]).map(childId));
        const observed = observedChildIds(JSON.parse(fixtureText(file)));
        assert.ok(observed.length > 0);
        for (const id of observed) assert.ok(returned.has(id), `${id} kept`);
      });
    }

    test('the API server refuses nesting past its own limit (10000), so the hook never sees deeper', async () => {
      const text = `{"apiVersion":"redis.example.com/v1","kind":"Redis","metadata":{"name":"deeper","namespace":"default"},"spec":{"version":"7.2","affinity":${deepText(10_050)}}}`;
      await assert.rejects(create('/apis/redis.example.com/v1/namespaces/default/redises', text));
    });

    test('prototype keys: stored by the API server, a 200 from the hook, no __proto__ in any child', async () => {
      const secret = await create(
        '/api/v1/namespaces/default/secrets',
        '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"my-redis-auth","namespace":"default","labels":{"constructor":"x","prototype":"y"}},"data":{"__proto__":"eA==","constructor":"eA==","password":"cHc="}}',
      );
      assert.match(secret, /"data":\{"__proto__":"eA=="/);
      const fixtureConfigMap = (
        JSON.parse(fixtureText('sync-request.json')) as { children: Record<string, Record<string, Json>> }
      ).children['ConfigMap.v1']?.['default/my-redis-config'] as Json & { metadata: Json; data: Json };
      const { uid: _uid, resourceVersion: _rv, creationTimestamp: _ct, ...metadata } = fixtureConfigMap.metadata;
      const configMapText = JSON.stringify({
        ...fixtureConfigMap,
        metadata,
        data: { ...fixtureConfigMap.data, constructor: 'c' },
      }).replace('"data":{', '"data":{"__proto__":"x",');
      const configMap = await create('/api/v1/namespaces/default/configmaps', configMapText);
      assert.match(configMap, /"__proto__":"x"/);
      const parentText = JSON.stringify({
        apiVersion: 'redis.example.com/v1',
        kind: 'Redis',
        metadata: { name: 'my-redis', namespace: 'proto' },
        spec: {
          version: '7.2',
          nodeSelector: { disk: 'ssd' },
          podAnnotations: { note: 'n' },
          affinity: { nodeAffinity: {} },
        },
      })
        .replace('"nodeSelector":{', '"nodeSelector":{"__proto__":"x",')
        .replace('"podAnnotations":{', '"podAnnotations":{"__proto__":"y",')
        .replace(
          '"affinity":{',
          '"affinity":{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}},',
        );
      await cp.kubectl(['create', 'namespace', 'proto']);
      const parent = await create('/apis/redis.example.com/v1/namespaces/proto/redises', parentText);
      assert.match(parent, /"nodeSelector":\{"__proto__":"x"/);
      for (const refused of ['labels', 'annotations']) {
        const text = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p","namespace":"default","${refused}":{"__proto__":"x"}}}`;
        await assert.rejects(create('/api/v1/namespaces/default/configmaps', text), /__proto__/);
      }

      const secretRelated = requestWith(
        'sync-request.json',
        (b) => ((b['related'] as Json)['Secret.v1'] = { 'default/my-redis-auth': '\u0000stored\u0000' }),
        secret,
      );
      const configMapChild = requestWith(
        'sync-request.json',
        (b) => (((b['children'] as Json)['ConfigMap.v1'] as Json)['default/my-redis-config'] = '\u0000stored\u0000'),
        configMap,
      );
      const hostileParent = requestWith('sync-request.json', asParent, parent);
      for (const [name, request] of [
        ['a related Secret', secretRelated],
        ['an observed ConfigMap', configMapChild],
        ['a Redis with __proto__ keys in its spec', hostileParent],
      ] as const) {
        for (const route of ['/sync', '/finalize', '/customize']) {
          const answer = await hook(route, request);
          assert.equal(reportsInvalidSpec(answer), false, `${name}, ${route}: ${conditionMessages(answer)}`);
          assert.doesNotMatch(JSON.stringify(answer), /__proto__|polluted/, `${name}, ${route}`);
        }
      }
    });
  },
);

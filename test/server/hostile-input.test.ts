// Input the API server accepts but a careless hook would choke on, sent through the real fastify
// app (its JSON parser included) to both controllers' routes:
// - objects nested thousands of levels deep: under spec.affinity (a field that keeps unknown
//   fields) the spec is invalid, reported as InvalidSpec naming the field with every child kept;
//   in an observed child or a related object, whatever the depth, the answer is a normal 200 that
//   echoes the child unchanged (never a 500, which Metacontroller would retry for ever);
// - `__proto__`, `constructor` and `prototype` keys in labels, annotations, a Secret's or a
//   ConfigMap's data, the spec: never a 400 or a 500, never a changed prototype.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { buildApp } from '../../src/server/app.ts';
import { isRecord } from '../support/records.ts';
import { childId, observedChildIds, REPO_ROOT, reportsInvalidSpec, silentLogger, syncRequest } from './helpers.ts';

type Json = Record<string, unknown>;
type Body = Json & {
  parent: Json & { spec: Json; metadata: Json };
  children: Record<string, Record<string, Json>>;
  related: Record<string, Record<string, Json>>;
};

const CLUSTER_TEXT = readFileSync(new URL('test/fixtures/rediscluster-sync-request.json', REPO_ROOT), 'utf8');
const redisRequest = () => syncRequest() as Body;
const clusterRequest = () => JSON.parse(CLUSTER_TEXT) as Body;

/** Stands in for a deep value: JSON.stringify itself cannot write one, so it is spliced into the text. */
const DEEP = '\u0000deep\u0000';
const deepText = (depth: number) => '{"a":'.repeat(depth) + '"leaf"' + '}'.repeat(depth);
const payload = (body: unknown, depth = 0) => JSON.stringify(body).replace(JSON.stringify(DEEP), deepText(depth));

/** How deep the value nests, without recursion (the test must not overflow either). */
function depthOf(value: unknown): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [node, depth] = next;
    max = Math.max(max, depth);
    if (typeof node === 'object' && node !== null)
      for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return max;
}

const server = buildApp({ logger: silentLogger(), defaultMetrics: false });
test.after(() => server.close());

async function post(url: string, text: string) {
  const res = await server.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/json' },
    payload: text,
  });
  assert.equal(res.statusCode, 200, `${url} answered ${res.statusCode}: ${res.body.slice(0, 300)}`);
  return { answer: JSON.parse(res.body) as Json, text: res.body };
}

function messages(answer: Json): string {
  const conditions = isRecord(answer['status']) ? answer['status']['conditions'] : undefined;
  return Array.isArray(conditions) ? conditions.map((c) => (isRecord(c) ? String(c['message']) : '')).join(' | ') : '';
}

function assertKeepsEveryChild(request: Body, answer: Json): void {
  const returned = new Set((answer['children'] as unknown[]).map(childId));
  for (const id of observedChildIds(request)) assert.ok(returned.has(id), `observed ${id} missing from the answer`);
}

const routes = [
  { name: 'Redis', sync: '/sync', finalize: '/finalize', customize: '/customize', request: redisRequest },
  {
    name: 'RedisCluster',
    sync: '/rediscluster/sync',
    finalize: '/rediscluster/finalize',
    customize: '/rediscluster/customize',
    request: clusterRequest,
  },
] as const;

for (const r of routes) {
  test(`${r.name}: nesting`, async (t) => {
    await t.test('spec.affinity 3000 levels deep is InvalidSpec naming spec.affinity, every child kept', async () => {
      const body = r.request();
      body.parent.spec['affinity'] = { nodeAffinity: DEEP };
      for (const url of [r.sync, r.finalize]) {
        const { answer } = await post(url, payload(body, 3000));
        assert.ok(reportsInvalidSpec(answer), messages(answer));
        assert.match(messages(answer), /spec\.affinity: nests objects or lists more than 32 levels/);
        assertKeepsEveryChild(body, answer);
      }
      const customized = await post(r.customize, payload(body, 3000));
      assert.ok(Array.isArray(customized.answer['relatedResources']));
    });

    await t.test('an unknown spec field 3000 levels deep is InvalidSpec, every child kept', async () => {
      const body = r.request();
      body.parent.spec['x'] = DEEP;
      const { answer } = await post(r.sync, payload(body, 3000));
      assert.ok(reportsInvalidSpec(answer));
      assert.match(messages(answer), /spec\.x: nests/);
      assertKeepsEveryChild(body, answer);
    });

    await t.test('33 levels is refused, 32 is judged on its merits', async () => {
      const body = r.request();
      const nest = (n: number) => Array.from({ length: n - 1 }).reduce<unknown>((inner) => ({ a: inner }), {});
      body.parent.spec['affinity'] = nest(33);
      assert.match(messages((await post(r.sync, payload(body))).answer), /spec\.affinity: nests/);
      body.parent.spec['affinity'] = nest(32);
      assert.doesNotMatch(messages((await post(r.sync, payload(body))).answer), /nests/);
    });

    await t.test(
      'a child whose last-applied configuration nests 10000 levels is echoed unchanged on an invalid spec',
      async () => {
        const body = r.request();
        body.parent.spec['replicas'] = 'two';
        const [group, inner] = Object.entries(body.children).find(([g]) => g.startsWith('ConfigMap.')) ?? [];
        const child = Object.values(inner ?? {})[0] as Json & { metadata: { name: string; annotations: Json } };
        assert.ok(group !== undefined && child !== undefined);
        const lastApplied = {
          apiVersion: child['apiVersion'],
          kind: child['kind'],
          metadata: { name: child.metadata.name },
          data: { x: DEEP },
        };
        child.metadata.annotations['metacontroller.k8s.io/last-applied-configuration'] = payload(lastApplied, 10000);
        const { answer } = await post(r.sync, payload(body));
        assert.ok(reportsInvalidSpec(answer));
        assertKeepsEveryChild(body, answer);
        const echoed = (answer['children'] as Json[]).find((c) => childId(c) === childId(child));
        // data, x, then the leaf below 10000 objects
        assert.equal(depthOf(echoed), 10000 + 2, 'the deep field came back whole');
      },
    );

    await t.test(
      '300000 levels of lists (30 times the API server limit: nothing here has a depth limit of its own) in spec, status and an echoed child',
      async () => {
        const lists = '['.repeat(300_000) + ']'.repeat(300_000);
        const body = r.request();
        const child = firstOf(body.children, 'Service.v1');
        delete (child['metadata'] as Json)['annotations'];
        body.parent.spec['affinity'] = DEEP;
        body.parent.status = DEEP as unknown as Json;
        child['x'] = DEEP;
        const { answer, text } = await post(r.sync, JSON.stringify(body).replaceAll(JSON.stringify(DEEP), lists));
        assert.match(messages(answer), /spec\.affinity: nests/);
        assertKeepsEveryChild(body, answer);
        assert.ok(text.includes(lists), 'the child came back whole');
      },
    );

    await t.test('a child without last-applied configuration, and a related pod, 10000 levels deep', async () => {
      const body = r.request();
      const child = Object.values(body.children['Service.v1'] ?? {})[0] as Json & { metadata: { annotations?: Json } };
      delete child.metadata.annotations;
      child['x'] = DEEP;
      const podEntry = Object.values(body.related['Pod.v1'] ?? {})[0] as Json;
      podEntry['x'] = 1; // a second deep value would need a second placeholder; the pod's case is below
      const valid = await post(r.sync, payload(body, 10000));
      assert.equal(reportsInvalidSpec(valid.answer), false);
      body.parent.spec['replicas'] = 'two';
      const invalid = await post(r.sync, payload(body, 10000));
      assertKeepsEveryChild(body, invalid.answer);
      const finalizing = await post(r.finalize, payload({ ...body, finalizing: true }, 10000));
      assertKeepsEveryChild(body, finalizing.answer);

      const withPod = r.request();
      (Object.values(withPod.related['Pod.v1'] ?? {})[0] as Json)['spec'] = DEEP;
      assert.equal(reportsInvalidSpec((await post(r.sync, payload(withPod, 10000))).answer), false);
      withPod.parent.status = DEEP as unknown as Json;
      await post(r.sync, payload(withPod, 10000));
    });
  });

  test(`${r.name}: prototype keys are data or dropped, never a refusal`, async (t) => {
    // Each case puts a marker entry in one map; the hostile keys are written into the text beside
    // it, so they arrive as an attacker would send them (an object literal cannot hold __proto__).
    const POLLUTE = '{"polluted":"yes"}';
    const cases: Array<[string, (body: Body) => Json, string]> = [
      [
        'a parent label __proto__ (and constructor, prototype)',
        (b) => (b.parent.metadata['labels'] ??= {}) as Json,
        `"__proto__":${POLLUTE},"constructor":"c","prototype":"p"`,
      ],
      ['a Secret in related with data key __proto__', (b) => addSecret(b), `"__proto__":"eA==","constructor":"eA=="`],
      [
        'a related pod annotation __proto__',
        (b) => metaMap(firstOf(b.related, 'Pod.v1'), 'annotations'),
        `"__proto__":${POLLUTE},"constructor":"x"`,
      ],
      [
        'a related pod label __proto__',
        (b) => metaMap(firstOf(b.related, 'Pod.v1'), 'labels'),
        `"__proto__":"x","toString":"x"`,
      ],
      [
        'a child ConfigMap with data keys __proto__, constructor.prototype',
        (b) => dataOf(firstOf(b.children, 'ConfigMap.v1')),
        `"__proto__":"x","constructor":{"prototype":${POLLUTE}}`,
      ],
      [
        'spec.nodeSelector with a __proto__ key',
        (b) => (b.parent.spec['nodeSelector'] ??= {}) as Json,
        `"__proto__":${POLLUTE}`,
      ],
      [
        'spec.podAnnotations with a __proto__ key',
        (b) => (b.parent.spec['podAnnotations'] ??= {}) as Json,
        `"__proto__":${POLLUTE}`,
      ],
      [
        'spec.affinity with __proto__ and constructor.prototype',
        (b) => (b.parent.spec['affinity'] ??= {}) as Json,
        `"__proto__":${POLLUTE},"constructor":{"prototype":${POLLUTE}}`,
      ],
    ];
    for (const [name, target, hostile] of cases) {
      await t.test(name, async () => {
        const body = r.request();
        target(body)[MARK] = 'm';
        const text = payload(body).replace(`${JSON.stringify(MARK)}:"m"`, hostile);
        assert.ok(text.includes(hostile), 'the hostile keys are in the body');
        for (const url of [r.finalize, r.customize]) await post(url, text);
        const { answer } = await post(r.sync, text);
        assert.equal(reportsInvalidSpec(answer), false, messages(answer));
        assertKeepsEveryChild(body, answer);
        assert.equal(({} as Json)['polluted'], undefined, 'Object.prototype untouched');
        assert.doesNotMatch(JSON.stringify(answer), /polluted/);
      });
    }

    await t.test(
      "a child's last-applied configuration with __proto__ keys is echoed as applied on an invalid spec",
      async () => {
        const body = r.request();
        body.parent.spec['replicas'] = 'two';
        const child = firstOf(body.children, 'ConfigMap.v1') as Json & {
          metadata: { annotations: Record<string, string> };
        };
        const key = 'metacontroller.k8s.io/last-applied-configuration';
        const applied = child.metadata.annotations[key] ?? '';
        child.metadata.annotations[key] = applied.replace(
          '"labels":{',
          '"labels":{"__proto__":{"polluted":"yes"},"constructor":"c",',
        );
        assert.notEqual(child.metadata.annotations[key], applied);
        const { answer } = await post(r.sync, payload(body));
        assertKeepsEveryChild(body, answer);
        const echoed = (answer['children'] as Json[]).find((c) => childId(c) === childId(child)) as {
          metadata: { labels: Json };
        };
        // An own key, as it was applied (so Metacontroller sees no change), never the prototype.
        assert.deepEqual(Object.getOwnPropertyDescriptor(echoed.metadata.labels, '__proto__')?.value, {
          polluted: 'yes',
        });
        assert.equal(echoed.metadata.labels['constructor'], 'c');
        assert.equal(({} as Json)['polluted'], undefined);
      },
    );
  });
}

const MARK = '\u0000mark';

function firstOf(map: Body['children'], group: string): Json {
  const object = Object.values(map[group] ?? {})[0];
  assert.ok(object !== undefined, `the fixture has a ${group}`);
  return object;
}

function metaMap(object: Json, key: 'labels' | 'annotations'): Json {
  const metadata = object['metadata'] as Json;
  return (metadata[key] ??= {}) as Json;
}

function dataOf(object: Json): Json {
  return (object['data'] ??= {}) as Json;
}

function addSecret(body: Body): Json {
  const data: Json = { password: 'cHc=' };
  (body.related['Secret.v1'] ??= {})['default/extra'] = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'extra', namespace: 'default' },
    data,
  };
  return data;
}

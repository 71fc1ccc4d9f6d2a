// The attack suite's property-based half: hostile requests to BOTH controllers' hooks (Redis and
// RedisCluster; sync, finalize and customize) through the real fastify app, its JSON parser
// included. Each request starts from a valid fixture (test/fixtures) and is mutated: spec fields,
// metadata maps, observed children and related objects replaced or extended with wrong types,
// huge numbers, nesting thousands of levels deep, `__proto__` / `constructor` / `prototype`
// keys, control characters, very long strings and odd unicode; or whole hostile objects are
// added to the children and related maps. For every request:
// - never a 5xx;
// - a 4xx only for a body that is not a Metacontroller request at all (the wire schema refuses
//   it), and then `not_a_hook_request` with a message; every other body is a 200;
// - on an invalid spec, every observed child comes back (as last applied), so Metacontroller
//   deletes and changes nothing, and the status's SpecValid and Ready conditions name the field
//   (`spec`, `spec.xxx`, or `metadata.name` for a name too long);
// - Object.prototype is never touched.
// fast-check prints the seed and the shrunk request on failure; `fc.toStringMethod` keeps the
// 85 KB fixture out of the report.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { validateSpec } from '../../src/api/validate.ts';
import { validateRedisClusterSpec as validateClusterSpec } from '../../src/api/rediscluster-validate.ts';
import { CustomizeRequest, HookRequestBody, wireChecker } from '../../src/hook/index.ts';
import { buildApp } from '../../src/server/app.ts';
import { isRecord } from '../support/records.ts';
import { childId, observedChildIds, REPO_ROOT, reportsInvalidSpec, silentLogger } from './helpers.ts';

type Json = Record<string, unknown>;
type Path = Array<string | number>;

/** Runs per controller: about three seconds for the file; ATTACK_RUNS=2000 for a longer hunt. */
const RUNS = Number(process.env['ATTACK_RUNS'] ?? 200);

const KINDS = {
  redis: {
    routes: { sync: '/sync', finalize: '/finalize', customize: '/customize' },
    fixture: 'sync-request.json',
    validate: validateSpec,
  },
  cluster: {
    routes: { sync: '/rediscluster/sync', finalize: '/rediscluster/finalize', customize: '/rediscluster/customize' },
    fixture: 'rediscluster-sync-request.json',
    validate: validateClusterSpec,
  },
} as const;
type Kind = keyof typeof KINDS;
const FIXTURES: Record<Kind, string> = {
  redis: readFileSync(new URL(`test/fixtures/${KINDS.redis.fixture}`, REPO_ROOT), 'utf8'),
  cluster: readFileSync(new URL(`test/fixtures/${KINDS.cluster.fixture}`, REPO_ROOT), 'utf8'),
};

// Values JSON.stringify cannot write are placeholders, replaced in the text: nesting deeper than
// it survives, and keys an object literal cannot hold (`__proto__`) or fastify's parser drops.
const DEEP = (depth: number) => `\u0000deep:${depth}\u0000`;
const PROTO_MARK = '\u0000proto\u0000';
const PROTO_ENTRIES = [
  '"__proto__":{"polluted":"yes"}',
  '"__proto__":"x"',
  '"__proto__":null',
  '"__proto__":[{"polluted":"yes"}]',
  '"constructor":{"prototype":{"polluted":"yes"}}',
  '"constructor":"c"',
  '"prototype":{"polluted":"yes"}',
  '"toString":"t"',
  '"hasOwnProperty":1',
];

function render(value: unknown): string {
  return JSON.stringify(value)
    .replace(
      /"\\u0000deep:(\d+)\\u0000"/g,
      (_, n: string) => '{"a":'.repeat(Number(n)) + '"leaf"' + '}'.repeat(Number(n)),
    )
    .replace(/"\\u0000proto\\u0000":(\d+)/g, (_, i: string) => PROTO_ENTRIES[Number(i)] ?? '"x":1');
}

const CONTROL = [
  '\u0000',
  '\u0001',
  '\t',
  '\n',
  '\r',
  '\u001b[31m',
  '\u007f',
  '\u0085',
  '\u2028',
  '\u202e',
  '\ufeff',
  '\ud800',
  '%00',
  '$(id)',
  '`id`',
  '\\',
];
const hostileString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc
    .tuple(fc.string({ maxLength: 8 }), fc.constantFrom(...CONTROL), fc.string({ maxLength: 8 }))
    .map(([a, c, b]) => a + c + b),
  fc.constantFrom(300, 5000, 100_000).map((n) => 'x'.repeat(n)),
  fc.constantFrom(
    '__proto__',
    'constructor',
    'prototype',
    'toString',
    'hasOwnProperty',
    'valueOf',
    '',
    ' ',
    '0',
    '-1',
    '1e3',
    '10Gi',
    '7.2',
  ),
);
const hostileNumber = fc.oneof(
  fc.double(),
  fc.integer(),
  fc.constantFrom(1e308, -1e308, 2 ** 53 + 2, -(2 ** 63), 2 ** 31, -1, 0, -0, 0.5, 1e-320),
);
const deep = fc.constantFrom(33, 3000, 12_000).map(DEEP);
const protoObject = fc
  .tuple(
    fc.nat(PROTO_ENTRIES.length - 1),
    fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 2 }),
  )
  .map(([i, rest]) => ({ [PROTO_MARK]: i, ...rest }));
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  { weight: 2, arbitrary: hostileString },
  { weight: 2, arbitrary: hostileNumber },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(true, false, null, [], {}, [null], { '': '' }) },
  { weight: 2, arbitrary: deep },
  { weight: 2, arbitrary: protoObject },
);
/** A map key: hostile text, or one of the prototype keys (written in place of the marker). */
const hostileKey = fc.oneof(
  hostileString,
  fc.nat(PROTO_ENTRIES.length - 1).map((i) => ({ proto: i })),
);

/** Every path into a JSON value, parents before children (the fixtures are small and shallow). */
function pathsOf(value: unknown, prefix: Path = []): Path[] {
  const entries: Array<[string | number, unknown]> = Array.isArray(value)
    ? value.map((v, i) => [i, v])
    : isRecord(value)
      ? Object.entries(value)
      : [];
  return entries.flatMap(([key, child]) => [[...prefix, key], ...pathsOf(child, [...prefix, key])]);
}

const isObjectPath = (p: Path) => (p[0] === 'children' || p[0] === 'related') && p.length >= 3;
/**
 * Fields of an observed object the wire schema checks: a mutation there may make the body not a Metacontroller request.
 */
const isIdentity = (p: Path) =>
  p[0] === 'finalizing' ||
  p.length <= 2 ||
  (p[0] === 'parent' && (p[1] === 'metadata' || p[1] === 'spec' || p[1] === 'status') && p.length === 2) ||
  (p[0] === 'parent' && p[1] === 'metadata' && ['name', 'namespace', 'uid'].includes(String(p[2])) && p.length === 3) ||
  (isObjectPath(p) &&
    (p.length === 3 || ((p[3] === 'apiVersion' || p[3] === 'kind' || p[3] === 'metadata') && p.length === 4))) ||
  (isObjectPath(p) && p[3] === 'metadata' && (p[4] === 'name' || p[4] === 'namespace') && p.length === 5);

interface Target {
  paths: Path[];
  /** Spec and metadata first: what the hook interprets. */
  hot: Path[];
  /** Maps a key can be added to: labels, annotations, data, config, nodeSelector... */
  maps: Path[];
}

function targets(kind: Kind): Target {
  const fixture = JSON.parse(FIXTURES[kind]) as Json;
  const paths = pathsOf(fixture).filter((p) => p[0] !== 'controller');
  const hot = paths.filter((p) => p[0] === 'parent');
  const maps = [
    ['parent', 'metadata', 'labels'],
    ['parent', 'metadata', 'annotations'],
    ['parent', 'spec'],
    ['parent', 'spec', 'config'],
    ['parent', 'spec', 'nodeSelector'],
    ['parent', 'spec', 'podAnnotations'],
    ['parent', 'spec', 'affinity'],
    ...paths.filter(
      (p) =>
        isObjectPath(p) &&
        ((p[3] === 'metadata' && (p[4] === 'labels' || p[4] === 'annotations')) || p[3] === 'data') &&
        p.length === 5,
    ),
    ...paths.filter((p) => isObjectPath(p) && p.length === 3).map((p) => [...p, 'metadata', 'labels']),
  ];
  return { paths, hot, maps };
}
const TARGETS: Record<Kind, Target> = { redis: targets('redis'), cluster: targets('cluster') };

type Mutation =
  | { op: 'replace'; hot: boolean; index: number; value: unknown }
  | { op: 'delete'; hot: boolean; index: number }
  | { op: 'addKey'; index: number; key: string | { proto: number }; value: unknown }
  | { op: 'addObject'; related: boolean; object: Json };

const KUBE_KINDS = [
  ['v1', 'Pod'],
  ['v1', 'Secret'],
  ['v1', 'ConfigMap'],
  ['v1', 'PersistentVolumeClaim'],
  ['v1', 'Service'],
  ['apps/v1', 'StatefulSet'],
  ['batch/v1', 'Job'],
  ['redis.example.com/v1', 'RedisBackup'],
] as const satisfies ReadonlyArray<readonly [string, string]>;
const hostileObject: fc.Arbitrary<Json> = fc
  .record({
    kind: fc.constantFrom<readonly [string, string]>(...KUBE_KINDS),
    name: fc.oneof(fc.constantFrom('my-redis-master-0', 'order-cache-shard-0-0', 'my-redis-auth', 'x'), hostileString),
    namespace: fc.constantFrom('default', 'default', 'elsewhere'),
    labels: fc.dictionary(hostileString, hostileValue, { maxKeys: 3 }),
    body: fc.dictionary(fc.constantFrom('spec', 'status', 'data', 'stringData', 'x'), fc.oneof(hostileValue, deep), {
      maxKeys: 3,
    }),
  })
  .map(({ kind: [apiVersion, kind], name, namespace, labels, body }) => ({
    apiVersion,
    kind,
    metadata: { name, namespace, labels },
    ...body,
  }));

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('replace' as const),
      hot: fc.boolean(),
      index: fc.nat(),
      value: hostileValue,
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('delete' as const), hot: fc.boolean(), index: fc.nat() }) },
  {
    weight: 3,
    arbitrary: fc.record({ op: fc.constant('addKey' as const), index: fc.nat(), key: hostileKey, value: hostileValue }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant('addObject' as const), related: fc.boolean(), object: hostileObject }),
  },
);

/** Applies a mutation; returns whether it only touched content (never the wire schema's fields). */
function apply(body: Json, kind: Kind, m: Mutation): boolean {
  const t = TARGETS[kind];
  if (m.op === 'addObject') {
    const where = m.related ? 'related' : 'children';
    if (body[where] !== undefined && !isRecord(body[where])) return true; // an earlier mutation replaced the map
    const map = (body[where] ??= {}) as Record<string, Json>;
    const object = m.object as { apiVersion: string; kind: string; metadata: { name: string; namespace: string } };
    const group = `${object.kind}.${object.apiVersion}`;
    (map[group] ??= {})[`${object.metadata.namespace}/${object.metadata.name}`] = object;
    return true;
  }
  const path =
    m.op === 'addKey'
      ? (t.maps[m.index % t.maps.length] ?? [])
      : ((m.hot ? t.hot : t.paths)[m.index % (m.hot ? t.hot : t.paths).length] ?? []);
  let holder: unknown = body;
  const steps = m.op === 'addKey' ? path : path.slice(0, -1);
  for (const [i, key] of steps.entries()) {
    if (!isRecord(holder) && !Array.isArray(holder)) return true; // an earlier mutation replaced it
    const h = holder as Record<string | number, unknown>;
    if (m.op === 'addKey' && h[key] === undefined && i === steps.length - 1) h[key] = {};
    holder = h[key];
  }
  if (!isRecord(holder) && !Array.isArray(holder)) return true;
  const h = holder as Record<string | number, unknown>;
  if (m.op === 'addKey') {
    if (!isRecord(holder)) return true;
    if (typeof m.key === 'string') h[m.key] = m.value;
    else h[PROTO_MARK] = m.key.proto;
    return !isIdentity([...path, 'x']) && !(path.length === 4 && isObjectPath(path) && path[3] === 'metadata');
  }
  const last = path.at(-1);
  if (last === undefined) return true;
  if (m.op === 'delete') {
    if (Array.isArray(holder) && typeof last === 'number') holder.splice(last, 1);
    else delete h[last];
  } else h[last] = m.value;
  return !isIdentity(path);
}

interface Attack {
  kind: Kind;
  route: 'sync' | 'finalize' | 'customize';
  finalizing: boolean;
  mutations: Mutation[];
}

const attack = (kind: Kind): fc.Arbitrary<Attack> =>
  fc.record({
    kind: fc.constant(kind),
    route: fc.constantFrom('sync', 'sync', 'finalize', 'customize'),
    finalizing: fc.boolean(),
    mutations: fc.array(mutation, { minLength: 1, maxLength: 4 }),
  });

const server = buildApp({ logger: silentLogger(), defaultMetrics: false });
/** The parser the routes use (prototype keys dropped), to read the body as the hook saw it. */
const routeParser = server.getDefaultJsonParser('remove', 'remove');
function parsedAsServed(text: string): unknown {
  let parsed: unknown;
  // Callback-style (see src/server/hook-scope.ts): the answer comes through the callback, synchronously.
  void routeParser({} as never, text, (error: Error | null, value?: unknown) => {
    if (error !== null) throw error;
    parsed = value;
  });
  return parsed;
}
const hookBody = wireChecker(HookRequestBody);
const customizeBody = wireChecker(CustomizeRequest);

/** A field path: `spec`, `spec.xxx`, or the parent's `metadata.name` (too long a name is refused too). */
const FIELD = /(^|[^\w.])(spec|metadata\.name)(\.|\[|:| )/;
const seen = { ok: 0, refused: 0, invalid: 0, kept: 0 };

function conditionsOf(answer: Json): Json[] {
  const status = isRecord(answer['status']) ? answer['status'] : {};
  return Array.isArray(status['conditions']) ? status['conditions'].filter(isRecord) : [];
}

async function check(a: Attack & { text: string; contentOnly: boolean }): Promise<void> {
  const { routes, validate } = KINDS[a.kind];
  const res = await server.inject({
    method: 'POST',
    url: routes[a.route],
    headers: { 'content-type': 'application/json' },
    payload: a.text,
  });
  assert.ok(res.statusCode < 500, `a ${res.statusCode}: ${res.body.slice(0, 400)}`);
  assert.equal(({} as Json)['polluted'], undefined, 'Object.prototype was changed');
  const answer = JSON.parse(res.body) as Json;
  const body = parsedAsServed(a.text);
  const isRequest = (a.route === 'customize' ? customizeBody : hookBody).is(body);
  if (a.contentOnly) assert.ok(isRequest, 'a mutation of content only made the body fail the wire schema');
  if (!isRequest) {
    seen.refused++;
    assert.equal(res.statusCode, 400, 'a body that is not a hook request is a 400');
    assert.equal(answer['error'], 'not_a_hook_request');
    assert.match(String(answer['message']), /^not a Metacontroller hook request: \S/);
    return;
  }
  assert.equal(res.statusCode, 200, `a hook request was refused: ${res.body.slice(0, 400)}`);
  seen.ok++;
  if (a.route === 'customize') {
    assert.ok(Array.isArray(answer['relatedResources']));
    return;
  }
  assert.ok(Array.isArray(answer['children']) && isRecord(answer['status']), 'a 200 has a status and a children list');
  const parent = (body as { parent: { metadata: { name: string }; spec?: unknown } }).parent;
  const invalid = !validate(parent.metadata.name, parent.spec).ok;
  assert.equal(reportsInvalidSpec(answer), invalid, 'InvalidSpec is reported exactly when the spec is invalid');
  if (!invalid) return;
  seen.invalid++;
  for (const c of conditionsOf(answer)) {
    if ((c['type'] === 'SpecValid' || c['type'] === 'Ready') && c['reason'] === 'InvalidSpec') {
      assert.match(
        String(c['message']),
        FIELD,
        `${String(c['type'])} does not name the field: ${String(c['message'])}`,
      );
    }
  }
  const observed = observedChildIds(body);
  const returned = answer['children'] as unknown[];
  assert.ok(
    returned.length >= observed.length,
    `invalid spec: ${returned.length} children returned, ${observed.length} observed`,
  );
  const ids = new Set(returned.map(childId));
  for (const id of observed) assert.ok(ids.has(id), `invalid spec: observed ${id} missing from the answer`);
  if (observed.length > 0) seen.kept++;
}

function build(a: Attack): Attack & { text: string; contentOnly: boolean } {
  const body = JSON.parse(FIXTURES[a.kind]) as Json;
  let contentOnly = true;
  for (const m of a.mutations) contentOnly = apply(body, a.kind, m) && contentOnly;
  body['finalizing'] = a.finalizing;
  const text = render(body);
  return {
    ...a,
    text,
    contentOnly,
    [fc.toStringMethod]: () =>
      `POST ${KINDS[a.kind].routes[a.route]} finalizing=${a.finalizing} ${JSON.stringify(a.mutations).slice(0, 1500)}`,
  } as Attack & { text: string; contentOnly: boolean };
}

test('attack suite: hostile specs, metadata and observed objects through both hooks', async (t) => {
  t.after(() => server.close());
  for (const kind of ['redis', 'cluster'] as const) {
    await t.test(kind, async () => {
      await fc.assert(fc.asyncProperty(attack(kind).map(build), check), { numRuns: RUNS });
    });
  }
  t.diagnostic(`answers: ${JSON.stringify(seen)}`);
  // The generators reach every kind of answer the properties are about.
  assert.ok(seen.refused > 0 && seen.ok > 0 && seen.invalid > 0 && seen.kept > 0, JSON.stringify(seen));
});

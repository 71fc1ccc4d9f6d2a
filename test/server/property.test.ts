// No input breaks the hook service: thousands of random and mutated requests (fast-check),
// through fastify's inject, each answered with 200/400/413/415 and a JSON body (never a 500: no
// input may make the hook fail); and an invalid spec never returns fewer children than were
// observed (anything missing would be deleted by Metacontroller). No network: inject only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { validateSpec } from '../../src/api/validate.ts';
import { buildApp } from '../../src/server/app.ts';
import { isRecord } from '../support/records.ts';
import { childId, FIXTURE_TEXT, observedChildIds, reportsInvalidSpec, silentLogger, syncRequest } from './helpers.ts';

type Path = Array<string | number>;
type Json = unknown;

const ALLOWED = new Set([200, 400, 413, 415]);
const RESPONSE_KEYS = new Set(['status', 'children', 'resyncAfterSeconds', 'finalized']);
// Room for the fixture and small mutations; a long string inserted by a mutation goes over.
const BODY_LIMIT = FIXTURE_TEXT.length + 2048;
const RUNS = { mutated: 1200, randomRequest: 600, randomJson: 400, garbage: 300 };

/** Every path into a JSON value, parents before children. */
function pathsOf(value: Json, prefix: Path = []): Path[] {
  const entries: Array<[string | number, Json]> = Array.isArray(value)
    ? value.map((v, i) => [i, v])
    : isRecord(value)
      ? Object.entries(value)
      : [];
  return entries.flatMap(([key, child]) => [[...prefix, key], ...pathsOf(child, [...prefix, key])]);
}

const FIXTURE = syncRequest();
const ALL_PATHS = pathsOf(FIXTURE);
// Most of the fixture is children and related objects; aim half the mutations at what the hook
// actually interprets: the parent's spec and metadata, and the finalizing flag.
const HOT_PATHS = ALL_PATHS.filter(
  (p) => (p[0] === 'parent' && (p[1] === 'spec' || p[1] === 'metadata')) || p[0] === 'finalizing' || p.length <= 2,
);

interface Mutation {
  hot: boolean;
  index: number;
  op: 'delete' | 'replace';
  value: Json;
}

const weirdValue: fc.Arbitrary<Json> = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom<Json>(
    1e308,
    -1e308,
    -1,
    0,
    -0.5,
    2 ** 53 + 2,
    -(2 ** 31),
    2 ** 31,
    1e-300,
    '',
    ' ',
    '0',
    '-1',
    '7.2',
    '10Gi',
    '-10Gi',
    '1e3',
    'redis:latest',
    true,
    false,
    null,
    [],
    {},
    [null],
    { '': '' },
    ['a', 1, {}],
  ),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(1000, 5000, 50_000).map((n) => 'x'.repeat(n)),
);

const mutation: fc.Arbitrary<Mutation> = fc.record({
  hot: fc.boolean(),
  index: fc.nat(),
  op: fc.constantFrom('delete', 'replace'),
  value: weirdValue,
});

function applyMutation(root: Json, m: Mutation): void {
  const paths = m.hot ? HOT_PATHS : ALL_PATHS;
  const path = paths[m.index % paths.length] ?? [];
  let holder: Json = root;
  for (const key of path.slice(0, -1)) {
    holder = isRecord(holder) || Array.isArray(holder) ? (holder as Record<string | number, Json>)[key] : undefined;
  }
  const last = path.at(-1);
  if (last === undefined || !(isRecord(holder) || Array.isArray(holder))) return; // an earlier mutation removed it
  if (m.op === 'delete') {
    if (Array.isArray(holder) && typeof last === 'number') holder.splice(last, 1);
    else delete (holder as Record<string | number, Json>)[last];
  } else {
    (holder as Record<string | number, Json>)[last] = m.value;
  }
}

// Text-level mutations JSON.stringify cannot produce: numbers JSON.parse turns into Infinity,
// -0 or rounded values, and truncated documents.
const textMutation = fc.oneof(
  fc.constant((text: string) => text),
  fc
    .constantFrom('1e999', '-1e999', '-0', '2.0000000000000001', '123456789012345678901234567890', '1E2')
    .map((n) => (text: string) => text.replace(/"replicas":\d+/, `"replicas":${n}`)),
  fc.nat().map((n) => (text: string) => text.slice(0, n % (text.length + 1))),
  fc.tuple(fc.nat(), fc.constantFrom('{', '}', '"', ',', '\\', '\u0000', ']')).map(
    ([n, c]) =>
      (text: string) =>
        text.slice(0, n % text.length) + c + text.slice(n % text.length),
  ),
);

const contentType = fc.oneof(
  { weight: 12, arbitrary: fc.constant('application/json') },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'text/plain',
      'application/x-www-form-urlencoded',
      'application/yaml',
      '',
      'multipart/form-data; boundary=x',
    ),
  },
);
const route = fc.constantFrom('/sync', '/sync', '/finalize', '/customize');

interface Sent {
  route: string;
  contentType: string;
  payload: string;
}

/** A request, shown shortened in counterexamples (the fixture alone is 85 KB). */
function sent(route: string, contentType: string, payload: string): Sent {
  return {
    route,
    contentType,
    payload,
    [fc.toStringMethod]: () =>
      `POST ${route} (${JSON.stringify(contentType)}, ${payload.length} bytes): ${payload.slice(0, 400)}`,
  } as Sent;
}

const mutatedRequests: fc.Arbitrary<Sent> = fc
  .record({ mutations: fc.array(mutation, { minLength: 1, maxLength: 6 }), text: textMutation, route, contentType })
  .map(({ mutations, text, route, contentType }) => {
    const body = syncRequest();
    for (const m of mutations) applyMutation(body, m);
    return sent(route, contentType, text(JSON.stringify(body)));
  });

const metadata = fc.record(
  {
    name: fc.oneof(fc.constantFrom('my-redis', 'a', 'x'.repeat(60)), fc.string()),
    namespace: fc.oneof(fc.constant('default'), fc.string()),
    uid: fc.oneof(fc.uuid(), fc.jsonValue()),
  },
  { requiredKeys: ['name', 'namespace'] },
);
const kubeObject = fc.record(
  {
    apiVersion: fc.constantFrom('v1', 'apps/v1', 'policy/v1'),
    kind: fc.constantFrom('Service', 'StatefulSet', 'ConfigMap', 'Pod'),
    metadata: fc.record({ name: fc.string(), namespace: fc.constant('default') }),
    spec: fc.jsonValue({ maxDepth: 2 }),
  },
  { requiredKeys: ['apiVersion', 'kind', 'metadata'] },
);
const objectMap = fc.dictionary(
  fc.string({ maxLength: 20 }),
  fc.dictionary(fc.string({ maxLength: 20 }), kubeObject, { maxKeys: 3 }),
  { maxKeys: 3 },
);

/** Structurally plausible requests with random specs, children and flags. */
const randomRequests: fc.Arbitrary<Sent> = fc
  .record({
    body: fc.record(
      {
        parent: fc.record(
          {
            apiVersion: fc.constant('redis.example.com/v1'),
            kind: fc.constant('Redis'),
            metadata,
            spec: fc.oneof(
              fc.jsonValue({ maxDepth: 3 }),
              fc.constant((FIXTURE['parent'] as Record<string, Json>)['spec']),
            ),
          },
          { requiredKeys: ['metadata'] },
        ),
        children: objectMap,
        related: objectMap,
        finalizing: fc.oneof(fc.boolean(), fc.jsonValue({ maxDepth: 1 })),
      },
      { requiredKeys: ['parent'] },
    ),
    route,
  })
  .map(({ body, route }) => sent(route, 'application/json', JSON.stringify(body)));

const randomJson: fc.Arbitrary<Sent> = fc
  .record({ value: fc.jsonValue(), route, contentType })
  .map(({ value, route, contentType }) => sent(route, contentType, JSON.stringify(value) ?? 'null'));

const garbage: fc.Arbitrary<Sent> = fc
  .record({ payload: fc.string({ unit: 'binary', maxLength: 200 }), route, contentType })
  .map(({ payload, route, contentType }) => sent(route, contentType, payload));

/**
 * The request as the server reads it: its parser drops every `__proto__` key and every
 * `constructor` key holding a `prototype` (see hook-scope.ts), so a child filed under such a key
 * never reaches the hook. Metacontroller never sends one (its keys are `Kind.version` and object
 * names, neither of which can be `__proto__`); the oracle must not count what the hook never saw.
 */
function requestBody(payload: string): Json {
  try {
    return JSON.parse(payload, (key, value: unknown) =>
      key === '__proto__' || (key === 'constructor' && isRecord(value) && Object.hasOwn(value, 'prototype'))
        ? undefined
        : value,
    ) as Json;
  } catch {
    return undefined;
  }
}

/** The request names a parent whose spec the API validator refuses. */
function specInvalid(body: Json): boolean {
  if (!isRecord(body) || !isRecord(body['parent'])) return false;
  const parent = body['parent'];
  const name = isRecord(parent['metadata']) ? parent['metadata']['name'] : undefined;
  return typeof name === 'string' && !validateSpec(name, parent['spec']).ok;
}

const server = buildApp({ logger: silentLogger(), bodyLimitBytes: BODY_LIMIT, defaultMetrics: false });
const seen = new Map<number, number>();
let invalidWithChildren = 0;

async function check(sent: Sent): Promise<void> {
  const headers: Record<string, string> = sent.contentType === '' ? {} : { 'content-type': sent.contentType };
  const res = await server.inject({ method: 'POST', url: sent.route, headers, payload: sent.payload });
  seen.set(res.statusCode, (seen.get(res.statusCode) ?? 0) + 1);
  assert.ok(ALLOWED.has(res.statusCode), `unexpected status ${res.statusCode}: ${res.body.slice(0, 300)}`);
  const answer = JSON.parse(res.body) as Json; // every answer is JSON
  assert.ok(isRecord(answer), 'the answer is a JSON object');

  if (res.statusCode !== 200) {
    assert.equal(typeof answer['error'], 'string');
    assert.equal(typeof answer['message'], 'string');
    return;
  }
  if (sent.route === '/customize') {
    assert.ok(Array.isArray(answer['relatedResources']));
    return;
  }
  assert.ok(isRecord(answer['status']), 'a 200 always has a status');
  assert.ok(Array.isArray(answer['children']), 'a 200 always has a children list');
  for (const key of Object.keys(answer)) assert.ok(RESPONSE_KEYS.has(key), `unexpected top-level key ${key}`);

  const body = requestBody(sent.payload);
  const observed = observedChildIds(body);
  if (observed.length > 0 && (reportsInvalidSpec(answer) || specInvalid(body))) {
    invalidWithChildren++;
    assert.ok(reportsInvalidSpec(answer), 'an invalid spec is reported as InvalidSpec');
    const children = answer['children'] as unknown[];
    assert.ok(
      children.length >= observed.length,
      `invalid spec: ${children.length} children returned, ${observed.length} observed`,
    );
    const returned = new Set(children.map(childId));
    for (const id of observed) assert.ok(returned.has(id), `invalid spec: observed ${id} missing from the answer`);
  }
}

test('random and mutated requests: always an allowed status with a JSON body; invalid specs keep every child', async (t) => {
  t.after(() => server.close());
  const families: Array<[string, fc.Arbitrary<Sent>, number]> = [
    ['mutated fixture', mutatedRequests, RUNS.mutated],
    ['random requests', randomRequests, RUNS.randomRequest],
    ['random JSON', randomJson, RUNS.randomJson],
    ['garbage', garbage, RUNS.garbage],
  ];
  for (const [name, arbitrary, numRuns] of families) {
    await t.test(name, async () => {
      await fc.assert(fc.asyncProperty(arbitrary, check), { numRuns });
    });
  }
  // The process survived all of it and still serves.
  const health = await server.inject({ method: 'GET', url: '/healthz' });
  assert.equal(health.statusCode, 200);
  // The generators reach every kind of answer that input alone can cause.
  t.diagnostic(
    `answers by status: ${JSON.stringify(Object.fromEntries([...seen].sort()))}; invalid specs with observed children: ${invalidWithChildren}`,
  );
  assert.ok(invalidWithChildren > 0, 'the invalid-spec property was exercised');
  for (const status of [200, 400, 413, 415]) assert.ok((seen.get(status) ?? 0) > 0, `no request produced ${status}`);
});

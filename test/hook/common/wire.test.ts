// The wire schemas (src/hook/common/wire.ts) and their checker (wire-check.ts): what parseHookRequest
// accepts is a HookRequest, refusals name the field, nothing is coerced, the fields the hook
// reads defensively are never a reason to refuse, and the response schemas keep the top level
// strict and everything below it as built.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  CustomizeResponse,
  HookRequest,
  HookRequestBody,
  HookResponse,
  parseHookRequest,
  wireChecker,
} from '../../../src/hook/index.ts';
import { fieldName } from '../../../src/hook/common/wire-check.ts';
import { loadFixture, redis, type Json } from './helpers.ts';

const child = (extra: Json = {}): Json => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'x', namespace: 'default' },
  ...extra,
});

test('every body parseHookRequest accepts becomes a HookRequest: all five keys, as Metacontroller sends them', () => {
  const isHookRequest = wireChecker(HookRequest);
  const bodies: unknown[] = [
    loadFixture(),
    { parent: redis() },
    { parent: redis(), children: null, related: null },
    { controller: {}, parent: redis(), children: {}, related: {}, finalizing: true },
  ];
  for (const body of bodies) {
    const parsed = parseHookRequest(body);
    assert.ok(parsed.ok);
    if (parsed.ok) assert.equal(isHookRequest.problem(parsed.request), undefined);
  }
});

test('the checker and is() agree, and a problem is one sentence starting with the field', () => {
  const body = wireChecker(HookRequestBody);
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 4 }), (value) => {
      const problem = body.problem(value);
      assert.equal(problem === undefined, body.is(value));
      if (problem !== undefined) assert.ok(problem.message.startsWith(`${problem.field} `), problem.message);
    }),
    { numRuns: 300 },
  );
});

const named: Array<[string, unknown, string]> = [
  ['the root', 5, 'request body must be a JSON object'],
  [
    'a map key with a slash',
    { parent: redis(), children: { 'StatefulSet.apps/v1': { 'default/x': child({ kind: 1 }) } } },
    'children["StatefulSet.apps/v1"]["default/x"].kind must be a string',
  ],
  // TypeBox's Record skips keys its pattern does not match; the wire's maps match every key.
  [
    'a map key with a line break',
    { parent: redis(), related: { 'Pod.v1': { 'a\nb': 'pod' } } },
    'related["Pod.v1"]["a\\nb"] must be an object',
  ],
  ['a group with a line break', { parent: redis(), children: { 'a\nb': [] } }, 'children["a\\nb"] must be an object'],
  [
    'a nested map (not its sibling)',
    { parent: redis(), children: { a: { b: child() }, c: { d: child({ metadata: { name: 2 } }) } } },
    'children["c"]["d"].metadata.name must be a string',
  ],
  [
    'a key with ~ and /',
    { parent: redis(), children: { 'x~1/y': { 'z~0': 1 } } },
    'children["x~1/y"]["z~0"] must be an object',
  ],
];
for (const [label, body, message] of named) {
  test(`a refusal names the field: ${label}`, () => {
    const parsed = parseHookRequest(body);
    assert.equal(parsed.ok, false);
    if (!parsed.ok) assert.ok(parsed.message.startsWith(message), parsed.message);
  });
}

test('nothing is coerced: a string that looks like a boolean or a number is not one', () => {
  for (const body of [
    { parent: redis(), finalizing: 'true' },
    { parent: redis(), finalizing: 1 },
    { parent: { metadata: { name: 5, namespace: 'default' } } },
    { parent: redis(), children: { 'ConfigMap.v1': { x: child({ apiVersion: ['v1'] }) } } },
  ]) {
    const before = JSON.stringify(body);
    assert.equal(parseHookRequest(body).ok, false, before);
    assert.equal(JSON.stringify(body), before, 'the body is left as it came');
  }
});

test('fields the hook reads defensively are never a reason to refuse a request', () => {
  const damaged = {
    labels: 5,
    annotations: [1],
    generation: 'one',
    deletionTimestamp: {},
    ownerReferences: 'x',
    uid: 3,
    finalizers: null,
  };
  const body = {
    controller: 'anything',
    parent: {
      apiVersion: 7,
      kind: null,
      metadata: { name: 'my-redis', namespace: 'default', labels: 'x', generation: 'y' },
      spec: 'nonsense',
      status: [],
    },
    children: { 'ConfigMap.v1': { x: child({ metadata: { name: 'x', ...damaged }, data: 5 }) } },
    related: { 'Pod.v1': { p: child({ kind: 'Pod', metadata: { name: 'p', ...damaged }, status: 'up' }) } },
  };
  assert.ok(parseHookRequest(body).ok);
});

test('fieldName writes properties with dots and map keys in brackets', () => {
  assert.equal(fieldName(HookRequestBody, ''), 'request body');
  assert.equal(fieldName(HookRequestBody, '/parent/metadata/uid'), 'parent.metadata.uid');
  assert.equal(
    fieldName(HookRequestBody, '/related/Secret.v1/default~1auth/metadata'),
    'related["Secret.v1"]["default/auth"].metadata',
  );
  assert.equal(fieldName(HookResponse, '/children/3/kind'), 'children[3].kind');
});

test('the response schemas: status and children required, no other top-level key, children and status as built', () => {
  assert.deepEqual([...(HookResponse.required ?? [])].sort(), ['children', 'status']);
  assert.equal(HookResponse.additionalProperties, false);
  assert.deepEqual(Object.keys(HookResponse.properties), ['status', 'children', 'resyncAfterSeconds', 'finalized']);
  // Declared properties would make fastify's serializer reorder or drop the fields of a child.
  for (const built of [
    HookResponse.properties.status,
    HookResponse.properties.children.items,
    CustomizeResponse.properties.relatedResources.items,
  ]) {
    assert.equal(built['type'], 'object');
    assert.equal(built['additionalProperties'], true);
    assert.equal(built['properties'], undefined);
  }
  assert.deepEqual(CustomizeResponse.required, ['relatedResources']);
  assert.equal(CustomizeResponse.additionalProperties, false);
});

// The generated CRD: committed file in sync with the source, structural by the API server's
// rules (checked by test/api/structural.ts, which is itself tested against what TypeBox emits
// by default), the subresources and columns the design needs, and defaulting that agrees with
// the hook's ajv validator.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { Type, type TSchema } from '@sinclair/typebox';
import { parse } from 'yaml';
import { CustomResourceDefinition } from 'kubernetes-models/apiextensions.k8s.io/v1/CustomResourceDefinition';
import { applyDefaults, buildCrd, buildOpenApiSchema, CRD_NAME, NotStructuralError, renderCrdYaml, toStructural, type JsonSchema } from '../../src/api/crd.ts';
import { GROUP, KIND, PLURAL, SHORT_NAMES, SINGULAR, VERSION } from '../../src/api/labels.ts';
import { QUANTITY_PATTERN } from '../../src/api/schema.ts';
import { validateSpec } from '../../src/api/validate.ts';
import { structuralProblems } from './structural.ts';

const CRD_FILE = fileURLToPath(new URL('../../manifests/crd.yaml', import.meta.url));

const DESIGN_SPEC = {
  version: '7.2',
  master: { replicas: 1 },
  replicas: 2,
  persistence: { enableRdb: true, rdbSchedule: '*/15 * * * *', enableAof: true, size: '10Gi' },
  resources: { requests: { memory: '256Mi', cpu: '100m' }, limits: { memory: '512Mi', cpu: '500m' } },
};

function json(schema: unknown): JsonSchema {
  return JSON.parse(JSON.stringify(schema)) as JsonSchema;
}

function child(schema: JsonSchema, ...path: string[]): JsonSchema {
  let node = schema;
  for (const name of path) node = (node['properties'] as Record<string, JsonSchema>)[name] as JsonSchema;
  return node;
}

test('manifests/crd.yaml is what the source generates', () => {
  const committed = readFileSync(CRD_FILE, 'utf8');
  assert.equal(committed, renderCrdYaml(), 'manifests/crd.yaml is stale: run npm run gen:crd and commit the result');
  assert.deepEqual(parse(committed), json(buildCrd()));
});

test('the emitted schema breaks none of the rules a v1 API server enforces', () => {
  assert.deepEqual(structuralProblems(buildOpenApiSchema()), []);
});

test('the CRD is a valid apiextensions.k8s.io/v1 object', () => {
  assert.doesNotThrow(() => new CustomResourceDefinition(json(buildCrd()) as never).validate());
});

test('names, scope, version and subresources', () => {
  const crd = json(buildCrd()) as { metadata: { name: string }; spec: Record<string, any> };
  assert.equal(crd.metadata.name, CRD_NAME);
  assert.equal(CRD_NAME, 'redises.redis.example.com');
  const spec = crd.spec;
  assert.equal(spec['group'], GROUP);
  assert.deepEqual(spec['names'], { kind: KIND, listKind: 'RedisList', plural: PLURAL, singular: SINGULAR, shortNames: SHORT_NAMES });
  assert.equal(spec['scope'], 'Namespaced');
  assert.equal(spec['versions'].length, 1);
  const [version] = spec['versions'];
  assert.equal(version.name, VERSION);
  assert.equal(version.served, true);
  assert.equal(version.storage, true);
  assert.deepEqual(version.subresources, {
    status: {},
    scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.selector' },
  });
  assert.deepEqual(
    version.additionalPrinterColumns.map((c: { name: string; type: string; jsonPath: string }) => [c.name.toUpperCase(), c.type, c.jsonPath]),
    [
      ['VERSION', 'string', '.spec.version'],
      ['MASTER', 'string', '.status.masterStatus'],
      ['REPLICAS', 'integer', '.spec.replicas'],
      ['PHASE', 'string', '.status.phase'],
      ['AGE', 'date', '.metadata.creationTimestamp'],
    ],
  );
});

test('the scale subresource paths point at integer and string fields of the schema', () => {
  const schema = buildOpenApiSchema();
  assert.equal(child(schema, 'spec', 'replicas')['type'], 'integer');
  assert.equal(child(schema, 'status', 'replicas')['type'], 'integer');
  assert.equal(child(schema, 'status', 'selector')['type'], 'string');
  assert.equal(child(schema, 'status', 'observedGeneration')['type'], 'integer');
});

test('every field has a description (kubectl explain), metadata excepted', () => {
  const missing: string[] = [];
  const visit = (node: JsonSchema, path: string) => {
    if (path !== 'metadata' && typeof node['description'] !== 'string') missing.push(path || '<root>');
    const properties = node['properties'] as Record<string, JsonSchema> | undefined;
    for (const [name, c] of Object.entries(properties ?? {})) visit(c, path ? `${path}.${name}` : name);
    if (node['items']) visit(node['items'] as JsonSchema, `${path}[]`);
    if (node['additionalProperties']) visit(node['additionalProperties'] as JsonSchema, `${path}[*]`);
  };
  visit(buildOpenApiSchema(), '');
  // Map values and list items inherit their map's description in kubectl explain.
  assert.deepEqual(
    missing.filter((p) => !p.endsWith('[*]')),
    [],
  );
});

test('a Redis with no spec at all is defaulted by the API server to the same spec the hook derives', () => {
  const schema = buildOpenApiSchema();
  const defaulted = applyDefaults(schema, { apiVersion: `${GROUP}/${VERSION}`, kind: KIND, metadata: { name: 'r' } }) as { spec: unknown };
  const validate = new Ajv({ strict: false }).compile(schema);
  assert.ok(validate(defaulted), JSON.stringify(validate.errors));
  const verdict = validateSpec('r', {});
  assert.ok(verdict.ok);
  assert.deepEqual(defaulted.spec, verdict.spec);
});

test("API-server defaulting of the design's spec equals the hook validator's defaulting", () => {
  const specSchema = child(buildOpenApiSchema(), 'spec');
  const verdict = validateSpec('my-redis', DESIGN_SPEC);
  assert.ok(verdict.ok);
  assert.deepEqual(applyDefaults(specSchema, DESIGN_SPEC), verdict.spec);
});

test('the CRD schema and the hook validator agree on what is valid', async (t) => {
  const specSchema = child(buildOpenApiSchema(), 'spec');
  const crdValidate = new Ajv({ strict: false }).compile(specSchema);
  const cases: Array<[string, Record<string, unknown>]> = [
    ['design', DESIGN_SPEC],
    ['empty', {}],
    // Which versions are supported is a CEL rule (cel.test.ts, and the hook's own check below); the schema checks the form.
    ['version not a version', { version: 'seven' }],
    ['version with suffix', { version: '7.2.4-alpine' }],
    ['two masters', { master: { replicas: 2 } }],
    ['16 replicas', { replicas: 16 }],
    ['no replicas', { replicas: 0 }],
    ['size not a quantity', { persistence: { size: 'ten gigs' } }],
    ['unsupported schedule', { persistence: { rdbSchedule: '*/7 3 * * 1' } }],
    ['integer memory', { resources: { requests: { memory: 268435456 } } }],
    ['bad memory', { resources: { limits: { memory: 'lots' } } }],
    ['whenDeleted Keep', { persistence: { whenDeleted: 'Keep' } }],
    ['auth without secretName', { auth: {} }],
    ['too many config keys', { config: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v'])) }],
    ['toleration effect', { tolerations: [{ key: 'a', effect: 'Sometimes' }] }],
  ];
  for (const [name, spec] of cases) {
    await t.test(name, () => {
      const crdOk = crdValidate(applyDefaults(specSchema, spec));
      const hookOk = validateSpec('r', spec).ok;
      assert.equal(crdOk, hookOk, `${name}: CRD says ${crdOk}, hook says ${hookOk}`);
    });
  }
});

// ---- The checker itself, against what TypeBox emits by default ----

function rootWith(spec: Record<string, TSchema | JsonSchema>, metadata: JsonSchema = { type: 'object' }): JsonSchema {
  return json({ type: 'object', properties: { metadata, spec: Type.Object(spec as Record<string, TSchema>) } });
}

const quantityInBranch = {
  'x-kubernetes-int-or-string': true,
  anyOf: [{ type: 'integer' }, { type: 'string', pattern: QUANTITY_PATTERN }],
};
const sizeRule = { rule: 'quantity(self.size).compareTo(quantity(oldSelf.size)) >= 0', message: 'no shrink' };

/** TypeBox defaults that are not structural, but that toStructural can rewrite into structural equivalents. */
const REPAIRABLE: Array<[string, JsonSchema, string]> = [
  ['Record emits patternProperties', rootWith({ m: Type.Record(Type.String(), Type.String()) }), 'patternProperties is not supported'],
  ['Union of Literals emits anyOf of const', rootWith({ e: Type.Union([Type.Literal('a'), Type.Literal('b')]) }), 'const is not a field of JSONSchemaProps'],
  ['Literal emits const', rootWith({ l: Type.Literal('x') }), 'const is not a field of JSONSchemaProps'],
  ['numeric exclusiveMaximum (draft 2019)', rootWith({ n: Type.Integer({ exclusiveMaximum: 10 }) }), 'exclusiveMaximum must be a boolean'],
  ['additionalProperties: false', rootWith({ o: Type.Object({ a: Type.String() }, { additionalProperties: false }) }), 'additionalProperties cannot be false'],
  ['int-or-string with a constrained branch', rootWith({ q: quantityInBranch }), 'must not be set inside anyOf'],
  ['default {} over required fields', rootWith({ o: Type.Object({ a: Type.String({ default: 'x' }) }, { default: {} }) }), 'is invalid as written'],
  [
    'default {} that a CEL rule reads',
    rootWith({ p: Type.Object({ size: Type.Optional(Type.String({ default: '1Gi' })) }, { default: {}, 'x-kubernetes-validations': [sizeRule] }) }),
    'default fails its CEL rules',
  ],
];

/** Constructs with no structural form: toStructural must refuse them rather than emit them. */
const REFUSED: Array<[string, JsonSchema, string]> = [
  ['Ref emits $ref', rootWith({ r: Type.Ref('Other') }), '$ref is not supported'],
  ['Tuple emits a list of items', rootWith({ t: Type.Tuple([Type.String(), Type.Integer()]) }), 'items must be a schema'],
  ['Union of types emits typed anyOf', rootWith({ u: Type.Union([Type.String(), Type.Integer()]) }), 'must have a type'],
  ['Null emits type null', rootWith({ n: Type.Null() }), 'is not one of'],
  ['uniqueItems', rootWith({ a: Type.Array(Type.String(), { uniqueItems: true }) }), 'uniqueItems cannot be true'],
  ['Record with a key pattern', rootWith({ m: Type.Record(Type.String({ pattern: '^[a-z]+$' }), Type.String()) }), 'patternProperties is not supported'],
];

/** Rules that are not about TypeBox output but that the API server enforces all the same. */
const OTHER_RULES: Array<[string, JsonSchema, string]> = [
  ['Unknown has no type', rootWith({ u: Type.Unknown() }), 'must have a type'],
  ['metadata with a description', rootWith({}, { type: 'object', description: 'mine' }), 'metadata must not specify anything other'],
  ['metadata labels restricted', rootWith({}, { type: 'object', properties: { labels: { type: 'object' } } }), 'only name and generateName'],
  [
    'list map key neither required nor defaulted',
    rootWith({ l: Type.Array(Type.Object({ k: Type.Optional(Type.String()) }), { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['k'] }) }),
    'must be required or have a default',
  ],
  [
    'transition rule below a plain list',
    rootWith({ l: Type.Array(Type.Object({ a: Type.String() }, { 'x-kubernetes-validations': [{ rule: 'self.a == oldSelf.a' }] })) }),
    'oldSelf cannot be correlated',
  ],
  [
    'rule iterating an unbounded map',
    rootWith({ m: { type: 'object', additionalProperties: { type: 'string' }, 'x-kubernetes-validations': [{ rule: "self.all(k, k != 'x')" }] } }),
    'without maxProperties',
  ],
  [
    'rule iterating unbounded strings',
    rootWith({
      m: { type: 'object', maxProperties: 4, additionalProperties: { type: 'string' }, 'x-kubernetes-validations': [{ rule: "self.all(k, self[k] != 'x')" }] },
    }),
    'without maxLength',
  ],
  ['message on two lines', rootWith({ s: Type.String({ 'x-kubernetes-validations': [{ rule: 'self != ""', message: 'a\nb' }] }) }), 'non-empty single line'],
  ['rule that does not compile', rootWith({ s: Type.String({ 'x-kubernetes-validations': [{ rule: 'self ==' }] }) }), 'does not compile'],
  [
    'default below additionalProperties',
    rootWith({ m: { type: 'object', additionalProperties: { type: 'string', default: 'x' } } }),
    'not allowed below additionalProperties',
  ],
  ['lookahead in a pattern', rootWith({ s: Type.String({ pattern: '^(?!-)[a-z-]+$' }) }), 'is not RE2'],
  ['backreference in a pattern', rootWith({ s: Type.String({ pattern: '^(a)\\1$' }) }), 'is not RE2'],
  ['enum value of the wrong type', rootWith({ s: { type: 'string', enum: ['a', 1] } }), 'is not a string'],
];

function assertFlags(schema: JsonSchema, expected: string, name: string): void {
  const problems = structuralProblems(schema);
  assert.ok(
    problems.some((p) => p.message.includes(expected)),
    `${name}: expected a problem containing "${expected}", got ${JSON.stringify(problems)}`,
  );
}

test('the checker flags what TypeBox emits by default', async (t) => {
  for (const [name, schema, expected] of [...REPAIRABLE, ...REFUSED]) await t.test(name, () => assertFlags(schema, expected, name));
});

test('the checker flags the other rules the API server enforces', async (t) => {
  for (const [name, schema, expected] of OTHER_RULES) await t.test(name, () => assertFlags(schema, expected, name));
});

test('toStructural rewrites the repairable TypeBox output into schemas the checker accepts', async (t) => {
  for (const [name, schema] of REPAIRABLE) {
    await t.test(name, () => {
      assert.deepEqual(structuralProblems(toStructural(schema)), [], name);
    });
  }
});

test('toStructural refuses what has no structural form', async (t) => {
  for (const [name, schema] of REFUSED) {
    await t.test(name, () => {
      assert.throws(() => toStructural(schema), NotStructuralError, name);
    });
  }
});

test('toStructural strips TypeBox symbols and keeps the meaning of rewritten nodes', async (t) => {
  const out = toStructural(Type.Object({ e: Type.Union([Type.Literal('a'), Type.Literal('b')]), q: quantityInBranch as unknown as TSchema }));
  assert.deepEqual(Object.getOwnPropertySymbols(out), []);
  assert.deepEqual(child(out, 'e'), { enum: ['a', 'b'], type: 'string' });
  assert.deepEqual(child(out, 'q'), { anyOf: [{ type: 'integer' }, { type: 'string' }], pattern: QUANTITY_PATTERN, 'x-kubernetes-int-or-string': true });
  const validate = new Ajv({ strict: false }).compile(out);
  for (const [value, ok] of [
    [{ e: 'a', q: '10Gi' }, true],
    [{ e: 'c', q: 1 }, false],
    [{ e: 'b', q: 'ten' }, false],
    [{ e: 'b', q: 3 }, true],
  ] as const) {
    await t.test(`${JSON.stringify(value)} ${ok ? 'is valid' : 'is invalid'}`, () => {
      assert.equal(validate(value), ok, JSON.stringify(value));
    });
  }
});

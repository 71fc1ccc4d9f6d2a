// The generated CRD, without a server: committed file in sync with the source, a valid
// apiextensions.k8s.io/v1 object, the subresources and columns the design needs, defaulting that
// agrees with the hook's ajv validator, and toStructural keeping the meaning of what it rewrites.
// What the API server itself says of the CRD (structural, its CEL rules) is crd-server.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { Type, type TSchema } from '@sinclair/typebox';
import { parse } from 'yaml';
import { CustomResourceDefinition } from 'kubernetes-models/apiextensions.k8s.io/v1/CustomResourceDefinition';
import {
  applyDefaults,
  buildCrd,
  buildOpenApiSchema,
  CRD_NAME,
  renderCrdYaml,
  toStructural,
  type JsonSchema,
} from '../../src/api/crd.ts';
import { DEFAULT_VERSION } from '../../src/api/engine.ts';
import { GROUP, KIND, PLURAL, SHORT_NAMES, SINGULAR, VERSION } from '../../src/api/labels.ts';
import { QUANTITY_PATTERN } from '../../src/api/schema.ts';
import { validateSpec } from '../../src/api/validate.ts';

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

test('the CRD is a valid apiextensions.k8s.io/v1 object', () => {
  assert.doesNotThrow(() => new CustomResourceDefinition(json(buildCrd()) as never).validate());
});

test('names, scope, version and subresources', () => {
  const crd = json(buildCrd()) as { metadata: { name: string }; spec: Record<string, any> };
  assert.equal(crd.metadata.name, CRD_NAME);
  assert.equal(CRD_NAME, 'redises.redis.example.com');
  const spec = crd.spec;
  assert.equal(spec['group'], GROUP);
  assert.deepEqual(spec['names'], {
    kind: KIND,
    listKind: 'RedisList',
    plural: PLURAL,
    singular: SINGULAR,
    shortNames: SHORT_NAMES,
  });
  assert.equal(spec['scope'], 'Namespaced');
  assert.equal(spec['versions'].length, 1);
  const [version] = spec['versions'];
  assert.equal(version.name, VERSION);
  assert.equal(version.served, true);
  assert.equal(version.storage, true);
  assert.deepEqual(version.subresources, {
    status: {},
    scale: {
      specReplicasPath: '.spec.replicas',
      statusReplicasPath: '.status.replicas',
      labelSelectorPath: '.status.selector',
    },
  });
  assert.deepEqual(
    version.additionalPrinterColumns.map((c: { name: string; type: string; jsonPath: string }) => [
      c.name.toUpperCase(),
      c.type,
      c.jsonPath,
    ]),
    [
      ['ENGINE', 'string', '.spec.engine'],
      ['VERSION', 'string', '.spec.version'],
      ['MASTER', 'string', '.status.master'],
      ['REPLICAS', 'string', '.status.summary.replicas'],
      ['PHASE', 'string', '.status.phase'],
      ['AGE', 'date', '.metadata.creationTimestamp'],
      ['MASTER STATUS', 'string', '.status.masterStatus'],
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
  const defaulted = applyDefaults(schema, {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: KIND,
    metadata: { name: 'r' },
  }) as { spec: unknown };
  const validate = new Ajv({ strict: false }).compile(schema);
  assert.ok(validate(defaulted), JSON.stringify(validate.errors));
  const verdict = validateSpec('r', {});
  assert.ok(verdict.ok);
  // No CRD default for the version (it depends on the engine): the hook resolves it.
  const { version, ...rest } = verdict.spec;
  assert.equal(version, DEFAULT_VERSION.redis);
  assert.deepEqual(defaulted.spec, rest);
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
    // Which versions are supported is a CEL rule (crd-server.test.ts, and the hook's own check below); the schema
    // checks the form.
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

// ---- toStructural (what the API server says of its output: crd-server.test.ts) ----

const quantityInBranch = {
  'x-kubernetes-int-or-string': true,
  anyOf: [{ type: 'integer' }, { type: 'string', pattern: QUANTITY_PATTERN }],
};

test('toStructural strips TypeBox symbols and keeps the meaning of rewritten nodes', async (t) => {
  const out = toStructural(
    Type.Object({ e: Type.Union([Type.Literal('a'), Type.Literal('b')]), q: quantityInBranch as unknown as TSchema }),
  );
  assert.deepEqual(Object.getOwnPropertySymbols(out), []);
  assert.deepEqual(child(out, 'e'), { enum: ['a', 'b'], type: 'string' });
  assert.deepEqual(child(out, 'q'), {
    anyOf: [{ type: 'integer' }, { type: 'string' }],
    pattern: QUANTITY_PATTERN,
    'x-kubernetes-int-or-string': true,
  });
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

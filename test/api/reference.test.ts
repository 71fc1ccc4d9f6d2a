// The API reference: the committed docs/api-reference.md is what the source renders (so it cannot
// drift from the CRDs), it has a section for every CRD in manifests/ and a row for every field of
// each committed CRD's schema, and real fields render their type, default, constraints and
// description as a reader needs them; the Markdown escaping and the keyword wording are checked
// on synthetic schemas, including a keyword the renderer has no wording for.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import type { JsonSchema } from '../../src/api/crd.ts';
import {
  code,
  constraintCell,
  constraintsOf,
  objectLevels,
  projectCrds,
  prose,
  renderApiReference,
  typeOf,
} from '../../src/api/reference.ts';

const DOC_FILE = fileURLToPath(new URL('../../docs/api-reference.md', import.meta.url));
const MANIFESTS = fileURLToPath(new URL('../../manifests', import.meta.url));

const doc = readFileSync(DOC_FILE, 'utf8');

interface Crd {
  kind: string;
  spec: {
    names: { kind: string; plural: string };
    versions: Array<{ schema: { openAPIV3Schema: JsonSchema }; additionalPrinterColumns: any[] }>;
  };
}

function yamlFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    return statSync(path).isDirectory() ? yamlFiles(path) : /\.ya?ml$/.test(entry) ? [path] : [];
  });
}

/** Every CustomResourceDefinition committed under manifests/, components included. */
const committedCrds: Crd[] = yamlFiles(MANIFESTS)
  .flatMap((file) => parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJS() as Crd | null))
  .filter((d): d is Crd => d?.kind === 'CustomResourceDefinition');

/** The part of the doc under `## kind`, up to the next kind. */
function section(kind: string): string {
  const parts = doc.split(/^## /m);
  const found = parts.find((p) => p.startsWith(`${kind}\n`));
  assert.ok(found, `no "## ${kind}" section in docs/api-reference.md`);
  return found;
}

/** The field paths a section has rows for. */
const rowPaths = (text: string) => [...text.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1] ?? '');

/** A field's row split into its six cells (on the pipes a table sees: not escaped ones). */
function cells(kind: string, path: string): string[] {
  const line = section(kind)
    .split('\n')
    .find((l) => l.startsWith(`| \`${path}\` |`));
  assert.ok(line, `no row for ${path} in the ${kind} section`);
  return line
    .slice(2, -2)
    .split(/(?<!\\) \| /)
    .map((c) => c.trim());
}

/** Every property path of a schema, as the doc writes them (`a[]` list items, `a[*]` map values). */
function fieldPaths(node: JsonSchema, path = ''): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries((node['properties'] ?? {}) as Record<string, JsonSchema>)) {
    const p = path ? `${path}.${name}` : name;
    out.push(p, ...nested(value, p));
  }
  return out;
}
function nested(node: JsonSchema, path: string): string[] {
  const items = node['items'] as JsonSchema | undefined;
  const values = node['additionalProperties'];
  return [
    ...fieldPaths(node, path),
    ...(items ? nested(items, `${path}[]`) : []),
    ...(typeof values === 'object' && values !== null ? nested(values as JsonSchema, `${path}[*]`) : []),
  ];
}

test('docs/api-reference.md is what the source renders', () => {
  assert.equal(
    doc,
    renderApiReference(),
    'docs/api-reference.md is stale: run npm run gen:api-reference and commit the result',
  );
  assert.equal(renderApiReference(), renderApiReference(), 'rendering is deterministic');
});

test('the doc covers exactly the CRDs committed in manifests/, in sections of their own', () => {
  const committed = committedCrds.map((c) => c.spec.names.kind).sort();
  assert.ok(committed.includes('Redis') && committed.includes('RedisBackup'), `found CRDs: ${committed.join(', ')}`);
  assert.deepEqual(
    projectCrds()
      .map((c) => (c.spec['names'] as { kind: string }).kind)
      .sort(),
    committed,
  );
  assert.deepEqual(
    [...doc.matchAll(/^## (.+)$/gm)].map((m) => m[1]),
    projectCrds().map((c) => (c.spec['names'] as { kind: string }).kind),
  );
});

test('every field of each committed CRD has exactly one row in its kind section', async (t) => {
  for (const crd of committedCrds) {
    await t.test(crd.spec.names.kind, () => {
      const schema = crd.spec.versions[0]?.schema.openAPIV3Schema ?? {};
      const expected = fieldPaths(schema);
      assert.ok(expected.length > 10, `${crd.spec.names.kind} has fields`);
      assert.deepEqual(rowPaths(section(crd.spec.names.kind)).sort(), expected.sort());
    });
  }
});

test('every printer column of kubectl get is listed with its JSON path, and the header line kubectl prints', async (t) => {
  for (const crd of committedCrds) {
    await t.test(crd.spec.names.kind, () => {
      const text = section(crd.spec.names.kind);
      const columns = crd.spec.versions[0]?.additionalPrinterColumns ?? [];
      for (const c of columns)
        assert.ok(text.includes(`| ${c.name} | \`${c.type}\` | \`${c.jsonPath}\` |`), `column ${c.name}`);
      const always = columns.filter((c) => !c.priority).map((c) => String(c.name).toUpperCase());
      assert.ok(text.includes(`$ kubectl get ${crd.spec.names.plural}\n${['NAME', ...always].join('   ')}\n`));
    });
  }
  await t.test('Redis, as the README shows it', () =>
    assert.match(section('Redis'), /^NAME {3}ENGINE {3}VERSION {3}MASTER {3}REPLICAS {3}PHASE {3}AGE$/m),
  );
});

test('real fields render their type, default, required, constraints and description', async (t) => {
  // [kind, path, type, default, required, constraints, description (a part of it)]
  const cases: Array<[string, string, string, string, string, string, string]> = [
    [
      'Redis',
      'spec.replicas',
      '`integer`',
      '`2`',
      'yes',
      'minimum: `0`<br>maximum: `15`',
      'Number of replica pods (\\<name>-replica-N). Scalable with kubectl scale.',
    ],
    [
      'Redis',
      'spec.master.replicas',
      '`integer`',
      '`1`',
      'yes',
      'minimum: `1`<br>maximum: `1`',
      'Number of masters. Must be 1',
    ],
    [
      'Redis',
      'spec.persistence.whenDeleted',
      '`string`',
      '`"Retain"`',
      'yes',
      'enum: `"Retain", "Delete"`',
      'Retain keeps them',
    ],
    [
      'Redis',
      'spec.persistence',
      '`object`',
      '`{}`',
      'yes',
      'rule: persistence.size cannot shrink (`quantity(self.size).compareTo(quantity(oldSelf.size)) >= 0`)',
      'Durability.',
    ],
    [
      'Redis',
      'spec.image',
      '`string`',
      '',
      'no',
      'minLength: `1`',
      'Container image to run instead of redis:\\<version> (valkey/valkey:\\<version> for valkey).',
    ],
    ['Redis', 'spec.affinity', '`object (any fields)`', '', 'no', '', 'A Kubernetes Affinity'],
    [
      'Redis',
      'spec.resources.limits',
      '`map[string]int-or-string`',
      '',
      'no',
      'values: pattern: `^(\\+\\|-)?',
      'Each value: A Kubernetes quantity, for example 256Mi or 500m.',
    ],
    [
      'Redis',
      'spec.monitoring.alerts',
      '`[]object`',
      '`[]`',
      'yes',
      'x-kubernetes-list-map-keys: `["name"]`<br>x-kubernetes-list-type: `map`',
      'Overrides of the alerts',
    ],
    ['Redis', 'status.rollout.stalePods', '`[]string`', '', 'yes', '', 'Each item: A pod name.'],
    [
      'Redis',
      'spec.persistence.rdbSchedule',
      '`string`',
      '`"*/15 * * * *"`',
      'yes',
      'pattern: `^(\\*/([1-9]\\|[1-5][0-9])',
      '"\\*/N \\* \\* \\* \\*" (every N minutes)',
    ],
    [
      'Redis',
      'spec.monitoring.exporter.resources',
      '`object`',
      '`{"requests":{"cpu":"10m","memory":"32Mi"},"limits":{"memory":"128Mi"}}`',
      'yes',
      '',
      'CPU and memory of the exporter',
    ],
    ['RedisBackup', 'metadata.name', '`string`', '', 'no', 'maxLength: `56`', ''],
    [
      'RedisBackup',
      'spec',
      '`object`',
      '',
      'yes',
      'rule: a RedisBackup cannot change: create another one (`self == oldSelf`)',
      'Immutable',
    ],
  ];
  for (const [kind, path, type, dflt, required, constraints, description] of cases) {
    await t.test(`${kind} ${path}`, () => {
      const [p, ty, d, r, c, desc] = cells(kind, path);
      assert.equal(p, `\`${path}\``);
      assert.equal(ty, type);
      assert.equal(d, dflt);
      assert.equal(r, required);
      assert.ok(constraints === '' ? c === '' : (c ?? '').includes(constraints), `constraints: ${c}`);
      assert.ok((desc ?? '').includes(description), `description: ${desc}`);
    });
  }
  await t.test('spec.replicas: the whole row', () => {
    const line = section('Redis')
      .split('\n')
      .find((l) => l.startsWith('| `spec.replicas` |'));
    assert.equal(
      line,
      '| `spec.replicas` | `integer` | `2` | yes | minimum: `0`<br>maximum: `15` | Number of replica pods (\\<name>-replica-N). Scalable with kubectl scale. |',
    );
  });
  await t.test('spec.version: its form, no default; the engine rules on spec, message then expression', () => {
    const [, , dflt, required, c] = cells('Redis', 'spec.version');
    assert.match(c ?? '', /^maxLength: `63`<br>pattern: `\^\[0-9\]\+/);
    assert.deepEqual([dflt, required], ['', 'no']);
    assert.deepEqual(cells('Redis', 'spec.engine').slice(1, 4), ['`string`', '`"redis"`', 'yes']);
    const rules = cells('Redis', 'spec')[4] ?? '';
    assert.match(
      rules,
      /^rule: spec\.engine and spec\.version: only the tested combinations are accepted: redis 7\.0, /,
    );
    assert.ok(rules.includes("matches('^8[.]0([.-]\\|$)')"), rules);
    assert.ok(rules.includes('<br>rule: spec.version cannot be downgraded to an older major.minor of the same engine'));
    assert.ok(rules.includes('<br>rule: spec.engine changes only between redis 7.2 and valkey 8.0'));
  });
});

test('Markdown: code spans hold any text, prose cannot turn into HTML, emphasis or a new cell', async (t) => {
  const cases: Array<[string, () => string, string]> = [
    ['plain code', () => code('a.b'), '`a.b`'],
    ['pipes in code', () => code('a|b'), '`a\\|b`'],
    ['backticks in code', () => code('a`b'), '``a`b``'],
    ['code starting with a backtick', () => code('`a'), '`` `a ``'],
    ['angle brackets', () => prose('redis:<version>'), 'redis:\\<version>'],
    ['emphasis and strike', () => prose('*/N ~app:*'), '\\*/N \\~app:\\*'],
    ['pipes and links', () => prose('a|b [x]'), 'a\\|b \\[x\\]'],
    ['code spans kept', () => prose('a `save <s> 1` b<'), 'a `save <s> 1` b\\<'],
    ['underscore inside a word kept', () => prose('redis_exporter _x_'), 'redis_exporter \\_x\\_'],
  ];
  for (const [name, run, want] of cases) await t.test(name, () => assert.equal(run(), want));
});

test('keywords: types, bounds, nested items and values, and a keyword without wording still shown', async (t) => {
  const cases: Array<[string, JsonSchema, string, string[]]> = [
    ['date-time', { type: 'string', format: 'date-time' }, 'string (date-time)', []],
    [
      'exclusive bound',
      { type: 'number', minimum: 0, exclusiveMinimum: true, multipleOf: 0.5 },
      'number',
      ['minimum (exclusive): `0`', 'multipleOf: `0.5`'],
    ],
    [
      'list of lists',
      { type: 'array', items: { type: 'array', items: { type: 'string', enum: ['a'] } } },
      '[][]string',
      ['items: items: enum: `"a"`'],
    ],
    [
      'map of int-or-string',
      {
        type: 'object',
        additionalProperties: {
          'x-kubernetes-int-or-string': true,
          anyOf: [{ type: 'integer' }, { type: 'string' }],
          maxLength: 3,
        },
      },
      'map[string]int-or-string',
      ['values: maxLength: `3`'],
    ],
    [
      'unknown keyword',
      { type: 'string', 'x-kubernetes-future': { a: 1 } },
      'string',
      ['x-kubernetes-future: `{"a":1}`'],
    ],
    [
      'a rule without a message',
      { type: 'object', 'x-kubernetes-validations': [{ rule: 'self.a > 0' }] },
      'object',
      ['rule: `self.a > 0`'],
    ],
  ];
  for (const [name, node, type, constraints] of cases) {
    await t.test(name, () => {
      assert.equal(typeOf(node), type);
      assert.deepEqual(constraintsOf(node).map(constraintCell), constraints);
    });
  }
  await t.test('object levels: list items and map values of objects get tables, depth first', () => {
    const schema: JsonSchema = {
      type: 'object',
      required: ['a'],
      properties: {
        a: { type: 'array', items: { type: 'object', description: 'An A.', properties: { b: { type: 'string' } } } },
        m: {
          type: 'object',
          additionalProperties: { type: 'object', properties: { c: { type: 'integer', default: 3 } } },
        },
      },
    };
    const levels = objectLevels(schema);
    assert.deepEqual(
      levels.map((l) => [l.path, l.description, l.rows.map((r) => [r.path, r.type, r.default, r.required])]),
      [
        [
          '',
          '',
          [
            ['a', '[]object', '', true],
            ['m', 'map[string]object', '', false],
          ],
        ],
        ['a[]', 'An A.', [['a[].b', 'string', '', false]]],
        ['m[*]', '', [['m[*].c', 'integer', '3', false]]],
      ],
    );
  });
});

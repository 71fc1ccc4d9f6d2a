// The API reference (docs/api-reference.md), rendered from the generated CRDs themselves: each
// kind's names and subresources, the columns of `kubectl get`, and one table per object level of
// its openAPIV3Schema (field path, type, default, required, constraints, description).
// Owns the Markdown form of the schema, nothing else: what a field means, its default and its
// limits are the schema's (schema.ts and its siblings, through crd.ts), so the doc cannot say
// anything the CRD does not.
// Invariants: pure and deterministic (the committed file must equal renderApiReference() byte for
// byte: test/api/reference.test.ts, `npm run gen:api-reference`); every field of every CRD gets a
// row, and a schema keyword this module has no wording for is still shown (as JSON), never dropped.
import {
  applyDefaults,
  buildCrd,
  buildRedisBackupCrd,
  buildRedisClusterCrd,
  type CustomResourceDefinition,
  type JsonSchema,
} from './crd.ts';

/**
 * The project's CRDs (manifests/crd.yaml, manifests/redisbackup-crd.yaml, manifests/rediscluster-crd.yaml), in the
 * order the doc lists them.
 */
export function projectCrds(): CustomResourceDefinition[] {
  return [buildCrd(), buildRedisBackupCrd(), buildRedisClusterCrd()];
}

/** One keyword of a field's schema: `keyword: value`, or a CEL rule with its message. */
export interface Constraint {
  /**
   * `items: ` / `values: ` (repeated for nested lists and maps) when it constrains the field's list items or map
   * values.
   */
  on: string;
  keyword: string;
  /** The value as written in the schema (a string verbatim, anything else as JSON); a rule's CEL expression. */
  value: string;
  /** A rule's message. */
  message?: string;
}

/** One field of an object level, as plain text (Markdown escaping happens when the table is written). */
export interface FieldRow {
  path: string;
  type: string;
  /** JSON of the default, `{}` when the default is what defaulting an empty object yields; '' when none. */
  default: string;
  required: boolean;
  constraints: Constraint[];
  description: string;
}

/** An object with declared properties, at `path` ('' for the resource itself), and its fields. */
export interface ObjectLevel {
  path: string;
  /** The description of a list item or map value (a property's own description is in its parent's row). */
  description: string;
  rows: FieldRow[];
}

function isObject(value: unknown): value is JsonSchema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const child = (node: JsonSchema, key: string): JsonSchema | undefined => (isObject(node[key]) ? node[key] : undefined);
const text = (value: unknown): string => (typeof value === 'string' ? value.replace(/\s*\n\s*/g, ' ') : '');
const json = (value: unknown): string => JSON.stringify(value);

/** The keywords each row states in its type, default, required or description columns, or through its own table. */
const SHOWN_ELSEWHERE = new Set([
  'description',
  'type',
  'format',
  'default',
  'properties',
  'additionalProperties',
  'items',
  'required',
  'x-kubernetes-int-or-string',
  'x-kubernetes-preserve-unknown-fields',
]);

/** The one anyOf a structural schema allows outside validation: the int-or-string marker's. */
const INT_OR_STRING_ANY_OF = json([{ type: 'integer' }, { type: 'string' }]);

/** A type as kubectl explain and Go write it: `[]string`, `map[string]int-or-string`, `string (date-time)`. */
export function typeOf(node: JsonSchema): string {
  if (node['x-kubernetes-int-or-string'] === true) return 'int-or-string';
  const items = child(node, 'items');
  const values = child(node, 'additionalProperties');
  if (node['type'] === 'array') return `[]${items ? typeOf(items) : 'any'}`;
  if (node['type'] === 'object' || (node['type'] === undefined && (values || child(node, 'properties')))) {
    if (values) return `map[string]${typeOf(values)}`;
    if (node['x-kubernetes-preserve-unknown-fields'] === true && !child(node, 'properties'))
      return 'object (any fields)';
    return 'object';
  }
  if (typeof node['type'] !== 'string') return 'any';
  return typeof node['format'] === 'string' ? `${node['type']} (${node['format']})` : node['type'];
}

function ruleOf(rule: unknown): Constraint {
  if (!isObject(rule)) return { on: '', keyword: 'rule', value: json(rule) };
  const message = text(rule['message']) || text(rule['messageExpression']);
  const value = typeof rule['rule'] === 'string' ? rule['rule'] : json(rule['rule']);
  return message ? { on: '', keyword: 'rule', value, message } : { on: '', keyword: 'rule', value };
}

/** Bounds read lower then upper; any other keyword follows in the schema's key order (crd.ts sorts keys). */
const FIRST = [
  'enum',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
];
const rank = (key: string) => (FIRST.includes(key) ? FIRST.indexOf(key) : FIRST.length);

/** What one node allows, keyword by keyword. */
function ownConstraints(node: JsonSchema): Constraint[] {
  const out: Constraint[] = [];
  const entries = Object.entries(node).sort(([a], [b]) => rank(a) - rank(b));
  for (const [key, value] of entries) {
    if (SHOWN_ELSEWHERE.has(key)) continue;
    if (key === 'anyOf' && node['x-kubernetes-int-or-string'] === true && json(value) === INT_OR_STRING_ANY_OF)
      continue;
    // The OpenAPI v3.0 boolean form is said with its bound.
    if ((key === 'exclusiveMinimum' || key === 'exclusiveMaximum') && value === true) continue;
    if (
      (key === 'minimum' || key === 'maximum') &&
      node[key === 'minimum' ? 'exclusiveMinimum' : 'exclusiveMaximum'] === true
    ) {
      out.push({ on: '', keyword: `${key} (exclusive)`, value: json(value) });
    } else if (key === 'enum' && Array.isArray(value))
      out.push({ on: '', keyword: 'enum', value: value.map(json).join(', ') });
    else if (key === 'x-kubernetes-validations' && Array.isArray(value)) out.push(...value.map(ruleOf));
    else out.push({ on: '', keyword: key, value: typeof value === 'string' ? value : json(value) });
  }
  return out;
}

/** A node's constraints, then those of its list items (`items: `) and map values (`values: `), to any depth. */
export function constraintsOf(node: JsonSchema): Constraint[] {
  const inner = (key: string, on: string) => {
    const c = child(node, key);
    return c ? constraintsOf(c).map((x) => ({ ...x, on: on + x.on })) : [];
  };
  return [...ownConstraints(node), ...inner('items', 'items: '), ...inner('additionalProperties', 'values: ')];
}

/** The object a list item or map value is, with properties of its own (it then has a table). */
const hasTable = (node: JsonSchema) => child(node, 'properties') !== undefined;

/**
 * A field's description, then that of its scalar items or values (an object item describes itself above its own table).
 */
function descriptionOf(node: JsonSchema): string {
  const parts = [text(node['description'])];
  for (const [key, label] of [
    ['items', 'Each item'],
    ['additionalProperties', 'Each value'],
  ] as const) {
    const inner = child(node, key);
    if (inner && !hasTable(inner) && text(inner['description'])) parts.push(`${label}: ${descriptionOf(inner)}`);
  }
  return parts.filter(Boolean).join(' ');
}

function defaultOf(node: JsonSchema): string {
  if (!('default' in node)) return '';
  const value = node['default'];
  // crd.ts expands every default to what defaulting yields; say `{}` when that is all it is.
  if (isObject(value) && json(value) === json(applyDefaults(node, {}))) return '{}';
  return json(value);
}

const join = (path: string, name: string) => (path ? `${path}.${name}` : name);

/**
 * Every object level under `schema`, depth first in declared property order: the resource, spec, spec.persistence, ...
 */
export function objectLevels(schema: JsonSchema, path = '', description = ''): ObjectLevel[] {
  const properties = child(schema, 'properties');
  if (!properties) return [];
  const required = new Set(Array.isArray(schema['required']) ? schema['required'] : []);
  const rows: FieldRow[] = [];
  const below: ObjectLevel[] = [];
  for (const [name, value] of Object.entries(properties)) {
    if (!isObject(value)) continue;
    const fieldPath = join(path, name);
    rows.push({
      path: fieldPath,
      type: typeOf(value),
      default: defaultOf(value),
      required: required.has(name),
      constraints: constraintsOf(value),
      description: descriptionOf(value),
    });
    below.push(...nestedLevels(value, fieldPath));
  }
  return [{ path, description, rows }, ...below];
}

/**
 * The levels inside one field: its own properties, or its list items' (`a[]`) or map values' (`a[*]`), to any depth.
 */
function nestedLevels(node: JsonSchema, path: string, description = ''): ObjectLevel[] {
  const levels = hasTable(node) ? objectLevels(node, path, description) : [];
  const items = child(node, 'items');
  const values = child(node, 'additionalProperties');
  if (items) levels.push(...nestedLevels(items, `${path}[]`, text(items['description'])));
  if (values) levels.push(...nestedLevels(values, `${path}[*]`, text(values['description'])));
  return levels;
}

// ------------------------------------------------------------------ Markdown

/** A code span that holds any text: a fence longer than any backtick run inside, pipes escaped for tables. */
export function code(value: string): string {
  const longest = Math.max(0, ...[...value.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(longest + 1);
  const pad = value.startsWith('`') || value.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${value.replace(/\|/g, '\\|')}${pad}${fence}`;
}

/** Prose for a table cell: its code spans kept, and outside them what Markdown or HTML would act on escaped. */
export function prose(value: string): string {
  return value
    .split(/(`[^`]*`)/)
    .map((part, i) =>
      i % 2 === 1
        ? part.replace(/\|/g, '\\|')
        : part.replace(/[\\*<[\]~&|]/g, (c) => `\\${c}`).replace(/(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])/g, '\\_'),
    )
    .join('');
}

/** A constraint's cell text: the keyword, its value as code; a rule's message as prose, then its CEL. */
export function constraintCell(c: Constraint): string {
  if (c.message !== undefined) return `${c.on}${c.keyword}: ${prose(c.message)} (${code(c.value)})`;
  return `${c.on}${c.keyword}: ${code(c.value)}`;
}

const row = (cells: string[]) => `| ${cells.join(' | ')} |`;

export function fieldRow(r: FieldRow): string {
  return row([
    code(r.path),
    code(r.type),
    r.default ? code(r.default) : '',
    r.required ? 'yes' : 'no',
    r.constraints.map(constraintCell).join('<br>'),
    prose(r.description),
  ]);
}

function levelSection(kind: string, level: ObjectLevel): string[] {
  const heading = level.path ? `### ${code(level.path)}` : `### ${kind}: top level`;
  const intro = level.description ? [prose(level.description), ''] : [];
  const header = [
    row(['field', 'type', 'default', 'required', 'constraints', 'description']),
    row(Array<string>(6).fill('---')),
  ];
  return [heading, '', ...intro, ...header, ...level.rows.map(fieldRow), ''];
}

type Column = { name: string; type: string; jsonPath: string; description?: string; priority?: number };

function columnsSection(plural: string, columns: Column[]): string[] {
  const always = columns.filter((c) => !c.priority);
  const wide = columns.filter((c) => c.priority);
  const heads = (cs: Column[]) => ['NAME', ...cs.map((c) => c.name.toUpperCase())].join('   ');
  return [
    `### \`kubectl get ${plural}\``,
    '',
    '```',
    `$ kubectl get ${plural}`,
    heads(always),
    ...(wide.length ? [`$ kubectl get ${plural} -o wide`, heads([...always, ...wide])] : []),
    '```',
    '',
    row(['column', 'type', 'JSON path', 'shown', 'description']),
    row(Array<string>(5).fill('---')),
    ...columns.map((c) =>
      row([c.name, code(c.type), code(c.jsonPath), c.priority ? '`-o wide`' : 'always', prose(c.description ?? '')]),
    ),
    '',
  ];
}

function subresourcesText(subresources: JsonSchema | undefined): string {
  const parts = Object.entries(subresources ?? {}).map(([name, value]) => {
    if (!isObject(value) || Object.keys(value).length === 0) return code(name);
    const paths = Object.entries(value).map(([k, v]) => `${k} ${code(typeof v === 'string' ? v : json(v))}`);
    return `${code(name)} (${paths.join(', ')})`;
  });
  return parts.length ? `Subresources: ${parts.join('; ')}.` : 'No subresources.';
}

interface Version {
  name: string;
  served?: boolean;
  storage?: boolean;
  schema?: { openAPIV3Schema?: JsonSchema };
  subresources?: JsonSchema;
  additionalPrinterColumns?: Column[];
}
interface Names {
  kind: string;
  plural: string;
  singular?: string;
  shortNames?: string[];
}

/** A kind's heading: its name, and the version when the CRD serves several. */
const titleOf = (kind: string, version: string, versions: number) => (versions > 1 ? `${kind} ${version}` : kind);

/** The kinds' headings as links (GitHub's anchor of a heading of letters, digits and spaces). */
function contents(crds: CustomResourceDefinition[]): string[] {
  return crds.flatMap((crd) => {
    const versions = (crd.spec['versions'] as Version[] | undefined) ?? [];
    const kind = (crd.spec['names'] as Names).kind;
    return versions
      .map((v) => titleOf(kind, v.name, versions.length))
      .map((t) => `- [${t}](#${t.toLowerCase().replace(/ /g, '-')})`);
  });
}

function crdSection(crd: CustomResourceDefinition): string[] {
  const names = crd.spec['names'] as Names;
  const versions = (crd.spec['versions'] as Version[] | undefined) ?? [];
  const out: string[] = [];
  for (const version of versions) {
    const schema = version.schema?.openAPIV3Schema ?? {};
    const title = titleOf(names.kind, version.name, versions.length);
    const short = names.shortNames?.length ? `, short names ${names.shortNames.map(code).join(', ')}` : '';
    const roles = [version.served ? 'served' : 'not served', ...(version.storage ? ['stored'] : [])].join(' and ');
    out.push(
      `## ${title}`,
      '',
      `${code(`apiVersion: ${String(crd.spec['group'])}/${version.name}`)}, ${code(`kind: ${names.kind}`)} (${roles}); ` +
        `CRD ${code(crd.metadata.name)}, ${String(crd.spec['scope']).toLowerCase()}; plural ${code(names.plural)}` +
        `${names.singular ? `, singular ${code(names.singular)}` : ''}${short}. ${subresourcesText(version.subresources)}`,
      '',
      prose(text(schema['description'])),
      '',
      ...columnsSection(names.plural, version.additionalPrinterColumns ?? []),
      ...objectLevels(schema).flatMap((level) => levelSection(names.kind, level)),
    );
  }
  return out;
}

/** docs/api-reference.md exactly as committed. */
export function renderApiReference(crds: CustomResourceDefinition[] = projectCrds()): string {
  const lines = [
    '<!-- Generated by `npm run gen:api-reference` from src/api (via src/api/reference.ts) into docs/api-reference.md. Do not edit. -->',
    '',
    '# API reference',
    '',
    'Every field of the CustomResourceDefinitions in `manifests/`, rendered from the same schema objects the CRDs are generated from ' +
      '(`src/api/schema.ts` and its siblings, through `src/api/crd.ts`), so it says what the API server enforces and ' +
      '`kubectl explain` shows; a test fails when this file is stale.',
    '',
    ...contents(crds),
    '',
    'How to read the tables: one table per object; `a[]` is an item of the list `a` and `a[*]` the value under any key of the map `a`. ' +
      'Defaults are JSON; the API server fills them in before it validates, so a required field with a default never has to be written, ' +
      'and an object whose default is `{}` is created with each of its fields defaulted. ' +
      'Constraints are the schema keywords (`items:` and `values:` for those of list items and map values); ' +
      'a `rule` is a CEL validation rule: its message, then its expression (`oldSelf` is the value before an update).',
    '',
    ...crds.flatMap(crdSection),
  ];
  const markdown = lines
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trimEnd();
  return `${markdown}\n`;
}

// docs/troubleshooting.md cannot drift from the code: every name the page gives the on-call
// engineer (condition types and reasons, Event reasons, quoted sidecar log lines, annotation and
// label keys, status and spec paths in a jsonpath, alerts and their runbook anchors, environment
// variables) is looked up in what the operator really reads and writes: src/, manifests/,
// metacontroller/ and the generated CRD. A name not found fails with the name and its line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { ALERT_NAMES } from '../../src/api/monitoring.ts';
import { CONDITION_TYPES } from '../../src/sidecar/core/decide/status-series.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PAGE = 'docs/troubleshooting.md';
const page = readFileSync(join(ROOT, PAGE), 'utf8');

function filesUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((entry) => {
    const path = join(dir, entry);
    return statSync(join(ROOT, path)).isDirectory() ? filesUnder(path) : /\.(ts|ya?ml|json)$/.test(entry) ? [path] : [];
  });
}
const read = (files: string[]): string => files.map((f) => readFileSync(join(ROOT, f), 'utf8')).join('\n');
const srcText = read(filesUnder('src'));
const manifestText = read([...filesUnder('manifests'), ...filesUnder('metacontroller')]);
const monitoringDoc = readFileSync(join(ROOT, 'docs/monitoring.md'), 'utf8');

type Found = { name: string; line: number };
type Check = (name: string) => boolean;

/** The page's lines with their numbers, and for each whether it is inside a ``` fence. */
function pageLines(text: string): Array<{ text: string; line: number; fenced: boolean }> {
  let fenced = false;
  return text.split('\n').flatMap((t, i) => {
    if (t.trimStart().startsWith('```')) {
      fenced = !fenced;
      return [];
    }
    return [{ text: t, line: i + 1, fenced }];
  });
}

/** Inline code spans outside fences. */
function inlineCode(text: string): Found[] {
  return pageLines(text)
    .filter((l) => !l.fenced)
    .flatMap((l) => [...l.text.matchAll(/`([^`]+)`/g)].map((m) => ({ name: m[1] ?? '', line: l.line })));
}

const CAMEL = /^[A-Z][a-z]+(?:[A-Z][a-z]*)*$/;
/** A condition type, condition reason, Event reason or phase, written as the code writes it. */
function reasonNames(text: string): Found[] {
  const out = inlineCode(text).filter((c) => CAMEL.test(c.name));
  for (const l of pageLines(text)) {
    for (const m of l.text.matchAll(/reason=([A-Za-z]+)/g)) out.push({ name: m[1] ?? '', line: l.line });
    for (const m of l.text.matchAll(/grep -E '([^']+)'/g))
      for (const alt of (m[1] ?? '').split('|')) if (CAMEL.test(alt)) out.push({ name: alt, line: l.line });
  }
  return out;
}

/** Sidecar log messages: grep -E alternatives and quoted lowercase phrases. */
function logLines(text: string): Found[] {
  const out: Found[] = [];
  for (const l of pageLines(text))
    for (const m of l.text.matchAll(/grep -E '([^']+)'/g))
      for (const alt of (m[1] ?? '').split('|')) if (!CAMEL.test(alt)) out.push({ name: alt, line: l.line });
  for (const c of inlineCode(text)) {
    const phrase = /^[a-z]/.test(c.name) && c.name.includes(' ');
    const command = /^(kubectl|redis-cli|grep) /.test(c.name);
    const field = /^[\w.]+: \S+$/.test(c.name); // `replicas: 0`, a spec field and its value
    if (phrase && !command && !field) for (const part of c.name.split(' ... ')) out.push({ name: part, line: c.line });
  }
  return out;
}

/** Annotation and label keys of this operator, escaped (jsonpath) or not. */
function operatorKeys(text: string): Found[] {
  return pageLines(text).flatMap((l) =>
    [...l.text.matchAll(/redis(?:\\*\.)example(?:\\*\.)com\/([a-z][a-z-]*)/g)].map((m) => ({
      name: `redis.example.com/${m[1] ?? ''}`,
      line: l.line,
    })),
  );
}

/** .status/.spec paths in the jsonpath of a `kubectl get redis` (segments; `[]` is a list item). */
function redisPaths(text: string): Array<Found & { condition?: string }> {
  const out: Array<Found & { condition?: string }> = [];
  for (const l of pageLines(text)) {
    if (!/kubectl get redis \S+ -o jsonpath=/.test(l.text)) continue;
    const jsonpath = /jsonpath='([^']*)'/.exec(l.text)?.[1] ?? '';
    for (const m of jsonpath.matchAll(/(?<![\w@])\.(?:status|spec)(?:\.\w+|\[[^\]]*\])*/g)) {
      const path = m[0];
      const condition = /@\.type=="(\w+)"/.exec(path)?.[1];
      out.push({ name: path, line: l.line, ...(condition !== undefined ? { condition } : {}) });
    }
  }
  return out;
}

/** Alerts linked to their runbook: [RedisX](monitoring.md#anchor). */
function alertLinks(text: string): Array<Found & { anchor: string }> {
  return pageLines(text).flatMap((l) =>
    [...l.text.matchAll(/\[(\w+)\]\(monitoring\.md#([\w-]+)\)/g)].map((m) => ({
      name: m[1] ?? '',
      anchor: m[2] ?? '',
      line: l.line,
    })),
  );
}

/** Environment variables: upper-case names with an underscore. */
function envNames(text: string): Found[] {
  return pageLines(text).flatMap((l) =>
    [...l.text.matchAll(/\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/g)].map((m) => ({ name: m[0], line: l.line })),
  );
}

const crd = parse(readFileSync(join(ROOT, 'manifests/crd.yaml'), 'utf8')) as {
  spec: { versions: Array<{ schema: { openAPIV3Schema: Schema } }> };
};
interface Schema {
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: Schema | boolean;
}
/** Walks a path's segments through the CRD's schema; returns the first segment it has no field for. */
function missingSegment(path: string): string | undefined {
  let node: Schema | undefined = crd.spec.versions[0]?.schema.openAPIV3Schema;
  for (const seg of path.match(/\.\w+|\[[^\]]*\]/g) ?? []) {
    if (node === undefined) return seg;
    if (seg.startsWith('[')) node = node.items;
    else if (node.properties !== undefined) node = node.properties[seg.slice(1)];
    else if (typeof node.additionalProperties === 'object') node = node.additionalProperties;
    else return seg;
  }
  return node === undefined ? path : undefined;
}

const quotedInSrc: Check = (name) =>
  [`'${name}'`, `"${name}"`, `\`${name}\``].some((q) => srcText.includes(q)) ||
  new RegExp(`\\b${name}\\b`).test(manifestText);
const inSrc: Check = (name) => srcText.includes(name);
const keyInSrc: Check = (key) =>
  srcText.includes(key) || srcText.includes(key.replace('redis.example.com/', '${GROUP}/'));
const envInSource: Check = (name) =>
  new RegExp(`\\b${name}\\b`).test(srcText) || new RegExp(`\\b${name}\\b`).test(manifestText);
const anchors = new Set(
  [...monitoringDoc.matchAll(/^#+ (.+)$/gm)].map((m) =>
    (m[1] ?? '')
      .toLowerCase()
      .replace(/[^\w\s-]/g, '')
      .replace(/\s+/g, '-'),
  ),
);
const operatorAlerts = new Set([...manifestText.matchAll(/alert: (\w+)/g)].map((m) => m[1]));
const alertExists: Check = (name) =>
  operatorAlerts.has(name) || (ALERT_NAMES as readonly string[]).some((a) => `Redis${a}` === name);

/** One subtest per distinct name, listing every line it is on. */
async function eachName(
  t: { test: (name: string, fn: () => void) => Promise<void> },
  found: Found[],
  check: Check,
  where: string,
): Promise<void> {
  assert.ok(found.length > 0, `the page names no such thing: the extractor or the page is broken`);
  const byName = new Map<string, number[]>();
  for (const f of found) byName.set(f.name, [...(byName.get(f.name) ?? []), f.line]);
  for (const [name, lines] of byName)
    await t.test(name, () => assert.ok(check(name), `${PAGE}:${lines.join(',')}: "${name}" is not found in ${where}`));
}

test('condition types, reasons, Event reasons and phases the page names are written by the code', async (t) => {
  await eachName(t, reasonNames(page), quotedInSrc, 'src/ (as a string literal), manifests/ or metacontroller/');
});

test('sidecar log lines the page quotes are logged by the code', async (t) => {
  await eachName(t, logLines(page), inSrc, 'src/');
});

test('redis.example.com/ annotation and label keys exist', async (t) => {
  await eachName(t, operatorKeys(page), keyInSrc, 'src/ (src/api/labels.ts)');
});

test('jsonpaths on a Redis name fields of the generated CRD and real condition types', async (t) => {
  const paths = redisPaths(page);
  await eachName(t, paths, (path) => missingSegment(path) === undefined, 'manifests/crd.yaml');
  await t.test('condition types in [?(@.type==...)]', () => {
    for (const p of paths.filter((x) => x.condition !== undefined))
      assert.ok(
        (CONDITION_TYPES as readonly string[]).includes(p.condition ?? ''),
        `${PAGE}:${p.line}: condition type "${p.condition}" is not one of ${CONDITION_TYPES.join(', ')}`,
      );
  });
});

test('alerts the page links exist and their runbook anchors are headings of docs/monitoring.md', async (t) => {
  const links = alertLinks(page);
  await eachName(
    t,
    links,
    alertExists,
    'src/api/monitoring.ts ALERT_NAMES or manifests/components/monitoring/operator-rules.yaml',
  );
  await t.test('anchors', () => {
    for (const l of links)
      assert.ok(
        anchors.has(l.anchor),
        `${PAGE}:${l.line}: monitoring.md#${l.anchor} is not a heading of docs/monitoring.md`,
      );
  });
});

test('environment variables the page names are read by the code or set in the manifests', async (t) => {
  await eachName(t, envNames(page), envInSource, 'src/, manifests/ or metacontroller/');
});

test('the page is linked from README.md and from the runbooks', () => {
  assert.ok(
    readFileSync(join(ROOT, 'README.md'), 'utf8').includes('(docs/troubleshooting.md)'),
    'README.md has no link to docs/troubleshooting.md',
  );
  const fromRunbooks = [...monitoringDoc.matchAll(/\(troubleshooting\.md#([\w-]+)\)/g)].map((m) => m[1] ?? '');
  assert.ok(fromRunbooks.length > 0, 'docs/monitoring.md links no section of troubleshooting.md');
  const sections = new Set(
    [...page.matchAll(/^## (.+)$/gm)].map((m) =>
      (m[1] ?? '')
        .toLowerCase()
        .replace(/[^\w\s-]/g, '')
        .replace(/\s+/g, '-'),
    ),
  );
  for (const a of fromRunbooks)
    assert.ok(sections.has(a), `docs/monitoring.md links troubleshooting.md#${a}, which is not a section of the page`);
});

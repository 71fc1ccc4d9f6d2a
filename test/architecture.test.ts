// The layout is the architecture: imports flow api -> hook -> server and api -> sidecar, and two
// places stay pure (no I/O modules, no clock, no chance, no environment): the hook, and the
// sidecar's decision layer (src/sidecar/redis/decide), which is handed `now` and what was observed.
// This test reads the sources. The rules are functions of the sources they are given, so the
// last tests feed the very same functions synthetic sources to show that each rule can fail.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, posix, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** A source file: its path from the repository root ('/'-separated) and its text. */
interface Source {
  path: string;
  text: string;
}

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}

function readSources(): Source[] {
  return files(join(root, 'src')).map((file) => ({ path: relative(root, file).split(sep).join('/'), text: readFileSync(file, 'utf8') }));
}

interface ImportRef {
  spec: string;
  /** `import type` / `export type`: erased before the module runs. */
  typeOnly: boolean;
  line: number;
}

const lineAt = (text: string, index: number) => text.slice(0, index).split('\n').length;

/** Static imports and re-exports (also across lines), side-effect imports and dynamic import()s. */
function importsIn(text: string): ImportRef[] {
  const refs: ImportRef[] = [];
  for (const m of text.matchAll(/^[ \t]*(?:import|export)\s+(type\s+)?[^;]*?\bfrom\s+(['"])([^'"]+)\2/gm)) {
    refs.push({ spec: m[3] ?? '', typeOnly: m[1] !== undefined, line: lineAt(text, m.index + m[0].search(/\S/)) });
  }
  for (const m of text.matchAll(/^[ \t]*import\s+(['"])([^'"]+)\1/gm))
    refs.push({ spec: m[2] ?? '', typeOnly: false, line: lineAt(text, m.index + m[0].search(/\S/)) });
  for (const m of text.matchAll(/\bimport\(\s*(['"])([^'"]+)\1\s*\)/g)) refs.push({ spec: m[2] ?? '', typeOnly: false, line: lineAt(text, m.index) });
  return refs.sort((a, b) => a.line - b.line);
}

/** The repository path a relative import of `from` names. */
const target = (from: string, spec: string) => posix.normalize(posix.join(posix.dirname(from), spec));

/** Top-level src folder of a path: api, hook, server, sidecar, backup or runtime. */
const layer = (path: string) => path.split('/')[1] ?? '';

// ------------------------------------------------------------------ layers

// runtime is process plumbing (env parsing, logger) for the two entry points; it knows nothing
// of Redis, so the pure hook has no use for it.
const ALLOWED: Record<string, string[]> = {
  api: ['api'],
  hook: ['api', 'hook'],
  server: ['api', 'hook', 'server', 'runtime'],
  sidecar: ['api', 'sidecar', 'runtime'],
  // The backup job (issue 11): snapshots and their storage; it talks to Redis and S3, never to the hook.
  backup: ['api', 'backup', 'runtime'],
  // kubectl redis (issue 14): reads the API's names and types, talks only to the API server; nothing of the hook or sidecar.
  plugin: ['api', 'plugin'],
  runtime: ['runtime'],
  // The metrics proxy beside every exporter: a few lines of node:http, nothing of the project's.
  'metrics-proxy': ['metrics-proxy'],
};

/** Every relative import (types included) that crosses the layers against ALLOWED. */
function layerViolations(sources: Source[]): string[] {
  const out: string[] = [];
  for (const { path, text } of sources) {
    const from = layer(path);
    for (const { spec, line } of importsIn(text)) {
      if (!spec.startsWith('.')) continue;
      const to = layer(target(path, spec));
      if (!(ALLOWED[from] ?? []).includes(to)) out.push(`${path}:${line} imports ${spec} (${from} -> ${to})`);
    }
  }
  return out;
}

// ------------------------------------------------------------------ purity

/** Modules that do I/O or schedule work: node built-ins and the project's client libraries. */
const IO_MODULES =
  /^(node:)?(fs|fs\/promises|net|tls|http|https|http2|dgram|dns|dns\/promises|child_process|cluster|worker_threads|process|os|timers|timers\/promises|perf_hooks|readline|inspector)$|^(ioredis|@kubernetes\/client-node|fastify|pino|pino-pretty|prom-client|undici)(\/.*)?$/;
/** Reading the clock, chance or the environment, scheduling, or reaching out. */
const IMPURE_CALLS =
  /\bDate\.now\(|\bDate\(\s*\)|\bperformance\.now\(|\bprocess\.hrtime\b|\bMath\.random\(|\bprocess\.env\b|\bsetTimeout\(|\bsetInterval\(|\bsetImmediate\(|\bfetch\(|\brandomUUID\(|\brandomBytes\(|\bgetRandomValues\(/;

interface PurityRule {
  /** The folder the rule is about, from the repository root, with a trailing '/'. */
  root: string;
  /** Whether `import type` of an I/O module is allowed (it is erased before anything runs). */
  typeImportsAllowed: boolean;
  /** Folders of the repository the files under `root` may not import values from. */
  forbiddenFolders: string[];
}

interface Violation {
  file: string;
  line: number;
  what: string;
}

const show = (v: Violation) => `${v.file}:${v.line} ${v.what}`;

/**
 * The files under `rule.root` and every source they reach through value imports: none may import
 * an I/O module or call IMPURE_CALLS (a line comment or a doc-comment line is not a call), and
 * the files under `rule.root` may not import values from `rule.forbiddenFolders`.
 */
function purityViolations(rule: PurityRule, sources: Source[]): Violation[] {
  const byPath = new Map(sources.map((s) => [s.path, s]));
  const reach = sources.filter((s) => s.path.startsWith(rule.root)).map((s) => s.path);
  const seen = new Set(reach);
  const out: Violation[] = [];
  for (let i = 0; i < reach.length; i++) {
    const file = reach[i] as string;
    const text = byPath.get(file)?.text ?? '';
    const own = file.startsWith(rule.root);
    const via = own ? '' : ` (reached from ${rule.root})`;
    for (const { spec, typeOnly, line } of importsIn(text)) {
      if (IO_MODULES.test(spec) && !(typeOnly && rule.typeImportsAllowed)) out.push({ file, line, what: `imports ${spec}${via}` });
      if (!spec.startsWith('.') || typeOnly) continue;
      const to = target(file, spec);
      if (own && rule.forbiddenFolders.some((f) => to.startsWith(f))) out.push({ file, line, what: `imports ${spec}` });
      if (byPath.has(to) && !seen.has(to)) {
        seen.add(to);
        reach.push(to);
      }
    }
    text.split('\n').forEach((line, n) => {
      const code = line.trim();
      if (code.startsWith('//') || code.startsWith('*') || code.startsWith('/*')) return;
      if (IMPURE_CALLS.test(code)) out.push({ file, line: n + 1, what: `calls: ${code}${via}` });
    });
  }
  return out;
}

const HOOK: PurityRule = { root: 'src/hook/', typeImportsAllowed: false, forbiddenFolders: [] };

// The decision layer gets `now` and observations as input; Redis, the API server and the
// manager's loop live in the folders next to it.
const DECIDE: PurityRule = {
  root: 'src/sidecar/redis/decide/',
  typeImportsAllowed: true,
  forbiddenFolders: ['src/sidecar/adapters/kube/', 'src/sidecar/adapters/redis/', 'src/sidecar/redis/manager/'],
};

const SOURCES = readSources();

test('imports flow one way: api -> hook -> server, api -> sidecar (runtime under both entry points)', () => {
  assert.deepEqual(layerViolations(SOURCES), []);
});

test('the hook is pure: no I/O modules, no clock, no randomness, no environment', () => {
  assert.deepEqual(purityViolations(HOOK, SOURCES).map(show), []);
});

test('the decision layer is pure: no I/O modules, no clock, nothing of kube, redis or manager', () => {
  assert.deepEqual(purityViolations(DECIDE, SOURCES).map(show), []);
});

test('the checks read the real sources', () => {
  assert.ok(SOURCES.filter((s) => s.path.startsWith(HOOK.root)).length >= 3, 'the hook sources are read');
  assert.ok(SOURCES.filter((s) => s.path.startsWith(DECIDE.root)).length >= 5, 'the decide sources are read');
  const plan = SOURCES.find((s) => s.path === 'src/sidecar/redis/decide/plan.ts');
  assert.ok(plan && importsIn(plan.text).some((r) => r.spec === './master.ts' && !r.typeOnly), 'the scanner sees decide/plan.ts import ./master.ts');
  assert.deepEqual(
    [...new Set(SOURCES.map((s) => layer(s.path)))].filter((l) => !(l in ALLOWED)),
    [],
    'every src folder has a place in ALLOWED',
  );
});

// ------------------------------------------------------------------ the rules can fail

test('the checks above can fail: synthetic sources run through the same functions', async (t) => {
  const cases: Array<{ name: string; check: (s: Source[]) => string[]; path: string; text: string; want: string[] }> = [
    // layers
    {
      name: 'api importing the sidecar',
      check: layerViolations,
      path: 'src/api/x.ts',
      text: "import { plan } from '../sidecar/decide/index.ts';\n",
      want: ['src/api/x.ts:1 imports ../sidecar/decide/index.ts (api -> sidecar)'],
    },
    {
      name: 'the hook importing the server, even a type',
      check: layerViolations,
      path: 'src/hook/x.ts',
      text: "// a comment\nimport type { App } from '../server/app.ts';\n",
      want: ['src/hook/x.ts:2 imports ../server/app.ts (hook -> server)'],
    },
    {
      name: 'the sidecar importing runtime and api: allowed',
      check: layerViolations,
      path: 'src/sidecar/x.ts',
      text: "import { a } from '../runtime/env.ts';\nimport { b } from '../api/labels.ts';\n",
      want: [],
    },
    // the hook
    {
      name: 'the hook importing node:fs',
      check: (s) => purityViolations(HOOK, s).map(show),
      path: 'src/hook/x.ts',
      text: "import { readFileSync } from 'node:fs';\n",
      want: ['src/hook/x.ts:1 imports node:fs'],
    },
    {
      name: 'the hook importing client-node, even a type',
      check: (s) => purityViolations(HOOK, s).map(show),
      path: 'src/hook/x.ts',
      text: "import type { V1Pod } from '@kubernetes/client-node';\n",
      want: ['src/hook/x.ts:1 imports @kubernetes/client-node'],
    },
    {
      name: 'the hook reading the clock',
      check: (s) => purityViolations(HOOK, s).map(show),
      path: 'src/hook/x.ts',
      text: 'const t = Date.now();\n',
      want: ['src/hook/x.ts:1 calls: const t = Date.now();'],
    },
    {
      name: 'the hook reading the environment',
      check: (s) => purityViolations(HOOK, s).map(show),
      path: 'src/hook/x.ts',
      text: "const level = process.env['LOG_LEVEL'];\n",
      want: ["src/hook/x.ts:1 calls: const level = process.env['LOG_LEVEL'];"],
    },
    {
      name: 'comments are not calls',
      check: (s) => purityViolations(HOOK, s).map(show),
      path: 'src/hook/x.ts',
      text: '// never Date.now()\n/** nor setTimeout(f) */\n * Math.random()\n',
      want: [],
    },
    // the decision layer
    ...(
      [
        ["import { Redis } from 'ioredis';", 'imports ioredis'],
        ["import {\n  connect,\n  type Socket,\n} from 'node:net';", 'imports node:net'],
        ["import { setTimeout as sleep } from 'node:timers/promises';", 'imports node:timers/promises'],
        ["import { performance } from 'node:perf_hooks';", 'imports node:perf_hooks'],
        ["import { CoreV1Api } from '@kubernetes/client-node';", 'imports @kubernetes/client-node'],
        ["import { pino } from 'pino';", 'imports pino'],
        ["import { Gauge } from 'prom-client';", 'imports prom-client'],
        ["import { KubeClient } from '../../adapters/kube/client.ts';", 'imports ../../adapters/kube/client.ts'],
        ["import { probe, type Probe } from '../../adapters/redis/adapter.ts';", 'imports ../../adapters/redis/adapter.ts'],
        ["export { Manager } from '../manager/manager.ts';", 'imports ../manager/manager.ts'],
        ["import '../../adapters/redis/pool.ts';", 'imports ../../adapters/redis/pool.ts'],
        ["const m = await import('../manager/index.ts');", 'imports ../manager/index.ts'],
        ['const t = Date.now();', 'calls: const t = Date.now();'],
        ['const t = performance.now();', 'calls: const t = performance.now();'],
        ['setTimeout(tick, 100);', 'calls: setTimeout(tick, 100);'],
        ['const pick = Math.random() < 0.5;', 'calls: const pick = Math.random() < 0.5;'],
      ] as const
    ).map(([text, what]) => ({
      name: `decide/: ${what}`,
      check: (s: Source[]) => purityViolations(DECIDE, s).map(show),
      path: 'src/sidecar/redis/decide/x.ts',
      text: `${text}\n`,
      want: [`src/sidecar/redis/decide/x.ts:1 ${what}`],
    })),
    {
      name: 'decide/: types from anywhere, values from api/ and decide/, time from the input: allowed',
      check: (s) => purityViolations(DECIDE, s).map(show),
      path: 'src/sidecar/redis/decide/x.ts',
      text: [
        "import type { V1Pod } from '@kubernetes/client-node';",
        "import type { RedisFacts } from '../../adapters/redis/types.ts';",
        "export type { Lease } from '../../adapters/kube/leader.ts';",
        "import { ROLE_LABEL } from '../../../api/labels.ts';",
        "import { plan } from './plan.ts';",
        'const late = (input: { now: number }, at: number) => input.now - at > 1000;',
        '',
      ].join('\n'),
      want: [],
    },
  ];
  for (const c of cases) await t.test(c.name, () => assert.deepEqual(c.check([{ path: c.path, text: c.text }]), c.want));

  await t.test('decide/: what it reaches through a value import is checked too', () => {
    const sources: Source[] = [
      { path: 'src/sidecar/redis/decide/x.ts', text: "import { ROLE_LABEL } from '../../../api/labels.ts';\n" },
      { path: 'src/api/labels.ts', text: "import { hostname } from 'node:os';\nexport const ROLE_LABEL = `role-${Date.now()}`;\n" },
    ];
    assert.deepEqual(purityViolations(DECIDE, sources).map(show), [
      'src/api/labels.ts:1 imports node:os (reached from src/sidecar/redis/decide/)',
      'src/api/labels.ts:2 calls: export const ROLE_LABEL = `role-${Date.now()}`; (reached from src/sidecar/redis/decide/)',
    ]);
  });
});

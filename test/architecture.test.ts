// The layout is the architecture, and the lint configuration enforces it (eslint.architecture.js):
// imports flow api -> hook -> server and api -> sidecar, the hook's kinds and the sidecar's kinds
// stay apart, and the pure folders (api, the hook, the sidecar's decide/ folders) import no I/O
// module and read no clock, chance or environment. `npm run lint` applies the rules to the sources;
// this test shows, through ESLint's own API and the project's configuration, that each rule fails
// on a source that breaks it, and checks what lint cannot: that every src folder has rules, that
// the compiled rules reach the deepest file, and that the pure folders form a closed set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

interface ImportRule {
  root: string;
  allowed?: string[];
  allowTypeImports?: boolean;
}
interface Architecture {
  LAYERS: Record<string, string[]>;
  PURE: Array<{ root: string; typeImports: boolean }>;
  RULES: ImportRule[];
  MAX_DEPTH: number;
}
// A JavaScript module outside tsconfig.json, so imported by URL and typed here.
const arch = (await import(pathToFileURL(join(root, 'eslint.architecture.js')).href)) as Architecture;

// The project's configuration as `npm run lint` uses it, without the type-checked rules: the
// synthetic files below exist on no disk and in no TypeScript program.
const eslint = new ESLint({
  cwd: root,
  overrideConfigFile: join(root, 'eslint.config.js'),
  overrideConfig: tseslint.configs.disableTypeChecked,
});
const ARCHITECTURE_RULES = new Set([
  'no-restricted-imports',
  '@typescript-eslint/no-restricted-imports',
  'no-restricted-syntax',
  'no-restricted-globals',
  'no-restricted-properties',
]);

/** What the architecture rules report on `text` as the file `path`: `rule:line`, `(warn)` if a warning. */
async function reports(path: string, text: string): Promise<string[]> {
  const [result] = await eslint.lintText(text, { filePath: join(root, path) });
  assert.ok(result, 'ESLint answers for the file');
  const fatal = result.messages.filter((m) => m.fatal);
  assert.deepEqual(fatal, [], 'the synthetic source parses');
  return result.messages
    .filter((m) => m.ruleId !== null && ARCHITECTURE_RULES.has(m.ruleId))
    .map((m) => `${m.ruleId}:${m.line}${m.severity === 1 ? ' (warn)' : ''}`);
}

const IMPORTS = 'no-restricted-imports';
const KINDS = '@typescript-eslint/no-restricted-imports';
const SYNTAX = 'no-restricted-syntax';
const KIND_REPORT = `${KINDS}:1`;
const GLOBALS = 'no-restricted-globals';
const PROPERTIES = 'no-restricted-properties';

interface Case {
  name: string;
  path: string;
  text: string;
  want: string[];
}

const DECIDE_CASES: Array<[string, string[]]> = [
  ["import { Redis } from 'ioredis';", [`${IMPORTS}:1`]],
  ["import {\n  connect,\n  type Socket,\n} from 'node:net';", [`${IMPORTS}:1`]],
  ["import { setTimeout as sleep } from 'node:timers/promises';", [`${IMPORTS}:1`]],
  ["import { performance } from 'node:perf_hooks';", [`${IMPORTS}:1`]],
  ["import { CoreV1Api } from '@kubernetes/client-node';", [`${IMPORTS}:1`]],
  ["import { pino } from 'pino';", [`${IMPORTS}:1`]],
  ["import { Gauge } from 'prom-client';", [`${IMPORTS}:1`]],
  ["import { KubeClient } from '../../adapters/kube/client.ts';", [`${IMPORTS}:1`]],
  ["import { probe, type Probe } from '../../adapters/redis/adapter.ts';", [`${IMPORTS}:1`]],
  ["export { Manager } from '../manager/manager.ts';", [`${IMPORTS}:1`]],
  ["import '../../adapters/redis/pool.ts';", [`${IMPORTS}:1`]],
  ["import { loop } from '../../core/loop.ts';", [`${IMPORTS}:1`]],
  ["import { SIDECAR_PORT } from '../../config.ts';", [`${IMPORTS}:1`]],
  ["const m = await import('../manager/index.ts');", [`${SYNTAX}:1`]],
  ['const t = Date.now();', [`${PROPERTIES}:1`]],
  ['const t = new Date();', [`${SYNTAX}:1`]],
  ['const t = performance.now();', [`${GLOBALS}:1`, `${PROPERTIES}:1`]],
  ['setTimeout(tick, 100);', [`${GLOBALS}:1`]],
  ['const pick = Math.random() < 0.5;', [`${PROPERTIES}:1`]],
  ["import { randomUUID } from 'node:crypto';", [`${IMPORTS}:1`]],
];

const CASES: Case[] = [
  // layers
  {
    name: 'api importing the sidecar',
    path: 'src/api/x.ts',
    text: "import { plan } from '../sidecar/redis/decide/index.ts';\n",
    want: [`${IMPORTS}:1`],
  },
  {
    name: 'api importing from outside src',
    path: 'src/api/x.ts',
    text: "import { x } from '../../test/support/x.ts';\n",
    want: [`${IMPORTS}:1`],
  },
  {
    name: 'the hook importing the server, even a type',
    path: 'src/hook/x.ts',
    text: "// a comment\nimport type { App } from '../server/app.ts';\n",
    want: [`${IMPORTS}:2`],
  },
  {
    name: 'the server importing the sidecar',
    path: 'src/server/x.ts',
    text: "import { main } from '../sidecar/main.ts';\n",
    want: [`${IMPORTS}:1`],
  },
  {
    name: 'the server importing the sidecar at run time',
    path: 'src/server/x.ts',
    text: "const m = await import('../sidecar/main.ts');\n",
    want: [`${SYNTAX}:1`],
  },
  {
    name: 'the plugin importing the hook',
    path: 'src/plugin/x.ts',
    text: "import { sync } from '../hook/index.ts';\n",
    want: [`${IMPORTS}:1`],
  },
  {
    name: 'the sidecar importing the hook from a deep folder',
    path: 'src/sidecar/adapters/kube/x.ts',
    text: "import { a } from '../../../hook/util.ts';\n",
    want: [`${IMPORTS}:1`],
  },
  {
    name: 'the sidecar importing runtime and api: allowed',
    path: 'src/sidecar/x.ts',
    text: "import { a } from '../runtime/env.ts';\nimport { b } from '../api/labels.ts';\n",
    want: [],
  },
  {
    name: 'the server importing api, hook, runtime and itself: allowed',
    path: 'src/server/x.ts',
    text: "import { a } from '../api/labels.ts';\nimport { b } from '../hook/index.ts';\nimport { c } from '../runtime/env.ts';\nimport { d } from './app.ts';\n",
    want: [],
  },
  // the hook and api: pure
  {
    name: 'the hook importing node:fs',
    path: 'src/hook/x.ts',
    text: "import { readFileSync } from 'node:fs';\n",
    want: [`${IMPORTS}:1`],
  },
  {
    name: 'the hook importing client-node, even a type',
    path: 'src/hook/x.ts',
    text: "import type { V1Pod } from '@kubernetes/client-node';\n",
    want: [`${IMPORTS}:1`],
  },
  {
    name: 'the hook reading the clock',
    path: 'src/hook/x.ts',
    text: 'const t = Date.now();\n',
    want: [`${PROPERTIES}:1`],
  },
  {
    name: 'the hook reading the clock through Date()',
    path: 'src/hook/x.ts',
    text: 'const t = Date();\n',
    want: [`${SYNTAX}:1`],
  },
  {
    name: 'the hook reading the environment',
    path: 'src/hook/x.ts',
    text: "const level = process.env['LOG_LEVEL'];\n",
    want: [`${GLOBALS}:1`, `${PROPERTIES}:1`],
  },
  {
    name: 'the hook drawing chance',
    path: 'src/hook/x.ts',
    text: "import { randomBytes } from 'node:crypto';\n",
    want: [`${IMPORTS}:1`],
  },
  {
    name: 'the hook hashing and parsing dates: allowed',
    path: 'src/hook/x.ts',
    text: "import { createHash } from 'node:crypto';\nconst at = new Date('2024-01-01T00:00:00Z').getTime() + Date.parse('2024-01-02');\n",
    want: [],
  },
  {
    name: 'comments are not calls',
    path: 'src/hook/x.ts',
    text: '// never Date.now()\n/** nor setTimeout(f),\n * nor Math.random() */\n',
    want: [],
  },
  {
    name: 'a hook kind importing node:fs',
    path: 'src/hook/redis/x.ts',
    text: "import { readFileSync } from 'node:fs';\n",
    want: [`${IMPORTS}:1`],
  },
  {
    name: 'api importing undici',
    path: 'src/api/x.ts',
    text: "import { request } from 'undici';\n",
    want: [`${IMPORTS}:1`],
  },
  {
    name: 'api is pure, so what a pure folder reaches through it is checked too',
    path: 'src/api/labels.ts',
    text: "import { hostname } from 'node:os';\nexport const ROLE_LABEL = `role-${Date.now()}`;\n",
    want: [`${IMPORTS}:1`, `${PROPERTIES}:2`],
  },
  // the hook's kinds
  {
    name: 'a hook kind importing another kind',
    path: 'src/hook/redis/x.ts',
    text: "import { a } from '../rediscluster/y.ts';\n",
    want: [`${IMPORTS}:1`],
  },
  {
    name: 'a hook kind importing another kind, even a type, from a subfolder',
    path: 'src/hook/rediscluster/children/x.ts',
    text: "import type { A } from '../../redisbackup/y.ts';\n",
    want: [`${IMPORTS}:1`],
  },
  {
    name: 'a hook kind importing the hook outside common/',
    path: 'src/hook/redisbackup/x.ts',
    text: "import { a } from '../util.ts';\n",
    want: [`${IMPORTS}:1`],
  },
  {
    name: 'a hook kind importing api, common and itself: allowed',
    path: 'src/hook/rediscluster/children/x.ts',
    text: "import { a } from '../../common/y.ts';\nimport { b } from '../../../api/labels.ts';\nimport { c } from '../state.ts';\nimport { d } from './z.ts';\n",
    want: [],
  },
  {
    name: 'hook/common importing a kind',
    path: 'src/hook/common/x.ts',
    text: "import { a } from '../redis/y.ts';\n",
    want: [`${IMPORTS}:1`],
  },
  {
    name: 'hook/common importing api and itself: allowed',
    path: 'src/hook/common/children/x.ts',
    text: "import { a } from '../../../api/labels.ts';\nimport { b } from '../util.ts';\n",
    want: [],
  },
  // the sidecar's kinds
  {
    name: 'sidecar/rediscluster importing sidecar/redis',
    path: 'src/sidecar/rediscluster/manager/x.ts',
    text: "import { a } from '../../redis/manager/y.ts';\n",
    want: [KIND_REPORT],
  },
  {
    name: 'sidecar/redis importing sidecar/rediscluster',
    path: 'src/sidecar/redis/x.ts',
    text: "import type { A } from '../rediscluster/y.ts';\n",
    want: [KIND_REPORT],
  },
  {
    name: 'sidecar/rediscluster importing core/ and adapters/: allowed',
    path: 'src/sidecar/rediscluster/manager/x.ts',
    text: "import { a } from '../../core/loop.ts';\nimport { b } from '../../adapters/redis/rediscluster.ts';\n",
    want: [],
  },
  // the decision layers
  ...DECIDE_CASES.map(([text, want]) => ({
    name: `redis/decide: ${text.replace(/\s+/g, ' ')}`,
    path: 'src/sidecar/redis/decide/x.ts',
    text: `${text}\n`,
    want,
  })),
  {
    name: 'rediscluster/decide importing ioredis',
    path: 'src/sidecar/rediscluster/decide/x.ts',
    text: "import { Redis } from 'ioredis';\n",
    want: [`${IMPORTS}:1`],
  },
  {
    name: 'rediscluster/decide reading the clock',
    path: 'src/sidecar/rediscluster/decide/x.ts',
    text: 'const t = Date.now();\n',
    want: [`${PROPERTIES}:1`],
  },
  {
    name: 'rediscluster/decide importing the CLUSTER adapter',
    path: 'src/sidecar/rediscluster/decide/x.ts',
    text: "import { x } from '../../adapters/redis/rediscluster.ts';\n",
    want: [`${IMPORTS}:1`],
  },
  {
    name: 'rediscluster/decide importing redis/decide',
    path: 'src/sidecar/rediscluster/decide/x.ts',
    text: "import { plan } from '../../redis/decide/plan.ts';\n",
    want: [`${IMPORTS}:1`, KIND_REPORT],
  },
  {
    name: 'rediscluster/decide: a type from ioredis and a comment: allowed',
    path: 'src/sidecar/rediscluster/decide/x.ts',
    text: "import type { Redis } from 'ioredis';\n// Date.now() in a comment\n",
    want: [],
  },
  {
    name: 'decide/: types from anywhere, values from api/ and decide/, time from the input: allowed',
    path: 'src/sidecar/redis/decide/x.ts',
    text: [
      "import type { V1Pod } from '@kubernetes/client-node';",
      "import type { RedisFacts } from '../../adapters/redis/types.ts';",
      "export type { Lease } from '../../adapters/kube/leader.ts';",
      "import type { Loop } from '../../core/loop.ts';",
      "import { ROLE_LABEL } from '../../../api/labels.ts';",
      "import { plan } from './plan.ts';",
      'const late = (input: { now: number }, at: number) => input.now - at > 1000;',
      '',
    ].join('\n'),
    want: [],
  },
];

test('the architecture rules fail on sources that break them (ESLint with the project configuration)', async (t) => {
  for (const c of CASES) await t.test(c.name, async () => assert.deepEqual(await reports(c.path, c.text), c.want));
});

const srcFiles = (dir: string): string[] =>
  readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    return statSync(path).isDirectory()
      ? srcFiles(path)
      : path.endsWith('.ts')
        ? [relative(root, path).split(sep).join('/')]
        : [];
  });

test('every src folder has its layer rules, down to the deepest file', async () => {
  const files = srcFiles(join(root, 'src'));
  assert.ok(files.length >= 100, 'the sources are read');
  assert.deepEqual(
    [...new Set(files.map((f) => f.split('/')[1] ?? ''))].filter((layer) => !(layer in arch.LAYERS)),
    [],
    'every src folder has a place in LAYERS',
  );
  // The rules are compiled per depth below each folder: a file deeper than that would be unchecked.
  const tooDeep = files.filter((f) => f.split('/').length - 3 > arch.MAX_DEPTH);
  assert.deepEqual(tooDeep, [], `no file more than ${arch.MAX_DEPTH} folders below its layer`);
  const deepest = files.reduce((a, b) => (b.split('/').length > a.split('/').length ? b : a));
  const config = (await eslint.calculateConfigForFile(join(root, deepest))) as { rules?: Record<string, unknown> };
  assert.ok(config.rules?.[IMPORTS], `${deepest} has its import rules`);
});

test('the pure folders are closed: every folder they may take values from is pure', () => {
  const inside = (path: string, folder: string) => path === folder || path.startsWith(`${folder}/`);
  const pure = (path: string) => arch.PURE.some((p) => inside(path, p.root));
  for (const { root: folder } of arch.PURE) {
    // A value may come from a folder only if every rule about `folder` allows it.
    const rules = arch.RULES.filter((r) => inside(folder, r.root));
    assert.ok(rules.length > 0, `${folder} has a layer rule`);
    const from = rules
      .flatMap((r) => r.allowed ?? [])
      .filter((target) => rules.every((r) => (r.allowed ?? []).some((a) => inside(target, a))));
    assert.ok(from.includes('src/api'), `${folder} may import api`);
    assert.deepEqual(
      from.filter((f) => !pure(f)),
      [],
      `${folder} takes values only from pure folders`,
    );
  }
});

// The architecture as lint rules, built from ESLint's own rules (no plugin): which src folder may
// import which, and which folders stay pure.
//
// - Layers: imports flow api -> hook -> server and api -> sidecar, runtime under the entry points
//   (LAYERS). Type imports count too: a layer that names another's types depends on it.
// - The hook by kind: hook/redis, hook/rediscluster and hook/redisbackup each import only api,
//   hook/common and themselves; hook/common only api and itself.
// - The sidecar's kinds: sidecar/redis and sidecar/rediscluster do not import each other.
// - PURE folders import no I/O module, load nothing at run time (no import()), and read neither the
//   clock, chance, the environment nor a scheduler: their results are functions of their inputs.
//   The decision folders get their values only from api and themselves (types from anywhere their
//   layer allows: a type is erased before anything runs). Every folder a pure folder may import
//   from is itself in PURE, so the direct rules cover what a pure folder reaches transitively.
//
// ESLint's no-restricted-imports matches the import's text, not the file it resolves to, so each
// rule is compiled per folder and depth into a regex over relative specifiers (`crossing`). A later
// config block replaces an earlier one's options for the same rule, so every block carries all the
// restrictions that apply to its files (`restrictionsAt`), ordered from the general folder to the
// specific.

/** Top-level src folders and the src folders each may import from. */
export const LAYERS = {
  api: ['api'],
  hook: ['api', 'hook'],
  server: ['api', 'hook', 'server', 'runtime'],
  sidecar: ['api', 'sidecar', 'runtime'],
  // The backup job: snapshots and their storage; it talks to Redis and S3, never to the hook.
  backup: ['api', 'backup', 'runtime'],
  // kubectl redis: reads the API's names and types, talks only to the API server.
  plugin: ['api', 'plugin'],
  // Process plumbing (env parsing, logger) for the entry points; it knows nothing of Redis.
  runtime: ['runtime'],
  // The metrics proxy beside every exporter: a few lines of node:http, nothing of the project's.
  'metrics-proxy': ['metrics-proxy'],
};

export const HOOK_KINDS = ['redis', 'rediscluster', 'redisbackup'];
const CORE_DECIDE = 'src/sidecar/core/decide';
export const DECIDE = [
  CORE_DECIDE,
  'src/sidecar/redis/decide',
  'src/sidecar/rediscluster/decide',
  'src/sidecar/sentinel/decide',
];
/** The pure folders. `typeImports`: whether `import type` of an I/O module is allowed there. */
export const PURE = [
  { root: 'src/api', typeImports: false },
  { root: 'src/hook', typeImports: false },
  ...DECIDE.map((root) => ({ root, typeImports: true })),
];

const esc = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Modules that do I/O or schedule work: node built-ins and the project's client libraries. */
const IO_BUILTINS = [
  ...[
    'fs',
    'fs/promises',
    'net',
    'tls',
    'http',
    'https',
    'http2',
    'dgram',
    'dns',
    'dns/promises',
    'child_process',
    'cluster',
  ],
  ...['worker_threads', 'process', 'os', 'timers', 'timers/promises', 'perf_hooks', 'readline', 'inspector', 'module'],
];
const IO_PACKAGES = ['ioredis', '@kubernetes/client-node', 'fastify', 'pino', 'pino-pretty', 'prom-client', 'undici'];
export const IO_MODULES = `^(node:)?(${IO_BUILTINS.map(esc).join('|')})$|^(${IO_PACKAGES.map(esc).join('|')})(/.*)?$`;
/** node:crypto hashes are pure; these draw chance. */
const CHANCE = [
  'randomBytes',
  'randomFill',
  'randomFillSync',
  'randomInt',
  'randomUUID',
  'getRandomValues',
  'webcrypto',
  'generateKey',
  'generateKeyPair',
  'generateKeyPairSync',
  'generateKeySync',
  'generatePrime',
  'generatePrimeSync',
];

/** Depths below a folder's root the compiled rules cover (files sit at most 2 below their layer today). */
export const MAX_DEPTH = 6;

/**
 * A regex over the relative specifiers that, from a file `k` folders below `scope`, resolve into a
 * folder the rule does not allow: outside every `allowed` folder, or into a `forbidden` one.
 * Specifiers that stay below `scope` never match: `scope` lies inside the rule's own root.
 */
export function crossing(scope, k, rule) {
  const parts = scope.split('/');
  const alts = [];
  for (let j = 1; j <= parts.length; j++) {
    const lead = `(?:\\.\\./){${k + j}}(?!\\.\\./)`;
    const base = parts.slice(0, parts.length - j).join('/');
    const inside = (t) => base === t || base.startsWith(`${t}/`);
    const below = (ts) =>
      ts
        .map((t) => (base === '' ? t : t.startsWith(`${base}/`) ? t.slice(base.length + 1) : null))
        .filter((t) => t !== null);
    if (rule.allowed) {
      if (rule.allowed.some(inside)) continue;
      const rests = below(rule.allowed);
      alts.push(rests.length > 0 ? `${lead}(?!(?:${rests.map(esc).join('|')})/)` : lead);
    } else if (rule.forbidden.some(inside)) alts.push(lead);
    else if (below(rule.forbidden).length > 0) alts.push(`${lead}(?:${below(rule.forbidden).map(esc).join('|')})/`);
  }
  if (rule.allowed) alts.push(`(?:\\.\\./){${k + parts.length + 1},}`);
  return alts.length > 0 ? `^(?:\\./)?(?:${alts.join('|')})` : null;
}

/** Import rules, each about the files under `root`. */
export const RULES = [
  ...Object.entries(LAYERS).map(([layer, to]) => ({
    root: `src/${layer}`,
    allowed: to.map((t) => `src/${t}`),
    message: `src/${layer} imports only from ${to.map((t) => `src/${t}`).join(', ')}: imports flow one way.`,
  })),
  ...HOOK_KINDS.map((kind) => ({
    root: `src/hook/${kind}`,
    allowed: ['src/api', 'src/hook/common', `src/hook/${kind}`],
    message: `src/hook/${kind} imports only from src/api, src/hook/common and itself: the kinds stay apart.`,
  })),
  {
    root: 'src/hook/common',
    allowed: ['src/api', 'src/hook/common'],
    message: 'src/hook/common imports only from src/api and itself: the kinds build on it.',
  },
  // A kind's decisions may also build on the shared pure core (core/decide), never on another kind's.
  ...DECIDE.map((root) => {
    const from = root === CORE_DECIDE ? ['src/api', root] : ['src/api', CORE_DECIDE, root];
    return {
      root,
      allowed: from,
      allowTypeImports: true,
      message: `${root} takes values only from ${from.join(', ')}: manager/, adapters/, the rest of core/ do I/O.`,
    };
  }),
];

// The sidecar's kinds share through core/ and adapters/, never directly; core/ serves both kinds
// and knows neither.
export const KIND_RULES = [
  {
    root: 'src/sidecar/core',
    forbidden: ['src/sidecar/redis', 'src/sidecar/rediscluster'],
    message:
      'src/sidecar/core does not import a kind (src/sidecar/redis, src/sidecar/rediscluster): both kinds build on it.',
  },
  {
    root: 'src/sidecar/redis',
    forbidden: ['src/sidecar/rediscluster'],
    message: 'src/sidecar/redis does not import src/sidecar/rediscluster: shared pieces live in core/.',
  },
  {
    root: 'src/sidecar/rediscluster',
    forbidden: ['src/sidecar/redis'],
    message: 'src/sidecar/rediscluster does not import src/sidecar/redis: shared pieces live in core/.',
  },
];

const within = (path, root) => path === root || path.startsWith(`${root}/`);
const filesAt = (scope, k) => [`${scope}/${'*/'.repeat(k)}*.ts`];
/** esquery's regex literals end at the first '/', so the selector spells it \x2F. */
const selectorRegex = (re) => re.replaceAll('/', '\\x2F');

/** Reading the clock, chance or the environment, or scheduling work. */
const IMPURE_SYNTAX = [
  {
    selector: "NewExpression[callee.name='Date'][arguments.length=0]",
    message: 'A pure folder reads no clock: take `now` as input.',
  },
  { selector: "CallExpression[callee.name='Date']", message: 'A pure folder reads no clock: take `now` as input.' },
  { selector: 'ImportExpression', message: 'A pure folder loads nothing at run time.' },
];
const IMPURE_GLOBALS = [
  'process',
  'performance',
  'crypto',
  'fetch',
  'setTimeout',
  'setInterval',
  'setImmediate',
  'queueMicrotask',
  'clearTimeout',
  'clearInterval',
  'clearImmediate',
].map((name) => ({
  name,
  message: 'A pure folder reads no environment, clock or chance and schedules nothing: take it as input.',
}));
const IMPURE_PROPERTIES = [
  ['Date', 'now'],
  ['Math', 'random'],
  ['performance', 'now'],
  ['process', 'env'],
  ['process', 'hrtime'],
  ['globalThis', 'process'],
  ['globalThis', 'setTimeout'],
  ['globalThis', 'setInterval'],
  ['globalThis', 'fetch'],
].map(([object, property]) => ({
  object,
  property,
  message: 'A pure folder reads no clock, chance or environment: take it as input.',
}));

/** The options of every restriction that applies to the files `k` folders below `scope`. */
function restrictionsAt(scope, k) {
  const pure = PURE.find((p) => within(scope, p.root));
  const patterns = [];
  const paths = [];
  // A pure folder loads nothing at run time at all; elsewhere import() follows the static rules.
  const syntax = pure ? [...IMPURE_SYNTAX] : [];
  for (const rule of RULES.filter((r) => within(scope, r.root))) {
    const regex = crossing(scope, k, rule);
    if (regex === null) continue;
    patterns.push({ regex, message: rule.message, ...(rule.allowTypeImports ? { allowTypeImports: true } : {}) });
    if (!pure)
      syntax.push({ selector: `ImportExpression[source.value=/${selectorRegex(regex)}/]`, message: rule.message });
  }
  if (pure) {
    const message = `${pure.root} is pure: no I/O module${pure.typeImports ? ' (types are fine)' : ', not even its types'}.`;
    patterns.push({ regex: IO_MODULES, message, ...(pure.typeImports ? { allowTypeImports: true } : {}) });
    for (const name of ['node:crypto', 'crypto'])
      paths.push({ name, importNames: CHANCE, message: `${pure.root} is pure: hashes yes, chance no.` });
  }
  return {
    'no-restricted-imports': ['error', { paths, patterns }],
    ...(syntax.length > 0 ? { 'no-restricted-syntax': ['error', ...syntax] } : {}),
  };
}

const depth = (path) => path.split('/').length;
const scopes = [...new Set([...RULES.map((r) => r.root), ...PURE.map((p) => p.root)])].sort(
  (a, b) => depth(a) - depth(b) || a.localeCompare(b),
);

/** The config blocks, general folders first so that the specific ones override them. */
export const architecture = [
  ...scopes.flatMap((scope) =>
    Array.from({ length: MAX_DEPTH + 1 }, (_, k) => ({ files: filesAt(scope, k), rules: restrictionsAt(scope, k) })),
  ),
  {
    files: PURE.map((p) => `${p.root}/**/*.ts`),
    rules: {
      'no-restricted-globals': ['error', ...IMPURE_GLOBALS],
      'no-restricted-properties': ['error', ...IMPURE_PROPERTIES],
    },
  },
  // A second rule (typescript-eslint's twin of no-restricted-imports): a later block's options for
  // the same rule replace an earlier one's, so the kinds' rule on the same files needs a rule of its own.
  ...KIND_RULES.flatMap((rule) =>
    Array.from({ length: MAX_DEPTH + 1 }, (_, k) => ({
      files: filesAt(rule.root, k),
      rules: {
        '@typescript-eslint/no-restricted-imports': [
          'error',
          { patterns: [{ regex: crossing(rule.root, k, rule), message: rule.message }] },
        ],
      },
    })),
  ),
];

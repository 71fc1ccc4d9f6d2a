// loadConfig: defaults, accepted values, and one clear error per bad variable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig, DEFAULT_BODY_LIMIT_BYTES, type Env, type ServerConfig } from '../../src/server/config.ts';

const defaults: ServerConfig = {
  port: 8080,
  host: '0.0.0.0',
  logLevel: 'info',
  bodyLimitBytes: DEFAULT_BODY_LIMIT_BYTES,
  operatorImage: 'redis-operator:0.1.0',
  runbookBaseUrl: 'docs/monitoring.md',
  operatorNamespace: 'redis-operator',
};

test('defaults: 8080 on 0.0.0.0, info, 4 MiB', () => {
  assert.deepEqual(loadConfig({}), { ok: true, config: defaults });
  assert.equal(DEFAULT_BODY_LIMIT_BYTES, 4 * 1024 * 1024);
});

const accepted: Array<[string, Env, Partial<ServerConfig>]> = [
  ['port 0: the OS picks one (harnesses; main.ts logs it)', { PORT: '0' }, { port: 0 }],
  ['port 1', { PORT: '1' }, { port: 1 }],
  ['port 65535', { PORT: '65535' }, { port: 65535 }],
  ['port with surrounding blanks', { PORT: ' 9000 ' }, { port: 9000 }],
  ['empty PORT counts as unset', { PORT: '' }, {}],
  ['blank HOST counts as unset', { HOST: '   ' }, {}],
  ['IPv4 host', { HOST: '127.0.0.1' }, { host: '127.0.0.1' }],
  ['IPv6 any', { HOST: '::' }, { host: '::' }],
  ['host name', { HOST: 'localhost' }, { host: 'localhost' }],
  ['dotted host name', { HOST: 'hook.redis-operator.svc' }, { host: 'hook.redis-operator.svc' }],
  ['log level debug', { LOG_LEVEL: 'debug' }, { logLevel: 'debug' }],
  ['log level in capitals', { LOG_LEVEL: 'WARN' }, { logLevel: 'warn' }],
  ['log level silent', { LOG_LEVEL: 'silent' }, { logLevel: 'silent' }],
  ['body limit 1 KiB (minimum)', { BODY_LIMIT_BYTES: '1024' }, { bodyLimitBytes: 1024 }],
  ['body limit 16 MiB', { BODY_LIMIT_BYTES: '16777216' }, { bodyLimitBytes: 16777216 }],
  ['unrelated variables are ignored', { PATH: '/bin', NODE_ENV: 'production' }, {}],
  [
    'operator image in a registry',
    { OPERATOR_IMAGE: 'registry.example.com:5000/ops/redis-operator:0.2.0' },
    { operatorImage: 'registry.example.com:5000/ops/redis-operator:0.2.0' },
  ],
  [
    'operator image by digest',
    { OPERATOR_IMAGE: `redis-operator@sha256:${'a'.repeat(64)}` },
    { operatorImage: `redis-operator@sha256:${'a'.repeat(64)}` },
  ],
  [
    'runbooks where a team publishes them',
    { RUNBOOK_BASE_URL: 'https://wiki.example.com/redis/monitoring' },
    { runbookBaseUrl: 'https://wiki.example.com/redis/monitoring' },
  ],
  // The Deployment passes the pod's namespace (downward API): installed elsewhere, the hook knows it.
  ['the namespace the hook runs in', { POD_NAMESPACE: 'platform-redis' }, { operatorNamespace: 'platform-redis' }],
  ['empty POD_NAMESPACE counts as unset', { POD_NAMESPACE: '' }, {}],
];

for (const [name, env, expected] of accepted) {
  test(`accepts: ${name}`, () => {
    assert.deepEqual(loadConfig(env), { ok: true, config: { ...defaults, ...expected } });
  });
}

const refused: Array<[string, Env, RegExp]> = [
  [
    'operator image with a space',
    { OPERATOR_IMAGE: 'redis operator' },
    /^OPERATOR_IMAGE="redis operator" is invalid: must be an image reference/,
  ],
  [
    'operator image in capitals',
    { OPERATOR_IMAGE: 'Redis-Operator:1' },
    /^OPERATOR_IMAGE="Redis-Operator:1" is invalid/,
  ],
  ['port 65536', { PORT: '65536' }, /^PORT="65536" is invalid/],
  ['port 70000', { PORT: '70000' }, /^PORT="70000" is invalid: must be a whole number from 0 to 65535$/],
  [
    'runbook base that is no URL',
    { RUNBOOK_BASE_URL: 'wiki/redis' },
    /^RUNBOOK_BASE_URL="wiki\/redis" is invalid: must be an http\(s\) URL/,
  ],
  [
    'runbook base with a fragment',
    { RUNBOOK_BASE_URL: 'https://x.example.com/a#b' },
    /^RUNBOOK_BASE_URL="https:\/\/x.example.com\/a#b" is invalid/,
  ],
  ['negative port', { PORT: '-1' }, /^PORT="-1" is invalid/],
  ['port with letters', { PORT: '8080abc' }, /^PORT="8080abc" is invalid/],
  ['port in exponent form', { PORT: '8e3' }, /^PORT="8e3" is invalid/],
  ['port in hex', { PORT: '0x1f90' }, /^PORT="0x1f90" is invalid/],
  ['fractional port', { PORT: '80.5' }, /^PORT="80.5" is invalid/],
  ['absurdly long port', { PORT: '9'.repeat(40) }, /^PORT="9{40}" is invalid/],
  ['host with a scheme', { HOST: 'http://0.0.0.0' }, /^HOST="http:\/\/0.0.0.0" is invalid: must be an IP address/],
  ['host with a port', { HOST: '0.0.0.0:8080' }, /^HOST="0.0.0.0:8080" is invalid/],
  ['host with a space', { HOST: 'my host' }, /^HOST="my host" is invalid/],
  [
    'unknown log level',
    { LOG_LEVEL: 'verbose' },
    /^LOG_LEVEL="verbose" is invalid: must be one of trace, debug, info, warn, error, fatal, silent$/,
  ],
  ['numeric log level', { LOG_LEVEL: '30' }, /^LOG_LEVEL="30" is invalid/],
  [
    'body limit below 1 KiB',
    { BODY_LIMIT_BYTES: '1023' },
    /^BODY_LIMIT_BYTES="1023" is invalid: must be a whole number from 1024 to 1073741824$/,
  ],
  ['body limit with a unit', { BODY_LIMIT_BYTES: '4Mi' }, /^BODY_LIMIT_BYTES="4Mi" is invalid/],
  ['body limit above 1 GiB', { BODY_LIMIT_BYTES: '1073741825' }, /^BODY_LIMIT_BYTES="1073741825" is invalid/],
  [
    'a namespace that is no DNS label',
    { POD_NAMESPACE: 'Platform_Redis' },
    /^POD_NAMESPACE="Platform_Redis" is invalid: must be a namespace name/,
  ],
  ['a namespace longer than 63', { POD_NAMESPACE: 'a'.repeat(64) }, /^POD_NAMESPACE="a{64}" is invalid/],
];

for (const [name, env, message] of refused) {
  test(`refuses: ${name}`, () => {
    const result = loadConfig(env);
    assert.equal(result.ok, false);
    if (result.ok) return;
    assert.equal(result.errors.length, 1);
    assert.match(result.errors[0] ?? '', message);
  });
}

test('reports every bad variable at once, in a stable order', () => {
  const result = loadConfig({ PORT: 'x', HOST: 'a b', LOG_LEVEL: 'loud', BODY_LIMIT_BYTES: '-5' });
  assert.equal(result.ok, false);
  if (result.ok) return;
  assert.deepEqual(
    result.errors.map((e) => e.split('=')[0]),
    ['PORT', 'HOST', 'LOG_LEVEL', 'BODY_LIMIT_BYTES'],
  );
});

test('does not read process.env', () => {
  const saved = process.env['PORT'];
  process.env['PORT'] = 'not-a-port';
  try {
    assert.deepEqual(loadConfig({}), { ok: true, config: defaults });
  } finally {
    if (saved === undefined) delete process.env['PORT'];
    else process.env['PORT'] = saved;
  }
});

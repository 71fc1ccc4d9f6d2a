// The sidecar's environment configuration: defaults, every refusal named at once, timing relations.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_TIMING, loadSidecarConfig } from '../../src/sidecar/config.ts';
import { DEFAULT_LEADER_SETTINGS } from '../../src/sidecar/adapters/kube/lease-decision.ts';

const BASE = { POD_NAME: 'redis-operator-7d9f-abcde', POD_NAMESPACE: 'redis-system' };

test('defaults: all namespaces, lease in the pod namespace, port 9121, info, default timings', () => {
  const r = loadSidecarConfig(BASE);
  assert.ok(r.ok);
  assert.deepEqual(r.config, {
    watchNamespaces: [],
    podName: BASE.POD_NAME,
    podNamespace: 'redis-system',
    leaseName: 'redis-operator-sidecar',
    leaseNamespace: 'redis-system',
    metricsPort: 9121,
    metricsHost: '0.0.0.0',
    logLevel: 'info',
    kubeconfig: undefined,
    leader: DEFAULT_LEADER_SETTINGS,
    shards: 1,
    timing: DEFAULT_TIMING,
    redisLocalAddress: undefined,
    sentinel: null,
  });
});

test('the Sentinel endpoint: off unless SENTINEL_PORT names a port', async (t) => {
  const cases: Array<[string, Record<string, string>, unknown]> = [
    ['unset: off', {}, null],
    ['0: off', { SENTINEL_PORT: '0' }, null],
    ['a port: on all addresses', { SENTINEL_PORT: '26379' }, { port: 26379, host: '0.0.0.0' }],
    ['a port and a host', { SENTINEL_PORT: '26379', SENTINEL_HOST: '127.0.0.1' }, { port: 26379, host: '127.0.0.1' }],
  ];
  for (const [name, env, want] of cases) {
    await t.test(name, () => {
      const r = loadSidecarConfig({ ...BASE, ...env });
      assert.ok(r.ok);
      assert.deepEqual(r.config.sentinel, want);
    });
  }
  await t.test('a bad port is refused, named', () => {
    const r = loadSidecarConfig({ ...BASE, SENTINEL_PORT: '70000' });
    assert.ok(!r.ok);
    assert.match(r.errors.join('\n'), /SENTINEL_PORT/);
  });
});

test('values are read and trimmed; blank means unset', () => {
  const r = loadSidecarConfig({
    ...BASE,
    WATCH_NAMESPACES: ' apps, cache ,apps,',
    LEASE_NAME: 'my-lease',
    LEASE_NAMESPACE: 'ops',
    METRICS_PORT: '0',
    METRICS_HOST: '127.0.0.1',
    LOG_LEVEL: 'DEBUG',
    KUBECONFIG: '/k/config',
    PROBE_INTERVAL_MS: '50',
    IDLE_PROBE_INTERVAL_MS: '2000',
    SHARDS: '8',
    REDIS_LOCAL_ADDRESS: '127.0.0.9',
    LEASE_DURATION_SECONDS: '5',
    LEASE_RENEW_DEADLINE_MS: '3000',
    SECRET_REFRESH_MS: ' ',
  });
  assert.ok(r.ok);
  assert.deepEqual(r.config.watchNamespaces, ['apps', 'cache']);
  assert.equal(r.config.leaseName, 'my-lease');
  assert.equal(r.config.leaseNamespace, 'ops');
  assert.equal(r.config.metricsPort, 0);
  assert.equal(r.config.metricsHost, '127.0.0.1');
  assert.equal(r.config.logLevel, 'debug');
  assert.equal(r.config.kubeconfig, '/k/config');
  assert.equal(r.config.timing.probeIntervalMs, 50);
  assert.equal(r.config.timing.idleProbeIntervalMs, 2000);
  assert.equal(r.config.shards, 8);
  assert.equal(r.config.timing.secretRefreshMs, DEFAULT_TIMING.secretRefreshMs);
  assert.equal(r.config.redisLocalAddress, '127.0.0.9');
  assert.deepEqual(r.config.leader, { ...DEFAULT_LEADER_SETTINGS, leaseDurationSeconds: 5, renewDeadlineMs: 3000 });
});

test('LEASE_NAMESPACE alone is enough (no POD_NAMESPACE)', () => {
  const r = loadSidecarConfig({ POD_NAME: 'x', LEASE_NAMESPACE: 'ops' });
  assert.ok(r.ok);
  assert.equal(r.config.leaseNamespace, 'ops');
  assert.equal(r.config.podNamespace, undefined);
});

const refusals: Array<[string, Record<string, string>, RegExp]> = [
  ['POD_NAME missing', { POD_NAMESPACE: 'a' }, /^POD_NAME is required/],
  ['no lease namespace', { POD_NAME: 'x' }, /^POD_NAMESPACE or LEASE_NAMESPACE is required/],
  [
    'bad namespace in the list',
    { ...BASE, WATCH_NAMESPACES: 'ok,Not_OK' },
    /^WATCH_NAMESPACES="ok,Not_OK" is invalid: "Not_OK" is not a namespace name/,
  ],
  [
    'port out of range',
    { ...BASE, METRICS_PORT: '65536' },
    /^METRICS_PORT="65536" is invalid: must be a whole number from 0 to 65535$/,
  ],
  ['port not a number', { ...BASE, METRICS_PORT: '9121abc' }, /^METRICS_PORT="9121abc" is invalid/],
  [
    'host not an IP',
    { ...BASE, METRICS_HOST: 'localhost' },
    /^METRICS_HOST="localhost" is invalid: must be an IP address$/,
  ],
  ['log level', { ...BASE, LOG_LEVEL: 'verbose' }, /^LOG_LEVEL="verbose" is invalid: must be one of trace, debug/],
  ['lease name', { ...BASE, LEASE_NAME: 'Bad Name' }, /^LEASE_NAME="Bad Name" is invalid: must be a Lease name/],
  [
    'timing below its floor',
    { ...BASE, TICK_INTERVAL_MS: '1' },
    /^TICK_INTERVAL_MS="1" is invalid: must be a whole number from 10 to 60000$/,
  ],
  [
    'renew deadline not below the lease',
    { ...BASE, LEASE_DURATION_SECONDS: '2', LEASE_RENEW_DEADLINE_MS: '2000' },
    /renewDeadlineMs must be less than leaseDurationSeconds \* 1000/,
  ],
  [
    'stale window shorter than a probe',
    { ...BASE, STALE_AFTER_MS: '1000' },
    /^STALE_AFTER_MS=1000 must exceed REDIS_CONNECT_TIMEOUT_MS \+ REDIS_COMMAND_TIMEOUT_MS \+ PROBE_INTERVAL_MS \(1100\)/,
  ],
  ['no shard', { ...BASE, SHARDS: '0' }, /^SHARDS="0" is invalid: must be a whole number from 1 to 256$/],
  ['source address', { ...BASE, REDIS_LOCAL_ADDRESS: '127.0.0' }, /^REDIS_LOCAL_ADDRESS="127.0.0" is invalid/],
];

for (const [name, env, expected] of refusals) {
  test(`refused: ${name}`, () => {
    const r = loadSidecarConfig(env);
    assert.equal(r.ok, false);
    if (r.ok) return;
    assert.equal(r.errors.length, 1, r.errors.join('\n'));
    assert.match(r.errors[0]!, expected);
  });
}

test('every problem is reported at once', () => {
  const r = loadSidecarConfig({ METRICS_PORT: '-1', LOG_LEVEL: 'x', WATCH_NAMESPACES: 'A' });
  assert.equal(r.ok, false);
  if (r.ok) return;
  assert.equal(r.errors.length, 5, r.errors.join('\n'));
});

// The operator's metrics through `promtool check metrics` (Prometheus 2.42's linter: naming,
// units, suffixes, help texts): the hook service's /metrics after real requests to several
// routes, and the sidecar's registry with every series family populated. Our metrics must draw
// no problem at all. What prom-client's Node.js default metrics draw (they are not ours to
// rename) is pinned to exactly what a registry holding nothing but them draws, so a problem
// our metrics add is never hidden among theirs. Without promtool these tests fail with the
// command that fetches it (monitoringTools() throws), never skip.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { pino } from 'pino';
import { Counter, Registry, collectDefaultMetrics } from 'prom-client';
import { buildApp } from '../../src/server/app.ts';
import { createSidecarMetrics } from '../../src/sidecar/metrics.ts';
import { promtool } from './prometheus.ts';

const SYNC_REQUEST = JSON.parse(
  readFileSync(new URL('../fixtures/sync-request.json', import.meta.url), 'utf8'),
) as unknown;
const REDIS = {
  apiVersion: 'redis.example.com/v1',
  kind: 'Redis',
  metadata: { name: 'cache', namespace: 'shop', uid: 'u-1' },
  spec: { replicas: 2 },
};

interface Lint {
  code: number;
  /** One line per problem, as promtool prints them (`<metric> <what is wrong>`). */
  problems: string[];
}

async function lint(text: string): Promise<Lint> {
  const r = await promtool(['check', 'metrics'], text);
  // promtool prints the problems on stderr (stdout in some versions): take both.
  const problems = `${r.stdout}\n${r.stderr}`
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  return { code: r.code, problems };
}

/**
 * The hook service's /metrics text after requests to the probes, three hook routes (ok, invalid, bad) and a missing
 * route.
 */
async function hookMetricsText(defaultMetrics: boolean): Promise<string> {
  const app = buildApp({ logger: pino({ level: 'silent' }), defaultMetrics });
  try {
    const post = (url: string, payload: unknown) =>
      app.inject({ method: 'POST', url, payload: payload as Record<string, unknown> });
    const answers = [
      await app.inject({ method: 'GET', url: '/healthz' }),
      await app.inject({ method: 'GET', url: '/readyz' }),
      await post('/sync', SYNC_REQUEST),
      await post('/monitoring/sync', { controller: {}, object: REDIS, attachments: {}, finalizing: false }),
      await post('/monitoring/sync', { object: { ...REDIS, spec: { replicas: 'many' } } }),
      await post('/redisbackup/sync', { object: { metadata: { name: 'x' } } }),
      await app.inject({ method: 'GET', url: '/nowhere' }),
    ];
    assert.deepEqual(
      answers.map((a) => a.statusCode),
      // /readyz is 503 under inject: the app is not listening.
      [200, 503, 200, 200, 200, 400, 404],
      'the requests were answered as intended, so their series exist',
    );
    const res = await app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    return res.body;
  } finally {
    await app.close();
  }
}

/** The sidecar's registry text with the status series of one Redis and the per-pod series of its three pods. */
async function sidecarMetricsText(defaultMetrics: boolean): Promise<string> {
  const m = createSidecarMetrics({ defaultMetrics });
  const redis = { namespace: 'shop', redis: 'cache' };
  m.observeStatus('shop', 'cache', {
    phase: 'Running',
    conditions: [
      { type: 'Ready', status: 'True' },
      { type: 'BackupHealthy', status: 'False' },
    ],
    lastBackupSuccess: 1_700_000_000,
    lastBackupFailure: 1_700_021_600,
  });
  for (const [pod, master] of [
    ['cache-master-0', true],
    ['cache-replica-0', false],
    ['cache-replica-1', false],
  ] as const) {
    m.podUp.set({ ...redis, pod }, 1);
    m.podRole.set({ ...redis, pod }, master ? 1 : 0);
    m.podLinkUp.set({ ...redis, pod }, 1);
    if (!master) m.replicationLag.set({ ...redis, pod }, 128);
  }
  m.leader.set(1);
  m.failovers.inc(redis);
  m.lastFailoverDuration.set(redis, 4.2);
  m.steps.inc({ ...redis, kind: 'promote', outcome: 'ok' });
  m.specValid.set(redis, 1);
  return m.registry.metrics();
}

/** What promtool says about prom-client's default metrics alone: the baseline a served registry is compared with. */
async function defaultMetricsLint(): Promise<Lint> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return lint(await registry.metrics());
}

const familiesOf = (text: string) => [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => `${m[1]} ${m[2]}`);

test("the hook service's metrics draw no problem from promtool check metrics", async () => {
  const text = await hookMetricsText(false);
  assert.deepEqual(familiesOf(text), [
    'redis_operator_hook_requests_total counter',
    'redis_operator_hook_duration_seconds histogram',
  ]);
  assert.match(text, /redis_operator_hook_duration_seconds_bucket\{le="0\.0005",route="monitoring\/sync"\}/);
  const r = await lint(text);
  assert.deepEqual(r.problems, []);
  assert.equal(r.code, 0);
});

test("the sidecar's metrics draw no problem from promtool check metrics", async () => {
  const text = await sidecarMetricsText(false);
  assert.deepEqual(familiesOf(text).sort(), [
    'redis_operator_backup_last_failure_timestamp_seconds gauge',
    'redis_operator_backup_last_success_timestamp_seconds gauge',
    'redis_operator_failovers_total counter',
    'redis_operator_last_failover_duration_seconds gauge',
    'redis_operator_leader gauge',
    'redis_operator_pod_link_up gauge',
    'redis_operator_pod_role gauge',
    'redis_operator_pod_up gauge',
    'redis_operator_redis_condition gauge',
    'redis_operator_redis_phase gauge',
    'redis_operator_replication_lag_bytes gauge',
    'redis_operator_shards gauge',
    'redis_operator_shards_held gauge',
    'redis_operator_spec_valid gauge',
    'redis_operator_steps_total counter',
  ]);
  const r = await lint(text);
  assert.deepEqual(r.problems, []);
  assert.equal(r.code, 0);
});

test('as served (with Node.js default metrics), both draw exactly the problems of prom-client alone, none of ours', async (t) => {
  const baseline = await defaultMetricsLint();
  // prom-client's gauges nodejs_active_{handles,requests,resources}_total: pinned here so a
  // prom-client upgrade that changes them is noticed, and so the comparison below is not vacuous.
  assert.deepEqual(baseline.problems.map((p) => p.split(' ')[0]).sort(), [
    'nodejs_active_handles_total',
    'nodejs_active_requests_total',
    'nodejs_active_resources_total',
  ]);
  for (const [name, text] of [
    ['hook service', await hookMetricsText(true)],
    ['sidecar', await sidecarMetricsText(true)],
  ] as const) {
    await t.test(name, async () => {
      assert.match(text, /^# TYPE nodejs_active_handles_total gauge$/m, 'the default metrics are there');
      const r = await lint(text);
      assert.deepEqual(
        r.problems.filter((p) => p.startsWith('redis_operator_')),
        [],
        'no problem in our metrics',
      );
      assert.deepEqual(r.problems.sort(), [...baseline.problems].sort(), "no problem beyond prom-client's own");
      assert.equal(r.code, baseline.code);
    });
  }
});

test('the linter is awake: a badly named metric of ours would be reported by name', async () => {
  // So an empty problem list above means promtool read the text and found nothing, not that it read nothing.
  const registry = new Registry();
  new Counter({
    name: 'redis_operator_probe_failures',
    help: 'A counter without its _total suffix.',
    registers: [registry],
  }).inc();
  const r = await lint(await registry.metrics());
  assert.deepEqual(r.problems, ['redis_operator_probe_failures counter metrics should have "_total" suffix']);
  assert.notEqual(r.code, 0);
});

// The monitoring decorator hook: per Redis a PodMonitor and a PrometheusRule whose
// alerts come from spec.monitoring.alerts over the defaults; alerts only where their series can
// exist; an invalid spec echoes what was last applied; never a status. The rule expressions
// themselves are checked by the real promtool in test/monitoring.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateSpec } from '../../../src/api/validate.ts';
import {
  parseDecoratorRequest,
  syncMonitoring,
  type DecoratorRequest,
  type KubeObject,
} from '../../../src/hook/index.ts';
import { redisRuleGroups } from '../../../src/hook/redis/monitoring/rules.ts';
import { LAST_APPLIED_ANNOTATION } from '../../../src/hook/common/observed.ts';
import { designSpec, get, NS, objectMap, type Json } from '../common/helpers.ts';

function spec(extra: Json = {}) {
  const v = validateSpec('my-redis', { ...designSpec(), ...extra });
  assert.ok(v.ok, JSON.stringify(v));
  return v.spec;
}

const alertsOf = (extra: Json = {}) =>
  redisRuleGroups(NS, 'my-redis', spec(extra), 'docs/monitoring.md').flatMap((g) => g.rules.map((r) => r.alert));

function decoratorRequest(redisSpec: unknown, attachments: KubeObject[] = []): DecoratorRequest {
  const parsed = parseDecoratorRequest({
    object: {
      apiVersion: 'redis.example.com/v1',
      kind: 'Redis',
      metadata: { name: 'my-redis', namespace: NS, uid: 'u-1' },
      spec: redisSpec,
    },
    attachments: objectMap(attachments, 'v2', [
      'PodMonitor.monitoring.coreos.com/v1',
      'PrometheusRule.monitoring.coreos.com/v1',
    ]),
  });
  assert.ok(parsed.ok, JSON.stringify(parsed));
  return parsed.request;
}

test('the design Redis gets every alert that applies to it, with its namespace, name and severity', () => {
  const groups = redisRuleGroups(NS, 'my-redis', spec(), 'https://docs.example.com/monitoring');
  assert.equal(groups.length, 1);
  assert.equal(groups[0]!.name, `redis-operator.${NS}.my-redis`);
  assert.deepEqual(
    groups[0]!.rules.map((r) => r.alert),
    [
      'RedisHighMemoryUsage',
      'RedisReplicationLag',
      'RedisInstanceDown',
      'RedisNoMaster',
      'RedisMultipleMasters',
      'RedisNotRunning',
      'RedisReplicasNotInSync',
      'RedisFrequentFailovers',
    ],
    'no backup alerts without spec.backup',
  );
  for (const r of groups[0]!.rules) {
    assert.equal(r.labels['namespace'], NS);
    assert.equal(r.labels['redis'], 'my-redis');
    assert.match(r.labels['severity']!, /^(critical|warning)$/);
    assert.match(r.expr, new RegExp(`namespace="${NS}",redis="my-redis"`), `${r.alert} selects this Redis only`);
    assert.match(r.annotations.description, new RegExp(`${NS}/my-redis`), `${r.alert} names the Redis`);
    assert.ok(r.annotations.summary.length > 5);
    assert.equal(r.annotations.runbook_url, `https://docs.example.com/monitoring#${r.alert.toLowerCase()}`);
  }
});

test("the article's thresholds land in the expressions; durations in `for`", () => {
  const rules = redisRuleGroups(
    NS,
    'my-redis',
    spec({
      monitoring: {
        alerts: [
          { name: 'HighMemoryUsage', threshold: 75, duration: '10m' },
          { name: 'ReplicationLag', threshold: '30s' },
          { name: 'FrequentFailovers', threshold: 1, duration: '15m', severity: 'critical' },
        ],
      },
    }),
    'x',
  )[0]!.rules;
  const by = (a: string) => rules.find((r) => r.alert === a)!;
  assert.match(by('RedisHighMemoryUsage').expr, /> 75$/);
  assert.equal(by('RedisHighMemoryUsage').for, '10m');
  assert.match(by('RedisReplicationLag').expr, /^redis_master_last_io_seconds_ago\{.*\} > 30$/);
  assert.equal(by('RedisReplicationLag').for, '1m');
  assert.match(by('RedisFrequentFailovers').expr, /\[15m\]\)\) > 1$/);
  assert.equal(by('RedisFrequentFailovers').for, '0s', 'the duration is the counting window');
  assert.equal(by('RedisFrequentFailovers').labels['severity'], 'critical');
  assert.match(by('RedisReplicasNotInSync').expr, /< 2$/, 'spec.replicas replicas expected online');
});

test('alerts appear only where their series can exist', async (t) => {
  const cases: Array<[string, Json, { has: string[]; lacks: string[] }]> = [
    [
      'disabled by name',
      { monitoring: { alerts: [{ name: 'NoMaster', enabled: false }] } },
      { has: ['RedisInstanceDown'], lacks: ['RedisNoMaster'] },
    ],
    [
      'no exporter: only what the sidecar feeds',
      { monitoring: { exporter: { enabled: false } } },
      {
        has: ['RedisNotRunning', 'RedisFrequentFailovers'],
        lacks: ['RedisHighMemoryUsage', 'RedisInstanceDown', 'RedisNoMaster', 'RedisReplicasNotInSync'],
      },
    ],
    [
      'no replicas',
      { replicas: 0 },
      { has: ['RedisNoMaster'], lacks: ['RedisReplicationLag', 'RedisReplicasNotInSync'] },
    ],
    [
      'hibernating: no pods by design',
      { hibernate: true },
      { has: [], lacks: ['RedisNoMaster', 'RedisInstanceDown', 'RedisNotRunning', 'RedisFrequentFailovers'] },
    ],
    [
      'backups scheduled',
      { backup: { schedule: '0 */6 * * *', storage: { s3: { bucket: 'backups', region: 'us-east-1' } } } },
      { has: ['RedisBackupFailed', 'RedisBackupTooOld'], lacks: [] },
    ],
    [
      'backups suspended: failures still count, age does not',
      {
        backup: { schedule: '0 */6 * * *', suspend: true, storage: { s3: { bucket: 'backups', region: 'us-east-1' } } },
      },
      { has: ['RedisBackupFailed'], lacks: ['RedisBackupTooOld'] },
    ],
  ];
  for (const [name, extra, { has, lacks }] of cases) {
    await t.test(name, () => {
      const alerts = alertsOf(extra);
      for (const a of has) assert.ok(alerts.includes(a), `${a} in ${alerts.join(', ')}`);
      for (const a of lacks) assert.ok(!alerts.includes(a), `${a} not in ${alerts.join(', ')}`);
    });
  }
});

test('BackupTooOld: twice the longest gap of the schedule, and a Redis that never got one', () => {
  const rules = redisRuleGroups(
    NS,
    'my-redis',
    spec({ backup: { schedule: '0 */6 * * *', storage: { pvc: { claimName: 'b' } } } }),
    'x',
  )[0]!.rules.filter((r) => r.alert === 'RedisBackupTooOld');
  assert.equal(rules.length, 2);
  assert.match(
    rules[0]!.expr,
    /^time\(\) - max\(redis_operator_backup_last_success_timestamp_seconds\{.*\}\) > 43200$/,
  );
  assert.match(rules[1]!.expr, /^absent\(redis_operator_backup_last_success_timestamp_seconds\{.*\}\) and on\(\) /);
  assert.equal(rules[1]!.for, '43200s');
});

test('decorator: a PodMonitor for the exporters and a PrometheusRule, and nothing else (no status, labels or annotations)', () => {
  const { response, invalidSpec } = syncMonitoring(
    decoratorRequest({ ...designSpec(), monitoring: { prometheus: { labels: { prometheus: 'main' } } } }),
  );
  assert.equal(invalidSpec, false);
  assert.deepEqual(Object.keys(response), ['attachments']);
  assert.deepEqual(
    response.attachments.map((a) => `${a.apiVersion} ${a.kind}/${a.metadata.namespace}/${a.metadata.name}`),
    [`monitoring.coreos.com/v1 PodMonitor/${NS}/my-redis`, `monitoring.coreos.com/v1 PrometheusRule/${NS}/my-redis`],
  );
  const [pm, rule] = response.attachments as [KubeObject, KubeObject];
  assert.equal(pm.metadata.labels?.['prometheus'], 'main', "for a Prometheus's podMonitorSelector");
  assert.equal(rule.metadata.labels?.['prometheus'], 'main', "for a Prometheus's ruleSelector");
  assert.deepEqual(get(pm, 'spec', 'selector'), {
    matchLabels: {
      'app.kubernetes.io/instance': 'my-redis',
      'app.kubernetes.io/managed-by': 'redis-operator',
      'app.kubernetes.io/name': 'redis',
    },
  });
  assert.deepEqual(get(pm, 'spec', 'namespaceSelector'), { matchNames: [NS] });
  assert.deepEqual(get(pm, 'spec', 'podMetricsEndpoints', 0, 'relabelings'), [
    {
      sourceLabels: ['__meta_kubernetes_pod_label_app_kubernetes_io_instance'],
      targetLabel: 'redis',
      action: 'replace',
    },
    {
      sourceLabels: ['__meta_kubernetes_pod_label_redis_example_com_role'],
      targetLabel: 'pod_role',
      action: 'replace',
    },
  ]);
  assert.equal(get(pm, 'spec', 'podMetricsEndpoints', 0, 'port'), 'metrics');
  assert.ok((get(rule, 'spec', 'groups', 0, 'rules') as unknown[]).length > 5);
});

test('decorator: turned off, nothing is attached (Metacontroller deletes what was)', async (t) => {
  for (const monitoring of [{ enabled: false }, { prometheus: { enabled: false } }]) {
    await t.test(JSON.stringify(monitoring), () =>
      assert.deepEqual(syncMonitoring(decoratorRequest({ ...designSpec(), monitoring })).response.attachments, []),
    );
  }
  const noExporter = syncMonitoring(decoratorRequest({ ...designSpec(), monitoring: { exporter: { enabled: false } } }))
    .response.attachments;
  assert.deepEqual(
    noExporter.map((a) => a.kind),
    ['PrometheusRule'],
    'no exporter: no PodMonitor, the rules the sidecar feeds stay',
  );
});

test('decorator: an invalid spec echoes every attachment as last applied, so no alert is lost to a typo', () => {
  const applied = syncMonitoring(decoratorRequest(designSpec())).response.attachments;
  const observed = applied.map((a) => ({
    ...a,
    metadata: {
      ...a.metadata,
      uid: `uid-${a.kind}`,
      resourceVersion: '7',
      annotations: { [LAST_APPLIED_ANNOTATION]: JSON.stringify(a) },
    },
  }));
  const { response, invalidSpec } = syncMonitoring(decoratorRequest({ ...designSpec(), replicas: 'two' }, observed));
  assert.equal(invalidSpec, true);
  assert.deepEqual(response.attachments, applied);
});

test('decorator: the same request gives the same answer, byte for byte', () => {
  const request = decoratorRequest({
    ...designSpec(),
    backup: { schedule: '@daily', storage: { pvc: { claimName: 'b' } } },
  });
  assert.equal(JSON.stringify(syncMonitoring(request)), JSON.stringify(syncMonitoring(structuredClone(request))));
});

test('parseDecoratorRequest names what is wrong with a body', async (t) => {
  const cases: Array<[string, unknown, RegExp]> = [
    ['not an object', 'x', /must be a JSON object/],
    ['no object', { attachments: {} }, /object/],
    ['an object without a namespace', { object: { metadata: { name: 'r' } } }, /namespace/],
    [
      'attachments not a map of maps',
      {
        object: { metadata: { name: 'r', namespace: 'n' } },
        attachments: { 'PodMonitor.monitoring.coreos.com/v1': 3 },
      },
      /must be an object/,
    ],
  ];
  for (const [name, body, message] of cases) {
    await t.test(name, () => {
      const r = parseDecoratorRequest(body);
      assert.equal(r.ok, false);
      if (!r.ok) assert.match(r.message, message);
    });
  }
});

// The monitoring decorator for a RedisCluster (the object's kind picks it): a PodMonitor over the
// cluster's pods with the shard as a target label, a PrometheusRule with the article's two alert
// overrides read in their units and the master alerts per shard, nothing while monitoring is off,
// every attachment echoed on an invalid spec; and the real promtool accepts the rendered rules.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { validateRedisClusterSpec } from '../../../src/api/rediscluster-validate.ts';
import { parseDecoratorRequest, syncMonitoring, type KubeObject } from '../../../src/hook/index.ts';
import { redisClusterRuleGroups } from '../../../src/hook/rediscluster/monitoring/rules.ts';
import { LAST_APPLIED_ANNOTATION } from '../../../src/hook/common/observed.ts';
import { promtool } from '../../monitoring/prometheus.ts';
import { get, objectMap } from '../common/helpers.ts';
import { articleSpec, NAME, NS, type Json } from './helpers.ts';

function decorate(spec: unknown, attachments: KubeObject[] = []) {
  const parsed = parseDecoratorRequest({
    object: {
      apiVersion: 'redis.example.com/v1',
      kind: 'RedisCluster',
      metadata: { name: NAME, namespace: NS, uid: 'u-1' },
      spec,
    },
    attachments: objectMap(attachments, 'v2', [
      'PodMonitor.monitoring.coreos.com/v1',
      'PrometheusRule.monitoring.coreos.com/v1',
    ]),
  });
  assert.ok(parsed.ok, JSON.stringify(parsed));
  return syncMonitoring(parsed.request);
}

const rulesOf = (answer: ReturnType<typeof decorate>) =>
  (get(
    answer.response.attachments.find((a) => a.kind === 'PrometheusRule'),
    'spec',
    'groups',
    0,
    'rules',
  ) as Json[] | undefined) ?? [];

test("the article's RedisCluster: a PodMonitor over its pods with the shard as a target label, and its alerts", () => {
  const answer = decorate(articleSpec());
  assert.equal(answer.invalidSpec, false);
  assert.deepEqual(
    answer.response.attachments.map((a) => `${a.kind}/${a.metadata.name}`),
    [`PodMonitor/${NAME}`, `PrometheusRule/${NAME}`],
  );
  const pm = answer.response.attachments[0]!;
  assert.deepEqual(get(pm, 'spec', 'selector', 'matchLabels'), {
    'app.kubernetes.io/name': 'redis-cluster',
    'app.kubernetes.io/instance': NAME,
    'app.kubernetes.io/managed-by': 'redis-operator',
  });
  assert.deepEqual(
    (get(pm, 'spec', 'podMetricsEndpoints', 0, 'relabelings') as Json[]).map((r) => r['targetLabel']),
    ['redis', 'pod_role', 'shard'],
  );
  const rules = rulesOf(answer);
  assert.deepEqual(
    rules.map((r) => r['alert']),
    [
      'RedisHighMemoryUsage',
      'RedisReplicationLag',
      'RedisInstanceDown',
      'RedisNoMaster',
      'RedisMultipleMasters',
      'RedisNotRunning',
      'RedisReplicasNotInSync',
      'RedisFrequentFailovers',
      'RedisBackupFailed',
      'RedisBackupTooOld',
      'RedisBackupTooOld',
    ],
  );
  const byAlert = (name: string) => rules.find((r) => r['alert'] === name)!;
  assert.match(String(byAlert('RedisHighMemoryUsage')['expr']), / > 80$/);
  assert.equal(byAlert('RedisHighMemoryUsage')['for'], '5m');
  assert.match(
    String(byAlert('RedisReplicationLag')['expr']),
    /redis_master_last_io_seconds_ago\{namespace="default",redis="order-cache"\} > 10$/,
  );
  assert.match(String(byAlert('RedisNoMaster')['expr']), /count by \(shard\)/);
  assert.match(String(byAlert('RedisReplicasNotInSync')['expr']), /redis_connected_slaves\{.*pod_role="master"\} < 2$/);
  assert.match(String(byAlert('RedisNotRunning')['expr']), /phase=~"Running\|Resharding"/);
  for (const r of rules)
    assert.deepEqual(Object.keys(r['labels'] as Json).slice(0, 3), ['namespace', 'redis', 'severity']);
});

test('monitoring or Prometheus off: no attachments; the exporter off: the rules only (no PodMonitor, no exporter alerts)', () => {
  assert.deepEqual(decorate({ ...articleSpec(), monitoring: { enabled: false } }).response.attachments, []);
  assert.deepEqual(
    decorate({ ...articleSpec(), monitoring: { prometheus: { enabled: false } } }).response.attachments,
    [],
  );
  const noExporter = decorate({ ...articleSpec(), monitoring: { exporter: { enabled: false } } });
  assert.deepEqual(
    noExporter.response.attachments.map((a) => a.kind),
    ['PrometheusRule'],
  );
  assert.ok(!rulesOf(noExporter).some((r) => ['RedisHighMemoryUsage', 'RedisNoMaster'].includes(String(r['alert']))));
});

test('an invalid spec echoes every attachment as last applied', () => {
  const last = {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: { name: NAME, namespace: NS },
    spec: { groups: [] },
  };
  const observed = {
    ...last,
    metadata: { ...last.metadata, annotations: { [LAST_APPLIED_ANNOTATION]: JSON.stringify(last) } },
  } as KubeObject;
  const answer = decorate({ ...articleSpec(), master: { replicas: 2 } }, [observed]);
  assert.equal(answer.invalidSpec, true);
  assert.deepEqual(answer.response.attachments, [last]);
});

test('promtool accepts every rule a RedisCluster can get, lint fatal', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'cluster-rules-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const specs: Array<[string, Json]> = [
    ['article', articleSpec()],
    ['no replicas, no backup', { ...articleSpec(), replicas: 0, backup: undefined }],
  ];
  for (const [name, raw] of specs) {
    await t.test(name, async () => {
      const v = validateRedisClusterSpec(NAME, JSON.parse(JSON.stringify(raw)));
      assert.ok(v.ok, JSON.stringify(v));
      const file = path.join(dir, `${name.replace(/\W+/g, '-')}.yaml`);
      writeFileSync(file, stringify({ groups: redisClusterRuleGroups(NS, NAME, v.spec, 'docs/monitoring.md') }));
      const r = await promtool(['check', 'rules', '--lint=all', '--lint-fatal', file]);
      assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
      assert.match(r.stdout, /SUCCESS: \d+ rules found/);
    });
  }
});

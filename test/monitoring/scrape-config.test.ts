// The PodMonitor -> scrape config and PrometheusRule -> rule file translation: the exact config
// for a PodMonitor shaped like the hook's (checked against prometheus-operator v0.93.0's
// promcfg.go order), the selector operators, namespace selection, job/target labels, what is
// refused, and the real promtool accepting what it builds (the config, with file SD in place of
// the Kubernetes SD Debian's promtool lacks, and the rule file).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { parse, stringify } from 'yaml';
import { prometheusOperatorCrds } from '../k8s/prometheus-operator.ts';
import { promtool } from './prometheus.ts';
import {
  MODELLED,
  podMonitorScrapeConfigs,
  prometheusConfig,
  prometheusRuleFile,
  ruleFileName,
  ruleFiles,
  scrapeConfigs,
  type PodMonitor,
  type PrometheusRule,
  type ScrapeConfig,
} from './scrape-config.ts';
import { withFileSd } from './pod-sd.ts';

const SAMPLE: PodMonitor = {
  apiVersion: 'monitoring.coreos.com/v1',
  kind: 'PodMonitor',
  metadata: { name: 'my-redis', namespace: 'team-a' },
  spec: {
    selector: { matchLabels: { 'app.kubernetes.io/name': 'redis', 'app.kubernetes.io/instance': 'my-redis' } },
    namespaceSelector: { matchNames: ['team-a'] },
    podMetricsEndpoints: [
      {
        port: 'metrics',
        path: '/metrics',
        interval: '15s',
        relabelings: [
          {
            sourceLabels: ['__meta_kubernetes_pod_label_redis_example_com_role'],
            targetLabel: 'role',
            action: 'Replace',
          },
        ],
        metricRelabelings: [{ sourceLabels: ['__name__'], regex: 'go_.*', action: 'drop' }],
      },
    ],
  },
};

const RULE: PrometheusRule = {
  apiVersion: 'monitoring.coreos.com/v1',
  kind: 'PrometheusRule',
  metadata: { name: 'my-redis', namespace: 'team-a', uid: '0d9c' },
  spec: {
    groups: [
      {
        name: 'redis.my-redis',
        interval: '',
        partial_response_strategy: 'warn',
        query_offset: '1m',
        labels: { team: 'a' },
        rules: [
          {
            alert: 'RedisDown',
            expr: 'redis_up{namespace="team-a"} == 0',
            for: '1m',
            labels: { severity: 'critical' },
            annotations: { summary: 'down' },
          },
          { alert: 'Always', expr: 1, for: '' },
          { record: 'redis:connected_clients:sum', expr: 'sum by (namespace) (redis_connected_clients)' },
        ],
      },
    ],
  },
};

test("a PodMonitor like the hook's: the scrape config prometheus-operator generates, key for key", () => {
  const [cfg, ...rest] = podMonitorScrapeConfigs(SAMPLE, { kubeconfigFile: '/k/kubeconfig' });
  assert.equal(rest.length, 0);
  assert.deepEqual(cfg, {
    job_name: 'podMonitor/team-a/my-redis/0',
    honor_labels: false,
    kubernetes_sd_configs: [{ role: 'pod', namespaces: { names: ['team-a'] }, kubeconfig_file: '/k/kubeconfig' }],
    scrape_interval: '15s',
    metrics_path: '/metrics',
    relabel_configs: [
      { source_labels: ['job'], target_label: '__tmp_prometheus_job_name' },
      { action: 'drop', source_labels: ['__meta_kubernetes_pod_phase'], regex: '(Failed|Succeeded)' },
      {
        action: 'keep',
        source_labels: [
          '__meta_kubernetes_pod_label_app_kubernetes_io_instance',
          '__meta_kubernetes_pod_labelpresent_app_kubernetes_io_instance',
        ],
        regex: '(my-redis);true',
      },
      {
        action: 'keep',
        source_labels: [
          '__meta_kubernetes_pod_label_app_kubernetes_io_name',
          '__meta_kubernetes_pod_labelpresent_app_kubernetes_io_name',
        ],
        regex: '(redis);true',
      },
      { action: 'keep', source_labels: ['__meta_kubernetes_pod_container_port_name'], regex: 'metrics' },
      { source_labels: ['__meta_kubernetes_namespace'], target_label: 'namespace' },
      { source_labels: ['__meta_kubernetes_pod_container_name'], target_label: 'container' },
      { source_labels: ['__meta_kubernetes_pod_name'], target_label: 'pod' },
      { target_label: 'job', replacement: 'team-a/my-redis' },
      { target_label: 'endpoint', replacement: 'metrics' },
      {
        source_labels: ['__meta_kubernetes_pod_label_redis_example_com_role'],
        target_label: 'role',
        action: 'replace',
      },
      {
        source_labels: ['__address__', '__tmp_hash'],
        target_label: '__tmp_hash',
        regex: '(.+);',
        replacement: '$1',
        action: 'replace',
      },
      { source_labels: ['__tmp_hash'], target_label: '__tmp_hash', modulus: 1, action: 'hashmod' },
      { source_labels: ['__tmp_hash', '__tmp_disable_sharding'], regex: '0;|.+;.+', action: 'keep' },
    ],
    metric_relabel_configs: [{ source_labels: ['__name__'], regex: 'go_.*', action: 'drop' }],
  });
});

test('matchExpressions: In/NotIn keep/drop on value and presence, Exists/DoesNotExist on presence', () => {
  const pm: PodMonitor = {
    metadata: { name: 'x', namespace: 'ns' },
    spec: {
      selector: {
        matchExpressions: [
          { key: 'redis.example.com/role', operator: 'In', values: ['master', 'replica'] },
          { key: 'tier', operator: 'NotIn', values: ['cache'] },
          { key: 'app', operator: 'Exists' },
          { key: 'legacy', operator: 'DoesNotExist' },
        ],
      },
      podMetricsEndpoints: [{}],
    },
  };
  const relabel = podMonitorScrapeConfigs(pm)[0]!['relabel_configs'] as unknown[];
  assert.deepEqual(relabel.slice(2, 6), [
    {
      action: 'keep',
      source_labels: [
        '__meta_kubernetes_pod_label_redis_example_com_role',
        '__meta_kubernetes_pod_labelpresent_redis_example_com_role',
      ],
      regex: '(master|replica);true',
    },
    {
      action: 'drop',
      source_labels: ['__meta_kubernetes_pod_label_tier', '__meta_kubernetes_pod_labelpresent_tier'],
      regex: '(cache);true',
    },
    { action: 'keep', source_labels: ['__meta_kubernetes_pod_labelpresent_app'], regex: 'true' },
    { action: 'drop', source_labels: ['__meta_kubernetes_pod_labelpresent_legacy'], regex: 'true' },
  ]);
  // No port: no port keep and no endpoint label; no interval/path: Prometheus's defaults.
  assert.ok(!relabel.some((r) => (r as { target_label?: string }).target_label === 'endpoint'));
  assert.equal(podMonitorScrapeConfigs(pm)[0]!['metrics_path'], undefined);
});

test('namespaces: the own one by default, matchNames as given, none (all) for any; api_server access', () => {
  const sd = (spec: Partial<PodMonitor['spec']>, access?: Parameters<typeof podMonitorScrapeConfigs>[1]) =>
    (
      podMonitorScrapeConfigs(
        { metadata: { name: 'x', namespace: 'own' }, spec: { selector: {}, podMetricsEndpoints: [{}], ...spec } },
        access,
      )[0]!['kubernetes_sd_configs'] as unknown[]
    )[0];
  assert.deepEqual(sd({}), { role: 'pod', namespaces: { names: ['own'] } });
  assert.deepEqual(sd({ namespaceSelector: { matchNames: ['a', 'b'] } }), {
    role: 'pod',
    namespaces: { names: ['a', 'b'] },
  });
  assert.deepEqual(sd({ namespaceSelector: { any: true, matchNames: ['a'] } }), { role: 'pod' });
  assert.deepEqual(
    sd({}, { apiServer: 'https://127.0.0.1:6443', bearerTokenFile: '/t', tlsConfig: { ca_file: '/ca' } }),
    {
      role: 'pod',
      namespaces: { names: ['own'] },
      api_server: 'https://127.0.0.1:6443',
      authorization: { type: 'Bearer', credentials_file: '/t' },
      tls_config: { ca_file: '/ca' },
    },
  );
});

test('jobLabel and podTargetLabels; honorLabels, scheme, one config per endpoint, PodMonitors in name order', () => {
  const pm: PodMonitor = {
    metadata: { name: 'op', namespace: 'redis-operator' },
    spec: {
      selector: { matchLabels: { 'app.kubernetes.io/name': 'redis-operator' } },
      jobLabel: 'app.kubernetes.io/name',
      podTargetLabels: ['redis.example.com/role'],
      podMetricsEndpoints: [
        { port: 'http', honorLabels: true, scheme: 'HTTPS' },
        { port: 'metrics', honorLabels: true },
      ],
    },
  };
  const [http, metrics] = podMonitorScrapeConfigs(pm);
  assert.equal(http!['job_name'], 'podMonitor/redis-operator/op/0');
  assert.equal(metrics!['job_name'], 'podMonitor/redis-operator/op/1');
  assert.equal(http!['honor_labels'], true);
  assert.equal(http!['scheme'], 'https');
  const relabel = http!['relabel_configs'] as Array<Record<string, unknown>>;
  const at = (r: Record<string, unknown>) => relabel.findIndex((x) => JSON.stringify(x) === JSON.stringify(r));
  const target = at({
    source_labels: ['__meta_kubernetes_pod_label_redis_example_com_role'],
    target_label: 'redis_example_com_role',
    regex: '(.+)',
    replacement: '${1}',
  });
  const job = at({ target_label: 'job', replacement: 'redis-operator/op' });
  const jobLabel = at({
    source_labels: ['__meta_kubernetes_pod_label_app_kubernetes_io_name'],
    target_label: 'job',
    regex: '(.+)',
    replacement: '${1}',
  });
  assert.ok(target > 0 && job > target && jobLabel === job + 1, JSON.stringify(relabel));

  const b = { ...SAMPLE, metadata: { name: 'b', namespace: 'team-a' } };
  const a = { ...SAMPLE, metadata: { name: 'a', namespace: 'team-b' } };
  assert.deepEqual(
    scrapeConfigs([a, pm, b]).map((c) => c['job_name']),
    [
      'podMonitor/redis-operator/op/0',
      'podMonitor/redis-operator/op/1',
      'podMonitor/team-a/b/0',
      'podMonitor/team-b/a/0',
    ],
  );
});

test('every field the translation models is a field of the real v0.93.0 PodMonitor CRD', () => {
  const crds = prometheusOperatorCrds();
  if ('why' in crds) assert.fail(crds.why);
  const crd = parse(readFileSync(crds.paths.podMonitors, 'utf8')) as any;
  const spec = crd.spec.versions.find((v: { name: string }) => v.name === 'v1').schema.openAPIV3Schema.properties.spec;
  const endpoint = spec.properties.podMetricsEndpoints.items.properties;
  const has = (props: object, keys: Set<string>) => [...keys].filter((k) => !(k in props));
  assert.deepEqual(has(spec.properties, MODELLED.spec), []);
  assert.deepEqual(has(endpoint, MODELLED.endpoint), []);
  // Relabel configs: all of them (there is nothing to refuse), the same for metricRelabelings.
  assert.deepEqual(Object.keys(endpoint.relabelings.items.properties).sort(), [...MODELLED.relabel].sort());
  assert.deepEqual(Object.keys(endpoint.metricRelabelings.items.properties).sort(), [...MODELLED.relabel].sort());
  for (const f of ['podMonitors', 'serviceMonitors', 'prometheusRules'] as const) {
    assert.equal((parse(readFileSync(crds.paths[f], 'utf8')) as any).spec.group, 'monitoring.coreos.com', f);
  }
});

test('what is not modelled is refused, never dropped', () => {
  const base = structuredClone(SAMPLE);
  assert.throws(
    () =>
      podMonitorScrapeConfigs({
        ...base,
        spec: { ...base.spec, selectorMechanism: 'RoleSelector' } as PodMonitor['spec'],
      }),
    /spec: selectorMechanism not modelled/,
  );
  assert.throws(
    () =>
      podMonitorScrapeConfigs({
        ...base,
        spec: { ...base.spec, podMetricsEndpoints: [{ port: 'm', tlsConfig: {} } as never] },
      }),
    /podMetricsEndpoints\[0\]: tlsConfig not modelled/,
  );
  assert.throws(
    () =>
      podMonitorScrapeConfigs({
        ...base,
        spec: {
          ...base.spec,
          podMetricsEndpoints: [{ relabelings: [{ action: 'keep', sourceLabels: ['a'], bogus: 1 } as never] }],
        },
      }),
    /relabelings\[0\]: bogus not modelled/,
  );
  assert.throws(() => podMonitorScrapeConfigs({ ...base, metadata: { name: 'x' } }), /metadata.namespace is required/);
});

test("a PrometheusRule: spec.groups sanitised for Prometheus 2.42, under the operator's file name", () => {
  assert.equal(ruleFileName(RULE), 'team-a-my-redis-0d9c.yaml');
  assert.equal(
    prometheusRuleFile(RULE),
    stringify({
      groups: [
        {
          name: 'redis.my-redis',
          rules: [
            {
              alert: 'RedisDown',
              expr: 'redis_up{namespace="team-a"} == 0',
              for: '1m',
              labels: { severity: 'critical' },
              annotations: { summary: 'down' },
            },
            { alert: 'Always', expr: '1' },
            { record: 'redis:connected_clients:sum', expr: 'sum by (namespace) (redis_connected_clients)' },
          ],
        },
      ],
    }),
  );
  assert.deepEqual(Object.keys(ruleFiles([RULE])), ['team-a-my-redis-0d9c.yaml']);
});

test('promtool accepts the config built from the sample PodMonitor (file SD in place of kubernetes SD) and the rule file', async (t) => {
  // Debian's promtool has no Kubernetes discovery (see pod-sd.ts): it checks everything else of the
  // operator's config, the relabelings included, in the form the real Prometheus tests run.
  const dir = mkdtempSync(path.join(os.tmpdir(), 'scrape-config-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(path.join(dir, 'rules'));
  for (const [name, text] of Object.entries(ruleFiles([RULE]))) writeFileSync(path.join(dir, 'rules', name), text);
  const config = prometheusConfig({
    podMonitors: [SAMPLE],
    access: { kubeconfigFile: path.join(dir, 'kubeconfig') },
  }) as { scrape_configs: ScrapeConfig[] };
  const file = path.join(dir, 'prometheus.yml');
  writeFileSync(file, stringify({ ...config, scrape_configs: withFileSd(config.scrape_configs) }));
  const r = await promtool(['check', 'config', file]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /SUCCESS: 1 rule files found/);
  assert.match(r.stdout, /SUCCESS: 3 rules found/);
  const rules = await promtool(['check', 'rules', path.join(dir, 'rules', ruleFileName(RULE))]);
  assert.equal(rules.code, 0, rules.stdout + rules.stderr);
});

// The monitoring component's objects and what the decorator hook attaches, checked against the
// Prometheus Operator's real CRDs (v0.93.0, from the Go module proxy) with unknown fields refused
// (the API server would prune them silently), and the component rendered by the real kubectl
// kustomize. (The live system test applies them to a real API server too.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';
import { validateSpec } from '../../src/api/validate.ts';
import { desiredPodMonitor, desiredPrometheusRule } from '../../src/hook/redis/monitoring/objects.ts';
import { binDir } from '../k8s/build.ts';
import { prometheusOperatorCrds } from '../k8s/prometheus-operator.ts';
import { closed, kubernetesAjv } from '../support/crd-schema.ts';

type Obj = Record<string, any>;
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const COMPONENT = join(ROOT, 'manifests/components/monitoring');

function crdValidator(file: string) {
  const crd = parse(readFileSync(file, 'utf8')) as Obj;
  const version = (crd['spec']['versions'] as Obj[]).find((v) => v['name'] === 'v1')!;
  return kubernetesAjv().compile(closed(version['schema']['openAPIV3Schema']) as object);
}

function crds() {
  const c = prometheusOperatorCrds();
  if ('why' in c) throw new Error(c.why);
  return { podMonitor: crdValidator(c.paths.podMonitors), prometheusRule: crdValidator(c.paths.prometheusRules) };
}

function specOf(input: unknown) {
  const v = validateSpec('cache', input);
  assert.ok(v.ok, JSON.stringify(v));
  return v.spec;
}

test("the operator's PodMonitor and PrometheusRule are valid for the Prometheus Operator's CRDs", () => {
  const v = crds();
  const pm = parse(readFileSync(join(COMPONENT, 'operator-podmonitor.yaml'), 'utf8')) as Obj;
  const rule = parse(readFileSync(join(COMPONENT, 'operator-rules.yaml'), 'utf8')) as Obj;
  assert.ok(v.podMonitor(pm), JSON.stringify(v.podMonitor.errors, null, 2));
  assert.ok(v.prometheusRule(rule), JSON.stringify(v.prometheusRule.errors, null, 2));
  const typo = structuredClone(pm);
  typo['spec']['podMetricsEndpoints'][0]['honorLabel'] = true;
  assert.equal(v.podMonitor(typo), false, 'the check bites: an unknown field is refused');
});

test('what the decorator attaches is valid for the CRDs, for every shape of spec', async (t) => {
  const v = crds();
  const variants: Array<[string, unknown]> = [
    ['defaults', {}],
    ['labels, interval and every alert overridden', { monitoring: { prometheus: { labels: { prometheus: 'main' }, scrapeInterval: '15s' }, alerts: [{ name: 'HighMemoryUsage', threshold: '90%', duration: '10m', severity: 'critical' }] } }],
    ['backups', { backup: { schedule: '0 */6 * * *', storage: { pvc: { claimName: 'b' } } } }],
    ['no replicas, hibernating', { replicas: 0, hibernate: true }],
  ];
  for (const [name, input] of variants) {
    await t.test(name, () => {
      const spec = specOf(input);
      const pm = desiredPodMonitor('shop', 'cache', spec);
      const rule = desiredPrometheusRule('shop', 'cache', spec, 'docs/monitoring.md');
      assert.ok(v.podMonitor(pm), JSON.stringify(v.podMonitor.errors, null, 2));
      assert.ok(v.prometheusRule(rule), JSON.stringify(v.prometheusRule.errors, null, 2));
    });
  }
});

test('the component renders with the real kubectl kustomize: the decorators (Redis, RedisCluster), the operator objects and the dashboard ConfigMap', (t) => {
  const kubectl = join(binDir(), 'kubectl');
  if (!existsSync(kubectl)) return t.skip(`${kubectl} is not built (node test/k8s/cli.ts build)`);
  const dir = mkdtempSync(join(tmpdir(), 'kustomize-monitoring-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(COMPONENT, join(dir, 'monitoring'), { recursive: true });
  writeFileSync(join(dir, 'kustomization.yaml'), 'components: [monitoring]\n');
  const docs = parseAllDocuments(execFileSync(kubectl, ['kustomize', dir], { encoding: 'utf8' })).map((d) => d.toJS() as Obj);
  assert.deepEqual(docs.map((d) => `${d['kind']}/${d['metadata']['namespace'] ?? ''}/${d['metadata']['name']}`).sort(), [
    'ConfigMap/redis-operator/redis-operator-dashboard',
    'DecoratorController//redis-operator-monitoring',
    'DecoratorController//redis-operator-monitoring-clusters',
    'PodMonitor/redis-operator/redis-operator',
    'PrometheusRule/redis-operator/redis-operator',
  ]);
  const cm = docs.find((d) => d['kind'] === 'ConfigMap')!;
  assert.equal(cm['metadata']['labels']['grafana_dashboard'], '1');
  assert.deepEqual(JSON.parse(cm['data']['grafana-dashboard.json']), JSON.parse(readFileSync(join(COMPONENT, 'grafana-dashboard.json'), 'utf8')));
});

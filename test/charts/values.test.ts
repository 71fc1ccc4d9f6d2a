// The chart's platform values (charts/redis-operator/values.yaml), with the real Helm:
// - each reaches its field (pull Secrets, ServiceAccount name/annotations/create, pod annotations
//   and labels that never replace the selector's, nodeSelector, tolerations, affinity, extra env
//   that may not shadow the chart's own, the runbook URL in the hook's env and the operator's
//   rules, labels of the PodMonitor and rules, the cert-manager Certificate kind);
// - the release namespace is the operator's everywhere: the hook's POD_NAMESPACE (what its
//   NetworkPolicy default follows), the controllers' hook Service, the RBAC subjects;
// - values.schema.json refuses a misspelt key at every level (helm template and helm lint);
// - NOTES.txt says how to get the password and connect (kubectl redis cli, and kubectl alone).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '../../src/server/config.ts';
import { CHART_DIR, helmEnv } from '../k8s/helm.ts';
import { helmBinary, isHelmBuilt } from '../k8s/helm-build.ts';

type Obj = Record<string, any>;
const home = mkdtempSync(join(tmpdir(), 'helm-values-test-'));
process.on('exit', () => rmSync(home, { recursive: true, force: true }));
const ENV = helmEnv(home);
const skip = isHelmBuilt() ? false : `${helmBinary()} is not built (node test/k8s/cli.ts build)`;

function helm(args: string[]) {
  return spawnSync(helmBinary(), args, { env: ENV, encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
}

function template(
  set: string[],
  namespace = 'redis-operator',
): { ok: true; objects: Obj[] } | { ok: false; stderr: string } {
  const r = helm([
    'template',
    'redis-operator',
    CHART_DIR,
    '--namespace',
    namespace,
    ...set.flatMap((s) => ['--set', s]),
  ]);
  if (r.status !== 0) return { ok: false, stderr: r.stderr };
  const objects = parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as Obj | null)
    .filter((d): d is Obj => d !== null);
  return { ok: true, objects };
}

function rendered(set: string[], namespace?: string): Obj[] {
  const r = template(set, namespace);
  assert.ok(r.ok, `helm template ${set.join(' ')}: ${'stderr' in r ? r.stderr : ''}`);
  return r.objects;
}

const one = (objects: Obj[], kind: string, name?: string): Obj => {
  const found = objects.filter((o) => o['kind'] === kind && (name === undefined || o['metadata']['name'] === name));
  assert.equal(found.length, 1, `${kind} ${name ?? ''}`);
  return found[0] as Obj;
};
const podSpec = (objects: Obj[]): Obj => one(objects, 'Deployment')['spec']['template']['spec'];
const container = (objects: Obj[], name: string): Obj =>
  (podSpec(objects)['containers'] as Obj[]).find((c) => c['name'] === name) as Obj;
const envNamed = (c: Obj, name: string): Obj[] => (c['env'] as Obj[]).filter((e) => e['name'] === name);

/** The hook's env as the process reads it, the downward API filled for a pod in `namespace`. */
function hookConfig(objects: Obj[], namespace: string) {
  const env = Object.fromEntries(
    (container(objects, 'hook')['env'] as Obj[]).map((e) => [
      e['name'],
      e['value'] ?? (e['valueFrom']?.['fieldRef']?.['fieldPath'] === 'metadata.namespace' ? namespace : ''),
    ]),
  );
  const r = loadConfig(env);
  assert.ok(r.ok, JSON.stringify(r));
  return r.config;
}

test('each platform value reaches its field', { skip }, async (t) => {
  await t.test('imagePullSecrets: the operator pods', () => {
    assert.equal(podSpec(rendered([]))['imagePullSecrets'], undefined);
    assert.deepEqual(podSpec(rendered(['imagePullSecrets[0].name=regcred']))['imagePullSecrets'], [
      { name: 'regcred' },
    ]);
  });
  await t.test('image.repository/tag: both containers and OPERATOR_IMAGE', () => {
    const objects = rendered(['image.repository=registry.example.com/platform/redis-operator', 'image.tag=1.4.0']);
    for (const c of ['hook', 'sidecar'])
      assert.equal(container(objects, c)['image'], 'registry.example.com/platform/redis-operator:1.4.0');
    assert.equal(
      hookConfig(objects, 'redis-operator').operatorImage,
      'registry.example.com/platform/redis-operator:1.4.0',
    );
  });
  await t.test('serviceAccount: name and annotations on the ServiceAccount, the pod and every binding', () => {
    const objects = rendered([
      'serviceAccount.name=ops-redis',
      'serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=arn:aws:iam::1:role/r',
    ]);
    const sa = one(objects, 'ServiceAccount');
    assert.equal(sa['metadata']['name'], 'ops-redis');
    assert.deepEqual(sa['metadata']['annotations'], { 'eks.amazonaws.com/role-arn': 'arn:aws:iam::1:role/r' });
    assert.equal(sa['automountServiceAccountToken'], false);
    assert.equal(podSpec(objects)['serviceAccountName'], 'ops-redis');
    const bindings = objects.filter((o) => /Binding$/.test(o['kind']));
    assert.ok(bindings.length >= 3);
    for (const b of bindings)
      assert.deepEqual(
        b['subjects'],
        [{ kind: 'ServiceAccount', name: 'ops-redis', namespace: 'redis-operator' }],
        b['metadata']['name'],
      );
  });
  await t.test('serviceAccount.create=false: no ServiceAccount, the named one used', () => {
    const objects = rendered(['serviceAccount.create=false', 'serviceAccount.name=mine']);
    assert.equal(objects.filter((o) => o['kind'] === 'ServiceAccount').length, 0);
    assert.equal(podSpec(objects)['serviceAccountName'], 'mine');
  });
  await t.test('podAnnotations and podLabels; the selector labels cannot be replaced', () => {
    const d = one(
      rendered([
        'podAnnotations.example\\.com/owner=platform',
        'podLabels.team=platform',
        'podLabels.app\\.kubernetes\\.io/name=other',
      ]),
      'Deployment',
    );
    const meta = d['spec']['template']['metadata'];
    assert.deepEqual(meta['annotations'], { 'example.com/owner': 'platform' });
    assert.equal(meta['labels']['team'], 'platform');
    for (const [k, v] of Object.entries(d['spec']['selector']['matchLabels'] as Record<string, string>))
      assert.equal(meta['labels'][k], v, k);
  });
  await t.test('nodeSelector and tolerations', () => {
    const spec = podSpec(
      rendered([
        'nodeSelector.pool=ops',
        'tolerations[0].key=dedicated',
        'tolerations[0].operator=Exists',
        'tolerations[0].effect=NoSchedule',
      ]),
    );
    assert.deepEqual(spec['nodeSelector'], { pool: 'ops' });
    assert.deepEqual(spec['tolerations'], [{ key: 'dedicated', operator: 'Exists', effect: 'NoSchedule' }]);
  });
  await t.test('affinity: replaces the default spreading; unset, the replicas prefer separate nodes', () => {
    assert.ok(podSpec(rendered([]))['affinity']['podAntiAffinity']);
    const affinity = podSpec(
      rendered([
        'affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=pool',
        'affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=In',
        'affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values={ops}',
      ]),
    )['affinity'];
    assert.deepEqual(Object.keys(affinity), ['nodeAffinity']);
  });
  await t.test('extraEnv of each container, after the chart own', () => {
    const objects = rendered([
      'hook.extraEnv[0].name=NODE_OPTIONS',
      'hook.extraEnv[0].value=--max-old-space-size=200',
      'sidecar.extraEnv[0].name=HTTPS_PROXY',
      'sidecar.extraEnv[0].valueFrom.secretKeyRef.name=proxy',
      'sidecar.extraEnv[0].valueFrom.secretKeyRef.key=url',
    ]);
    assert.deepEqual(envNamed(container(objects, 'hook'), 'NODE_OPTIONS'), [
      { name: 'NODE_OPTIONS', value: '--max-old-space-size=200' },
    ]);
    assert.deepEqual(envNamed(container(objects, 'sidecar'), 'HTTPS_PROXY'), [
      { name: 'HTTPS_PROXY', valueFrom: { secretKeyRef: { name: 'proxy', key: 'url' } } },
    ]);
    for (const [c, name] of [
      ['hook', 'OPERATOR_IMAGE'],
      ['sidecar', 'SHARDS'],
      ['sidecar', 'PROBE_INTERVAL_MS'],
    ] as const) {
      const r = template([`${c}.extraEnv[0].name=${name}`, `${c}.extraEnv[0].value=x`]);
      assert.ok(
        !r.ok && r.stderr.includes(`${c}.extraEnv: ${name} is set by the chart`),
        `${c} ${name}: ${JSON.stringify(r).slice(0, 300)}`,
      );
    }
  });
  await t.test('resources per container', () => {
    const objects = rendered(['hook.resources.limits.memory=512Mi', 'sidecar.resources.requests.cpu=250m']);
    assert.equal(container(objects, 'hook')['resources']['limits']['memory'], '512Mi');
    assert.equal(container(objects, 'sidecar')['resources']['requests']['cpu'], '250m');
  });
  await t.test('runbookBaseUrl: the hook (per-Redis alerts) and the operator rules', () => {
    const url = 'https://wiki.example.com/redis/monitoring';
    const objects = rendered([`runbookBaseUrl=${url}`, 'monitoring.enabled=true']);
    assert.equal(hookConfig(objects, 'redis-operator').runbookBaseUrl, url);
    const rules = (one(objects, 'PrometheusRule')['spec']['groups'] as Obj[]).flatMap((g) => g['rules'] as Obj[]);
    assert.ok(rules.length >= 4);
    for (const r of rules) assert.equal(r['annotations']['runbook_url'], `${url}#${String(r['alert']).toLowerCase()}`);
    assert.equal(envNamed(container(rendered([]), 'hook'), 'RUNBOOK_BASE_URL').length, 0, 'unset: the process default');
  });
  await t.test('monitoring.labels on the PodMonitor and the rules', () => {
    const objects = rendered(['monitoring.enabled=true', 'monitoring.labels.release=kube-prometheus-stack']);
    for (const kind of ['PodMonitor', 'PrometheusRule']) {
      const labels = one(objects, kind)['metadata']['labels'];
      assert.equal(labels['release'], 'kube-prometheus-stack', kind);
      assert.equal(labels['app.kubernetes.io/name'], 'redis-operator', kind);
    }
  });
  await t.test('certManager.enabled: the CompositeController declares Certificates', () => {
    const kinds = (set: string[]) =>
      (one(rendered(set), 'CompositeController', 'redis-operator')['spec']['childResources'] as Obj[]).map(
        (c) => `${c['apiVersion']} ${c['resource']}`,
      );
    assert.ok(!kinds([]).includes('cert-manager.io/v1 certificates'));
    assert.ok(kinds(['certManager.enabled=true']).includes('cert-manager.io/v1 certificates'));
  });
});

test(
  'installed in another namespace: the hook knows it, the controllers call it there, the RBAC binds it there',
  { skip },
  () => {
    const ns = 'platform-redis';
    const objects = rendered(['monitoring.enabled=true'], ns);
    assert.equal(hookConfig(objects, ns).operatorNamespace, ns);
    for (const c of objects.filter((o) => o['kind'] === 'CompositeController' || o['kind'] === 'DecoratorController'))
      for (const h of Object.values(c['spec']['hooks'] as Record<string, Obj>))
        assert.equal(h['webhook']['service']['namespace'], ns, c['metadata']['name']);
    for (const b of objects.filter((o) => /Binding$/.test(o['kind']))) assert.equal(b['subjects'][0]['namespace'], ns);
    assert.equal(one(objects, 'PodMonitor')['spec']['namespaceSelector'], undefined, 'its own namespace');
  },
);

test(
  'values.schema.json refuses a misspelt key at every level, in helm template and helm lint',
  { skip },
  async (t) => {
    const typos: Array<[string, string]> = [
      ['imagePullSecret[0].name=x', 'imagePullSecret'],
      ['image.respository=x', 'respository'],
      ['serviceAccount.annotation.a=b', 'annotation'],
      ['podLabel.a=b', 'podLabel'],
      ['nodeSelektor.a=b', 'nodeSelektor'],
      ['tolerations[0].efect=NoSchedule', 'efect'],
      ['affinity.podAntiAfinity.x=y', 'podAntiAfinity'],
      ['hook.extraEnvs[0].name=X', 'extraEnvs'],
      ['sidecar.extraEnv[0].name=A,sidecar.extraEnv[0].valueFrom.secretKeyRef.nam=x', 'nam'],
      ['hook.resources.limits.memroy=1Gi', 'memroy'],
      ['sidecar.timing.probeIntervalMS=100', 'probeIntervalMS'],
      ['monitoring.label.a=b', 'label'],
      ['certManager.enable=true', 'enable'],
      ['runbookBaseURL=https://x.example.com', 'runbookBaseURL'],
    ];
    for (const [set, key] of typos) {
      await t.test(set, () => {
        const r = template([set]);
        assert.ok(!r.ok && r.stderr.includes(`'${key}' not allowed`), JSON.stringify(r).slice(0, 400));
        const lint = helm(['lint', '--strict', CHART_DIR, '--set', set]);
        assert.notEqual(lint.status, 0, `helm lint --set ${set}`);
      });
    }
    await t.test('a runbook URL that is no absolute URL', () => {
      const r = template(['runbookBaseUrl=docs/monitoring.md']);
      assert.ok(!r.ok && r.stderr.includes('runbookBaseUrl'), JSON.stringify(r).slice(0, 300));
    });
  },
);

test('NOTES.txt: the namespace, how to get the password and connect', { skip }, () => {
  const r = helm(['install', 'redis-operator', CHART_DIR, '--dry-run=client', '--namespace', 'platform-redis']);
  assert.equal(r.status, 0, r.stderr);
  const notes = r.stdout.slice(r.stdout.indexOf('NOTES:'));
  assert.ok(notes.length > 'NOTES:'.length, r.stdout.slice(-500));
  assert.match(notes, /installed in namespace platform-redis, image redis-operator:0\.1\.0/);
  assert.match(notes, /kubectl -n platform-redis rollout status deployment\/redis-operator/);
  assert.match(notes, /kubectl get secret my-redis-auth -o jsonpath='\{\.data\.password\}' \| base64 -d/);
  assert.match(notes, /kubectl redis cli my-redis/);
  assert.match(
    notes,
    /REDISCLI_AUTH="\$\(kubectl get secret my-redis-auth .*\)" redis-cli -h 127\.0\.0\.1 -p 6379 PING/,
  );
  assert.doesNotMatch(notes, /redis-cli[^\n]* -a /, 'no password on a command line');
});

// The Helm chart (charts/redis-operator) against manifests/, with the real Helm (test/k8s/helm-build.ts)
// and the real kubectl kustomize (the control plane build):
// - `helm lint --strict`, and `helm template --include-crds` with default values renders exactly the
//   objects `kubectl kustomize manifests` renders (with monitoring.enabled: plus the monitoring
//   component). Normalised for exactly two differences: Helm's own labels (helm.sh/chart,
//   app.kubernetes.io/managed-by) are dropped, and kustomize's Namespace object is left out (Helm
//   creates the release namespace itself: `--create-namespace`; a chart cannot create the
//   namespace its release record is stored in).
// - watchNamespaces renders the RBAC of manifests/ with components/namespaced (RoleBindings in
//   those namespaces) and WATCH_NAMESPACES from the same value; only the sidecar gets a token;
// - the chart's crds/ are byte for byte what `npm run gen:crd` writes (no second hand-kept copy);
// - each value reaches its field, read back through the processes' own config loaders
//   (loadConfig, loadSidecarConfig), and values.schema.json refuses exactly what those refuse per
//   variable (the relations between timings are the sidecar's own start-up check); the chart
//   README's timing table says the same envs, defaults and ranges.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { renderCrdYaml, renderRedisBackupCrdYaml, renderRedisClusterCrdYaml } from '../../src/api/crd.ts';
import { loadConfig } from '../../src/server/config.ts';
import { DEFAULT_TIMING, LOG_LEVELS, loadSidecarConfig, type SidecarConfig } from '../../src/sidecar/config.ts';
import { DEFAULT_LEADER_SETTINGS } from '../../src/sidecar/adapters/kube/lease-decision.ts';
import { binDir } from '../k8s/build.ts';
import { CHART_DIR, helmEnv } from '../k8s/helm.ts';
import { helmBinary, isHelmBuilt } from '../k8s/helm-build.ts';
import { REPO_ROOT } from '../k8s/operator.ts';
import { namespacedOverlay, podCredentials, TOKEN_PATH } from '../support/install-shape.ts';

type Obj = Record<string, any>;
const NAMESPACE = 'redis-operator';
const HELM_LABELS = ['helm.sh/chart', 'app.kubernetes.io/managed-by'];
const KUBECTL = join(binDir(), 'kubectl');
const home = mkdtempSync(join(tmpdir(), 'helm-chart-test-'));
process.on('exit', () => rmSync(home, { recursive: true, force: true }));
const ENV = helmEnv(home);

const helmMissing = isHelmBuilt() ? undefined : `${helmBinary()} is not built (node test/k8s/cli.ts build)`;
const kubectlMissing = existsSync(KUBECTL) ? undefined : `${KUBECTL} is not built (node test/k8s/cli.ts build)`;

function docs(yaml: string): Obj[] {
  return parseAllDocuments(yaml)
    .map((d) => d.toJS() as Obj | null)
    .filter((d): d is Obj => d !== null);
}

/** `helm template` of the chart; `ok: false` with Helm's stderr when it refuses the values. */
function template(set: string[] = []): { ok: true; objects: Obj[] } | { ok: false; stderr: string } {
  const args = [
    'template',
    'redis-operator',
    CHART_DIR,
    '--namespace',
    NAMESPACE,
    '--include-crds',
    ...set.flatMap((s) => ['--set', s]),
  ];
  const r = spawnSync(helmBinary(), args, { env: ENV, encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
  return r.status === 0 ? { ok: true, objects: docs(r.stdout) } : { ok: false, stderr: r.stderr };
}

function rendered(set: string[] = []): Obj[] {
  const r = template(set);
  assert.ok(r.ok, `helm template ${set.join(' ')}: ${'stderr' in r ? r.stderr : ''}`);
  return r.objects;
}

function kustomize(components: string[]): Obj[] {
  const dir = mkdtempSync(join(tmpdir(), 'kustomize-chart-'));
  try {
    cpSync(join(REPO_ROOT, 'manifests'), join(dir, 'manifests'), { recursive: true });
    cpSync(join(REPO_ROOT, 'metacontroller'), join(dir, 'metacontroller'), { recursive: true });
    writeFileSync(join(dir, 'kustomization.yaml'), `resources: [manifests]\ncomponents: [${components.join(', ')}]\n`);
    return docs(execFileSync(KUBECTL, ['kustomize', dir], { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const key = (o: Obj) => `${o['kind']}/${o['metadata']?.['namespace'] ?? ''}/${o['metadata']?.['name']}`;

/** Keyed by kind/namespace/name, Helm's own labels dropped (and nothing else). */
function normalised(objects: Obj[]): Map<string, Obj> {
  const out = new Map<string, Obj>();
  for (const o of objects) {
    const c = structuredClone(o);
    const labels = c['metadata']?.['labels'] as Obj | undefined;
    for (const l of HELM_LABELS) if (labels) delete labels[l];
    assert.ok(!out.has(key(c)), `${key(c)} twice`);
    out.set(key(c), c);
  }
  return out;
}

function assertSameObjects(chart: Obj[], kustomized: Obj[]): void {
  const fromKustomize = kustomized.filter((o) => !(o['kind'] === 'Namespace' && o['metadata']['name'] === NAMESPACE));
  assert.equal(fromKustomize.length, kustomized.length - 1, 'kustomize renders the Namespace the chart leaves to Helm');
  const a = normalised(chart);
  const b = normalised(fromKustomize);
  assert.deepEqual([...a.keys()].sort(), [...b.keys()].sort());
  for (const [k, o] of b) assert.deepEqual(a.get(k), o, `${k} differs between the chart and manifests/`);
  // crds/ are not templates (Helm applies them as they are), everything else carries Helm's labels.
  for (const o of chart.filter((c) => c['kind'] !== 'CustomResourceDefinition'))
    for (const l of HELM_LABELS) assert.ok(o['metadata']['labels']?.[l], `${key(o)} carries ${l}`);
}

test('helm lint --strict passes, with and without monitoring', { skip: helmMissing }, () => {
  for (const set of [[], ['monitoring.enabled=true']]) {
    const r = spawnSync(helmBinary(), ['lint', '--strict', CHART_DIR, ...set.flatMap((s) => ['--set', s])], {
      env: ENV,
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  }
});

test("the chart's crds/ are what npm run gen:crd writes", () => {
  assert.equal(
    readFileSync(join(CHART_DIR, 'crds/crd.yaml'), 'utf8'),
    renderCrdYaml(),
    'charts/redis-operator/crds/crd.yaml is stale: npm run gen:crd',
  );
  assert.equal(
    readFileSync(join(CHART_DIR, 'crds/redisbackup-crd.yaml'), 'utf8'),
    renderRedisBackupCrdYaml(),
    'crds/redisbackup-crd.yaml is stale: npm run gen:crd',
  );
  assert.equal(
    readFileSync(join(CHART_DIR, 'crds/rediscluster-crd.yaml'), 'utf8'),
    renderRedisClusterCrdYaml(),
    'crds/rediscluster-crd.yaml is stale: npm run gen:crd',
  );
});

test(
  'default values render the objects of kubectl kustomize manifests',
  { skip: helmMissing ?? kubectlMissing },
  () => {
    const chart = rendered();
    assert.ok(chart.length >= 10, chart.map(key).join(', '));
    assertSameObjects(chart, kustomize([]));
  },
);

test(
  'monitoring.enabled renders the objects of manifests with the monitoring component',
  { skip: helmMissing ?? kubectlMissing },
  () => {
    const chart = rendered(['monitoring.enabled=true']);
    const withComponent = kustomize(['manifests/components/monitoring']);
    assert.ok(withComponent.some((o) => o['kind'] === 'DecoratorController'));
    assertSameObjects(chart, withComponent);
  },
);

/** manifests/ with the overlay components/namespaced documents, for `namespaces` (real kubectl kustomize). */
function kustomizeNamespaced(namespaces: string[]): Obj[] {
  const dir = mkdtempSync(join(tmpdir(), 'kustomize-chart-'));
  try {
    cpSync(join(REPO_ROOT, 'manifests'), join(dir, 'manifests'), { recursive: true });
    cpSync(join(REPO_ROOT, 'metacontroller'), join(dir, 'metacontroller'), { recursive: true });
    mkdirSync(join(dir, 'overlay'));
    for (const [name, text] of Object.entries(namespacedOverlay('../manifests', namespaces)))
      writeFileSync(join(dir, 'overlay', name), text);
    return docs(
      execFileSync(KUBECTL, ['kustomize', join(dir, 'overlay')], { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 }),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const RBAC_KINDS = ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];

test(
  'watchNamespaces: RoleBindings in those namespaces instead of the ClusterRoleBinding, as components/namespaced renders them, and WATCH_NAMESPACES from the same value',
  { skip: helmMissing ?? kubectlMissing },
  () => {
    const namespaces = ['shop', 'billing'];
    const chart = rendered([`watchNamespaces={${namespaces.join(',')}}`]);
    const kustomized = kustomizeNamespaced(namespaces);
    const rbac = (objects: Obj[]) => objects.filter((o) => RBAC_KINDS.includes(o['kind']));
    const a = normalised(rbac(chart));
    const b = normalised(rbac(kustomized));
    assert.deepEqual([...a.keys()].sort(), [...b.keys()].sort());
    for (const [k, o] of b) assert.deepEqual(a.get(k), o, `${k} differs between the chart and components/namespaced`);
    assert.deepEqual([...a.keys()].filter((k) => k.includes('Binding')).sort(), [
      'ClusterRoleBinding//redis-operator-sidecar-cluster-scoped',
      'RoleBinding/billing/redis-operator-sidecar',
      'RoleBinding/redis-operator/redis-operator-leader-election',
      'RoleBinding/shop/redis-operator-sidecar',
    ]);
    // The sidecar watches exactly where it is granted, in either install.
    for (const objects of [chart, kustomized]) {
      const d = objects.find((o) => o['kind'] === 'Deployment') as Obj;
      const r = loadSidecarConfig(envOf(containerOf(d, 'sidecar')));
      assert.ok(r.ok, JSON.stringify(r));
      assert.deepEqual(r.config.watchNamespaces, namespaces);
    }
    // Helm refuses a namespace twice (one RoleBinding each), as it refuses a name that is no namespace.
    const twice = template(['watchNamespaces={shop,shop}']);
    assert.ok(!twice.ok && /watchNamespaces/.test(twice.stderr), JSON.stringify(twice).slice(0, 300));
  },
);

test('only the sidecar container gets API credentials, whatever the values', { skip: helmMissing }, () => {
  for (const set of [[], ['watchNamespaces={shop}'], ['monitoring.enabled=true']]) {
    const objects = rendered(set);
    const sa = objects.find((o) => o['kind'] === 'ServiceAccount') as Obj;
    assert.equal(sa['automountServiceAccountToken'], false, set.join(' '));
    const c = podCredentials(objects.find((o) => o['kind'] === 'Deployment') as Obj);
    assert.equal(c.automount, false, set.join(' '));
    assert.deepEqual(c.mountedIn, ['sidecar'], set.join(' '));
    assert.deepEqual(c.sidecarMount, { mountPath: TOKEN_PATH, readOnly: true });
  }
});

// ---- values -> the Deployment, read back as the processes read it ----

function deployment(set: string[]): Obj {
  const d = rendered(set).find((o) => o['kind'] === 'Deployment');
  assert.ok(d);
  return d;
}
const containerOf = (d: Obj, name: string): Obj =>
  (d['spec']['template']['spec']['containers'] as Obj[]).find((c) => c['name'] === name) as Obj;

/** A container's env as the process sees it (downward API fields filled as the kubelet would). */
function envOf(c: Obj): Record<string, string> {
  const fromField: Record<string, string> = {
    'metadata.name': 'redis-operator-7d9f-abcde',
    'metadata.namespace': NAMESPACE,
  };
  return Object.fromEntries(
    (c['env'] as Obj[]).map((e) => [
      e['name'],
      e['value'] ?? fromField[e['valueFrom']?.['fieldRef']?.['fieldPath']] ?? '',
    ]),
  );
}

function sidecarConfig(set: string[]): SidecarConfig {
  const r = loadSidecarConfig(envOf(containerOf(deployment(set), 'sidecar')));
  assert.ok(r.ok, JSON.stringify(r));
  return r.config;
}

test('each value reaches its field of the Deployment', { skip: helmMissing }, async (t) => {
  await t.test('image: both containers and OPERATOR_IMAGE (backup Jobs run it)', () => {
    for (const [set, image] of [
      [
        ['image.repository=registry.example.com:5000/team/redis-operator', 'image.tag=1.2.3'],
        'registry.example.com:5000/team/redis-operator:1.2.3',
      ],
      [[`image.digest=sha256:${'a'.repeat(64)}`], `redis-operator@sha256:${'a'.repeat(64)}`],
      [['image.pullPolicy=Always'], 'redis-operator:0.1.0'],
    ] as const) {
      const d = deployment([...set]);
      for (const c of ['hook', 'sidecar']) assert.equal(containerOf(d, c)['image'], image);
      const hook = loadConfig(envOf(containerOf(d, 'hook')));
      assert.ok(hook.ok, JSON.stringify(hook));
      assert.equal(hook.config.operatorImage, image);
      if (set[0] === 'image.pullPolicy=Always')
        for (const c of ['hook', 'sidecar']) assert.equal(containerOf(d, c)['imagePullPolicy'], 'Always');
    }
  });
  await t.test('replicas', () => assert.equal(deployment(['replicas=3'])['spec']['replicas'], 3));
  await t.test('resources of each container', () => {
    const d = deployment(['hook.resources.limits.memory=512Mi', 'sidecar.resources.requests.cpu=250m']);
    assert.deepEqual(containerOf(d, 'hook')['resources'], {
      requests: { cpu: '100m', memory: '96Mi' },
      limits: { cpu: '1', memory: '512Mi' },
    });
    assert.deepEqual(containerOf(d, 'sidecar')['resources'], {
      requests: { cpu: '250m', memory: '128Mi' },
      limits: { cpu: '1', memory: '384Mi' },
    });
  });
  await t.test('watched namespaces', () => {
    assert.deepEqual(sidecarConfig(['watchNamespaces={shop,billing}']).watchNamespaces, ['shop', 'billing']);
    assert.deepEqual(sidecarConfig([]).watchNamespaces, []);
  });
  await t.test('log level, and the per-container override', () => {
    const d = deployment(['logLevel=debug', 'sidecar.logLevel=warn']);
    const hook = loadConfig(envOf(containerOf(d, 'hook')));
    assert.ok(hook.ok);
    assert.equal(hook.config.logLevel, 'debug');
    assert.equal(sidecarConfig(['logLevel=debug', 'sidecar.logLevel=warn']).logLevel, 'warn');
  });
  await t.test('shards', () => assert.equal(sidecarConfig(['sidecar.shards=8']).shards, 8));
  // A value other than the default (and consistent with the other defaults), read back by loadSidecarConfig.
  const timings: Array<[string, string, number, (c: SidecarConfig) => number]> = [
    ['probeIntervalMs', 'PROBE_INTERVAL_MS', 250, (c) => c.timing.probeIntervalMs],
    ['idleProbeIntervalMs', 'IDLE_PROBE_INTERVAL_MS', 2500, (c) => c.timing.idleProbeIntervalMs],
    ['tickIntervalMs', 'TICK_INTERVAL_MS', 200, (c) => c.timing.tickIntervalMs],
    ['redisConnectTimeoutMs', 'REDIS_CONNECT_TIMEOUT_MS', 700, (c) => c.timing.redisConnectTimeoutMs],
    ['redisCommandTimeoutMs', 'REDIS_COMMAND_TIMEOUT_MS', 800, (c) => c.timing.redisCommandTimeoutMs],
    ['kubeRequestTimeoutMs', 'KUBE_REQUEST_TIMEOUT_MS', 4000, (c) => c.timing.kubeRequestTimeoutMs],
    ['secretRefreshMs', 'SECRET_REFRESH_MS', 30000, (c) => c.timing.secretRefreshMs],
    ['witnessConfirmMs', 'WITNESS_CONFIRM_MS', 1234, (c) => c.timing.witnessConfirmMs],
    ['staleAfterMs', 'STALE_AFTER_MS', 5000, (c) => c.timing.staleAfterMs],
    ['maxPartialWaitMs', 'MAX_PARTIAL_WAIT_MS', 7000, (c) => c.timing.maxPartialWaitMs],
    ['crashConfirmMs', 'CRASH_CONFIRM_MS', 900, (c) => c.timing.crashConfirmMs],
    ['rolloutStallMs', 'ROLLOUT_STALL_MS', 86_400_000, (c) => c.timing.rolloutStallMs],
    ['leaseDurationSeconds', 'LEASE_DURATION_SECONDS', 5, (c) => c.leader.leaseDurationSeconds],
    ['leaseRenewDeadlineMs', 'LEASE_RENEW_DEADLINE_MS', 2500, (c) => c.leader.renewDeadlineMs],
    ['leaseRetryPeriodMs', 'LEASE_RETRY_PERIOD_MS', 400, (c) => c.leader.retryPeriodMs],
    ['leaseRequestTimeoutMs', 'LEASE_REQUEST_TIMEOUT_MS', 1500, (c) => c.leader.requestTimeoutMs],
  ];
  const values = (JSON.parse(readFileSync(join(CHART_DIR, 'values.schema.json'), 'utf8')) as Obj)['properties'][
    'sidecar'
  ]['properties']['timing']['properties'] as Obj;
  assert.deepEqual(Object.keys(values).sort(), timings.map(([k]) => k).sort(), 'every timing of the schema is tested');
  for (const [name, env, value, read] of timings) {
    await t.test(`sidecar.timing.${name} -> ${env}`, () => {
      const set = [`sidecar.timing.${name}=${value}`];
      assert.equal(envOf(containerOf(deployment(set), 'sidecar'))[env], String(value));
      const config = sidecarConfig(set);
      assert.equal(read(config), value);
      assert.notEqual(read(sidecarConfig([])), value, 'the test value is not the default');
    });
  }
});

// ---- values.schema.json refuses what the processes refuse ----

/** The errors of loadSidecarConfig that refuse this variable's own value (not a relation between timings). */
function refusedByProcess(set: string[], env: string): boolean {
  const d = rendered(set).find((o) => o['kind'] === 'Deployment') as Obj;
  const r = loadSidecarConfig(envOf(containerOf(d, 'sidecar')));
  return !r.ok && r.errors.some((e) => e.startsWith(`${env}=`) && e.includes('whole number'));
}

test('values.schema.json refuses what the processes would refuse', { skip: helmMissing }, async (t) => {
  const schema = JSON.parse(readFileSync(join(CHART_DIR, 'values.schema.json'), 'utf8')) as Obj;
  await t.test('log levels are pino levels', () => {
    assert.deepEqual(schema['properties']['logLevel']['enum'], [...LOG_LEVELS]);
    const r = template(['logLevel=verbose']);
    assert.equal(r.ok, false);
    assert.ok(!loadConfig({ LOG_LEVEL: 'verbose' }).ok);
  });
  await t.test('a namespace that is no DNS label', () => {
    const r = template(['watchNamespaces={Shop_1}']);
    assert.ok(!r.ok && /watchNamespaces/.test(r.stderr), JSON.stringify(r).slice(0, 400));
    assert.ok(!loadSidecarConfig({ POD_NAME: 'p', POD_NAMESPACE: NAMESPACE, WATCH_NAMESPACES: 'Shop_1' }).ok);
  });
  await t.test('an image reference OPERATOR_IMAGE refuses', () => {
    assert.equal(template(['image.repository=Bad Image']).ok, false);
    assert.ok(!loadConfig({ OPERATOR_IMAGE: 'Bad Image:0.1.0' }).ok);
  });
  await t.test('an unknown value (a misspelt timing)', () => {
    const r = template(['sidecar.timing.probeIntervalMS=100']);
    assert.ok(!r.ok && /probeIntervalMS/.test(r.stderr), JSON.stringify(r).slice(0, 400));
  });
  await t.test('shards outside 1..256', () => {
    for (const v of [0, 257]) assert.equal(template([`sidecar.shards=${v}`]).ok, false, String(v));
    assert.ok(!loadSidecarConfig({ POD_NAME: 'p', POD_NAMESPACE: NAMESPACE, SHARDS: '257' }).ok);
  });
  const timing = schema['properties']['sidecar']['properties']['timing']['properties'] as Record<
    string,
    { minimum: number; maximum: number; description: string }
  >;
  // Every timing at its schema minimum, then every one at its maximum: Helm renders them and the
  // process refuses none of the values themselves (some relations fail, which is the process's check).
  for (const bound of ['minimum', 'maximum'] as const) {
    await t.test(`every timing at the schema's ${bound} is a value the sidecar takes`, () => {
      const set = Object.entries(timing).map(([k, s]) => `sidecar.timing.${k}=${s[bound]}`);
      for (const s of Object.values(timing))
        assert.equal(refusedByProcess(set, s.description), false, `${s.description}=${s[bound]}`);
    });
  }
  for (const [name, s] of Object.entries(timing)) {
    await t.test(
      `sidecar.timing.${name} just outside ${s.minimum}..${s.maximum} is refused by Helm and by the sidecar`,
      () => {
        for (const v of [s.minimum - 1, s.maximum + 1]) {
          const r = template([`sidecar.timing.${name}=${v}`]);
          assert.ok(!r.ok && r.stderr.includes(name), `${name}=${v}: ${JSON.stringify(r).slice(0, 300)}`);
          const env = loadSidecarConfig({ POD_NAME: 'p', POD_NAMESPACE: NAMESPACE, [s.description]: String(v) });
          assert.ok(!env.ok && env.errors.some((e) => e.startsWith(`${s.description}=`)), `${s.description}=${v}`);
        }
      },
    );
  }
});

test("the chart README's timing table says each value's env, the process default and the schema's range", () => {
  const L = DEFAULT_LEADER_SETTINGS;
  const defaults: Record<string, number> = {
    ...DEFAULT_TIMING,
    leaseDurationSeconds: L.leaseDurationSeconds,
    leaseRenewDeadlineMs: L.renewDeadlineMs,
    leaseRetryPeriodMs: L.retryPeriodMs,
    leaseRequestTimeoutMs: L.requestTimeoutMs,
  };
  const schema = JSON.parse(readFileSync(join(CHART_DIR, 'values.schema.json'), 'utf8')) as Obj;
  const timing = schema['properties']['sidecar']['properties']['timing']['properties'] as Record<
    string,
    { minimum: number; maximum: number; description: string }
  >;
  const rows = new Map(
    [
      ...readFileSync(join(CHART_DIR, 'README.md'), 'utf8').matchAll(
        /^\| `sidecar\.timing\.(\w+)` \| `(\w+)` \| (\d+) \| (\d+) to (\d+) \|$/gm,
      ),
    ].map((m) => [m[1] as string, m.slice(2).join(' ')]),
  );
  assert.deepEqual([...rows.keys()].sort(), Object.keys(timing).sort());
  for (const [name, s] of Object.entries(timing))
    assert.equal(rows.get(name), `${s.description} ${defaults[name]} ${s.minimum} ${s.maximum}`, name);
});

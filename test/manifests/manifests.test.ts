// The install manifests (manifests/, metacontroller/): every object accepted by the real
// kube-apiserver with strict field validation (the CompositeControllers and DecoratorControllers
// by Metacontroller's CRDs, read from ../shared beside the repository as CI places it; the
// PodMonitor and PrometheusRule by the Prometheus Operator's), the controllers carrying the
// invariants our hook needs, a kustomization that lists everything (RBAC: rbac.test.ts), a
// Deployment that meets the restricted Pod Security Standard, and the design's example Redis
// accepted by our CRD and the hook's validator alike.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { CRD_NAME, REDISCLUSTER_CRD_NAME } from '../../src/api/crd.ts';
import { REDIS_CLUSTER_PLURAL as CLUSTER_PLURAL } from '../../src/api/rediscluster-names.ts';
import { GROUP, PLURAL, VERSION } from '../../src/api/labels.ts';
import { validateSpec } from '../../src/api/validate.ts';
import { parseHookRequest, sync, syncRedisCluster as syncCluster } from '../../src/hook/index.ts';
import { binDir } from '../k8s/build.ts';
import { METACONTROLLER_CRDS, missingSharedReason } from '../k8s/operator.ts';
import { dryRunMissing, startDryRunServer, type DryRunServer } from '../k8s/dry-run.ts';
import { prometheusOperatorCrds } from '../k8s/prometheus-operator.ts';
import { KubeApiError } from '../support/kube-client/objects.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

type Obj = Record<string, any>;
interface Loaded {
  file: string;
  obj: Obj;
}

function yamlFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) return yamlFiles(path);
    return /\.ya?ml$/.test(name) ? [path] : [];
  });
}

function loadYaml(path: string): Obj[] {
  const docs = parseAllDocuments(readFileSync(path, 'utf8'));
  return docs.flatMap((doc) => {
    assert.deepEqual(doc.errors, [], `${path}: YAML errors`);
    const value: unknown = doc.toJS();
    return value === null || value === undefined ? [] : [value as Obj];
  });
}

/** kustomize's transformer configuration (kustomization.yaml's `configurations:`): no object. */
const KUSTOMIZE_CONFIG = 'manifests/kustomizeconfig.yaml';
const FILES = [...yamlFiles('manifests'), ...yamlFiles('metacontroller')].filter((f) => f !== KUSTOMIZE_CONFIG).sort();
const OBJECTS: Loaded[] = FILES.flatMap((file) => loadYaml(join(ROOT, file)).map((obj) => ({ file, obj })));

function only(kind: string, name?: string): Obj {
  const found = OBJECTS.filter(({ obj }) => obj['kind'] === kind && (name === undefined || obj['metadata']?.['name'] === name));
  assert.equal(found.length, 1, `expected exactly one ${kind} ${name ?? ''}, found ${found.length}`);
  return (found[0] as Loaded).obj;
}

const NAMESPACE = 'redis-operator';
const deployment = only('Deployment', 'redis-operator');
const service = only('Service', 'redis-operator');
const compositeController = only('CompositeController', 'redis-operator');
const podSpec = deployment['spec']['template']['spec'] as Obj;
const containers = podSpec['containers'] as Obj[];
const container = (name: string): Obj => {
  const found = containers.find((c) => c['name'] === name);
  assert.ok(found, `container ${name} exists`);
  return found;
};

/** Every object set — so a new kind in a manifest needs a decision here. */
const HANDLED_KINDS = new Set([
  'Namespace', 'CustomResourceDefinition', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding',
  'Deployment', 'Service', 'CompositeController', 'DecoratorController', 'Kustomization', 'Component', 'Redis', 'RedisCluster',
  // The monitoring component's: checked against the Prometheus Operator's real CRDs (monitoring-component.test.ts).
  'PodMonitor', 'PrometheusRule',
]);

test('every manifest parses and holds only kinds this test checks', () => {
  assert.ok(FILES.length >= 10, FILES.join(', '));
  for (const { file, obj } of OBJECTS) {
    assert.ok(HANDLED_KINDS.has(obj['kind']), `${file}: unexpected kind ${String(obj['kind'])}`);
  }
});

// ---- the real kube-apiserver ----

/** What no API server serves, or what another test judges: every other object goes to the server. */
const NOT_JUDGED: Record<string, string> = {
  Kustomization: "kustomize's own configuration, never sent to a server",
  Component: "kustomize's own configuration, never sent to a server",
};

describe('the real kube-apiserver accepts every manifest (strict field validation)', { skip: dryRunMissing() ?? false }, () => {
  const promCrds = prometheusOperatorCrds();
  // Kinds whose CRDs cannot be had here: left out with the reason, the rest still judged.
  const unserved: Record<string, string> = {
    ...(missingSharedReason() === undefined
      ? {}
      : { CompositeController: missingSharedReason()!, DecoratorController: missingSharedReason()! }),
    ...('why' in promCrds ? { PodMonitor: promCrds.why, PrometheusRule: promCrds.why } : {}),
  };
  let server: DryRunServer;
  before(async () => {
    const crds = [...(missingSharedReason() === undefined ? [METACONTROLLER_CRDS] : []), ...('why' in promCrds ? [] : [promCrds.paths.podMonitors, promCrds.paths.prometheusRules])];
    server = await startDryRunServer({ crds });
  });
  after(() => server?.close());

  // The Namespace and the CRDs are created (the other objects need them), everything else dry-run.
  test('every object: the Namespace and our CRDs created, the rest dry-run', async (t) => {
    for (const [kind, why] of Object.entries(unserved)) t.diagnostic(`${kind} not judged: ${why}`);
    const judged = OBJECTS.filter(({ obj }) => !(obj['kind'] in NOT_JUDGED) && !(obj['kind'] in unserved));
    const first = judged.filter(({ obj }) => obj['kind'] === 'Namespace' || obj['kind'] === 'CustomResourceDefinition');
    const refused: string[] = [];
    for (const { file, obj } of first) await server.create(obj).catch((err: unknown) => refused.push(`${file}: ${String(err)}`));
    assert.deepEqual(refused, []);
    const crds = first.filter(({ obj }) => obj['kind'] === 'CustomResourceDefinition').map(({ obj }) => `crd/${obj['metadata']['name']}`);
    await server.controlPlane.kubectl(['wait', '--for=condition=Established', '--timeout=60s', ...crds]);
    const rest = judged.filter((o) => !first.includes(o));
    assert.ok(rest.some(({ obj }) => obj['kind'] === 'Redis') && rest.some(({ obj }) => obj['kind'] === 'Deployment'));
    assert.deepEqual(await server.refusals(rest.map(({ obj }) => obj)), []);
  });

  // Its CEL rules are test/api/crd-server.test.ts's.
  test("the example Redis is what the hook's validator makes of it, once the server defaulted it", async () => {
    const example = only('Redis', 'my-redis');
    const stored = (await server.dryRun(example)).object;
    const verdict = validateSpec(example['metadata']['name'], example['spec']);
    assert.ok(verdict.ok, JSON.stringify(verdict));
    assert.deepEqual(stored['spec'], verdict.spec);
  });

  test('the check bites: a misspelt field is refused (a Redis, a CompositeController), a pod template that may run as root warned of', async (t) => {
    const typo = structuredClone(DESIGN_REDIS) as Obj;
    typo['spec']['persistance'] = typo['spec']['persistence'];
    const refusal = (obj: Obj) => server.dryRun(obj).then(
      () => 'accepted',
      (err: unknown) => (err instanceof KubeApiError ? String(err.status.message) : String(err)),
    );
    assert.match(await refusal(typo), /unknown field "spec\.persistance"/);
    // The operator's namespace enforces the restricted Pod Security level: the server warns of a Deployment breaking
    // it.
    const rooted = structuredClone(deployment);
    rooted['spec']['template']['spec']['containers'][0]['securityContext']['runAsNonRoot'] = false;
    assert.deepEqual(await server.refusals([rooted]), [
      'Deployment/redis-operator: warning: would violate PodSecurity "restricted:latest": runAsNonRoot != true (container "hook" must not set securityContext.runAsNonRoot=false)',
    ]);
    if (unserved['CompositeController']) return t.skip(unserved['CompositeController']);
    const cc = structuredClone(compositeController);
    cc['spec']['hooks']['sync']['webhook']['timout'] = '5s';
    assert.match(await refusal(cc), /unknown field "spec\.hooks\.sync\.webhook\.timout"/);
  });
});

test('namespaced objects live in the operator namespace, which exists', () => {
  only('Namespace', NAMESPACE);
  for (const { file, obj } of OBJECTS) {
    if (['ServiceAccount', 'Role', 'RoleBinding', 'Deployment', 'Service'].includes(obj['kind'])) {
      assert.equal(obj['metadata']['namespace'], NAMESPACE, `${file}: ${obj['kind']}`);
    }
  }
});

// ---- kustomize ----

test('manifests/kustomization.yaml lists every manifest, and the CompositeController directory', () => {
  const kustomization = loadYaml(join(ROOT, 'manifests/kustomization.yaml'))[0] as Obj;
  assert.equal(kustomization['apiVersion'], 'kustomize.config.k8s.io/v1beta1');
  assert.equal(kustomization['kind'], 'Kustomization');
  const own = readdirSync(join(ROOT, 'manifests'))
    .filter((f) => /\.ya?ml$/.test(f) && f !== 'kustomization.yaml' && `manifests/${f}` !== KUSTOMIZE_CONFIG)
    .sort();
  assert.deepEqual(kustomization['configurations'], ['kustomizeconfig.yaml']);
  const resources = kustomization['resources'] as string[];
  assert.deepEqual(resources.filter((r) => !r.startsWith('../')).sort(), own);
  // kustomize refuses files outside its root, but accepts another kustomization root.
  assert.deepEqual(resources.filter((r) => r.startsWith('../')), ['../metacontroller']);
  assert.ok(existsSync(join(ROOT, 'metacontroller', 'kustomization.yaml')), '../metacontroller must be a kustomization root');
  assert.ok(!resources.some((r) => r.startsWith('examples')), 'the example Redis is not installed');
});

test('the cert-manager component (real kubectl kustomize) declares Certificates, and the hook returns one only when spec.tls.certManager asks', (t) => {
  const kubectl = join(binDir(), 'kubectl');
  if (!existsSync(kubectl)) return t.skip(`${kubectl} is not built (node test/k8s/cli.ts build)`);
  const dir = mkdtempSync(join(tmpdir(), 'kustomize-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(join(ROOT, 'manifests'), join(dir, 'manifests'), { recursive: true });
  cpSync(join(ROOT, 'metacontroller'), join(dir, 'metacontroller'), { recursive: true });
  const render = (components: string[]) => {
    writeFileSync(join(dir, 'kustomization.yaml'), `resources: [manifests]\ncomponents: [${components.join(', ')}]\n`);
    const docs = parseAllDocuments(execFileSync(kubectl, ['kustomize', dir], { encoding: 'utf8' })).map((d) => d.toJS() as Obj);
    const cc = docs.find((d) => d['kind'] === 'CompositeController') as Obj;
    return (cc['spec']['childResources'] as Obj[]).map((c) => `${c['apiVersion']} ${c['resource']} ${c['updateStrategy']?.['method']}`);
  };
  assert.ok(!render([]).some((c) => c.startsWith('cert-manager.io')), 'not declared by default: Metacontroller would refuse the controller without cert-manager');
  assert.ok(render(['manifests/components/cert-manager']).includes('cert-manager.io/v1 certificates InPlace'));
  const parsed = parseHookRequest(JSON.parse(readFileSync(join(ROOT, 'test/fixtures/sync-request.json'), 'utf8')));
  assert.ok(parsed.ok);
  const withTls = structuredClone(parsed.request);
  (withTls.parent.spec as Obj)['tls'] = { certManager: { issuerRef: { name: 'ca' } } };
  const kinds = (r: typeof withTls) => sync(r).children.map((c) => `${String(c['apiVersion'])} ${String(c['kind'])}`);
  assert.ok(kinds(withTls).includes('cert-manager.io/v1 Certificate'));
  (withTls.parent.spec as Obj)['tls'] = { secretName: 'my-own-tls' };
  assert.ok(!kinds(withTls).includes('cert-manager.io/v1 Certificate'), 'a Secret of the user: no Certificate');
  assert.ok(!kinds(parsed.request).includes('cert-manager.io/v1 Certificate'));
});

test('metacontroller/kustomization.yaml lists every file beside it', () => {
  const kustomization = loadYaml(join(ROOT, 'metacontroller/kustomization.yaml'))[0] as Obj;
  const files = readdirSync(join(ROOT, 'metacontroller')).filter((f) => /\.ya?ml$/.test(f) && f !== 'kustomization.yaml').sort();
  assert.deepEqual([...(kustomization['resources'] as string[])].sort(), files);
});

// ---- RBAC and the token: rbac.test.ts ----

// ---- Deployment ----

test('the Deployment runs two replicas of the hook and the sidecar from one image', () => {
  assert.equal(deployment['spec']['replicas'], 2);
  assert.deepEqual(containers.map((c) => c['name']), ['hook', 'sidecar']);
  for (const c of containers) assert.equal(c['image'], 'redis-operator:0.1.0', c['name']);
  const labels = deployment['spec']['template']['metadata']['labels'] as Obj;
  for (const [k, v] of Object.entries(deployment['spec']['selector']['matchLabels'] as Obj)) assert.equal(labels[k], v, `selector ${k}`);
});

test('each container runs an entry point that exists in the repository', () => {
  // The hook runs the compiled form of src/server/main.ts (dist/ is built in the image).
  assert.deepEqual(container('hook')['command'], ['node', '--lite-mode', 'dist/server/main.js']);
  assert.deepEqual(container('sidecar')['command'], ['node', 'src/sidecar/main.ts']);
  for (const c of containers) {
    const script = (c['command'] as string[]).at(-1)!.replace(/^dist\/(.*)\.js$/, 'src/$1.ts');
    assert.ok(existsSync(join(ROOT, script)), `${c['name']}: ${script} does not exist`);
  }
});

function portNumber(c: Obj, port: number | string): number {
  if (typeof port === 'number') return port;
  const found = (c['ports'] as Obj[]).find((p) => p['name'] === port);
  assert.ok(found, `${c['name']} has a port named ${port}`);
  return found['containerPort'] as number;
}

function env(c: Obj, name: string): Obj | undefined {
  return (c['env'] as Obj[] | undefined)?.find((e) => e['name'] === name);
}

test('the hook listens on 8080 with liveness /healthz and readiness /readyz', () => {
  const hook = container('hook');
  assert.equal(portNumber(hook, 'http'), 8080);
  assert.equal(env(hook, 'PORT')?.['value'], '8080');
  assert.equal(hook['livenessProbe']['httpGet']['path'], '/healthz');
  assert.equal(portNumber(hook, hook['livenessProbe']['httpGet']['port']), 8080);
  assert.equal(hook['readinessProbe']['httpGet']['path'], '/readyz');
  assert.equal(portNumber(hook, hook['readinessProbe']['httpGet']['port']), 8080);
});

test('the sidecar knows its pod from the downward API and serves metrics on 9121', () => {
  const sidecar = container('sidecar');
  assert.deepEqual(env(sidecar, 'POD_NAME')?.['valueFrom'], { fieldRef: { fieldPath: 'metadata.name' } });
  assert.deepEqual(env(sidecar, 'POD_NAMESPACE')?.['valueFrom'], { fieldRef: { fieldPath: 'metadata.namespace' } });
  assert.equal(env(sidecar, 'METRICS_PORT')?.['value'], '9121');
  assert.equal(portNumber(sidecar, 'metrics'), 9121);
  assert.equal(env(sidecar, 'LEASE_NAMESPACE'), undefined, 'the lease lives in POD_NAMESPACE, where the Role grants it');
});

test('the Deployment meets the restricted Pod Security Standard and sets resources', () => {
  const pod = podSpec['securityContext'] as Obj;
  assert.equal(pod['runAsNonRoot'], true);
  assert.notEqual(pod['runAsUser'], 0);
  assert.equal(pod['seccompProfile']['type'], 'RuntimeDefault');
  for (const hostField of ['hostNetwork', 'hostPID', 'hostIPC']) assert.notEqual(podSpec[hostField], true, hostField);
  for (const volume of podSpec['volumes'] as Obj[]) {
    const types = Object.keys(volume).filter((k) => k !== 'name');
    assert.ok(types.every((t) => ['emptyDir', 'configMap', 'secret', 'projected', 'downwardAPI', 'persistentVolumeClaim', 'ephemeral', 'csi'].includes(t)), `volume ${volume['name']}`);
  }
  for (const c of containers) {
    const sc = c['securityContext'] as Obj;
    assert.equal(sc['allowPrivilegeEscalation'], false, c['name']);
    assert.equal(sc['readOnlyRootFilesystem'], true, c['name']);
    assert.notEqual(sc['privileged'], true, c['name']);
    assert.deepEqual(sc['capabilities'], { drop: ['ALL'] }, c['name']);
    assert.notEqual(sc['runAsUser'], 0, c['name']);
    assert.ok(sc['seccompProfile'] === undefined || sc['seccompProfile']['type'] === 'RuntimeDefault', c['name']);
    for (const kind of ['requests', 'limits']) {
      assert.ok(c['resources'][kind]['memory'], `${c['name']} ${kind}.memory`);
      assert.ok(c['resources'][kind]['cpu'], `${c['name']} ${kind}.cpu`);
    }
    // A read-only root needs a writable /tmp for anything that writes scratch files.
    assert.ok((c['volumeMounts'] as Obj[]).some((m) => m['mountPath'] === '/tmp'), `${c['name']} mounts /tmp`);
  }
  assert.equal(only('Namespace', NAMESPACE)['metadata']['labels']['pod-security.kubernetes.io/enforce'], 'restricted');
});

test('the Service sends port 80 to the hook on 8080 and selects the operator pods', () => {
  assert.deepEqual(service['spec']['ports'].map((p: Obj) => [p['port'], portNumber(container('hook'), p['targetPort'])]), [[80, 8080]]);
  const labels = deployment['spec']['template']['metadata']['labels'] as Obj;
  for (const [k, v] of Object.entries(service['spec']['selector'] as Obj)) assert.equal(labels[k], v, `selector ${k}`);
});

test('the Sentinel Service sends 26379 to the sidecar, which listens there', () => {
  const sentinel = only('Service', 'redis-operator-sentinel');
  const sidecar = container('sidecar');
  assert.equal(env(sidecar, 'SENTINEL_PORT')?.['value'], '26379');
  assert.deepEqual(sentinel['spec']['ports'].map((p: Obj) => [p['port'], portNumber(sidecar, p['targetPort'])]), [[26379, 26379]]);
  assert.deepEqual(sentinel['spec']['selector'], service['spec']['selector']);
});

// ---- CompositeController ----

// The monitoring component's DecoratorController (the contract in its header comment).
const DECORATOR_FILE = join('manifests', 'components', 'monitoring', 'decorator-controller.yaml');

test('the DecoratorController attaches InPlace PodMonitors and PrometheusRules to every Redis through a v2 hook on our Service', () => {
  const decorator = loadYaml(join(ROOT, DECORATOR_FILE));
  assert.equal(decorator.length, 1, `${DECORATOR_FILE} holds one object`);
  const dc = decorator[0] as Obj;
  assert.equal(dc['apiVersion'], 'metacontroller.k8s.io/v1alpha1');
  const spec = dc['spec'] as Obj;
  assert.equal(dc['metadata']['name'], 'redis-operator-monitoring');
  assert.deepEqual(spec['resources'], [{ apiVersion: `${GROUP}/${VERSION}`, resource: PLURAL }], 'every Redis, no selector');
  assert.deepEqual(spec['attachments'], [
    { apiVersion: 'monitoring.coreos.com/v1', resource: 'podmonitors', updateStrategy: { method: 'InPlace' } },
    { apiVersion: 'monitoring.coreos.com/v1', resource: 'prometheusrules', updateStrategy: { method: 'InPlace' } },
  ]);
  assert.equal(spec['resyncPeriodSeconds'], 60);
  assert.deepEqual(Object.keys(spec['hooks']), ['sync'], 'no finalize hook (so no finalizer) and no customize hook');
  assert.deepEqual(spec['hooks']['sync'], {
    version: 'v2',
    webhook: {
      service: { name: service['metadata']['name'], namespace: service['metadata']['namespace'], port: service['spec']['ports'][0]['port'], protocol: 'http' },
      path: '/monitoring/sync',
      timeout: '5s',
    },
  });
  // Neither controller may claim the other's objects: the kinds must be disjoint.
  const children = new Set(
    [...(compositeController['spec']['childResources'] as Obj[]), ...(only('CompositeController', 'redis-operator-clusters')['spec']['childResources'] as Obj[])].map(
      (c) => `${c['apiVersion']} ${c['resource']}`,
    ),
  );
  for (const a of spec['attachments'] as Obj[]) assert.ok(!children.has(`${a['apiVersion']} ${a['resource']}`), `${a['resource']} is also a CompositeController child`);
});

const CLUSTER_DECORATOR_FILE = join('manifests', 'components', 'monitoring', 'rediscluster-decorator-controller.yaml');

test("the RedisCluster monitoring DecoratorController is the Redis one's twin for redisclusters", () => {
  const [dc, ...rest] = loadYaml(join(ROOT, CLUSTER_DECORATOR_FILE));
  assert.equal(rest.length, 0);
  const redisOne = loadYaml(join(ROOT, DECORATOR_FILE))[0] as Obj;
  assert.equal(dc!['metadata']['name'], 'redis-operator-monitoring-clusters');
  assert.deepEqual(dc!['spec']['resources'], [{ apiVersion: `${GROUP}/${VERSION}`, resource: CLUSTER_PLURAL }], 'every RedisCluster, no selector');
  // Everything else as the Redis one: attachments, resync, the one sync hook on /monitoring/sync.
  assert.deepEqual({ ...dc!['spec'], resources: undefined }, { ...redisOne['spec'], resources: undefined });
});

function goDurationSeconds(text: string): number {
  let total = 0;
  const units: Record<string, number> = { h: 3600, m: 60, s: 1, ms: 1e-3, us: 1e-6, µs: 1e-6, ns: 1e-9 };
  for (const [, value, unit] of text.matchAll(/([0-9.]+)(h|ms|m|s|us|µs|ns)/g)) total += Number(value) * (units[unit as string] as number);
  return total;
}

test('the CompositeController watches our CRD with a generated selector and a resync', () => {
  assert.equal(compositeController['apiVersion'], 'metacontroller.k8s.io/v1alpha1');
  const spec = compositeController['spec'] as Obj;
  assert.deepEqual(spec['parentResource'], { apiVersion: `${GROUP}/${VERSION}`, resource: PLURAL });
  assert.equal(CRD_NAME, `${spec['parentResource']['resource']}.${GROUP}`);
  assert.equal(spec['generateSelector'], true);
  assert.ok(Number.isInteger(spec['resyncPeriodSeconds']) && spec['resyncPeriodSeconds'] > 0 && spec['resyncPeriodSeconds'] <= 300);
});

test('sync, finalize and customize are v2 webhooks to our Service with an explicit timeout', () => {
  const hooks = compositeController['spec']['hooks'] as Obj;
  assert.deepEqual(Object.keys(hooks).sort(), ['customize', 'finalize', 'sync']);
  for (const [name, hook] of Object.entries(hooks) as Array<[string, Obj]>) {
    assert.equal(hook['version'], 'v2', name);
    const webhook = hook['webhook'] as Obj;
    assert.equal(webhook['url'], undefined, `${name}: a Service reference, not a URL`);
    assert.deepEqual(webhook['service'], {
      name: service['metadata']['name'],
      namespace: service['metadata']['namespace'],
      port: service['spec']['ports'][0]['port'],
      protocol: 'http',
    });
    assert.equal(webhook['path'], `/${name}`);
    const seconds = goDurationSeconds(String(webhook['timeout']));
    assert.ok(seconds > 0 && seconds <= 10, `${name}: timeout ${String(webhook['timeout'])} must be explicit and at most Metacontroller's 10 s default`);
  }
});

const RESOURCE_OF_KIND: Record<string, string> = {
  StatefulSet: 'statefulsets', Service: 'services', ConfigMap: 'configmaps', PodDisruptionBudget: 'poddisruptionbudgets', NetworkPolicy: 'networkpolicies', CronJob: 'cronjobs',
};

test('every child kind the hook returns is declared, with InPlace updates', () => {
  const declared = compositeController['spec']['childResources'] as Obj[];
  for (const child of declared) assert.equal(child['updateStrategy']?.['method'], 'InPlace', `${child['apiVersion']} ${child['resource']}`);
  const fixture: unknown = JSON.parse(readFileSync(join(ROOT, 'test/fixtures/sync-request.json'), 'utf8'));
  const parsed = parseHookRequest(fixture);
  assert.ok(parsed.ok);
  // With every optional child asked for (the NetworkPolicy, the backup CronJob), so each kind the hook can return is
  // seen.
  const everything = structuredClone(parsed.request);
  (everything.parent.spec as Obj)['networkPolicy'] = { allowFrom: { app: 'shop' } };
  (everything.parent.spec as Obj)['backup'] = { schedule: '0 */6 * * *', retention: 7, storage: { s3: { bucket: 'redis-backups', region: 'us-east-1' } } };
  const returned = new Set(sync(everything).children.map((c) => `${String(c['apiVersion'])} ${RESOURCE_OF_KIND[String(c['kind'])] ?? `unknown kind ${String(c['kind'])}`}`));
  assert.ok(returned.size >= 5, [...returned].join(', '));
  const declaredSet = new Set(declared.map((c) => `${c['apiVersion']} ${c['resource']}`));
  for (const kind of returned) assert.ok(declaredSet.has(kind), `the hook returns ${kind}, which the CompositeController does not declare`);
  // Metacontroller sends one children entry per declared kind, keyed Kind.apiVersion: the
  // shared request fixture must describe this controller.
  const kindOf = Object.fromEntries(Object.entries(RESOURCE_OF_KIND).map(([kind, resource]) => [resource, kind]));
  assert.deepEqual(
    Object.keys((fixture as Obj)['children']).sort(),
    declared.map((c) => `${kindOf[c['resource']] ?? c['resource']}.${c['apiVersion']}`).sort(),
  );
});

// ---- the RedisCluster CompositeController ----

const clusterController = only('CompositeController', 'redis-operator-clusters');

test('the RedisCluster controller: redisclusters with a generated selector, v2 hooks on /rediscluster/*, a resync', () => {
  const spec = clusterController['spec'] as Obj;
  assert.deepEqual(spec['parentResource'], { apiVersion: `${GROUP}/${VERSION}`, resource: CLUSTER_PLURAL });
  assert.equal(REDISCLUSTER_CRD_NAME, `${CLUSTER_PLURAL}.${GROUP}`);
  assert.equal(spec['generateSelector'], true);
  assert.equal(spec['resyncPeriodSeconds'], 30);
  assert.deepEqual(Object.keys(spec['hooks']).sort(), ['customize', 'finalize', 'sync']);
  for (const [name, hook] of Object.entries(spec['hooks']) as Array<[string, Obj]>) {
    assert.deepEqual(hook, {
      version: 'v2',
      webhook: {
        service: { name: service['metadata']['name'], namespace: service['metadata']['namespace'], port: service['spec']['ports'][0]['port'], protocol: 'http' },
        path: `/rediscluster/${name}`,
        timeout: '5s',
      },
    });
  }
});

test('every child kind the RedisCluster hook returns is declared, with InPlace updates, and only those', () => {
  const declared = clusterController['spec']['childResources'] as Obj[];
  for (const child of declared) assert.equal(child['updateStrategy']?.['method'], 'InPlace', `${child['apiVersion']} ${child['resource']}`);
  const example = structuredClone(only('RedisCluster', 'order-cache'));
  // The example's backup is commented out (its bucket is the user's to name): put one back so the CronJob kind is seen.
  example['spec']['backup'] = { schedule: '0 */6 * * *', retention: 7, storage: { s3: { bucket: 'shop-redis-backups', region: 'us-east-1' } } };
  const parsed = parseHookRequest({ parent: { ...example, metadata: { ...example['metadata'], uid: 'u-1' } } });
  assert.ok(parsed.ok);
  const returned = new Set(syncCluster(parsed.request).children.map((c) => `${String(c['apiVersion'])} ${RESOURCE_OF_KIND[String(c['kind'])] ?? `unknown kind ${String(c['kind'])}`}`));
  assert.deepEqual([...returned].sort(), declared.map((c) => `${c['apiVersion']} ${c['resource']}`).sort(), "the article's example (with a backup) returns every declared kind");
});

// ---- the example Redis ----

const DESIGN_REDIS = {
  apiVersion: 'redis.example.com/v1',
  kind: 'Redis',
  metadata: { name: 'my-redis', namespace: 'default' },
  spec: {
    version: '7.2',
    master: { replicas: 1 },
    replicas: 2,
    persistence: { enableRdb: true, rdbSchedule: '*/15 * * * *', enableAof: true, size: '10Gi' },
    resources: { requests: { memory: '256Mi', cpu: '100m' }, limits: { memory: '512Mi', cpu: '500m' } },
  },
};

test("manifests/examples/redis.yaml is the design's Redis, verbatim", () => {
  assert.deepEqual(loadYaml(join(ROOT, 'manifests/examples/redis.yaml')), [DESIGN_REDIS]);
});

test('the manifest directories hold nothing but YAML the tests load, READMEs, and the Grafana dashboard', () => {
  const files = (dir: string): string[] =>
    readdirSync(join(ROOT, dir), { recursive: true })
      .map(String)
      .filter((f) => statSync(join(ROOT, dir, f)).isFile())
      .map((f) => join(dir, f));
  // test/monitoring/rules.test.ts loads it
  const dashboard = join('manifests', 'components', 'monitoring', 'grafana-dashboard.json');
  const unexpected = [...files('manifests'), ...files('metacontroller')].filter((f) => !/\.ya?ml$/.test(f) && !f.endsWith('README.md') && f !== dashboard);
  assert.deepEqual(unexpected, []);
});

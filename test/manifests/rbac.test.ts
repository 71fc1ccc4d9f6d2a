// The operator's RBAC and API credentials as written in manifests/ (rbac.yaml, serviceaccount.yaml,
// deployment.yaml, components/namespaced), held against the table of the sidecar's calls
// (src/sidecar/adapters/kube/api-calls.ts): every client-node API method the sidecar's sources call has a
// row and every row is still called; the roles grant exactly the rows' verbs, each in the role of
// its scope; only the sidecar container gets a token. What the real API server then allows is
// test/k8s/rbac.test.ts's; the chart renders the same objects (test/charts/chart.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { loadSidecarConfig } from '../../src/sidecar/config.ts';
import { SIDECAR_API_CALLS, type ApiScope } from '../../src/sidecar/adapters/kube/api-calls.ts';
import { binDir } from '../k8s/build.ts';
import { apiMethodsCalled, GENERIC_CLIENT, neededGrants, roleGrants, SCOPE_ROLES, sourceFiles } from '../support/rbac-audit.ts';
import { namespacedOverlay, podCredentials } from '../support/install-shape.ts';

type Obj = Record<string, any>;
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const NAMESPACE = 'redis-operator';

const load = (file: string): Obj[] =>
  parseAllDocuments(readFileSync(join(ROOT, file), 'utf8'))
    .map((d) => d.toJS() as Obj | null)
    .filter((d): d is Obj => d !== null);
const RBAC = load('manifests/rbac.yaml');
const deployment = load('manifests/deployment.yaml')[0]!;
const serviceAccount = load('manifests/serviceaccount.yaml')[0]!;
const role = (kind: string, name: string): Obj => {
  const found = RBAC.filter((o) => o['kind'] === kind && o['metadata']['name'] === name);
  assert.equal(found.length, 1, `one ${kind} ${name} in manifests/rbac.yaml`);
  return found[0]!;
};

test('every client-node API call in src/sidecar has a row in kube/api-calls.ts, and every row is still called where it says', () => {
  const called = apiMethodsCalled(join(ROOT, 'src/sidecar'));
  for (const file of sourceFiles(join(ROOT, 'src/sidecar'))) assert.doesNotMatch(readFileSync(file, 'utf8'), new RegExp(GENERIC_CLIENT), `${file}: calls through the generic client cannot be audited`);
  const listed = new Set(SIDECAR_API_CALLS.map((c) => c.method));
  for (const [method, files] of called) assert.ok(listed.has(method), `${method} (${files.join(', ')}) is not in src/sidecar/adapters/kube/api-calls.ts: add it, and its grant`);
  for (const call of SIDECAR_API_CALLS) {
    const files = called.get(call.method) ?? [];
    const file = join(ROOT, 'src/sidecar', call.caller.split(' ')[0]!);
    assert.ok(files.includes(file), `${call.method} on ${call.resource} is listed as called in ${file}, which does not call it (called in: ${files.join(', ') || 'nothing'})`);
  }
});

test("the custom resources the sidecar names are the table's: a call on another kind is a call the method scan cannot tell apart", () => {
  const plurals = new Map<string, string>();
  for (const file of sourceFiles(join(ROOT, 'src/api')))
    for (const m of readFileSync(file, 'utf8').matchAll(/export const (\w*PLURAL) = '([a-z]+)'/g)) plurals.set(m[1]!, m[2]!);
  assert.ok(plurals.size >= 3, [...plurals.keys()].join(', '));
  const listed = new Set(SIDECAR_API_CALLS.filter((c) => c.group === 'redis.example.com').map((c) => c.resource.split('/')[0]));
  for (const file of sourceFiles(join(ROOT, 'src/sidecar'))) {
    const text = readFileSync(file, 'utf8');
    for (const [name, plural] of plurals)
      if (!listed.has(plural)) assert.ok(!new RegExp(`\\b${name}\\b|'${plural}'`).test(text), `${file} names ${plural}, which no row of api-calls.ts lists`);
  }
});

test('each role of manifests/rbac.yaml grants exactly the verbs the calls of its scope need', async (t) => {
  for (const scope of ['watched', 'cluster', 'operator'] as ApiScope[]) {
    await t.test(`${scope}: ${SCOPE_ROLES[scope].kind} ${SCOPE_ROLES[scope].name}`, () => {
      const r = role(SCOPE_ROLES[scope].kind, SCOPE_ROLES[scope].name);
      if (scope === 'operator') assert.equal(r['metadata']['namespace'], NAMESPACE);
      assert.deepEqual(roleGrants(r), neededGrants(scope), 'a grant without a call, or a call without a grant');
    });
  }
  await t.test('no other role', () => {
    const roles = RBAC.filter((o) => o['kind'] === 'Role' || o['kind'] === 'ClusterRole').map((o) => `${o['kind']}/${o['metadata']['name']}`);
    assert.deepEqual(roles.sort(), Object.values(SCOPE_ROLES).map((r) => `${r.kind}/${r.name}`).sort());
  });
});

test('RBAC has no wildcard and no aggregation anywhere', () => {
  const hasStar = (value: unknown): boolean =>
    typeof value === 'string' ? value.includes('*') : Array.isArray(value) ? value.some(hasStar) : typeof value === 'object' && value !== null ? Object.values(value).some(hasStar) : false;
  for (const doc of RBAC) {
    assert.ok(!hasStar(doc), `${doc['kind']} ${doc['metadata']['name']} has a wildcard`);
    assert.equal(doc['aggregationRule'], undefined);
  }
});

test('every binding binds one of the roles to the operator ServiceAccount, the namespaced rules cluster-wide by default', () => {
  assert.equal(deployment['spec']['template']['spec']['serviceAccountName'], serviceAccount['metadata']['name']);
  const bindings = RBAC.filter((o) => o['kind'].endsWith('Binding'));
  for (const binding of bindings) {
    const ref = binding['roleRef'] as Obj;
    const r = role(ref['kind'], ref['name']);
    if (binding['kind'] === 'ClusterRoleBinding') assert.equal(ref['kind'], 'ClusterRole');
    if (ref['kind'] === 'Role') assert.equal(r['metadata']['namespace'], binding['metadata']['namespace']);
    assert.deepEqual(binding['subjects'], [{ kind: 'ServiceAccount', name: 'redis-operator', namespace: NAMESPACE }]);
  }
  assert.deepEqual(bindings.map((b) => `${b['kind']}->${b['roleRef']['name']}`).sort(), [
    'ClusterRoleBinding->redis-operator-sidecar',
    'ClusterRoleBinding->redis-operator-sidecar-cluster-scoped',
    'RoleBinding->redis-operator-leader-election',
  ]);
});

test('only the sidecar container has API credentials: no automatic token, a projected hour-long token mounted read-only in the sidecar alone', () => {
  assert.equal(serviceAccount['automountServiceAccountToken'], false, 'the ServiceAccount mounts no token by default');
  const c = podCredentials(deployment);
  assert.equal(c.automount, false, 'the pod mounts no token automatically');
  assert.deepEqual(c.mountedIn, ['sidecar']);
  assert.deepEqual(c.sidecarMount, { mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true });
  assert.deepEqual(c.sources, ['token', 'ca.crt <- configMap kube-root-ca.crt/ca.crt', 'namespace <- metadata.namespace']);
  // The API server extends a 3607 s token (the admission plugin's) to a year; 600 is its minimum.
  const seconds = c.expirationSeconds;
  assert.ok(seconds !== undefined && seconds >= 600 && seconds <= 3600, String(seconds));
});

test('components/namespaced (real kubectl kustomize): RoleBindings where the overlay says, the cluster-wide binding gone, no start without WATCH_NAMESPACES', (t) => {
  const kubectl = join(binDir(), 'kubectl');
  if (!existsSync(kubectl)) return t.skip(`${kubectl} is not built (node test/k8s/cli.ts build)`);
  const dir = mkdtempSync(join(tmpdir(), 'kustomize-rbac-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(join(ROOT, 'manifests'), join(dir, 'manifests'), { recursive: true });
  cpSync(join(ROOT, 'metacontroller'), join(dir, 'metacontroller'), { recursive: true });
  const render = (files: Record<string, string>): Obj[] => {
    const o = mkdtempSync(join(dir, 'overlay-'));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(o, name), text);
    return parseAllDocuments(execFileSync(kubectl, ['kustomize', o], { encoding: 'utf8', maxBuffer: 64 << 20 }))
      .map((d) => d.toJS() as Obj)
      .filter(Boolean);
  };
  const env = (objects: Obj[]) => {
    const d = objects.find((o) => o['kind'] === 'Deployment')!;
    const sidecar = (d['spec']['template']['spec']['containers'] as Obj[]).find((c) => c['name'] === 'sidecar')!;
    return Object.fromEntries((sidecar['env'] as Obj[]).map((e) => [e['name'], e['value'] ?? 'from-field']));
  };
  const bindings = (objects: Obj[]) =>
    objects.filter((o) => o['kind'].endsWith('Binding')).map((b) => `${b['kind']} ${b['metadata']['namespace'] ?? '-'} -> ${b['roleRef']['kind']} ${b['roleRef']['name']}`);

  const done = render(namespacedOverlay('../manifests', ['shop', 'billing']));
  assert.deepEqual(bindings(done).sort(), [
    'ClusterRoleBinding - -> ClusterRole redis-operator-sidecar-cluster-scoped',
    'RoleBinding billing -> ClusterRole redis-operator-sidecar',
    `RoleBinding ${NAMESPACE} -> Role redis-operator-leader-election`,
    'RoleBinding shop -> ClusterRole redis-operator-sidecar',
  ]);
  const config = loadSidecarConfig(env(done));
  assert.ok(config.ok, JSON.stringify(config));
  assert.deepEqual(config.config.watchNamespaces, ['shop', 'billing']);

  // The component alone: the sidecar would have rights nowhere but refuses to start, naming the variable.
  const forgot = render({ 'kustomization.yaml': 'resources: [../manifests]\ncomponents: [../manifests/components/namespaced]\n' });
  assert.ok(!bindings(forgot).includes('ClusterRoleBinding - -> ClusterRole redis-operator-sidecar'), bindings(forgot).join(', '));
  const refused = loadSidecarConfig(env(forgot));
  assert.ok(!refused.ok && refused.errors.some((e) => e.startsWith('WATCH_NAMESPACES=')), JSON.stringify(refused));
});

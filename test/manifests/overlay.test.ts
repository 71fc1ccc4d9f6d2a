// The documented install path for a platform team (overlays/example, the README's "Install next to
// Metacontroller"), rendered by the real kubectl kustomize:
// - a retagged image (`images:` in any overlay, by tag or digest) reaches the hook's OPERATOR_IMAGE
//   too, which backup Jobs, restore init containers and the Redis pods' metrics-proxy run
//   (manifests/kustomizeconfig.yaml); other env values are left alone;
// - the overlay's pull Secret reaches the operator's pods;
// - `namespace:` moves everything the operator's namespace is named in: every namespaced object,
//   the Namespace, the Service each controller's hooks call, the RBAC subjects; the PodMonitor
//   scrapes its own namespace; and the hook, read as the process reads its env, knows it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '../../src/server/config.ts';
import { binDir } from '../k8s/build.ts';

type Obj = Record<string, any>;
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const KUBECTL = join(binDir(), 'kubectl');
const kubectlMissing = existsSync(KUBECTL) ? undefined : `${KUBECTL} is not built (node test/k8s/cli.ts build)`;
const EXAMPLE_IMAGE = 'registry.example.com/platform/redis-operator:0.1.0';

/** `kubectl kustomize` of `kustomization` (written as overlays/test beside a copy of the checkout's install files). */
function render(kustomization: string): Obj[] {
  const dir = mkdtempSync(join(tmpdir(), 'kustomize-overlay-'));
  try {
    for (const d of ['manifests', 'metacontroller', 'overlays']) cpSync(join(ROOT, d), join(dir, d), { recursive: true });
    mkdirSync(join(dir, 'overlays/test'));
    writeFileSync(join(dir, 'overlays/test/kustomization.yaml'), kustomization);
    const out = execFileSync(KUBECTL, ['kustomize', join(dir, 'overlays/test')], { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
    return parseAllDocuments(out)
      .map((d) => d.toJS() as Obj | null)
      .filter((d): d is Obj => d !== null);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const deploymentOf = (objects: Obj[]): Obj => objects.find((o) => o['kind'] === 'Deployment') as Obj;
const containers = (d: Obj): Obj[] => d['spec']['template']['spec']['containers'] as Obj[];
const hookOf = (d: Obj): Obj => containers(d).find((c) => c['name'] === 'hook') as Obj;

/**
 * A container's env as the process sees it: downward API fields filled as the kubelet fills them for a pod in
 * `namespace`.
 */
function envOf(c: Obj, namespace: string): Record<string, string> {
  const fromField: Record<string, string> = { 'metadata.name': 'redis-operator-7d9f-abcde', 'metadata.namespace': namespace };
  return Object.fromEntries((c['env'] as Obj[]).map((e) => [e['name'], e['value'] ?? fromField[e['valueFrom']?.['fieldRef']?.['fieldPath']] ?? '']));
}

test('a retagged image reaches OPERATOR_IMAGE as well as both containers', { skip: kubectlMissing }, async (t) => {
  const digest = `sha256:${'b'.repeat(64)}`;
  const cases: Array<[string, string, string]> = [
    ['a new registry and tag', 'newName: registry.example.com:5000/team/redis-operator\n    newTag: 1.2.3', 'registry.example.com:5000/team/redis-operator:1.2.3'],
    ['a tag alone', 'newTag: 0.2.0', 'redis-operator:0.2.0'],
    ['a digest', `newName: registry.example.com/redis-operator\n    digest: ${digest}`, `registry.example.com/redis-operator@${digest}`],
  ];
  for (const [label, image, expected] of cases) {
    await t.test(label, () => {
      const base = render(`resources: [../../manifests]\n`);
      const d = deploymentOf(render(`resources: [../../manifests]\nimages:\n  - name: redis-operator\n    ${image}\n`));
      assert.deepEqual(
        containers(d).map((c) => c['image']),
        [expected, expected],
      );
      const hook = loadConfig(envOf(hookOf(d), 'redis-operator'));
      assert.ok(hook.ok, JSON.stringify(hook));
      assert.equal(hook.config.operatorImage, expected, 'backup Jobs, restore init containers and metrics-proxy run what the operator runs');
      // Only that value changed: every other env value of both containers is as manifests/ has it.
      const values = (x: Obj) => containers(x).map((c) => (c['env'] as Obj[]).filter((e) => e['name'] !== 'OPERATOR_IMAGE'));
      assert.deepEqual(values(d), values(deploymentOf(base)));
    });
  }
});

test('overlays/example: the registry image everywhere the operator image runs, and its pull Secret', { skip: kubectlMissing }, () => {
  const objects = render(`resources: [../example]\n`);
  const d = deploymentOf(objects);
  assert.deepEqual(
    containers(d).map((c) => c['image']),
    [EXAMPLE_IMAGE, EXAMPLE_IMAGE],
  );
  const hook = loadConfig(envOf(hookOf(d), 'redis-operator'));
  assert.ok(hook.ok, JSON.stringify(hook));
  assert.equal(hook.config.operatorImage, EXAMPLE_IMAGE);
  assert.deepEqual(d['spec']['template']['spec']['imagePullSecrets'], [{ name: 'redis-operator-pull' }]);
});

/** Every `namespace` value anywhere in an object (metadata, subjects, hook Services, ...). */
function namespacesIn(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) for (const v of value) namespacesIn(v, out);
  else if (value !== null && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) {
      if (k === 'namespace' && typeof v === 'string') out.push(v);
      else namespacesIn(v, out);
    }
  return out;
}

test('installed in another namespace: everything that names the operator namespace follows it', { skip: kubectlMissing }, () => {
  const ns = 'platform-redis';
  const objects = render(`resources: [../example]\nnamespace: ${ns}\ncomponents: [../../manifests/components/monitoring]\n`);
  const byKind = (kind: string) => objects.filter((o) => o['kind'] === kind);
  assert.deepEqual(
    byKind('Namespace').map((o) => o['metadata']['name']),
    [ns],
  );
  // CRDs carry `namespace` nowhere but in descriptions and defaults, which are no placement.
  const placed = objects.filter((o) => o['kind'] !== 'CustomResourceDefinition');
  assert.deepEqual([...new Set(placed.flatMap((o) => namespacesIn(o)))], [ns]);
  for (const kind of ['CompositeController', 'DecoratorController']) {
    const controllers = byKind(kind);
    assert.ok(controllers.length >= 2, kind);
    for (const c of controllers)
      for (const [hook, h] of Object.entries(c['spec']['hooks'] as Record<string, Obj>))
        assert.deepEqual(h['webhook']['service'], { name: 'redis-operator', namespace: ns, port: 80, protocol: 'http' }, `${c['metadata']['name']} ${hook}`);
  }
  for (const b of [...byKind('RoleBinding'), ...byKind('ClusterRoleBinding')])
    assert.deepEqual(b['subjects'], [{ kind: 'ServiceAccount', name: 'redis-operator', namespace: ns }], b['metadata']['name']);
  const podMonitor = byKind('PodMonitor')[0] as Obj;
  assert.equal(podMonitor['spec']['namespaceSelector'], undefined, 'no selector: the PodMonitor scrapes its own namespace');
  // The hook is told the namespace it runs in, and its defaults name it (test/hook/redis/operator-namespace.test.ts).
  const hook = loadConfig(envOf(hookOf(deploymentOf(objects)), ns));
  assert.ok(hook.ok, JSON.stringify(hook));
  assert.equal(hook.config.operatorNamespace, ns);
});

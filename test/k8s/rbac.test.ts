// The operator's RBAC on the real kube-apiserver, asked as its ServiceAccount
// (system:serviceaccount:redis-operator:redis-operator) with SubjectAccessReviews, for the two
// shapes of install: cluster-wide (`kubectl kustomize manifests/` as is) and namespaced (the chart
// with watchNamespaces; components/namespaced renders the same RBAC, test/charts/chart.test.ts).
// The questions come from the table of the sidecar's calls (src/sidecar/adapters/kube/api-calls.ts):
// every call must be allowed where it lands, refused in a namespace not watched, and every verb
// no call needs, and a list of calls the sidecar never makes, refused (test/support/rbac-audit.ts).
// A real request with the ServiceAccount's own token shows the reviews ask about the right
// subject. Also, with Metacontroller's CRDs beside the checkout: manifests/ applied as a user does
// (everything but the Deployment) and what its CRDs refuse, as the real API server says it.
// Skips, saying why, where the control plane (or Helm) is not built.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { isBuilt } from './build.ts';
import { startControlPlane, type ControlPlane } from './control-plane.ts';
import { BARE_SUBNET } from './api-server.ts';
import { CHART_DIR, helmEnv } from './helm.ts';
import { helmBinary, isHelmBuilt } from './helm-build.ts';
import {
  installOperator,
  missingSharedReason,
  OPERATOR_NAMESPACE,
  OPERATOR_SERVICE_ACCOUNT,
  REPO_ROOT,
  type InstalledOperator,
} from './operator.ts';
import { SUPPORTED_COMBINATION_MESSAGE } from '../../src/api/engine.ts';
import { accessChecks, NEVER, reviewAccess, type AccessCheck, type InstallShape } from '../support/rbac-audit.ts';

type Obj = Record<string, any>;
const built = isBuilt() ? undefined : 'the control plane is not built (npm run cluster:build)';
const why = missingSharedReason() ?? built;
const OPERATOR = `system:serviceaccount:${OPERATOR_NAMESPACE}:${OPERATOR_SERVICE_ACCOUNT}`;
/** What an install's identity is made of; the rest of it (CRDs, Deployment, ...) plays no part in RBAC. */
const IDENTITY_KINDS = new Set([
  'Namespace',
  'ServiceAccount',
  'ClusterRole',
  'ClusterRoleBinding',
  'Role',
  'RoleBinding',
]);

const docs = (yaml: string): Obj[] =>
  parseAllDocuments(yaml)
    .map((d) => d.toJS() as Obj | null)
    .filter((d): d is Obj => d !== null);

/**
 * On a bare API server: the install's identity objects, then every check of the table (and NEVER) answered as the
 * ServiceAccount.
 */
function auditInstall(
  name: string,
  render: (cp: ControlPlane) => Promise<Obj[]>,
  shape: InstallShape,
  skip: string | undefined,
): void {
  describe(name, { skip: skip ?? false, timeout: 120_000 }, () => {
    let cp: ControlPlane;
    let operatorKubeconfig: string;
    before(async () => {
      cp = await startControlPlane({ subnet: BARE_SUBNET, controllers: false });
      const objects = (await render(cp)).filter((o) => IDENTITY_KINDS.has(o['kind']));
      const watched = shape.watched === 'all' ? [] : shape.watched;
      for (const ns of new Set([OPERATOR_NAMESPACE, ...watched, ...shape.elsewhere]))
        await cp.kubectl(['create', 'namespace', ns]).catch((err: { stderr?: string }) => {
          if (!/AlreadyExists/.test(err.stderr ?? '')) throw err;
        });
      await cp.kubectl(['apply', '-f', '-'], objects.map((o) => stringify(o)).join('---\n'));
      operatorKubeconfig = cp.kubeconfigFor(OPERATOR, await cp.tokenFor(OPERATOR_NAMESPACE, OPERATOR_SERVICE_ACCOUNT));
    });
    after(() => cp?.stop());

    test('every call of the table is allowed where it lands and refused elsewhere; every verb no call needs, and calls it never makes, refused', async () => {
      const watched = shape.watched === 'all' ? [OPERATOR_NAMESPACE, ...shape.elsewhere] : [...shape.watched];
      const never: AccessCheck[] = NEVER.flatMap((c) =>
        [...watched, undefined].map((namespace) => ({
          ...c,
          namespace,
          allowed: false,
          why: `may not ${c.verb} ${c.resource} ${namespace ? `in ${namespace}` : 'anywhere'}: the sidecar never does`,
        })),
      );
      const checks = [...accessChecks(shape), ...never];
      const answers = await reviewAccess(cp.kubectl, OPERATOR, checks);
      const wrong = checks.flatMap((c, i) =>
        answers[i] === c.allowed ? [] : [`${answers[i] ? 'allowed' : 'refused'}, but ${c.why}`],
      );
      assert.deepEqual(wrong, [], `${wrong.length} of ${checks.length} answers wrong`);
      assert.ok(checks.length > 150, `${checks.length} checks`);
    });

    test('a real request with the ServiceAccount token: the Redis listed where watched, every Secret refused', async () => {
      const as = (args: string[]) =>
        cp.kubectl([`--kubeconfig=${operatorKubeconfig}`, ...args]).then(
          () => 'allowed',
          (err: { stderr?: string }) => (/Forbidden/.test(err.stderr ?? '') ? 'forbidden' : `failed: ${err.stderr}`),
        );
      const somewhere = shape.watched === 'all' ? ['-A'] : ['-n', shape.watched[0]!];
      assert.equal(await as(['get', 'pods', ...somewhere]), 'allowed');
      assert.equal(await as(['get', 'secrets', ...somewhere]), 'forbidden');
      assert.equal(await as(['get', 'secrets', '-A']), 'forbidden');
      assert.equal(await as(['get', 'configmaps', '-n', 'kube-system']), 'forbidden');
      if (shape.watched !== 'all') assert.equal(await as(['get', 'pods', '-n', shape.elsewhere[0]!]), 'forbidden');
    });
  });
}

auditInstall(
  'cluster-wide: kubectl kustomize manifests/',
  async (cp) => docs(await cp.kubectl(['kustomize', path.join(REPO_ROOT, 'manifests')])),
  { watched: 'all', operatorNamespace: OPERATOR_NAMESPACE, elsewhere: ['default', 'shop', 'kube-system'] },
  built,
);

const WATCHED = ['shop', 'billing'];
auditInstall(
  `namespaced: helm template --set watchNamespaces={${WATCHED.join(',')}}`,
  async () => {
    const home = mkdtempSync(path.join(tmpdir(), 'helm-rbac-'));
    try {
      const args = [
        'template',
        'redis-operator',
        CHART_DIR,
        '--namespace',
        OPERATOR_NAMESPACE,
        '--set',
        `watchNamespaces={${WATCHED.join(',')}}`,
      ];
      const r = spawnSync(helmBinary(), args, { env: helmEnv(home), encoding: 'utf8', maxBuffer: 64 << 20 });
      assert.equal(r.status, 0, r.stderr);
      return docs(r.stdout);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  },
  { watched: WATCHED, operatorNamespace: OPERATOR_NAMESPACE, elsewhere: ['default', 'kube-system'] },
  built ?? (isHelmBuilt() ? undefined : `${helmBinary()} is not built (node test/k8s/cli.ts build)`),
);

describe('kubectl apply -k manifests/ on the real API server', { skip: why ?? false, timeout: 180_000 }, () => {
  let cp: ControlPlane;
  let op: InstalledOperator;
  before(async () => {
    cp = await startControlPlane({ subnet: 48 });
    op = await installOperator(cp);
  });
  after(() => cp?.stop());

  test('everything of kubectl apply -k manifests/ is applied but the Deployment (no runtime for its image here)', () => {
    assert.deepEqual(op.skipped, ['Deployment/redis-operator/redis-operator']);
  });

  test('the API server refuses an unsupported Redis version with the CRD message that says which are supported', async () => {
    const manifest = JSON.stringify({
      apiVersion: 'redis.example.com/v1',
      kind: 'Redis',
      metadata: { name: 'old', namespace: 'default' },
      spec: { version: '6.2' },
    });
    const refused = await cp.kubectl(['apply', '-f', '-'], manifest).then(
      () => '',
      (err: { stderr?: string; message?: string }) => err.stderr ?? err.message ?? String(err),
    );
    assert.ok(refused.includes(SUPPORTED_COMBINATION_MESSAGE), `kubectl apply said: ${refused}`);
    assert.match(refused, /spec\.version/);
    const accepted = JSON.stringify({
      apiVersion: 'redis.example.com/v1',
      kind: 'Redis',
      metadata: { name: 'current', namespace: 'default' },
      spec: { version: '7.0' },
    });
    await cp.kubectl(['apply', '--dry-run=server', '-f', '-'], accepted);
  });

  test("the API server accepts the design article's RedisCluster as written, and refuses two shards naming the field", async () => {
    const example = readFileSync(new URL('../../manifests/examples/rediscluster.yaml', import.meta.url), 'utf8');
    await cp.kubectl(['apply', '--dry-run=server', '-f', '-'], example);
    const two = JSON.stringify({
      apiVersion: 'redis.example.com/v1',
      kind: 'RedisCluster',
      metadata: { name: 'two', namespace: 'default' },
      spec: { master: { replicas: 2 } },
    });
    const refused = await cp.kubectl(['apply', '--dry-run=server', '-f', '-'], two).then(
      () => '',
      (err: { stderr?: string; message?: string }) => err.stderr ?? err.message ?? String(err),
    );
    assert.match(refused, /spec\.master\.replicas/);
  });
});

// System test: the Helm chart installed, upgraded and uninstalled with the real Helm
// (test/k8s/helm-build.ts) on the real control plane, instead of `kubectl apply -k manifests/`.
// `helm install` (the Deployment's two pods from the operator's image on the real nodes), the
// design's Redis to Running; a key written; `helm upgrade` changing the sidecar's log level and a
// timing: the Deployment rolls to its new revision (the env carries the values), the Redis stays
// Running and the key is there; `helm uninstall`: every object of the release is gone, the CRDs
// (crds/, which Helm never deletes), the Redis and its data stay. Then the chart installed again in
// another namespace (platform-redis): the defaults that name the operator's namespace follow it:
// the Redis's NetworkPolicy (spec.networkPolicy without operatorNamespace) lets in the operator
// from platform-redis, and `kubectl redis`'s adapter finds the operator there unasked.
// Network: 198.18.70.x pods, 198.19.70.x Services.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { connect } from '../../src/plugin/kube.ts';
import { CHART_DIR, HELM_RELEASE, helmCommand, helmInstall } from '../k8s/helm.ts';
import { helmBinary, isHelmBuilt } from '../k8s/helm-build.ts';
import { OPERATOR_NAMESPACE } from '../k8s/operator.ts';
import { applyDesign, boot, call, NAME, NS, RUNNING_ROW } from './support.ts';

const SUBNET = 70;
const DESCRIPTION = 'A Redis master with replicas, kept highly available by redis-operator.';
type Json = Record<string, any>;

test(
  'helm install, upgrade and uninstall of the chart: the Redis keeps running and keeps its data; the CRDs stay',
  { timeout: 600_000 },
  async (t) => {
    if (!isHelmBuilt()) return t.skip(`${helmBinary()} is not built (node test/k8s/cli.ts build)`);
    const c = await boot(t, { subnet: SUBNET, install: { helm: helmBinary() } });
    if (!c) return;
    const local = c;
    const helm = helmCommand(helmBinary(), path.join(local.dataRoot, 'helm-test'), local.kubeconfig);
    const ns = ['--namespace', OPERATOR_NAMESPACE];
    const deployment = async (): Promise<Json> =>
      JSON.parse(await local.kubectl(['get', 'deployment', 'redis-operator', ...ns, '-o', 'json'])) as Json;
    const sidecarEnv = (d: Json): Record<string, string> =>
      Object.fromEntries(
        (
          (d['spec']['template']['spec']['containers'] as Json[]).find((x) => x['name'] === 'sidecar')!['env'] as Json[]
        ).map((e) => [e['name'], e['value']]),
      );
    /** Which of the objects named in `manifest` exist (kubectl get -f, not found ignored). */
    const existing = async (manifest: string): Promise<string[]> =>
      (await local.kubectl(['get', '--ignore-not-found', '-o', 'name', '-f', '-'], manifest))
        .split('\n')
        .filter(Boolean)
        .sort();

    // Installed by startSystemCluster: what Helm says, and the operator working through it.
    const status = JSON.parse(await helm(['status', HELM_RELEASE, ...ns, '-o', 'json'])) as Json;
    assert.equal(status['info']['status'], 'deployed');
    assert.equal(status['version'], 1);
    const manifest = await helm(['get', 'manifest', HELM_RELEASE, ...ns]);
    const installed = await existing(manifest);
    t.diagnostic(`installed by helm: ${installed.join(', ')}`);
    for (const o of [
      'deployment.apps/redis-operator',
      'service/redis-operator',
      'compositecontroller.metacontroller.k8s.io/redis-operator',
      'role.rbac.authorization.k8s.io/redis-operator-leader-election',
    ])
      assert.ok(installed.includes(o), `${o} installed: ${installed.join(', ')}`);
    const before = await deployment();
    assert.equal(before['spec']['replicas'], 2);
    assert.equal(before['status']['readyReplicas'], 2, 'helm install --wait: both pods ready');
    assert.equal(before['metadata']['labels']['app.kubernetes.io/managed-by'], 'Helm');
    assert.equal(sidecarEnv(before)['PROBE_INTERVAL_MS'], undefined);

    await applyDesign(t, c);
    const master = c.masterEndpoint(NAME);
    assert.ok(master);
    assert.equal(await call(c, master.ip, 'SET', 'helm:written-before-upgrade', 'kept'), 'OK');

    // helm upgrade: two values changed, the rest kept.
    const t0 = performance.now();
    await helm([
      'upgrade',
      HELM_RELEASE,
      CHART_DIR,
      ...ns,
      '--reuse-values',
      '--set',
      'sidecar.logLevel=debug',
      '--set',
      'sidecar.timing.probeIntervalMs=200',
      '--wait',
      '--timeout',
      '120s',
    ]);
    const rolled = await c.waitFor(
      async () => {
        const d = await deployment();
        return d['status']['observedGeneration'] === d['metadata']['generation'] &&
          d['metadata']['annotations']?.['deployment.kubernetes.io/revision'] === '2'
          ? d
          : undefined;
      },
      60_000,
      'the Deployment at its new revision (2), observed by the deployment controller',
    );
    t.diagnostic(`helm upgrade -> Deployment revision 2 observed: ${Math.round(performance.now() - t0)} ms`);
    assert.ok(rolled['metadata']['generation'] > before['metadata']['generation'], 'the template changed');
    assert.equal(sidecarEnv(rolled)['PROBE_INTERVAL_MS'], '200');
    assert.equal(sidecarEnv(rolled)['LOG_LEVEL'], 'debug');
    assert.equal(sidecarEnv(rolled)['SHARDS'], '4', 'the other values kept');
    assert.equal(rolled['spec']['replicas'], 2, '--reuse-values kept replicas');
    assert.equal(rolled['status']['updatedReplicas'], 2, 'helm upgrade --wait: both pods rolled to the new template');
    const history = JSON.parse(await helm(['history', HELM_RELEASE, ...ns, '-o', 'json'])) as Json[];
    assert.deepEqual(
      history.map((h) => [h['revision'], h['status']]),
      [
        [1, 'superseded'],
        [2, 'deployed'],
      ],
    );
    assert.equal(c.redisRow(NAME), RUNNING_ROW);
    const after = c.masterEndpoint(NAME);
    assert.ok(after);
    assert.equal(await call(c, after.ip, 'GET', 'helm:written-before-upgrade'), 'kept');

    // A CRD upgrade as charts/redis-operator/README.md says (Helm never upgrades crds/): a changed
    // CRD applied server-side over the fields Helm's own server-side apply owns, then crds/ as they are.
    const crdDir = path.join(local.dataRoot, 'crds-next');
    mkdirSync(crdDir, { recursive: true });
    const original = readFileSync(path.join(CHART_DIR, 'crds/crd.yaml'), 'utf8');
    const changed = original.replace(DESCRIPTION, `${DESCRIPTION} (next version)`);
    assert.notEqual(changed, original);
    writeFileSync(path.join(crdDir, 'crd.yaml'), changed);
    const plain = await local.kubectl(['apply', '--server-side', '-f', crdDir]).then(
      () => 'applied',
      (err: unknown) =>
        `refused: ${
          String(err)
            .split('\n')
            .find((l) => /conflict/i.test(l)) ?? String(err).slice(0, 200)
        }`,
    );
    t.diagnostic(`kubectl apply --server-side of a changed CRD (without --force-conflicts): ${plain}`);
    // Why the README says --force-conflicts: Helm 4 creates crds/ with server-side apply as manager "helm".
    assert.match(plain, /^refused: .*conflict with "helm"/);
    await local.kubectl(['apply', '--server-side', '--force-conflicts', '-f', crdDir]);
    const served = async () =>
      (
        await local.kubectl([
          'get',
          'crd',
          'redises.redis.example.com',
          '-o',
          'jsonpath={.spec.versions[0].schema.openAPIV3Schema.description}',
        ])
      ).trim();
    assert.equal(await served(), `${DESCRIPTION} (next version)`);
    await local.kubectl(['apply', '--server-side', '--force-conflicts', '-f', path.join(CHART_DIR, 'crds')]);
    assert.equal(await served(), DESCRIPTION);
    assert.equal(c.redisRow(NAME), RUNNING_ROW);

    // helm uninstall: the release's objects go; crds/ (never deleted by Helm), the Redis and its data stay.
    await helm(['uninstall', HELM_RELEASE, ...ns, '--wait', '--timeout', '120s']);
    await c.waitFor(
      async () => ((await existing(manifest)).length === 0 ? true : undefined),
      60_000,
      'every object of the release deleted',
    );
    await assert.rejects(helm(['status', HELM_RELEASE, ...ns]), /not found/);
    for (const crd of [
      'redises.redis.example.com',
      'redisbackups.redis.example.com',
      'redisclusters.redis.example.com',
    ]) {
      assert.equal(
        (await local.kubectl(['get', 'crd', crd, '-o', 'name'])).trim(),
        `customresourcedefinition.apiextensions.k8s.io/${crd}`,
      );
    }
    assert.equal(
      (await local.kubectl(['get', 'redis', NAME, '-n', NS, '-o', 'name'])).trim(),
      `redis.redis.example.com/${NAME}`,
    );
    const kept = c.masterEndpoint(NAME);
    assert.ok(kept, 'the master Service still routes');
    assert.equal(await call(c, kept.ip, 'GET', 'helm:written-before-upgrade'), 'kept');

    // The chart in another namespace: what names the operator's namespace follows it.
    const other = 'platform-redis';
    const t1 = performance.now();
    await helmInstall(helm, other);
    t.diagnostic(`helm install -n ${other} --wait: ${Math.round(performance.now() - t1)} ms`);
    await local.kubectl([
      'patch',
      'redis',
      NAME,
      '-n',
      NS,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { networkPolicy: { allowFrom: { app: 'shop' } } } }),
    ]);
    const stored = JSON.parse(await local.kubectl(['get', 'redis', NAME, '-n', NS, '-o', 'json'])) as Json;
    assert.equal(
      stored['spec']['networkPolicy']['operatorNamespace'],
      undefined,
      'the CRD writes no namespace of its own into the Redis',
    );
    const policy = await c.waitFor(
      () => c.get('networkpolicies', `${NAME}-ingress`, NS),
      30_000,
      `NetworkPolicy ${NAME}-ingress from the operator in ${other}`,
    );
    const peers = (policy as Json)['spec']['ingress'][0]['from'] as Json[];
    const operatorPeer = peers.find((p) => p['namespaceSelector'] !== undefined);
    assert.deepEqual(
      operatorPeer?.['namespaceSelector'],
      { matchLabels: { 'kubernetes.io/metadata.name': other } },
      'the operator peer names the namespace the operator runs in',
    );
    const found = await connect({ kubeconfig: local.kubeconfig }).operator();
    assert.equal(found.located.namespace, other, `kubectl redis finds the operator: ${found.located.from}`);
    assert.equal(found.deployment?.status?.readyReplicas, 2);
    await helm(['uninstall', HELM_RELEASE, '--namespace', other, '--wait', '--timeout', '120s']);
    await local.kubectl(['delete', 'namespace', other, '--wait=false']);
  },
);

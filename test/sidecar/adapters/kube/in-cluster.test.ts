// The sidecar's in-cluster credentials as the operator's Deployment projects them (volume
// kube-api-access of manifests/deployment.yaml: token, ca.crt, namespace, mounted in the sidecar
// alone), on the real kube-apiserver: loadKubeConfig finds the API server with exactly those files,
// and a token the kubelet rotates (it rewrites the file at 80% of the token's hour) is used within
// a minute, without a restart: client-node reads the file again once its copy is a minute old.
// The minute is the mocked Date's (nothing else is mocked); which token a request carried is the
// API server's answer to a SelfSubjectReview (the pod each token is bound to).
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AuthenticationV1Api } from '@kubernetes/client-node';
import { KubeClient, loadKubeConfig } from '../../../../src/sidecar/adapters/kube/client.ts';
import { isBuilt } from '../../../k8s/build.ts';
import { BARE_SUBNET } from '../../../k8s/api-server.ts';
import { startControlPlane } from '../../../k8s/control-plane.ts';
import { TOKEN_PATH } from '../../../support/install-shape.ts';

const why = isBuilt() ? undefined : 'the control plane is not built (npm run cluster:build)';

const identity = `
apiVersion: v1
kind: ServiceAccount
metadata: {name: rotation, namespace: default}
automountServiceAccountToken: false
---
apiVersion: v1
kind: Pod
metadata: {name: incarnation-1, namespace: default}
spec: {serviceAccountName: rotation, automountServiceAccountToken: false, containers: [{name: c, image: none}]}
---
apiVersion: v1
kind: Pod
metadata: {name: incarnation-2, namespace: default}
spec: {serviceAccountName: rotation, automountServiceAccountToken: false, containers: [{name: c, image: none}]}
`;

test(
  'loadKubeConfig in a pod: the projected token, CA and namespace, and a rotated token used within a minute',
  { skip: why ?? false, timeout: 60_000 },
  async (t) => {
    const cp = await startControlPlane({ subnet: BARE_SUBNET, controllers: false });
    t.after(() => cp.stop());
    const root = mkdtempSync(path.join(tmpdir(), 'in-cluster-'));
    t.after(() => rmSync(root, { recursive: true, force: true }));
    await cp.kubectl(['apply', '-f', '-'], identity);
    // A token as the kubelet asks for one: bound to the pod, an hour long.
    const tokenFor = async (pod: string) => {
      const uid = (await cp.kubectl(['get', 'pod', pod, '-n', 'default', '-o', 'jsonpath={.metadata.uid}'])).trim();
      const args = [
        'create',
        'token',
        'rotation',
        '-n',
        'default',
        '--bound-object-kind=Pod',
        `--bound-object-name=${pod}`,
        `--bound-object-uid=${uid}`,
        '--duration=1h',
      ];
      return (await cp.kubectl(args)).trim();
    };
    const dir = path.join(root, TOKEN_PATH);
    mkdirSync(dir, { recursive: true });
    // The kubelet swaps the whole projection at once (a symlink flip); a rename is as atomic.
    const project = (name: string, text: string) => {
      writeFileSync(path.join(dir, `.${name}.new`), text);
      renameSync(path.join(dir, `.${name}.new`), path.join(dir, name));
    };
    project('token', await tokenFor('incarnation-1'));
    copyFileSync(cp.pki.ca.cert, path.join(dir, 'ca.crt'));
    project('namespace', 'default');

    // The kubelet's environment for the `kubernetes` Service; client-node reads it from process.env.
    const server = new URL(cp.server);
    const saved = { host: process.env['KUBERNETES_SERVICE_HOST'], port: process.env['KUBERNETES_SERVICE_PORT'] };
    process.env['KUBERNETES_SERVICE_HOST'] = server.hostname;
    process.env['KUBERNETES_SERVICE_PORT'] = server.port;
    t.after(() => {
      for (const [k, v] of [
        ['KUBERNETES_SERVICE_HOST', saved.host],
        ['KUBERNETES_SERVICE_PORT', saved.port],
      ] as const)
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
    });
    const kc = loadKubeConfig({
      env: { KUBERNETES_SERVICE_HOST: server.hostname, KUBERNETES_SERVICE_PORT: server.port },
      inClusterRoot: root,
    });
    assert.equal(kc.getContextObject(kc.getCurrentContext())?.namespace, 'default', 'the namespace file');
    assert.equal(kc.getCurrentCluster()?.caFile, path.join(dir, 'ca.crt'));
    const kube = new KubeClient(kc, { identity: 'in-cluster-test' });
    const auth = kube.kc.makeApiClient(AuthenticationV1Api);
    const whoAmI = async () => {
      const review = await auth.createSelfSubjectReview({
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
      });
      const info = review.status?.userInfo;
      return `${info?.username} pod=${info?.extra?.['authentication.kubernetes.io/pod-name']?.join(',')}`;
    };
    assert.equal(await whoAmI(), 'system:serviceaccount:default:rotation pod=incarnation-1');

    project('token', await tokenFor('incarnation-2'));
    assert.equal(
      await whoAmI(),
      'system:serviceaccount:default:rotation pod=incarnation-1',
      'the token read a moment ago is still the one sent',
    );
    mock.timers.enable({ apis: ['Date'], now: Date.now() });
    t.after(() => mock.timers.reset());
    mock.timers.tick(61_000);
    assert.equal(
      await whoAmI(),
      'system:serviceaccount:default:rotation pod=incarnation-2',
      'a minute on, the rotated token',
    );
  },
);

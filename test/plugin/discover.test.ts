// Where the plugin looks for the operator without --operator-namespace (src/plugin/discover.ts):
// the decision as a table, then kube.ts's reads on the real kube-apiserver (no controllers): an
// operator installed in platform-redis is found from the CompositeController's hook Service, from
// its Deployment's labels when the controller is gone, and a user who may read neither gets the
// default rather than an error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { DEFAULT_OPERATOR_NAMESPACE, fromController, fromDeployments, fromFlag } from '../../src/plugin/discover.ts';
import { connect } from '../../src/plugin/kube.ts';
import { BARE_SUBNET } from '../k8s/api-server.ts';
import { startControlPlane } from '../k8s/control-plane.ts';
import { dryRunMissing } from '../k8s/dry-run.ts';
import { METACONTROLLER_CRDS, missingSharedReason, REPO_ROOT } from '../k8s/operator.ts';

type Json = Record<string, any>;
const controller = (namespace: string) => ({
  spec: { hooks: { sync: { webhook: { service: { name: 'redis-operator', namespace } } } } },
});
const deployments = (...namespaces: string[]) => namespaces.map((namespace) => ({ metadata: { namespace } }));

test('the first source that answers decides', async (t) => {
  const cases: Array<[string, string | undefined, Json | null, Json[] | null, string]> = [
    ['the flag wins over everything', 'ops', controller('platform-redis'), deployments('platform-redis'), 'ops'],
    [
      'the CompositeController names the Service it calls',
      undefined,
      controller('platform-redis'),
      deployments('elsewhere'),
      'platform-redis',
    ],
    [
      'no controller readable: the one namespace with an operator Deployment',
      undefined,
      null,
      deployments('platform-redis', 'platform-redis'),
      'platform-redis',
    ],
    [
      'several namespaces: redis-operator among them',
      undefined,
      null,
      deployments('zz', 'redis-operator', 'aa'),
      'redis-operator',
    ],
    ['several namespaces, none the default: the first', undefined, null, deployments('zz', 'aa'), 'aa'],
    ['nothing readable: the default', undefined, null, null, DEFAULT_OPERATOR_NAMESPACE],
    ['an empty flag counts as unset', '', null, deployments('platform-redis'), 'platform-redis'],
  ];
  for (const [label, flag, cc, deps, expected] of cases) {
    await t.test(label, () => {
      const located = fromFlag(flag) ?? fromController(cc) ?? fromDeployments(deps);
      assert.equal(located.namespace, expected);
      assert.ok(located.from.length > 0);
    });
  }
});

const skip = dryRunMissing() ?? missingSharedReason();

test(
  'kube.ts finds an operator installed in another namespace, on the real kube-apiserver',
  { skip: skip ?? false, timeout: 120_000 },
  async (t) => {
    const cp = await startControlPlane({ subnet: BARE_SUBNET, controllers: false });
    t.after(() => cp.stop());
    const ns = 'platform-redis';
    await cp.kubectl(['apply', '--server-side', '-f', METACONTROLLER_CRDS]);
    await cp.kubectl(['wait', '--for=condition=Established', '--timeout=60s', '-f', METACONTROLLER_CRDS]);
    // The install's own Deployment and CompositeController, moved to platform-redis as an overlay's namespace: would.
    const deployment = parse(readFileSync(path.join(REPO_ROOT, 'manifests/deployment.yaml'), 'utf8')) as Json;
    deployment['metadata']['namespace'] = ns;
    const cc = parse(readFileSync(path.join(REPO_ROOT, 'metacontroller/composite-controller.yaml'), 'utf8')) as Json;
    for (const hook of Object.values(cc['spec']['hooks'] as Record<string, Json>))
      hook['webhook']['service']['namespace'] = ns;
    await cp.kubectl(['create', 'namespace', ns]);
    await cp.kubectl(['apply', '-f', '-'], [deployment, cc].map((o) => stringify(o)).join('---\n'));

    const admin = connect({ kubeconfig: cp.adminKubeconfig });
    await t.test('from the CompositeController', async () => {
      const o = await admin.operator();
      assert.equal(o.located.namespace, ns, o.located.from);
      assert.match(o.located.from, /CompositeController/);
      assert.equal(o.deployment?.metadata?.namespace, ns, 'the Deployment read where it is');
    });
    await t.test('the flag, as given', async () => {
      assert.deepEqual(await connect({ kubeconfig: cp.adminKubeconfig, operatorNamespace: 'ops' }).locateOperator(), {
        namespace: 'ops',
        from: '--operator-namespace',
      });
    });
    await t.test('a user who may read neither: the default, no error', async () => {
      const nobody = connect({ kubeconfig: cp.certKubeconfig('alice') });
      assert.equal((await nobody.locateOperator()).namespace, DEFAULT_OPERATOR_NAMESPACE);
    });
    await t.test('without the CompositeController: from the Deployment labels', async () => {
      await cp.kubectl(['delete', 'compositecontroller', 'redis-operator']);
      const o = await admin.operator();
      assert.equal(o.located.namespace, ns, o.located.from);
      assert.match(o.located.from, /Deployment/);
      assert.equal(o.deployment?.metadata?.namespace, ns);
    });
  },
);

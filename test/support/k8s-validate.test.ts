// The test-side Kubernetes validator must refuse what the API server refuses, or passing it
// means nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { K8sValidationError, SUPPORTED_KINDS, validateK8sObject } from './k8s-validate.ts';

const goodSet = () => ({
  apiVersion: 'apps/v1',
  kind: 'StatefulSet',
  metadata: { name: 'web', namespace: 'default', labels: { app: 'web' } },
  spec: {
    selector: { matchLabels: { app: 'web' } },
    serviceName: 'web',
    template: {
      metadata: { labels: { app: 'web' } },
      spec: { containers: [{ name: 'c', image: 'nginx', volumeMounts: [{ name: 'data', mountPath: '/d' }] }] },
    },
    volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }],
  },
});

const valid: Array<[string, unknown]> = [
  ['a StatefulSet with a claim template', goodSet()],
  ['a Namespace', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'redis-operator' } }],
  ['a ServiceAccount', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'sa', namespace: 'x' } }],
  [
    'a ClusterRole',
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'redis-operator:hook' },
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }],
    },
  ],
  [
    'a Lease',
    { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'l', namespace: 'x' }, spec: { holderIdentity: 'a', leaseDurationSeconds: 5 } },
  ],
  [
    'an events.k8s.io Event',
    {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name: 'e.1', namespace: 'x' },
      eventTime: '2025-01-15T10:00:00.000000Z',
      reportingController: 'redis-operator',
      reportingInstance: 'a',
      action: 'Failover',
      reason: 'FailoverCompleted',
      type: 'Normal',
      regarding: { kind: 'Redis', name: 'r' },
    },
  ],
  [
    'a PodDisruptionBudget',
    {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'p', namespace: 'x' },
      spec: { maxUnavailable: 1, selector: { matchLabels: { a: 'b' } } },
    },
  ],
];
for (const [label, object] of valid) {
  test(`accepts ${label}`, () => assert.doesNotThrow(() => validateK8sObject(object)));
}

function broken(mutate: (o: ReturnType<typeof goodSet>) => void) {
  const o = goodSet();
  mutate(o);
  return o;
}

const invalid: Array<[string, unknown, RegExp]> = [
  ['an unknown kind', { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } }, /unsupported apiVersion\/kind/],
  ['a non-object', 'StatefulSet', /must be an object/],
  [
    'an unknown field (typo)',
    broken((o) => {
      (o.spec as Record<string, unknown>)['replica'] = 3;
    }),
    /\.spec\.replica: unknown field/,
  ],
  [
    'a nested unknown field',
    broken((o) => {
      (o.spec.template.spec.containers[0] as Record<string, unknown>)['imagee'] = 'x';
    }),
    /containers\[0\]\.imagee: unknown field/,
  ],
  [
    'a wrong type',
    broken((o) => {
      (o.spec as Record<string, unknown>)['replicas'] = '3';
    }),
    /replicas must be integer/,
  ],
  [
    'an invalid name',
    broken((o) => {
      o.metadata.name = 'Web_1';
    }),
    /metadata\.name/,
  ],
  [
    'a label value with a space',
    broken((o) => {
      o.metadata.labels = { app: 'my web' };
    }),
    /metadata\.labels\["app"\]/,
  ],
  [
    'a label value over 63 characters',
    broken((o) => {
      o.metadata.labels = { app: 'a'.repeat(64) };
    }),
    /metadata\.labels/,
  ],
  [
    'a selector the template does not match',
    broken((o) => {
      o.spec.template.metadata.labels = { app: 'other' };
    }),
    /does not match selector app=web/,
  ],
  [
    'a mount of an undeclared volume',
    broken((o) => {
      o.spec.volumeClaimTemplates = [];
    }),
    /data is neither a volume nor a claim template/,
  ],
  [
    'a Service name starting with a digit',
    { apiVersion: 'v1', kind: 'Service', metadata: { name: '1redis', namespace: 'x' }, spec: { ports: [{ port: 1 }] } },
    /RFC 1035/,
  ],
  [
    'a PDB with both bounds',
    { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'p', namespace: 'x' }, spec: { maxUnavailable: 1, minAvailable: 1 } },
    /exactly one of/,
  ],
  ['a namespaced Namespace', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'a', namespace: 'b' } }, /cluster-scoped/],
];
for (const [label, object, message] of invalid) {
  test(`rejects ${label}`, () => {
    assert.throws(
      () => validateK8sObject(object),
      (error: unknown) => {
        assert.ok(error instanceof K8sValidationError);
        assert.match(error.message, message);
        assert.ok(error.problems.length > 0);
        return true;
      },
    );
  });
}

test('the kinds the manifests and the hook need are supported', async (t) => {
  for (const kind of [
    'apps/v1/StatefulSet',
    'apps/v1/Deployment',
    'v1/Service',
    'v1/ConfigMap',
    'v1/Secret',
    'v1/ServiceAccount',
    'v1/Namespace',
    'v1/Pod',
    'policy/v1/PodDisruptionBudget',
    'rbac.authorization.k8s.io/v1/ClusterRole',
    'rbac.authorization.k8s.io/v1/ClusterRoleBinding',
    'rbac.authorization.k8s.io/v1/Role',
    'rbac.authorization.k8s.io/v1/RoleBinding',
    'coordination.k8s.io/v1/Lease',
    'events.k8s.io/v1/Event',
    'apiextensions.k8s.io/v1/CustomResourceDefinition',
  ]) {
    await t.test(kind, () => assert.ok(SUPPORTED_KINDS.includes(kind), kind));
  }
});

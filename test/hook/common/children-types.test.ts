// The children are typed with Kubernetes' own types (src/hook/common/child.ts). The typecheck
// (tsc -p tsconfig.json) covers this file: each @ts-expect-error below must stay an error, so a
// misspelled or mistyped field of a child keeps failing to compile. At run time: asKubeObject
// hands on the very object it was given, and every built child is plain JSON.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IStatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import type { IPodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import type { IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import type { IService } from 'kubernetes-models/v1/Service';
import { validateSpec } from '../../../src/api/validate.ts';
import { desiredChildren } from '../../../src/hook/redis/children/index.ts';
import { desiredStatefulSet } from '../../../src/hook/redis/children/statefulset.ts';
import { asKubeObject, type Child, type ChildMetadata } from '../../../src/hook/common/child.ts';
import type { HookContext } from '../../../src/hook/redis/context.ts';
import { designSpec } from './helpers.ts';

const metadata: ChildMetadata = { name: 'x', namespace: 'default', labels: {} };

// Never called: these exist for the typecheck.
export function misspelledFieldsDoNotCompile(ctx: HookContext): unknown[] {
  const set: Child<IStatefulSet> = {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata,
    spec: {
      selector: {},
      template: {},
      // @ts-expect-error misspelled: replicas
      replica: 1,
    },
  };
  const wrongKind: Child<IStatefulSet> = {
    apiVersion: 'apps/v1',
    // @ts-expect-error kind is the literal StatefulSet
    kind: 'Statefulset',
    metadata,
  };
  const service: Child<IService> = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata,
    // @ts-expect-error protocol is TCP, UDP or SCTP
    spec: { ports: [{ port: 6379, protocol: 'tcp' }] },
  };
  const pdb: Child<IPodDisruptionBudget> = {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata,
    // @ts-expect-error maxUnavailable is an IntOrString
    spec: { maxUnavailable: true },
  };
  const configMap: Child<IConfigMap> = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    // @ts-expect-error every child has labels (the controller-uid selector)
    metadata: { name: 'x', namespace: 'default' },
  };
  const plan = desiredStatefulSet(ctx, 'master', undefined, 'hash');
  // @ts-expect-error the built StatefulSet's spec is an IStatefulSetSpec
  const misread: unknown = plan.object.spec?.template.spec?.containerz;
  return [set, wrongKind, service, pdb, configMap, misread];
}

test('asKubeObject hands on the object it was given', () => {
  const configMap: Child<IConfigMap> = { apiVersion: 'v1', kind: 'ConfigMap', metadata, data: { a: 'b' } };
  assert.equal(asKubeObject(configMap), configMap);
});

test('every built child is plain JSON: no undefined fields, no class instances', () => {
  const verdict = validateSpec('my-redis', { ...designSpec(), priorityClassName: 'high', nodeSelector: {} });
  assert.ok(verdict.ok);
  if (!verdict.ok) return;
  const ctx: HookContext = {
    name: 'my-redis',
    namespace: 'default',
    uid: 'u-1',
    spec: verdict.spec,
    operatorImage: 'redis-operator:0.1.0',
    operatorNamespace: 'redis-operator',
  };
  for (const child of desiredChildren(ctx, []).children) {
    assert.deepEqual(JSON.parse(JSON.stringify(child)), child, `${child.kind}/${child.metadata.name}`);
  }
});

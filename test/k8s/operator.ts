// Where the operator's install comes from (the repository, ../shared's Metacontroller CRDs), and
// its objects on a bare control plane (no nodes: rbac.test.ts asks the real API server what the
// operator's ServiceAccount may do): Metacontroller's CRDs, then `kubectl kustomize manifests/`
// applied as is but for the Deployment, which has no node to run on there. A whole install, the
// Deployment included, is real-cluster.ts's.
// Invariants:
// - What is applied is what `kubectl apply -k manifests/` would apply, minus exactly one object
//   (Deployment redis-operator/redis-operator); rbac.test.ts checks that.
// - Metacontroller gets an identity of its own (ServiceAccount metacontroller/metacontroller bound
//   to cluster-admin, as its upstream production manifests grant it everything), never admin.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';
import type { ControlPlane } from './control-plane.ts';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const METACONTROLLER_CRDS = path.resolve(REPO_ROOT, '../shared/metacontroller/metacontroller-crds-v1.yaml');
export const OPERATOR_NAMESPACE = 'redis-operator';
export const OPERATOR_SERVICE_ACCOUNT = 'redis-operator';
export const METACONTROLLER_NAMESPACE = 'metacontroller';

type Json = Record<string, unknown>;

/** Why the operator cannot be installed here (Metacontroller's CRDs are not beside the checkout), or undefined. */
export function missingSharedReason(): string | undefined {
  return existsSync(METACONTROLLER_CRDS)
    ? undefined
    : `Metacontroller's CRDs are not at ${METACONTROLLER_CRDS} (shared/ beside the checkout)`;
}

/** The objects `kubectl apply -k manifests/` applies, split into what we apply and what we leave out. */
export async function operatorObjects(cp: Pick<ControlPlane, 'kubectl'>): Promise<{ apply: Json[]; skipped: Json[] }> {
  const docs = parseAllDocuments(await cp.kubectl(['kustomize', path.join(REPO_ROOT, 'manifests')]))
    .map((d) => d.toJSON() as Json)
    .filter(Boolean);
  const isDeployment = (o: Json) => o['kind'] === 'Deployment';
  return { apply: docs.filter((o) => !isDeployment(o)), skipped: docs.filter(isDeployment) };
}

const metacontrollerIdentity = `
apiVersion: v1
kind: Namespace
metadata: {name: ${METACONTROLLER_NAMESPACE}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: metacontroller, namespace: ${METACONTROLLER_NAMESPACE}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: metacontroller}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: metacontroller, namespace: ${METACONTROLLER_NAMESPACE}}]
`;

export interface InstalledOperator {
  /** Kubeconfig of the operator's ServiceAccount (what the Deployment's pods would use). */
  operatorKubeconfig: string;
  /** Kubeconfig of Metacontroller's own ServiceAccount. */
  metacontrollerKubeconfig: string;
  /** The objects of manifests/ that were not applied (the Deployment), by kind/namespace/name. */
  skipped: string[];
}

/** The chart installed with Helm instead of manifests/ with kubectl (`helm`: the binary; `set`: --set values). */
export interface InstallWith {
  helm: string;
  set?: string[];
}

export async function installOperator(
  cp: ControlPlane,
  log: (line: string) => void = () => undefined,
): Promise<InstalledOperator> {
  if (!existsSync(METACONTROLLER_CRDS))
    throw new Error(`Metacontroller's CRDs are needed at ${METACONTROLLER_CRDS} (shared/ beside the checkout)`);
  await cp.kubectl(['apply', '-f', METACONTROLLER_CRDS]);
  await cp.kubectl(['apply', '-f', '-'], metacontrollerIdentity);
  const { apply, skipped } = await operatorObjects(cp);
  // CRDs first: the CompositeController's kind must be served before it can be applied.
  await cp.kubectl([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/compositecontrollers.metacontroller.k8s.io',
  ]);
  await cp.kubectl(['apply', '-f', '-'], apply.map((o) => stringify(o)).join('---\n'));
  // Every CompositeController's parent kind must be served before a Metacontroller discovers it.
  await cp.kubectl([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/redises.redis.example.com',
    'crd/redisclusters.redis.example.com',
  ]);
  // The ServiceAccount token controller is not needed for bound tokens, but the namespace must exist.
  const operatorToken = await cp.tokenFor(OPERATOR_NAMESPACE, OPERATOR_SERVICE_ACCOUNT);
  const metacontrollerToken = await cp.tokenFor(METACONTROLLER_NAMESPACE, 'metacontroller');
  const names = skipped.map((o) => {
    const m = (o['metadata'] ?? {}) as Json;
    return `${String(o['kind'])}/${String(m['namespace'] ?? '')}/${String(m['name'])}`;
  });
  log(`installed manifests/ (${apply.length} objects; not applied: ${names.join(', ')})`);
  return {
    operatorKubeconfig: cp.kubeconfigFor(
      `system:serviceaccount:${OPERATOR_NAMESPACE}:${OPERATOR_SERVICE_ACCOUNT}`,
      operatorToken,
    ),
    metacontrollerKubeconfig: cp.kubeconfigFor(
      `system:serviceaccount:${METACONTROLLER_NAMESPACE}:metacontroller`,
      metacontrollerToken,
    ),
    skipped: names,
  };
}

// Shapes of the operator's install that the manifests' and the chart's tests both read: where a
// Deployment's pod gets API credentials, and the kustomize overlay components/namespaced documents
// (the same text as its header, for a list of namespaces).
type Obj = Record<string, any>;

export const TOKEN_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';

export interface PodCredentials {
  /** The pod's automountServiceAccountToken. */
  automount: unknown;
  /** The containers that mount a volume holding a serviceAccountToken, or anything at TOKEN_PATH. */
  mountedIn: string[];
  /** The sidecar's mount of it. */
  sidecarMount: { mountPath: string; readOnly: unknown } | undefined;
  /** The projected sources, as `path [<- where]`. */
  sources: string[];
  expirationSeconds: number | undefined;
}

export function podCredentials(deployment: Obj): PodCredentials {
  const pod = deployment['spec']['template']['spec'] as Obj;
  const volumes = (pod['volumes'] ?? []) as Obj[];
  const tokenVolumes = volumes.filter((v) =>
    ((v['projected']?.['sources'] ?? []) as Obj[]).some((s) => s['serviceAccountToken']),
  );
  const names = new Set(tokenVolumes.map((v) => v['name'] as string));
  const mounts = (c: Obj) =>
    ((c['volumeMounts'] ?? []) as Obj[]).filter(
      (m) => names.has(m['name']) || String(m['mountPath']).startsWith('/var/run/secrets'),
    );
  const containers = [...((pod['initContainers'] ?? []) as Obj[]), ...(pod['containers'] as Obj[])];
  const sidecar = (pod['containers'] as Obj[]).find((c) => c['name'] === 'sidecar');
  const m = sidecar ? mounts(sidecar)[0] : undefined;
  const sources = ((tokenVolumes[0]?.['projected']?.['sources'] ?? []) as Obj[]).flatMap((s): string[] => {
    if (s['serviceAccountToken'])
      return [
        `${s['serviceAccountToken']['path']}${s['serviceAccountToken']['audience'] ? ` for ${s['serviceAccountToken']['audience']}` : ''}`,
      ];
    if (s['configMap'])
      return (s['configMap']['items'] as Obj[]).map(
        (i) => `${i['path']} <- configMap ${s['configMap']['name']}/${i['key']}`,
      );
    if (s['downwardAPI'])
      return (s['downwardAPI']['items'] as Obj[]).map((i) => `${i['path']} <- ${i['fieldRef']['fieldPath']}`);
    return [JSON.stringify(s)];
  });
  return {
    automount: pod['automountServiceAccountToken'],
    mountedIn: containers.filter((c) => mounts(c).length > 0).map((c) => c['name'] as string),
    sidecarMount: m ? { mountPath: m['mountPath'], readOnly: m['readOnly'] } : undefined,
    sources,
    expirationSeconds: ((tokenVolumes[0]?.['projected']?.['sources'] ?? []) as Obj[]).find(
      (s) => s['serviceAccountToken'],
    )?.['serviceAccountToken']['expirationSeconds'],
  };
}

/**
 * The overlay of manifests/components/namespaced's header for `namespaces`, on the manifests at `base`: file name ->
 * text.
 */
export function namespacedOverlay(base: string, namespaces: readonly string[]): Record<string, string> {
  const kustomization = `resources:
  - ${base}
  - rolebindings.yaml
components:
  - ${base}/components/namespaced
patches:
  - patch: |-
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: redis-operator, namespace: redis-operator}
      spec:
        template:
          spec:
            containers:
              - name: sidecar
                env:
                  - {name: WATCH_NAMESPACES, value: "${namespaces.join(',')}"}
`;
  const rolebindings = namespaces
    .map(
      (ns) => `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: redis-operator-sidecar
  namespace: ${ns}
  labels: {app.kubernetes.io/name: redis-operator, app.kubernetes.io/part-of: redis-operator}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: redis-operator-sidecar}
subjects: [{kind: ServiceAccount, name: redis-operator, namespace: redis-operator}]
`,
    )
    .join('---\n');
  return { 'kustomization.yaml': kustomization, 'rolebindings.yaml': rolebindings };
}

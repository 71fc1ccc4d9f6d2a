// What the provisioner needs in the cluster before it starts, applied once with the admin
// credential: its ServiceAccount and RBAC (an external provisioner + resizer's rights, nothing
// more), the default StorageClass `local-dir`, and `local-dir-fixed`: the same provisioner with
// allowVolumeExpansion false, so a test can show a refused expansion (the API server's admission
// refuses to grow its claims). Idempotent: existing objects are kept.
import { isStatus, type Json, type KubeClient } from './api-client.ts';

export const PROVISIONER_NAME = 'node-agent.redis-operator.test/local-dir';
export const STORAGE_CLASS = 'local-dir';
/** Same provisioner, volumes that cannot grow. */
export const FIXED_STORAGE_CLASS = 'local-dir-fixed';
export const PROVISIONER_NAMESPACE = 'kube-system';
export const PROVISIONER_ACCOUNT = 'node-agent-provisioner';

export const storageClass: Json = {
  apiVersion: 'storage.k8s.io/v1',
  kind: 'StorageClass',
  metadata: { name: STORAGE_CLASS, annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
  provisioner: PROVISIONER_NAME,
  reclaimPolicy: 'Delete',
  volumeBindingMode: 'Immediate',
  allowVolumeExpansion: true,
};

export const fixedStorageClass: Json = {
  apiVersion: 'storage.k8s.io/v1',
  kind: 'StorageClass',
  metadata: { name: FIXED_STORAGE_CLASS },
  provisioner: PROVISIONER_NAME,
  reclaimPolicy: 'Delete',
  volumeBindingMode: 'Immediate',
  allowVolumeExpansion: false,
};

const rules = [
  { apiGroups: [''], resources: ['persistentvolumes'], verbs: ['get', 'list', 'watch', 'create', 'delete', 'patch', 'update'] },
  { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['get', 'list', 'watch', 'patch', 'update'] },
  { apiGroups: [''], resources: ['persistentvolumeclaims/status'], verbs: ['patch', 'update'] },
  { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
];

async function ensure(client: KubeClient, collection: string, body: Json): Promise<void> {
  try {
    await client.request('POST', collection, { body });
  } catch (err) {
    if (!isStatus(err, 409)) throw err;
  }
}

export async function setUpProvisioner(admin: KubeClient): Promise<void> {
  const name = PROVISIONER_ACCOUNT;
  await ensure(admin, `/api/v1/namespaces/${PROVISIONER_NAMESPACE}/serviceaccounts`, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name, namespace: PROVISIONER_NAMESPACE },
  });
  await ensure(admin, '/apis/rbac.authorization.k8s.io/v1/clusterroles', {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name },
    rules,
  });
  await ensure(admin, '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
    subjects: [{ kind: 'ServiceAccount', name, namespace: PROVISIONER_NAMESPACE }],
  });
  await ensure(admin, '/apis/storage.k8s.io/v1/storageclasses', storageClass);
  await ensure(admin, '/apis/storage.k8s.io/v1/storageclasses', fixedStorageClass);
}

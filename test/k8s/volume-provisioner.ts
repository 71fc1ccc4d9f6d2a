// The test cluster's storage: an external dynamic provisioner (and resizer) for the default
// StorageClass `local-dir`, behaving as sig-storage's external-provisioner does. The REAL PV
// controller decides that a claim needs dynamic provisioning and marks it (annotation
// volume.kubernetes.io/storage-provisioner = ours); this creates the PersistentVolume
// `pvc-<claim uid>` (hostPath: a directory under <dir>/volumes, capacity = request, claimRef to
// the claim) and the PV controller binds the two. A Released volume of ours with reclaimPolicy
// Delete has its directory removed and is deleted; a Retain volume keeps its data. A claim whose
// request grows is expanded (PV capacity, then the claim's status), as the external-resizer does.
// `local-dir-fixed` is the same provisioner with allowVolumeExpansion false (the API server's
// admission refuses to grow its claims).
// Not modelled: a volume's node affinity (a pod moved to another node finds its data there too),
// and its size (a directory has none to enforce).
// Invariants: it runs as a ServiceAccount of its own with an external provisioner's and resizer's
// rights, never as admin; only volumes annotated pv.kubernetes.io/provisioned-by = ours are
// touched, and only directories under <dir>/volumes are removed; every pass is idempotent (a
// failed one is simply run again).
import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { parseQuantity } from '../../src/hook/common/quantity.ts';
import type { StoredObject } from '../support/kube-client/objects.ts';
import { httpClient, type ResourceRef } from '../support/kube-client/index.ts';
import { asRecord as rec } from '../support/records.ts';
import type { ControlPlane } from './control-plane.ts';

const PROVISIONER = 'volumes.redis-operator.test/local-dir';
const ACCOUNT = 'volume-provisioner';
const ANN_PROVISIONER = 'volume.kubernetes.io/storage-provisioner';
const ANN_PROVISIONED_BY = 'pv.kubernetes.io/provisioned-by';

const setup = `
apiVersion: v1
kind: ServiceAccount
metadata: {name: ${ACCOUNT}, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: ${ACCOUNT}}
rules:
  - {apiGroups: [""], resources: [persistentvolumes], verbs: [get, list, watch, create, delete, patch]}
  - {apiGroups: [""], resources: [persistentvolumeclaims], verbs: [get, list, watch]}
  - {apiGroups: [""], resources: [persistentvolumeclaims/status], verbs: [patch]}
  - {apiGroups: [storage.k8s.io], resources: [storageclasses], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ${ACCOUNT}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ${ACCOUNT}}
subjects: [{kind: ServiceAccount, name: ${ACCOUNT}, namespace: kube-system}]
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local-dir, annotations: {storageclass.kubernetes.io/is-default-class: "true"}}
provisioner: ${PROVISIONER}
reclaimPolicy: Delete
volumeBindingMode: Immediate
allowVolumeExpansion: true
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local-dir-fixed}
provisioner: ${PROVISIONER}
reclaimPolicy: Delete
volumeBindingMode: Immediate
allowVolumeExpansion: false
`;

const spec = (o: StoredObject | undefined) => rec(o?.['spec']);
const storageOf = (v: unknown) => rec(v)['storage'] as string | undefined;

/** Sets it up and starts it; resolves to its stop(). */
export async function startVolumeProvisioner(
  cp: ControlPlane,
  dir: string,
  log: (line: string) => void,
): Promise<() => Promise<void>> {
  await cp.kubectl(['apply', '-f', '-'], setup);
  const client = httpClient(
    cp.kubeconfigFor(`system:serviceaccount:kube-system:${ACCOUNT}`, await cp.tokenFor('kube-system', ACCOUNT)),
  );
  const root = path.join(dir, 'volumes');
  const res: Record<'claims' | 'volumes' | 'classes', ResourceRef> = {
    claims: await client.resource('v1', 'persistentvolumeclaims'),
    volumes: await client.resource('v1', 'persistentvolumes'),
    classes: await client.resource('storage.k8s.io/v1', 'storageclasses'),
  };
  for (const r of Object.values(res)) await client.inform(r);
  const ours = (pv: StoredObject | undefined) => pv?.metadata.annotations?.[ANN_PROVISIONED_BY] === PROVISIONER;

  async function provision(claim: StoredObject): Promise<void> {
    const name = `pvc-${claim.metadata.uid}`;
    const className = String(spec(claim)['storageClassName'] ?? '');
    const sc = client.get(res.classes, undefined, className);
    const storage = storageOf(rec(spec(claim)['resources'])['requests']);
    if (client.get(res.volumes, undefined, name) || sc?.['provisioner'] !== PROVISIONER || !storage) return;
    const volume = path.join(root, name);
    mkdirSync(volume, { recursive: true });
    // Writable by whatever user the pod runs as: fsGroup does not reach a hostPath volume (the
    // same choice as rancher's local-path-provisioner).
    chmodSync(volume, 0o777);
    await client
      .create(res.volumes, {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name, annotations: { [ANN_PROVISIONED_BY]: PROVISIONER } },
        spec: {
          capacity: { storage },
          accessModes: spec(claim)['accessModes'] ?? ['ReadWriteOnce'],
          volumeMode: spec(claim)['volumeMode'] ?? 'Filesystem',
          persistentVolumeReclaimPolicy: sc['reclaimPolicy'] ?? 'Delete',
          storageClassName: className,
          hostPath: { path: volume, type: 'DirectoryOrCreate' },
          claimRef: {
            apiVersion: 'v1',
            kind: 'PersistentVolumeClaim',
            namespace: claim.metadata.namespace,
            name: claim.metadata.name,
            uid: claim.metadata.uid,
          },
        },
      })
      .catch((err: { code?: number }) => {
        if (err.code !== 409) throw err;
      });
  }

  /** The external-resizer's job, offline and trivial: a directory has no size to grow. */
  async function expand(claim: StoredObject): Promise<void> {
    const volumeName = String(spec(claim)['volumeName'] ?? '');
    const pv = client.get(res.volumes, undefined, volumeName);
    const requested = storageOf(rec(spec(claim)['resources'])['requests']);
    const want = parseQuantity(requested);
    const have = parseQuantity(storageOf(rec(claim['status'])['capacity']));
    if (!ours(pv) || want === undefined || have === undefined || want <= have) return;
    const pvHas = parseQuantity(storageOf(spec(pv)['capacity']));
    if (pvHas === undefined || pvHas < want)
      await client.patch(
        res.volumes,
        undefined,
        volumeName,
        { spec: { capacity: { storage: requested } } },
        { type: 'merge' },
      );
    await client.patch(
      res.claims,
      claim.metadata.namespace,
      claim.metadata.name,
      {
        status: {
          capacity: { storage: requested },
          allocatedResources: { storage: requested },
          allocatedResourceStatuses: null,
        },
      },
      { type: 'merge', subresource: 'status' },
    );
    log(`volume provisioner: ${claim.metadata.namespace}/${claim.metadata.name} expanded to ${requested}`);
  }

  async function reclaim(pv: StoredObject): Promise<void> {
    const dir = String(rec(spec(pv)['hostPath'])['path'] ?? '');
    if (dir && path.resolve(dir).startsWith(`${path.resolve(root)}${path.sep}`))
      rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    await client
      .delete(res.volumes, undefined, pv.metadata.name, { preconditions: { uid: pv.metadata.uid } })
      .catch((err: { code?: number }) => {
        if (err.code !== 404 && err.code !== 409) throw err;
      });
  }

  async function pass(): Promise<void> {
    for (const claim of client.list(res.claims)) {
      if (claim.metadata.deletionTimestamp) continue;
      const phase = rec(claim['status'])['phase'];
      if (phase === 'Bound') await expand(claim);
      else if (
        phase === 'Pending' &&
        !spec(claim)['volumeName'] &&
        claim.metadata.annotations?.[ANN_PROVISIONER] === PROVISIONER
      )
        await provision(claim);
    }
    for (const pv of client.list(res.volumes))
      if (
        ours(pv) &&
        !pv.metadata.deletionTimestamp &&
        rec(pv['status'])['phase'] === 'Released' &&
        spec(pv)['persistentVolumeReclaimPolicy'] === 'Delete'
      )
        await reclaim(pv);
  }

  // One pass at a time, again after any change seen meanwhile, and again a second later after a failure.
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  const kick = (): void => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = pass()
      .catch((err: unknown) => {
        log(`volume provisioner: ${String(err)}; trying again in 1 s`);
        retry = setTimeout(kick, 1000);
      })
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          kick();
        }
      });
  };
  const watches = [client.watch(res.claims, kick), client.watch(res.volumes, kick)];
  log(`volume provisioner: hostPath volumes under ${root}`);
  return async () => {
    stopped = true;
    clearTimeout(retry);
    for (const w of watches) w.stop();
    await running;
    await client.close();
  };
}

// An external dynamic provisioner (and resizer) for the `local-dir` StorageClass, the way
// sig-storage's external-provisioner behaves: the REAL PV controller decides that a claim needs
// dynamic provisioning and marks it (annotation volume.kubernetes.io/storage-provisioner = ours);
// this creates the PersistentVolume `pvc-<claim uid>` (hostPath: a directory under the agent's
// data dir, capacity = request, claimRef to the claim) and the PV controller binds the two.
// When the PV controller has marked one of our volumes Released and its reclaimPolicy is Delete,
// the directory is removed and the PV deleted; a Retain volume keeps its data. A claim whose
// request grows is expanded (PV capacity, then the claim's status), as the external-resizer does.
// Invariants:
// - Only volumes annotated pv.kubernetes.io/provisioned-by = ours are ever touched, and only
//   directories under <dataDir>/volumes/ are ever removed.
// - Runs with its own ServiceAccount token (provisioner-setup.ts), not as cluster-admin.
import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { parseQuantity } from '../../../src/hook/quantity.ts';
import { isStatus, type Json, type KubeClient } from './api-client.ts';
import { AsyncQueue } from './async-queue.ts';
import { PROVISIONER_NAME } from './provisioner-setup.ts';
import { objectKey, Reflector, type KubeObject } from './reflector.ts';

const ANN_PROVISIONER = 'volume.kubernetes.io/storage-provisioner';
const ANN_PROVISIONER_BETA = 'volume.beta.kubernetes.io/storage-provisioner';
const ANN_PROVISIONED_BY = 'pv.kubernetes.io/provisioned-by';

export interface ProvisionerOptions {
  client: KubeClient;
  dataDir: string;
  logger: Logger;
}

type Spec = Json & {
  resources?: { requests?: Record<string, string> };
  accessModes?: string[];
  volumeMode?: string;
  storageClassName?: string;
  volumeName?: string;
};

const specOf = (o: KubeObject | undefined): Spec => (o?.['spec'] ?? {}) as Spec;
const statusOf = (o: KubeObject | undefined): Json => (o?.['status'] ?? {}) as Json;

export class Provisioner {
  readonly #o: ProvisionerOptions;
  readonly #log: Logger;
  readonly #claims: Reflector;
  readonly #volumes: Reflector;
  readonly #queue: AsyncQueue;
  readonly root: string;

  constructor(o: ProvisionerOptions) {
    this.#o = o;
    this.#log = o.logger.child({ component: 'provisioner' });
    this.root = path.join(o.dataDir, 'volumes');
    this.#queue = new AsyncQueue(
      (key) => this.#reconcile(key),
      (key, err) => this.#log.warn({ key, err: (err as Error).message }, 'volume reconcile failed; retrying'),
    );
    this.#claims = new Reflector({
      client: o.client,
      path: '/api/v1/persistentvolumeclaims',
      logger: this.#log,
      onEvent: (_t, c) => this.#queue.add(`claim:${objectKey(c)}`),
    });
    this.#volumes = new Reflector({
      client: o.client,
      path: '/api/v1/persistentvolumes',
      logger: this.#log,
      onEvent: (_t, v) => {
        this.#queue.add(`volume:${v.metadata.name}`);
        const ref = specOf(v)['claimRef'] as { namespace?: string; name?: string } | undefined;
        if (ref?.name) this.#queue.add(`claim:${ref.namespace}/${ref.name}`);
      },
    });
  }

  async start(): Promise<void> {
    this.#claims.start();
    this.#volumes.start();
    await Promise.all([this.#claims.waitSynced(), this.#volumes.waitSynced()]);
  }

  async stop(): Promise<void> {
    this.#queue.stop();
    await Promise.all([this.#claims.stop(), this.#volumes.stop()]);
  }

  /** The directory behind a bound claim of ours, from the watch caches. */
  claimPath(namespace: string, claim: string): string | undefined {
    const c = this.#claims.get(`${namespace}/${claim}`);
    const pv = this.#volumes.get(specOf(c).volumeName ?? '');
    return pv && statusOf(c)['phase'] === 'Bound' ? ((specOf(pv)['hostPath'] as { path?: string } | undefined)?.path ?? undefined) : undefined;
  }

  #ours(pv: KubeObject | undefined): boolean {
    return pv?.metadata.annotations?.[ANN_PROVISIONED_BY] === PROVISIONER_NAME;
  }

  async #reconcile(key: string): Promise<void> {
    if (key.startsWith('volume:')) return this.#reconcileVolume(key.slice('volume:'.length));
    const ref = key.slice('claim:'.length);
    const claim = this.#claims.get(ref);
    if (!claim || claim.metadata.deletionTimestamp) return;
    const ann = claim.metadata.annotations ?? {};
    const wanted = ann[ANN_PROVISIONER] === PROVISIONER_NAME || ann[ANN_PROVISIONER_BETA] === PROVISIONER_NAME;
    const phase = statusOf(claim)['phase'];
    if (phase === 'Bound') return this.#expand(claim);
    if (!wanted || phase !== 'Pending' || specOf(claim).volumeName) return;
    await this.#provision(claim);
  }

  async #provision(claim: KubeObject): Promise<void> {
    const { client } = this.#o;
    const name = `pvc-${claim.metadata.uid}`;
    if (this.#volumes.get(name)) return;
    const spec = specOf(claim);
    const className = spec.storageClassName ?? '';
    const sc = await client.get<Json>(`/apis/storage.k8s.io/v1/storageclasses/${className}`);
    if (!sc || sc['provisioner'] !== PROVISIONER_NAME) return;
    const storage = spec.resources?.requests?.['storage'];
    if (!storage) throw new Error(`claim ${objectKey(claim)} requests no storage`);
    const dir = path.join(this.root, name);
    mkdirSync(dir, { recursive: true });
    // Writable by whatever user the pod runs as: fsGroup does not reach a hostPath volume (the
    // same choice as rancher's local-path-provisioner).
    chmodSync(dir, 0o777);
    const pv = {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name, annotations: { [ANN_PROVISIONED_BY]: PROVISIONER_NAME } },
      spec: {
        capacity: { storage },
        accessModes: spec.accessModes ?? ['ReadWriteOnce'],
        volumeMode: spec.volumeMode ?? 'Filesystem',
        persistentVolumeReclaimPolicy: (sc['reclaimPolicy'] as string | undefined) ?? 'Delete',
        storageClassName: className,
        ...(sc['mountOptions'] ? { mountOptions: sc['mountOptions'] } : {}),
        hostPath: { path: dir, type: 'DirectoryOrCreate' },
        claimRef: {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          namespace: claim.metadata.namespace,
          name: claim.metadata.name,
          uid: claim.metadata.uid,
          resourceVersion: claim.metadata.resourceVersion,
        },
      },
    };
    try {
      await client.request('POST', '/api/v1/persistentvolumes', { body: pv });
      this.#log.info({ claim: objectKey(claim), volume: name, storage }, 'volume provisioned');
    } catch (err) {
      if (!isStatus(err, 409)) throw err;
    }
  }

  /** external-resizer, offline and trivial: a directory has no size to grow. */
  async #expand(claim: KubeObject): Promise<void> {
    const pvName = specOf(claim).volumeName ?? '';
    const pv = this.#volumes.get(pvName);
    if (!this.#ours(pv)) return;
    const requested = specOf(claim).resources?.requests?.['storage'];
    const current = (statusOf(claim)['capacity'] as Record<string, string> | undefined)?.['storage'];
    const want = parseQuantity(requested);
    const have = parseQuantity(current);
    if (want === undefined || have === undefined || want <= have) return;
    const { client } = this.#o;
    const pvHas = parseQuantity((specOf(pv)['capacity'] as Record<string, string> | undefined)?.['storage']);
    if (pvHas === undefined || pvHas < want) {
      await client.request('PATCH', `/api/v1/persistentvolumes/${pvName}`, {
        contentType: 'application/merge-patch+json',
        body: { spec: { capacity: { storage: requested } } },
      });
    }
    await client.request('PATCH', `/api/v1/namespaces/${claim.metadata.namespace}/persistentvolumeclaims/${claim.metadata.name}/status`, {
      contentType: 'application/merge-patch+json',
      body: { status: { capacity: { storage: requested }, allocatedResources: { storage: requested }, allocatedResourceStatuses: null } },
    });
    this.#log.info({ claim: objectKey(claim), from: current, to: requested }, 'volume expanded');
  }

  async #reconcileVolume(name: string): Promise<void> {
    const pv = this.#volumes.get(name);
    if (!pv || !this.#ours(pv) || pv.metadata.deletionTimestamp) return;
    if (statusOf(pv)['phase'] !== 'Released' || specOf(pv)['persistentVolumeReclaimPolicy'] !== 'Delete') return;
    const dir = (specOf(pv)['hostPath'] as { path?: string } | undefined)?.path;
    if (dir && path.resolve(dir).startsWith(`${path.resolve(this.root)}${path.sep}`)) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    try {
      await this.#o.client.request('DELETE', `/api/v1/persistentvolumes/${name}`, {
        body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: pv.metadata.uid } },
      });
      this.#log.info({ volume: name }, 'released volume deleted (reclaimPolicy Delete)');
    } catch (err) {
      if (!isStatus(err, 404, 409)) throw err;
    }
  }
}

// Persistent volumes, the way a dynamic provisioner with reclaimPolicy Delete and the
// pvc-protection controller behave: a new claim is bound at once to a fresh directory
// `<dataRoot>/volumes/pvc-<claim uid>` (the PV's name in a real cluster); the directory outlives
// every pod that mounts it and is removed only when the claim is gone. Invariants:
// - Every claim gets the `kubernetes.io/pvc-protection` finalizer on create (as the admission
//   plugin does), and it is removed only when no pod that still exists uses the claim and the
//   kubelet holds no process on it; so data is never deleted under a running redis-server.
// - Any storageClassName binds (there are no StorageClass objects here) and capacity = request.
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { ObjectStore, StoredObject, WatchHandle } from '../../support/kube-api/index.ts';
import { WorkQueue } from './queue.ts';

export const PVC_PROTECTION = 'kubernetes.io/pvc-protection';

type Json = Record<string, unknown>;

export function claimDir(dataRoot: string, claimUid: string): string {
  return path.join(dataRoot, 'volumes', `pvc-${claimUid}`);
}

export function podUsesClaim(pod: StoredObject, claim: string): boolean {
  const volumes = ((pod['spec'] as Json | undefined)?.['volumes'] as Json[] | undefined) ?? [];
  return volumes.some((v) => (v['persistentVolumeClaim'] as Json | undefined)?.['claimName'] === claim);
}

export class VolumeController {
  readonly #store: ObjectStore;
  readonly #dataRoot: string;
  readonly #log: Logger;
  readonly #busy: (claimUid: string) => boolean;
  readonly #queue: WorkQueue;
  readonly #watches: WatchHandle[] = [];
  #unmutate: (() => void) | undefined;

  /** `busy`: the kubelet still runs a process on this claim's directory. */
  constructor(store: ObjectStore, dataRoot: string, logger: Logger, busy: (claimUid: string) => boolean) {
    this.#store = store;
    this.#dataRoot = dataRoot;
    this.#log = logger.child({ controller: 'volumes' });
    this.#busy = busy;
    this.#queue = new WorkQueue(
      (key) => this.#reconcile(key),
      (key, error) => this.#log.warn({ claim: key, err: error }, 'volume reconcile failed; retrying'),
    );
  }

  start(): void {
    this.#unmutate = this.#store.addMutator('persistentvolumeclaims', (ctx) => {
      if (ctx.operation !== 'CREATE') return;
      const f = ctx.object.metadata.finalizers ?? [];
      if (!f.includes(PVC_PROTECTION)) ctx.object.metadata.finalizers = [...f, PVC_PROTECTION];
    });
    this.#watches.push(
      this.#store.watch('persistentvolumeclaims', {}, (ev) => {
        const o = ev.object as StoredObject;
        if (ev.type === 'DELETED') this.#queue.add(`gone:${o.metadata.uid}`);
        else this.#queue.add(`${o.metadata.namespace}/${o.metadata.name}`);
      }),
      this.#store.watch('pods', {}, (ev) => {
        if (ev.type === 'DELETED') this.recheckNamespace((ev.object as StoredObject).metadata.namespace ?? '');
      }),
    );
    for (const c of this.#store.list('persistentvolumeclaims')) this.#queue.add(`${c.metadata.namespace}/${c.metadata.name}`);
  }

  stop(): void {
    for (const w of this.#watches) w.stop();
    this.#watches.length = 0;
    this.#queue.stop();
    this.#unmutate?.();
  }

  /** Claims waiting for deletion in a namespace get another look (a pod went away). */
  recheckNamespace(namespace: string): void {
    for (const c of this.#store.list('persistentvolumeclaims', { namespace })) {
      if (c.metadata.deletionTimestamp) this.#queue.add(`${namespace}/${c.metadata.name}`);
    }
  }

  /** The directory of a bound claim, or undefined. */
  pathOf(claim: StoredObject): string | undefined {
    const status = (claim['status'] ?? {}) as Json;
    return status['phase'] === 'Bound' ? claimDir(this.#dataRoot, claim.metadata.uid) : undefined;
  }

  #reconcile(key: string): void {
    if (key.startsWith('gone:')) {
      const uid = key.slice('gone:'.length);
      rmSync(claimDir(this.#dataRoot, uid), { recursive: true, force: true, maxRetries: 3 });
      this.#log.info({ volume: `pvc-${uid}` }, 'claim deleted; volume directory removed');
      return;
    }
    const [first, rest] = [key.slice(0, key.indexOf('/')), key.slice(key.indexOf('/') + 1)];
    const claim = this.#store.get('persistentvolumeclaims', first, rest);
    if (!claim) return;
    const log = this.#log.child({ namespace: first, claim: rest });
    if (claim.metadata.deletionTimestamp) {
      if (!(claim.metadata.finalizers ?? []).includes(PVC_PROTECTION)) return;
      const users = this.#store
        .list('pods', { namespace: first })
        .filter((p) => podUsesClaim(p, rest))
        .map((p) => p.metadata.name);
      if (users.length > 0 || this.#busy(claim.metadata.uid)) {
        log.debug({ users }, 'claim in use; deletion waits');
        return;
      }
      this.#store.mutate('persistentvolumeclaims', first, rest, (c) => {
        c.metadata.finalizers = (c.metadata.finalizers ?? []).filter((f) => f !== PVC_PROTECTION);
      });
      return;
    }
    if (((claim['status'] ?? {}) as Json)['phase'] === 'Bound') return;
    const volume = `pvc-${claim.metadata.uid}`;
    mkdirSync(claimDir(this.#dataRoot, claim.metadata.uid), { recursive: true });
    const spec = (claim['spec'] ?? {}) as Json;
    const bound = this.#store.mutate('persistentvolumeclaims', first, rest, (c) => {
      (c['spec'] as Json)['volumeName'] = volume;
      c.metadata.annotations = { ...c.metadata.annotations, 'pv.kubernetes.io/bind-completed': 'yes', 'pv.kubernetes.io/bound-by-controller': 'yes' };
    });
    const storage = ((spec['resources'] as Json | undefined)?.['requests'] as Json | undefined)?.['storage'];
    this.#store.update(
      'persistentvolumeclaims',
      {
        ...bound,
        status: { phase: 'Bound', accessModes: spec['accessModes'] ?? ['ReadWriteOnce'], ...(storage !== undefined ? { capacity: { storage } } : {}) },
      },
      { subresource: 'status' },
    );
    log.info({ volume }, 'claim bound');
  }
}

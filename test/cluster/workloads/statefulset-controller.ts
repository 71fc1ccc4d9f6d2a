// The StatefulSet controller adapter: watches StatefulSets, their pods and the namespace's
// claims, runs planStatefulSet for each set that changed and carries the plan out against the
// store; writes status only when it changed. Invariants: at most one reconcile per set at a
// time (the work queue), every write comes from a fresh read (no stale caches), and a failed
// write is retried from scratch.
import type { Logger } from 'pino';
import type { ObjectStore, StoredObject, WatchHandle } from '../../support/kube-api/index.ts';
import { isDeepStrictEqual } from 'node:util';
import { WorkQueue } from './queue.ts';
import { planStatefulSet, revisionName, type StsAction } from './statefulset-plan.ts';

type Json = Record<string, unknown>;

function controllerOf(obj: StoredObject, kind: string): { name: string; uid: string } | undefined {
  const ref = (obj.metadata.ownerReferences ?? []).find((r) => r.controller === true);
  return ref && ref.kind === kind ? { name: ref.name, uid: ref.uid } : undefined;
}

export class StatefulSetController {
  readonly #store: ObjectStore;
  readonly #log: Logger;
  readonly #queue: WorkQueue;
  readonly #watches: WatchHandle[] = [];
  /** Templates by revision name, so pods below a rollout partition can be recreated at their revision. */
  readonly #revisions = new Map<string, Json>();

  constructor(store: ObjectStore, logger: Logger) {
    this.#store = store;
    this.#log = logger.child({ controller: 'statefulset' });
    this.#queue = new WorkQueue(
      (key) => this.#reconcile(key),
      (key, error) => this.#log.warn({ statefulset: key, err: error }, 'reconcile failed; retrying'),
    );
  }

  start(): void {
    this.#watches.push(
      this.#store.watch('statefulsets', {}, (ev) => {
        const o = ev.object as StoredObject;
        this.#queue.add(`${o.metadata.namespace}/${o.metadata.name}`);
      }),
      this.#store.watch('pods', {}, (ev) => {
        const o = ev.object as StoredObject;
        const owner = controllerOf(o, 'StatefulSet');
        if (owner) this.#queue.add(`${o.metadata.namespace}/${owner.name}`);
      }),
      this.#store.watch('persistentvolumeclaims', {}, (ev) => {
        const o = ev.object as StoredObject;
        for (const sts of this.#store.list('statefulsets', { namespace: o.metadata.namespace ?? '' })) {
          this.#queue.add(`${sts.metadata.namespace}/${sts.metadata.name}`);
        }
      }),
    );
  }

  stop(): void {
    for (const w of this.#watches) w.stop();
    this.#watches.length = 0;
    this.#queue.stop();
  }

  #reconcile(key: string): void {
    const [namespace, name] = key.split('/') as [string, string];
    const sts = this.#store.get('statefulsets', namespace, name);
    // A set being deleted is left to the garbage collector, as in Kubernetes.
    if (!sts || sts.metadata.deletionTimestamp) return;
    const template = (sts['spec'] as Json | undefined)?.['template'] as Json | undefined;
    if (template) this.#revisions.set(revisionName(sts), structuredClone(template));
    const pods = this.#store.list('pods', { namespace }).filter((p) => controllerOf(p, 'StatefulSet')?.uid === sts.metadata.uid);
    const claims = this.#store.list('persistentvolumeclaims', { namespace });
    const plan = planStatefulSet({ sts, pods, claims, nowMs: Date.now(), templateOf: (rev) => this.#revisions.get(rev) });
    const log = this.#log.child({ namespace, statefulset: name });
    for (const action of plan.actions) this.#apply(namespace, action, log);
    if (plan.waiting) log.debug({ waiting: plan.waiting }, 'statefulset waiting');
    const fresh = this.#store.get('statefulsets', namespace, name);
    if (fresh && fresh.metadata.uid === sts.metadata.uid && !isDeepStrictEqual(fresh['status'], plan.status)) {
      this.#store.update('statefulsets', { ...fresh, status: plan.status }, { subresource: 'status' });
    }
    // availableReplicas depends on time when minReadySeconds is set: look again later.
    const minReady = ((sts['spec'] as Json | undefined)?.['minReadySeconds'] as number | undefined) ?? 0;
    if (minReady > 0 && plan.status['availableReplicas'] !== plan.status['readyReplicas']) this.#queue.addAfter(key, 1000);
  }

  #apply(namespace: string, action: StsAction, log: Logger): void {
    switch (action.kind) {
      case 'createClaim':
        log.info({ claim: action.claim.metadata?.name, reason: action.reason }, 'creating PersistentVolumeClaim');
        this.#store.create('persistentvolumeclaims', action.claim);
        return;
      case 'createPod':
        log.info({ pod: action.pod.metadata?.name, reason: action.reason }, 'creating pod');
        this.#store.create('pods', action.pod);
        return;
      case 'deletePod': {
        const current = this.#store.get('pods', namespace, action.name);
        if (!current || current.metadata.uid !== action.uid || current.metadata.deletionTimestamp) return;
        log.info({ pod: action.name, reason: action.reason }, 'deleting pod');
        this.#store.delete('pods', namespace, action.name, { preconditions: { uid: action.uid } });
        return;
      }
      case 'setClaimOwners':
        log.info({ claim: action.name, ownerReferences: action.ownerReferences.map((r) => `${r.kind}/${r.name}`) }, 'updating claim owners');
        this.#store.mutate('persistentvolumeclaims', namespace, action.name, (c) => {
          if (action.ownerReferences.length > 0) c.metadata.ownerReferences = action.ownerReferences;
          else delete c.metadata.ownerReferences;
        });
        return;
    }
  }
}

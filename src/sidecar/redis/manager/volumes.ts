// Volume expansion for one Redis, run by its worker (leader only, every few seconds while nothing
// else is to be done): reads the claims, the StorageClasses and the two StatefulSets, asks
// decide/volumes.ts what to do, does it, and tells the user with an Event per outcome.
//   VolumeExpansion         Normal   a claim's storage request raised ("data-x-0 requested 1Gi -> 2Gi")
//   VolumeExpansionRefused  Warning  its StorageClass cannot grow it (once per claim and reason);
//                                    the claim also carries the reason in RESIZE_REFUSED_ANNOTATION
//                                    until it requests the desired size, for the hook's status
//   StatefulSetRecreated    Normal   a StatefulSet deleted with its pods orphaned (they keep running);
//                                    Metacontroller recreates it with the new claim templates
// Invariants:
// - Leadership is checked right before every write (claim patch, StatefulSet delete); Events go
//   through the worker's leader-checked `event`.
// - Never restarts a pod: the only writes are claim patches and an Orphan delete of a StatefulSet.
// - reconcile() never throws and never runs twice at once; a failing call is logged once per
//   distinct message, not every few seconds.
import type { V1PersistentVolumeClaim, V1StatefulSet, V1StorageClass } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { childNames, DATA_VOLUME, RESIZE_REFUSED_ANNOTATION } from '../../../api/labels.ts';
import type { RedisSpec } from '../../../api/schema.ts';
import { planVolumes, type ClaimView, type SetView, type VolumeAction, type VolumeInput } from '../decide/volumes.ts';
import {
  isConflict,
  isNotFound,
  isReplaced,
  kubeFailure,
  type ClaimChanges,
  type RedisRef,
} from '../../adapters/kube/client.ts';

/** How often the worker runs a pass (after a round with nothing else to do). */
export const VOLUME_CHECK_INTERVAL_MS = 5000;

/**
 * After a pass that found nothing to do or wait for, until the spec's size or class changes: the
 * four reads of a pass (claims, StorageClasses, two StatefulSets) every 5 s for every Redis were
 * most of a fleet's API traffic at rest. A claim changed by hand is still seen within this.
 */
export const VOLUME_SETTLED_INTERVAL_MS = 300_000;

export type VolumeEventReason = 'VolumeExpansion' | 'VolumeExpansionRefused' | 'StatefulSetRecreated';

export interface VolumeEvent {
  type: 'Normal' | 'Warning';
  reason: VolumeEventReason;
  message: string;
}

/** The calls volume expansion makes (KubeClient implements them; see kube/volumes.ts). */
export interface VolumeKube {
  listRedisClaims(namespace: string, name: string): Promise<V1PersistentVolumeClaim[]>;
  listStorageClasses(): Promise<V1StorageClass[]>;
  patchClaim(namespace: string, name: string, changes: ClaimChanges): Promise<V1PersistentVolumeClaim>;
  getStatefulSet(namespace: string, name: string): Promise<V1StatefulSet | null>;
  deleteStatefulSetOrphan(namespace: string, name: string, uid: string): Promise<void>;
}

/** Whether a client offers the volume calls (test doubles of the worker's KubeWriter may not). */
export function hasVolumeCalls(kube: object): kube is VolumeKube {
  const k = kube as Partial<Record<keyof VolumeKube, unknown>>;
  return (
    ['listRedisClaims', 'listStorageClasses', 'patchClaim', 'getStatefulSet', 'deleteStatefulSetOrphan'] as const
  ).every((m) => typeof k[m] === 'function');
}

export interface VolumeExpanderOptions {
  kube: VolumeKube;
  ref: RedisRef;
  /** The worker's logger (a child carrying namespace and name). */
  log: Logger;
  /** Sends an Event on the Redis (the worker's, leader-checked). */
  event(e: VolumeEvent): void;
  isLeader(): boolean;
}

/** A VolumeExpander on `kube` when it offers the volume calls, else null (a test double of the worker's KubeWriter). */
export function volumeExpanderFor(kube: object, options: Omit<VolumeExpanderOptions, 'kube'>): VolumeExpander | null {
  return hasVolumeCalls(kube) ? new VolumeExpander({ ...options, kube }) : null;
}

export function claimView(c: V1PersistentVolumeClaim): ClaimView {
  return {
    name: c.metadata?.name ?? '',
    uid: c.metadata?.uid ?? '',
    requested: c.spec?.resources?.requests?.['storage'],
    capacity: c.status?.capacity?.['storage'],
    storageClassName: c.spec?.storageClassName,
    phase: c.status?.phase,
    deleting: c.metadata?.deletionTimestamp !== undefined && c.metadata.deletionTimestamp !== null,
    conditions: (c.status?.conditions ?? []).filter((x) => x.status === 'True').map((x) => x.type),
    refusedAnnotation: c.metadata?.annotations?.[RESIZE_REFUSED_ANNOTATION],
  };
}

export function setView(s: V1StatefulSet): SetView {
  const data = (s.spec?.volumeClaimTemplates ?? []).find((t) => t.metadata?.name === DATA_VOLUME);
  return {
    name: s.metadata?.name ?? '',
    uid: s.metadata?.uid ?? '',
    templateSize: data?.spec?.resources?.requests?.['storage'],
    deleting: s.metadata?.deletionTimestamp !== undefined && s.metadata.deletionTimestamp !== null,
  };
}

export class VolumeExpander {
  readonly #o: VolumeExpanderOptions;
  /** Refusals told, by `<claim uid> <reason>`: one Warning per claim and reason, whatever the patch did. */
  readonly #told = new Set<string>();
  /** The last failure logged per action (`<kind> <object>`), so a failing call is logged on change only. */
  readonly #failing = new Map<string, string>();
  #waiting = '';
  #running: Promise<boolean> | null = null;

  constructor(options: VolumeExpanderOptions) {
    this.#o = options;
  }

  /**
   * One pass: read, decide, act. Resolves when done (with a pass already running: when that one
   * is), true when it found something to do or to wait for (or could not tell: a failed read).
   */
  reconcile(spec: RedisSpec): Promise<boolean> {
    this.#running ??= this.#pass(spec).finally(() => {
      this.#running = null;
    });
    return this.#running;
  }

  async #pass(spec: RedisSpec): Promise<boolean> {
    const persistence = spec.persistence.enableRdb || spec.persistence.enableAof;
    if (!persistence) return false;
    const input = await this.#observe(spec);
    if (!input) return true;
    const plan = planVolumes(input);
    const waiting = plan.waiting.join('; ');
    if (waiting !== this.#waiting && waiting !== '')
      this.#o.log.info({ waiting: plan.waiting }, 'volume expansion: waiting for volumes to grow');
    this.#waiting = waiting;
    for (const action of plan.actions) {
      if (!this.#o.isLeader()) return true;
      await this.#apply(action);
    }
    return plan.actions.length > 0 || plan.waiting.length > 0;
  }

  async #observe(spec: RedisSpec): Promise<VolumeInput | null> {
    const { namespace, name } = this.#o.ref;
    const names = childNames(name);
    const kube = this.#o.kube;
    try {
      const [claims, classes, master, replica] = await Promise.all([
        kube.listRedisClaims(namespace, name),
        kube.listStorageClasses(),
        kube.getStatefulSet(namespace, names.masterSet),
        kube.getStatefulSet(namespace, names.replicaSet),
      ]);
      this.#recovered('read');
      return {
        name,
        persistence: true,
        desiredSize: spec.persistence.size,
        claims: claims.map(claimView),
        storageClasses: new Map(classes.map((c) => [c.metadata?.name ?? '', c.allowVolumeExpansion === true])),
        sets: [master, replica].filter((s): s is V1StatefulSet => s !== null).map(setView),
      };
    } catch (err) {
      this.#failed('read', 'volume expansion: reading claims, StorageClasses or StatefulSets failed', err);
      return null;
    }
  }

  async #apply(action: VolumeAction): Promise<void> {
    const { namespace } = this.#o.ref;
    const kube = this.#o.kube;
    const log = this.#o.log;
    const key = `${action.kind} ${action.kind === 'recreate-statefulset' ? action.name : action.claim}`;
    try {
      switch (action.kind) {
        case 'expand-claim':
          await kube.patchClaim(namespace, action.claim, { storage: action.size, uid: action.uid });
          log.info(
            { claim: action.claim, from: action.from, to: action.size, reason: action.reason },
            'volume expansion: claim storage request raised',
          );
          this.#o.event({
            type: 'Normal',
            reason: 'VolumeExpansion',
            message: `${action.claim} requested ${action.from} -> ${action.size}`,
          });
          break;
        case 'refuse': {
          // The claim already carries this reason: told by an earlier pass, or an earlier leader.
          if (action.told) break;
          const told = `${action.uid} ${action.reason}`;
          if (!this.#told.has(told)) {
            this.#told.add(told);
            log.warn({ claim: action.claim, reason: action.reason }, 'volume expansion refused');
            this.#o.event({ type: 'Warning', reason: 'VolumeExpansionRefused', message: action.reason });
          }
          if (!this.#o.isLeader()) return;
          await kube.patchClaim(namespace, action.claim, {
            annotations: { [RESIZE_REFUSED_ANNOTATION]: action.reason },
            uid: action.uid,
          });
          break;
        }
        case 'clear-refusal':
          await kube.patchClaim(namespace, action.claim, {
            annotations: { [RESIZE_REFUSED_ANNOTATION]: null },
            uid: action.uid,
          });
          log.info(
            { claim: action.claim, reason: action.reason },
            'volume expansion: resize-refused annotation removed',
          );
          break;
        case 'recreate-statefulset':
          await kube.deleteStatefulSetOrphan(namespace, action.name, action.uid);
          log.info(
            { statefulset: action.name, size: action.size, reason: action.reason },
            'volume expansion: StatefulSet deleted with its pods orphaned',
          );
          this.#o.event({
            type: 'Normal',
            reason: 'StatefulSetRecreated',
            message: `StatefulSet ${action.name} deleted with its pods orphaned, pods keep running; it is recreated with ${action.size} volume claim templates and adopts them`,
          });
          break;
      }
      this.#recovered(key);
    } catch (err) {
      // The object was removed or replaced since it was read (the uid precondition): the next pass sees it.
      if (isConflict(err) || isNotFound(err) || isReplaced(err)) return;
      this.#failed(key, `volume expansion: ${action.kind} failed`, err);
    }
  }

  #failed(key: string, msg: string, err: unknown): void {
    const failure = kubeFailure(err);
    const text = `${failure.code ?? failure.reason ?? 'error'}: ${failure.message}`;
    if (this.#failing.get(key) === text) return;
    this.#failing.set(key, text);
    this.#o.log.warn({ action: key, code: failure.code, err: failure.message }, msg);
  }

  #recovered(key: string): void {
    if (this.#failing.delete(key)) this.#o.log.info({ action: key }, 'volume expansion: call works again');
  }
}

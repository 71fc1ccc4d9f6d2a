// What a worker needs around a bootstrap (no pod labelled master: a full restart, a wake from
// hibernation, a fresh set), and what it tells: the Redis' claims (whose volumes may hold data),
// the user's bootstrap-without annotation, and the user-facing record of what the bootstrap waits
// for. Which pods are waited for is decide/bootstrap-wait.ts's answer; this only reads and tells.
//   BootstrapWaiting   Normal   the pods waited for and why (once per change of that list); the
//                               same text in the Redis annotation BOOTSTRAP_STATUS_ANNOTATION,
//                               which the hook shows in the MasterAvailable condition
//   BootstrapGaveUp    Warning  the bootstrap chose without the pods bootstrap-without names
//   BootstrapWithoutRemoved Normal  a master is labelled: the annotation (moot now, dangerous at the
//                               next full restart) is removed
//   BootstrapWithoutInvalid Warning entries that are not pod names of this Redis (never echoed)
// Invariants:
// - Claims are listed only while no pod is labelled master (and some pod exists), by the leader, at most every
//   CLAIMS_EVERY_MS; between two bootstraps, and after a failed list, they are unknown (undefined:
//   the decision then counts every pod's volume as bound when persistence is on).
// - Events go through the worker's leader-checked `event`; annotation writes are made by the
//   leader only, once per change, and retried on a later round when they fail.
import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { BOOTSTRAP_STATUS_ANNOTATION, BOOTSTRAP_WITHOUT_ANNOTATION, ROLE_MASTER } from '../../../api/labels.ts';
import {
  bootstrapWaits,
  describeHolders,
  NOT_PROBED,
  parseBootstrapWithout,
  type ClaimFact,
  type DecideInput,
  type Holder,
  type MasterDecision,
} from '../decide/index.ts';
import type { RedisRef } from '../../adapters/kube/client.ts';
import type { EventToSend } from './events.ts';

export const CLAIMS_EVERY_MS = 1000;

/** The calls this needs (KubeClient has them; a test double may not: then it reads and writes nothing). */
export interface BootstrapKube {
  listRedisClaims?(namespace: string, name: string): Promise<V1PersistentVolumeClaim[]>;
  patchRedisAnnotations?(redis: RedisRef, annotations: Record<string, string | null>): Promise<void>;
}

export interface BootstrapOptions {
  ref: RedisRef;
  log: Logger;
  kube: BootstrapKube;
  isLeader: () => boolean;
  event: (e: EventToSend) => void;
  now: () => number;
  track: (p: Promise<unknown>) => void;
}

export function claimFact(c: V1PersistentVolumeClaim): ClaimFact {
  return { name: c.metadata?.name ?? '', phase: c.status?.phase, deleting: c.metadata?.deletionTimestamp != null };
}

/** The hook shows a record of up to 2000 characters: longer lists end with `and N more`. */
export function statusRecord(holders: readonly Holder[]): string {
  let shown = holders.length;
  const text = (n: number) =>
    `Waiting: ${describeHolders(holders.slice(0, n))}${n < holders.length ? `, and ${holders.length - n} more` : ''}`;
  while (shown > 1 && text(shown).length > 1900) shown--;
  return text(shown);
}

export class BootstrapWatch {
  readonly #o: BootstrapOptions;
  #claims: ClaimFact[] | undefined = undefined;
  #listedAt = -Infinity;
  #listError: string | null = null;
  /** The annotations as last seen on the Redis. */
  #without: string | undefined = undefined;
  #status: string | undefined = undefined;
  #invalidTold: string | undefined = undefined;
  /** What this instance last told (Event), and what it last wrote (annotation). */
  #waitingTold: string | null = null;
  #gaveUpTold: string | null = null;
  #written: string | null | undefined = undefined;
  #busy = false;

  constructor(options: BootstrapOptions) {
    this.#o = options;
  }

  /** The Redis object changed: its annotations. */
  update(annotations: Record<string, string> | undefined): void {
    const without = annotations?.[BOOTSTRAP_WITHOUT_ANNOTATION];
    const status = annotations?.[BOOTSTRAP_STATUS_ANNOTATION];
    // What the object shows now decides what is still to write.
    if (without !== this.#without || status !== this.#status) this.#written = undefined;
    this.#without = without;
    this.#status = status;
  }

  /** The pods the user gave up on (parsed, allow-listed). */
  get without(): string[] {
    return parseBootstrapWithout(this.#without, this.#o.ref.name).pods;
  }

  /** The claims as last listed, listing them again first when due (`noMaster`: a bootstrap may run; leader). */
  async claims(noMaster: boolean): Promise<ClaimFact[] | undefined> {
    const list = this.#o.kube.listRedisClaims;
    if (!noMaster || !list || !this.#o.isLeader()) {
      // The next bootstrap starts from a fresh list, never one from before it.
      this.#claims = undefined;
      this.#listedAt = -Infinity;
      return undefined;
    }
    const now = this.#o.now();
    if (now - this.#listedAt < CLAIMS_EVERY_MS) return this.#claims;
    this.#listedAt = now;
    try {
      this.#claims = (await list.call(this.#o.kube, this.#o.ref.namespace, this.#o.ref.name)).map(claimFact);
      this.#listError = null;
    } catch (err) {
      // Unknown again: the decision counts every volume as bound (waits longer, never loses data).
      this.#claims = undefined;
      const message = err instanceof Error ? err.message : String(err);
      if (this.#listError !== message)
        this.#o.log.warn({ err: message }, 'could not list the claims: the bootstrap counts every volume as bound');
      this.#listError = message;
    }
    return this.#claims;
  }

  /** After the round's decision (leader only): Events and annotations. */
  report(input: DecideInput, decision: MasterDecision): void {
    if (!this.#o.isLeader()) return;
    const { ref } = this.#o;
    const invalid = parseBootstrapWithout(this.#without, ref.name).invalid;
    if (invalid > 0 && this.#invalidTold !== this.#without) {
      this.#invalidTold = this.#without;
      this.#o.event({
        type: 'Warning',
        reason: 'BootstrapWithoutInvalid',
        message: `${invalid} entr${invalid === 1 ? 'y' : 'ies'} of ${BOOTSTRAP_WITHOUT_ANNOTATION} ignored: only names of this Redis' pods (${ref.name}-master-N, ${ref.name}-replica-N) count`,
      });
    }
    const labelled = input.pods.some((p) => p.roleLabel === ROLE_MASTER);
    if (labelled) {
      this.#waitingTold = null;
      // A master exists: the bootstrap is over. Neither record may outlive it (a bootstrap-without
      // left behind would give up on a pod at the next full restart without anyone asking).
      if (decision.kind === 'keep' && (this.#without !== undefined || this.#status !== undefined)) this.#clear();
      return;
    }
    const waits = bootstrapWaits(input);
    // Hibernating on purpose, or no pod at all: nothing is starting, nothing worth telling.
    const quiet = input.spec.hibernate === true || input.pods.length === 0;
    if (!quiet && decision.kind === 'wait' && decision.master === null && waits.waitFor.length > 0) {
      // The first rounds after a start, before the first probes, are not worth an Event.
      if (waits.waitFor.every((h) => h.why === NOT_PROBED)) return;
      const pods = describeHolders(waits.waitFor);
      const names = waits.waitFor.map((h) => h.pod).join(',');
      const message =
        `Bootstrap waiting for pods ${pods}: each may hold data newer than the pods that answer, so no master is chosen before it answers. ` +
        `If a pod is gone for good: kubectl annotate redis ${ref.name} ${BOOTSTRAP_WITHOUT_ANNOTATION}=${names} (writes only it held are lost)`;
      if (this.#waitingTold !== pods) {
        this.#waitingTold = pods;
        this.#o.log.warn({ waitingFor: waits.waitFor }, 'bootstrap waiting for pods that may hold data');
        this.#o.event({ type: 'Normal', reason: 'BootstrapWaiting', message });
      }
      this.#write({ [BOOTSTRAP_STATUS_ANNOTATION]: statusRecord(waits.waitFor) });
      return;
    }
    // Not waiting (any more): the record must not say it is.
    this.#write({ [BOOTSTRAP_STATUS_ANNOTATION]: null });
    if (decision.kind === 'promote' && decision.cause === 'bootstrap' && waits.released.length > 0) {
      const key = `${decision.master}/${describeHolders(waits.released)}`;
      if (this.#gaveUpTold !== key) {
        this.#gaveUpTold = key;
        this.#o.log.warn(
          { master: decision.master, gaveUp: waits.released },
          'bootstrap gave up on pods, as bootstrap-without asks',
        );
        this.#o.event({
          type: 'Warning',
          reason: 'BootstrapGaveUp',
          message: `bootstrap chose ${decision.master} without ${describeHolders(waits.released)}, as ${BOOTSTRAP_WITHOUT_ANNOTATION} asks: writes only they held are lost once they rejoin as replicas`,
        });
      }
    }
  }

  #clear(): void {
    const had = this.#without;
    const value = parseBootstrapWithout(had, this.#o.ref.name).pods.join(', ');
    this.#write({ [BOOTSTRAP_WITHOUT_ANNOTATION]: null, [BOOTSTRAP_STATUS_ANNOTATION]: null }, () => {
      if (had === undefined) return;
      this.#o.event({
        type: 'Normal',
        reason: 'BootstrapWithoutRemoved',
        message: `a master is labelled: ${BOOTSTRAP_WITHOUT_ANNOTATION}${value ? ` (${value})` : ''} is removed, it applies only while a bootstrap waits`,
      });
    });
  }

  /**
   * One annotation patch in the background, unless the object shows it already, or the same one
   * is in flight or was written since the object last changed.
   */
  #write(annotations: Record<string, string | null>, done?: () => void): void {
    const patch = this.#o.kube.patchRedisAnnotations;
    const key = JSON.stringify(annotations);
    const seen: Record<string, string | undefined> = {
      [BOOTSTRAP_WITHOUT_ANNOTATION]: this.#without,
      [BOOTSTRAP_STATUS_ANNOTATION]: this.#status,
    };
    if (Object.entries(annotations).every(([k, v]) => (v ?? undefined) === seen[k])) return;
    if (!patch || this.#busy || this.#written === key) return;
    this.#busy = true;
    this.#written = key;
    const p = patch
      .call(this.#o.kube, this.#o.ref, annotations)
      .then(() => done?.())
      .catch((err: unknown) => {
        this.#written = undefined;
        this.#o.log.debug(
          { err: err instanceof Error ? err.message : String(err) },
          'could not write the bootstrap annotations',
        );
      })
      .finally(() => {
        this.#busy = false;
      });
    this.#o.track(p);
  }
}

// Parents refused their names (api/name-conflict.ts: a parent of the other kind, older, makes
// children with the same names): the managers of both kinds run no worker for one, so no Secret
// is made or read, no Redis command is sent and no status series is kept (its series would be
// the other parent's, they share the name). A parent counts as refused when its status says so
// (the hook's verdict) or when this sidecar's own informers show the older rival (the same pure
// rule, so a parent just created is not acted on before the hook's first status lands).
// Invariants: the verdict is the pure functions' (nothing decided here); one Warning Event per
// refused object, sent only while this instance leads it (a standby tells nothing), retried
// when leadership moves; a refusal lifted is forgotten, so a second one is told again.
import type { Logger } from 'pino';
import {
  NAME_CONFLICT_REASON,
  nameConflictOf,
  nameRefusalOf,
  type ParentFacts,
  type ParentKind,
} from '../../api/name-conflict.ts';
import type { RedisRef } from '../adapters/kube/client.ts';
import { EventSender, type EventSink } from './events.ts';
import type { LeaderView } from './leader.ts';

export interface NameRefusalsOptions {
  kind: ParentKind;
  kube: EventSink;
  logger: Logger;
  /** The other kind's parents in a namespace, as this sidecar's informer has them; absent: the status alone decides. */
  rivals?: ((namespace: string) => ParentFacts[]) | undefined;
  track?: ((p: Promise<unknown>) => void) | undefined;
}

interface Refused {
  ref: RedisRef;
  message: string;
  leader: LeaderView;
  told: boolean;
}

/** The facts the rule reads of a parent object. */
export function parentFacts(
  kind: ParentKind,
  metadata: { name?: string | undefined; uid?: string | undefined; creationTimestamp?: Date | string | undefined },
): ParentFacts {
  const t = metadata.creationTimestamp;
  return {
    kind,
    name: metadata.name ?? '',
    // The API server's RFC 3339 with seconds: what the hook compares (it gets the JSON string).
    creationTimestamp:
      t === undefined ? undefined : typeof t === 'string' ? t : t.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    uid: metadata.uid !== undefined && metadata.uid !== '' ? metadata.uid : undefined,
  };
}

export class NameRefusals {
  readonly #o: NameRefusalsOptions;
  readonly #log: Logger;
  readonly #refused = new Map<string, Refused>();

  constructor(options: NameRefusalsOptions) {
    this.#o = options;
    this.#log = options.logger.child({ module: 'name-refusals' });
  }

  /**
   * Whether the parent is refused its names now (the caller then runs no worker for it). Tells a
   * new refusal in the log and, while leading, in one Event.
   */
  check(ref: RedisRef, metadata: Parameters<typeof parentFacts>[1], status: unknown, leader: LeaderView): boolean {
    const key = `${ref.namespace}/${ref.name}`;
    const message =
      nameRefusalOf(status) ??
      nameConflictOf(parentFacts(this.#o.kind, metadata), this.#o.rivals?.(ref.namespace) ?? [])?.message;
    const known = this.#refused.get(key);
    if (message === undefined) {
      if (known !== undefined) {
        this.#refused.delete(key);
        this.#log.info({ namespace: ref.namespace, name: ref.name }, 'no longer refused its names');
      }
      return false;
    }
    if (known === undefined || known.ref.uid !== ref.uid) {
      this.#log.warn({ namespace: ref.namespace, name: ref.name, reason: message }, 'refused its names: not managed');
      this.#refused.set(key, { ref, message, leader, told: false });
    }
    this.#tell(key);
    return true;
  }

  /** Leadership moved: a refusal not told yet is told by the new leader. */
  leadershipChanged(): void {
    for (const key of this.#refused.keys()) this.#tell(key);
  }

  forget(ref: RedisRef): void {
    const key = `${ref.namespace}/${ref.name}`;
    if (this.#refused.get(key)?.ref.uid === ref.uid) this.#refused.delete(key);
  }

  isRefused(ref: RedisRef): boolean {
    return this.#refused.has(`${ref.namespace}/${ref.name}`);
  }

  #tell(key: string): void {
    const r = this.#refused.get(key);
    if (r === undefined || r.told || !r.leader.isLeader()) return;
    r.told = true;
    const sender = new EventSender({
      ref: r.ref,
      kube: this.#o.kube,
      leader: r.leader,
      now: () => 0,
      track: this.#o.track ?? (() => undefined),
      kind: this.#o.kind === 'Redis' ? undefined : this.#o.kind,
    });
    sender.send({ type: 'Warning', reason: NAME_CONFLICT_REASON, message: r.message });
  }
}

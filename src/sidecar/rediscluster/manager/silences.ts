// How long each pod's node has gone unanswered, across rounds: the durations master-down.ts reads
// (silentForMs, refusedForMs). Owns only that memory; decides nothing.
// Invariants: a silence is counted from the start of the first round whose probe the node did not
// answer at all (an error reply, such as LOADING or an auth refusal, is an answer and ends it); a
// new address, a pod gone or an answer starts it again; refusals count only while every probe
// since was refused.
import { isSilence } from '../../adapters/redis/errors.ts';
import type { RedisErrorKind } from '../../adapters/redis/types.ts';
import type { PodObservation } from '../decide/types.ts';

interface Silence {
  ip: string;
  since: number;
  refusedSince: number | null;
}

export class Silences {
  readonly #by = new Map<string, Silence>();

  /** Sets silentForMs and refusedForMs on every pod; `probedAt` is when this round's probes were sent. */
  observe(pods: PodObservation[], probedAt: number): void {
    const seen = new Set<string>();
    for (const p of pods) {
      seen.add(p.uid);
      const probe = p.probe;
      if (!p.ip || !probe || probe.ok || !isSilence(probe.kind as RedisErrorKind)) {
        this.#by.delete(p.uid);
        p.silentForMs = null;
        p.refusedForMs = null;
        continue;
      }
      let s = this.#by.get(p.uid);
      if (!s || s.ip !== p.ip) this.#by.set(p.uid, (s = { ip: p.ip, since: probedAt, refusedSince: null }));
      s.refusedSince = probe.kind === 'refused' ? (s.refusedSince ?? probedAt) : null;
      p.silentForMs = probedAt - s.since;
      p.refusedForMs = s.refusedSince === null ? null : probedAt - s.refusedSince;
    }
    for (const uid of [...this.#by.keys()]) if (!seen.has(uid)) this.#by.delete(uid);
  }

  clear(): void {
    this.#by.clear();
  }
}

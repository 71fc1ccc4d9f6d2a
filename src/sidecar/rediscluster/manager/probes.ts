// The round's probes, so a hung node does not slow every round down to the command timeout: a
// node whose last probe timed out is waited for only briefly; while its probe is still in flight
// the round reads it as still silent (its last outcome) and goes on, and the probe's answer counts
// for the round that sees it. Owns the in-flight probes; decides nothing.
// Invariants: at most one probe in flight per address; only a node whose last outcome was a
// timeout is ever read from the past (any other node is awaited, as before), and only while a
// newer probe of it has not answered; retain() drops the addresses gone from the pod list.
import type { ProbeOutcome } from '../decide/types.ts';

/** How long a round waits for a node that timed out last time before reading it as still silent. */
export const SILENT_WAIT_MS = 50;

export class RoundProbes {
  readonly #probe: (ip: string) => Promise<ProbeOutcome>;
  readonly #inFlight = new Map<string, Promise<ProbeOutcome>>();
  readonly #last = new Map<string, ProbeOutcome>();

  constructor(probe: (ip: string) => Promise<ProbeOutcome>) {
    this.#probe = probe;
  }

  async get(ip: string): Promise<ProbeOutcome> {
    let pending = this.#inFlight.get(ip);
    if (!pending) {
      pending = this.#probe(ip).then((outcome) => {
        if (this.#inFlight.get(ip) === pending) {
          this.#inFlight.delete(ip);
          this.#last.set(ip, outcome);
        }
        return outcome;
      });
      this.#inFlight.set(ip, pending);
    }
    const last = this.#last.get(ip);
    if (!last || last.ok || last.kind !== 'timeout') return pending;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stillSilent = new Promise<ProbeOutcome>((resolve) => {
      timer = setTimeout(() => resolve(last), SILENT_WAIT_MS);
    });
    try {
      return await Promise.race([pending, stillSilent]);
    } finally {
      clearTimeout(timer);
    }
  }

  retain(ips: Iterable<string>): void {
    const keep = new Set(ips);
    for (const ip of [...this.#last.keys()]) if (!keep.has(ip)) this.#last.delete(ip);
    for (const ip of [...this.#inFlight.keys()]) if (!keep.has(ip)) this.#inFlight.delete(ip);
  }

  clear(): void {
    this.#inFlight.clear();
    this.#last.clear();
  }
}

// A renewed TLS certificate on every node without a restart: the leader compares the certificate
// each node serves with the one in the Secret (credentials.ts reads it) and has the nodes that
// differ load their files again (decide/tls.ts says which, and when to ask again).
// Invariants: leader only; runs in the background one pass at a time, never holding up a round;
// a node is told about once per certificate (an Event when it serves the new one).
import type { Logger } from 'pino';
import { currentFacts, endpointOf, type DecideInput } from '../decide/index.ts';
import { decideTlsReload, type ServedCertificate } from '../decide/tls.ts';
import type { Endpoint } from '../../adapters/redis/index.ts';
import type { ActionResult, RedisFailure } from '../../adapters/redis/types.ts';
import type { EventToSend } from './events.ts';

export interface TlsReloaderOptions {
  log: Logger;
  isLeader: () => boolean;
  event: (e: EventToSend) => void;
  now: () => number;
  /** The fingerprint of the Secret's certificate; null when TLS is off or it is not read yet. */
  certificate: () => string | null;
  served: (endpoint: Endpoint) => Promise<{ ok: true; fingerprint: string } | { ok: false; error: RedisFailure }>;
  reload: (endpoint: Endpoint) => Promise<ActionResult>;
  /** How often nodes are compared while they all match, and how long after a reload to ask again. */
  checkEveryMs: number;
  retryMs: number;
}

export class TlsReloader {
  readonly #o: TlsReloaderOptions;
  readonly #reloadedAt = new Map<string, { at: number; wanted: string }>();
  #checkedAt = -Infinity;
  #stale = false;

  constructor(options: TlsReloaderOptions) {
    this.#o = options;
  }

  async reconcile(input: DecideInput): Promise<void> {
    const wanted = this.#o.certificate();
    const now = this.#o.now();
    if (wanted === null || !this.#o.isLeader()) return;
    if (now - this.#checkedAt < (this.#stale ? Math.min(this.#o.retryMs, this.#o.checkEveryMs) : this.#o.checkEveryMs))
      return;
    this.#checkedAt = now;
    const nodes: Array<ServedCertificate & { ip: string }> = [];
    for (const pod of input.pods) {
      const facts = currentFacts(pod, input.now, input.config);
      if (!facts || pod.deleting || pod.ip === null) continue;
      const served = await this.#o.served(endpointOf(pod.ip));
      const last = this.#reloadedAt.get(pod.name);
      nodes.push({
        pod: pod.name,
        ip: pod.ip,
        fingerprint: served.ok ? served.fingerprint : null,
        reloadedAt: last?.wanted === wanted ? last.at : undefined,
      });
    }
    const d = decideTlsReload(wanted, nodes, now, this.#o.retryMs);
    this.#stale = nodes.some((n) => n.fingerprint !== null && n.fingerprint !== wanted);
    for (const pod of d.current) {
      if (this.#reloadedAt.get(pod)?.wanted !== wanted) continue;
      this.#reloadedAt.delete(pod);
      this.#o.log.info({ pod }, 'the node serves the renewed TLS certificate');
      this.#o.event({
        type: 'Normal',
        reason: 'TLSCertificateLoaded',
        message: `${pod} serves the renewed certificate from the TLS Secret (loaded without a restart)`,
      });
    }
    for (const pod of d.reload) {
      const node = nodes.find((n) => n.pod === pod)!;
      if (!this.#o.isLeader()) return;
      const r = await this.#o.reload(endpointOf(node.ip));
      this.#reloadedAt.set(pod, { at: now, wanted });
      if (r.ok) this.#o.log.info({ pod, reason: d.reason }, 'asked the node to load its TLS files again');
      // A half-updated pair (certificate and key replaced one after the other) is refused by Redis, which keeps the old
      // one: asked again later.
      else this.#o.log.warn({ pod, err: r.error.message }, 'the node did not load its TLS files (retried)');
    }
  }
}

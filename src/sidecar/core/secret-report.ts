// The sidecar's report on a Redis's (or RedisCluster's) Secrets: it reads each Secret the spec
// names by GET (RBAC allows get, never list or watch), and writes what the hook needs on the
// parent (api/secret-report.ts's annotation): names, resourceVersions, key names, which passwords
// cannot be given to Redis. The decisions (what, when) are core/decide/secret-report.ts's.
// Invariants:
// - Leader only; one look at a time; a value read here never leaves this module (not in a log, an
//   Event or the annotation): only key names and resourceVersions do.
// - A failed read or write is logged (without the API's body) and retried at the next look.
import type { V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { SECRETS_ANNOTATION, type SecretNeed } from '../../api/secret-report.ts';
import { decideReportLook, reportComplete, reportToWrite, type FetchedSecret } from './decide/secret-report.ts';
import { kubeFailure, type RedisRef } from '../adapters/kube/client.ts';

export interface SecretReporterOptions {
  ref: RedisRef;
  log: Logger;
  isLeader(): boolean;
  now(): number;
  /** The Secret, or null when it does not exist (kube/secrets.ts getSecret); undefined: no client, no report. */
  getSecret: ((namespace: string, name: string) => Promise<V1Secret | null>) | undefined;
  /** Merge-patches the parent's annotations (guarded by its uid). */
  patch: ((annotations: Record<string, string | null>) => Promise<void>) | undefined;
  everyMs: number;
}

export class SecretReporter {
  readonly #o: SecretReporterOptions;
  #needs: SecretNeed[] | undefined;
  #needsKey: string | undefined;
  #lookedNeeds: string | undefined;
  #lookedAt = -Infinity;
  #complete = false;
  #current: string | undefined;
  #look: Promise<void> | null = null;

  constructor(options: SecretReporterOptions) {
    this.#o = options;
  }

  /** The Secrets a valid spec names (undefined: the spec is invalid, nothing is reported). */
  setNeeds(needs: SecretNeed[] | undefined): void {
    this.#needs = needs;
    this.#needsKey = needs === undefined ? undefined : JSON.stringify(needs);
  }

  /** The parent's annotation as the watch shows it now. */
  observe(annotations: Record<string, string> | undefined): void {
    this.#current = annotations?.[SECRETS_ANNOTATION];
  }

  /** Starts a look when one is due; returns it (the caller tracks it) or null. */
  tick(): Promise<void> | null {
    if (this.#look || !this.#o.getSecret || !this.#o.patch) return null;
    const due = decideReportLook({
      leader: this.#o.isLeader(),
      needs: this.#needsKey,
      lookedNeeds: this.#lookedNeeds,
      lookedAt: this.#lookedAt,
      complete: this.#complete,
      everyMs: this.#o.everyMs,
      now: this.#o.now(),
    });
    if (!due.look || this.#needs === undefined) return null;
    this.#lookedAt = this.#o.now();
    const needs = this.#needs;
    const key = this.#needsKey;
    this.#look = this.#report(needs)
      .then((complete) => {
        this.#lookedNeeds = key;
        this.#complete = complete;
      })
      .catch((err: unknown) => {
        this.#lookedNeeds = key;
        this.#complete = false;
        const f = kubeFailure(err);
        this.#o.log.warn({ code: f.code, err: f.message }, 'could not report on the Secrets');
      })
      .finally(() => {
        this.#look = null;
      });
    return this.#look;
  }

  async #report(needs: SecretNeed[]): Promise<boolean> {
    const { ref } = this.#o;
    const fetched = new Map<string, FetchedSecret>();
    await Promise.all(
      needs.map(async (n) => {
        const s = await this.#o.getSecret!(ref.namespace, n.name);
        fetched.set(
          n.name,
          s === null ? null : { resourceVersion: s.metadata?.resourceVersion ?? '', data: s.data ?? {} },
        );
      }),
    );
    const value = reportToWrite(needs, fetched, this.#current);
    if (value !== null && this.#o.isLeader()) {
      await this.#o.patch!({ [SECRETS_ANNOTATION]: value });
      this.#current = value;
      // The report holds names only: safe to log whole.
      this.#o.log.info({ report: value }, 'reported the Secrets on the parent');
    }
    return reportComplete(needs, fetched);
  }
}

// What the sidecar reports on the parent about its Secrets (api/secret-report.ts's annotation),
// and when it looks again. Pure.
// Invariants:
// - The report holds, per Secret the spec names, its resourceVersion, which of the named keys it
//   has and which password keys break passwordWritable: names only, never a value.
// - A write happens only when the report differs from the annotation on the object now (a
//   hand-edited one is put right at the next look; an unchanged one costs no write).
// - Looks happen every `everyMs` while everything is found, every REPORT_RETRY_MS while a Secret
//   or key is missing or a read failed (a Secret created by the user shows within seconds), and
//   at once when the spec names other Secrets.
import {
  formatSecretReport,
  passwordWritable,
  type ReportedSecret,
  type SecretNeed,
} from '../../../api/secret-report.ts';

/** A missing Secret, or a failed look, is looked at again after this long. */
export const REPORT_RETRY_MS = 2000;

/** A Secret as read: its resourceVersion and data (base64, as the API gives it); null when it does not exist. */
export type FetchedSecret = { resourceVersion: string; data: Readonly<Record<string, string>> } | null;

/** The report for `needs` from what was read (a Secret not in `fetched` counts as missing). */
export function buildSecretReport(
  needs: readonly SecretNeed[],
  fetched: ReadonlyMap<string, FetchedSecret>,
): ReportedSecret[] {
  return needs.map((need) => {
    const secret = fetched.get(need.name) ?? null;
    if (secret === null) return { name: need.name, missing: true };
    const keys = need.keys.filter((k) => Object.hasOwn(secret.data, k));
    const unwritable = need.passwordKeys.filter(
      (k) => keys.includes(k) && !passwordWritable(Buffer.from(secret.data[k]!, 'base64').toString('utf8')),
    );
    return { name: need.name, resourceVersion: secret.resourceVersion, keys, unwritable };
  });
}

/** The annotation value to write, or null when the object already carries it. */
export function reportToWrite(
  needs: readonly SecretNeed[],
  fetched: ReadonlyMap<string, FetchedSecret>,
  current: string | undefined,
): string | null {
  const value = formatSecretReport(buildSecretReport(needs, fetched));
  return value === current ? null : value;
}

/** Whether every Secret and named key was found (else the next look comes sooner). */
export function reportComplete(needs: readonly SecretNeed[], fetched: ReadonlyMap<string, FetchedSecret>): boolean {
  return needs.every((n) => {
    const s = fetched.get(n.name);
    return s != null && n.keys.every((k) => Object.hasOwn(s.data, k));
  });
}

export interface ReportLookState {
  leader: boolean;
  /** The needs now, as one string (undefined: no valid spec, nothing to report). */
  needs: string | undefined;
  /** The needs at the last completed look (undefined: none yet). */
  lookedNeeds: string | undefined;
  /** When the last look started (-Infinity: never). */
  lookedAt: number;
  /** The last look found every Secret and key and did not fail. */
  complete: boolean;
  everyMs: number;
  now: number;
}

export function decideReportLook(s: ReportLookState): { look: boolean; reason: string } {
  if (!s.leader) return { look: false, reason: 'only the leader reports' };
  if (s.needs === undefined) return { look: false, reason: 'no valid spec' };
  if (s.needs !== s.lookedNeeds) return { look: true, reason: 'the spec names other Secrets' };
  const wait = s.complete ? s.everyMs : Math.min(s.everyMs, REPORT_RETRY_MS);
  return s.now - s.lookedAt >= wait
    ? { look: true, reason: s.complete ? 'polled' : 'a Secret or key was missing, or the look failed' }
    : { look: false, reason: 'looked recently' };
}

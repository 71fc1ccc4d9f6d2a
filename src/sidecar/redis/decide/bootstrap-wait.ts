// Which pods a bootstrap must wait for before it chooses the first master (no pod labelled master:
// a full restart, a wake from hibernation, a fresh set), and the user's way out for a pod that is
// gone for good. Pure.
// "May hold data", for every pod the StatefulSets run now (<name>-master-0, <name>-replica-0 ..
// spec.replicas-1) and any other pod of the Redis that exists:
// - It answers and is not loading: it is read, a candidate; nothing to wait for.
// - It is loading (INFO loading:1, or the LOADING error): its data set is being read from disk.
// - Its claim data-<pod> is Bound: the volume outlives the pod, whatever the pod is doing (no pod
//   yet, Pending, attaching the volume, creating the container, crash-looping, being replaced).
//   A Bound claim whose pod never ran cannot be told from one with data (Kubernetes records no
//   "was mounted", and an empty data set looks like a lost one), so it is waited for too: a fresh
//   set whose pod never starts waits and says so, rather than ever start from less than the newest
//   data. A claim that is Pending (never had a volume), Lost (its volume is gone), being deleted
//   (its data goes with it) or absent holds nothing.
// - No Bound claim (ephemeral storage, or an emptyDir): data lives only where Redis runs, so only
//   a pod that is Running with an IP is waited for (it may hold data in memory it cannot tell us
//   yet); with persistence off, one whose redis container is gone holds nothing (it restarts empty).
// - Claims not listed yet (undefined): with persistence on every such pod counts as Bound.
// There is no timer: a bootstrap waits as long as it takes. The way out is explicit: the pods the
// Redis' bootstrap-without annotation names are not waited for (only those, and only by a
// bootstrap: once a master is labelled the annotation means nothing and the sidecar removes it).
import { DATA_VOLUME } from '../../../api/labels.ts';
import { parseBootstrapWithout } from '../../../api/bootstrap.ts';
import { compareCodeUnits } from '../../../api/order.ts';
import { currentFacts, expectedPodNames } from './observe.ts';
import type { DecideInput, PodObservation } from './types.ts';

/** A pod a bootstrap waits for, and why it may hold data. */
export interface Holder {
  pod: string;
  why: string;
}

export interface BootstrapWaits {
  /** Not readable yet and may hold data: the choice waits for every one. */
  waitFor: Holder[];
  /** Would be waited for, but the bootstrap-without annotation names them: given up. */
  released: Holder[];
}

/** A running pod not probed yet: waited for, but nothing worth telling a user yet. */
export const NOT_PROBED = 'not probed yet';

/** The pod whose volume a claim is (`data-<pod>`), or null. */
export function podOfClaim(claim: string): string | null {
  const prefix = `${DATA_VOLUME}-`;
  return claim.startsWith(prefix) && claim.length > prefix.length ? claim.slice(prefix.length) : null;
}

function loading(pod: PodObservation, input: DecideInput): boolean {
  const t = pod.redis;
  if (!t || pod.ip === null || t.ip !== pod.ip) return false;
  if (t.lastError?.kind === 'loading') return true;
  return currentFacts(pod, input.now, input.config)?.loading === true;
}

/** Answering now, not loading, not going away: its data is known. */
function readable(pod: PodObservation, input: DecideInput): boolean {
  const f = currentFacts(pod, input.now, input.config);
  return f !== null && !f.loading && !pod.deleting;
}

/** Why a pod that is not readable may hold data, or null when it cannot. */
function holds(pod: PodObservation | undefined, bound: boolean, input: DecideInput): string | null {
  if (pod && !pod.deleting && loading(pod, input)) return 'loading its data set';
  const running = pod !== undefined && !pod.deleting && pod.phase === 'Running' && pod.ip !== null;
  if (running && pod.redis === null && (bound || !pod.redisContainerGone)) return NOT_PROBED;
  if (bound) {
    if (!pod) return 'volume bound, no pod yet';
    if (pod.deleting) return 'volume bound, pod being replaced';
    if (pod.phase !== 'Running') return `volume bound, pod ${pod.phase ?? 'not running'}`;
    if (pod.ip === null) return 'volume bound, pod has no IP yet';
    if (pod.redisContainerGone) return 'volume bound, redis container not running';
    return 'volume bound, not answering';
  }
  if (!pod || pod.deleting || pod.phase !== 'Running' || pod.ip === null) return null;
  if (pod.redisContainerGone && !input.spec.persistence) return null;
  return pod.redisContainerGone ? 'running, redis container restarting' : 'running, not answering';
}

/**
 * The pods a bootstrap waits for (sorted by name). Claims of pods the StatefulSets do not run
 * (left by a scale-down) are not waited for: nothing will start them.
 */
export function bootstrapWaits(input: DecideInput): BootstrapWaits {
  const byName = new Map(input.pods.map((p) => [p.name, p]));
  // Hibernating, the StatefulSets run no pod: only pods that still exist are looked at.
  const expected = input.spec.hibernate ? [] : expectedPodNames(input.name, input.spec.replicas);
  const names = new Set([...expected, ...byName.keys()]);
  const bound = new Set<string>();
  if (input.claims === undefined) {
    if (input.spec.persistence) for (const n of names) bound.add(n);
  } else {
    for (const c of input.claims) {
      const pod = podOfClaim(c.name);
      if (pod !== null && c.phase === 'Bound' && !c.deleting) bound.add(pod);
    }
  }
  const without = new Set(input.bootstrapWithout ?? []);
  const out: BootstrapWaits = { waitFor: [], released: [] };
  for (const name of [...names].sort(compareCodeUnits)) {
    const pod = byName.get(name);
    if (pod && readable(pod, input)) continue;
    const why = holds(pod, bound.has(name), input);
    if (why === null) continue;
    (without.has(name) ? out.released : out.waitFor).push({ pod: name, why });
  }
  return out;
}

export function describeHolders(holders: readonly Holder[]): string {
  return holders.map((h) => `${h.pod} (${h.why})`).join(', ');
}

export { parseBootstrapWithout };

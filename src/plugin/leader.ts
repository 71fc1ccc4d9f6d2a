// Which sidecar instance leads a given Redis or RedisCluster, from what the API server holds: the
// operator Deployment's sidecar settings (SHARDS, LEASE_NAME) and the Leases of its namespace.
// Pure: the objects and the cluster's "now" in, a view out.
// Why read the Lease rather than a status field the sidecar writes: the Lease is the very record
// leadership is decided by, renewed every few seconds, so it is right at the moment on-call looks
// (a leader that died cannot correct a field it wrote, and every takeover would have to rewrite
// every Redis of the shard).
// Invariants: the shard of a Redis is the sidecar's own function (api/shards.ts), never a copy;
// a Lease is called held only while renewTime + leaseDurationSeconds is ahead of the cluster's
// clock and it names a holder; whatever cannot be read is said to be unknown, never guessed.
import { DEFAULT_LEASE_NAME, shardLeaseName, shardOf } from '../api/shards.ts';

export interface LeaseLike {
  metadata?: { name?: string };
  spec?: { holderIdentity?: string | null; renewTime?: string | Date | null; leaseDurationSeconds?: number | null };
}
interface EnvVar {
  name?: string;
  value?: string;
}
export interface DeploymentLike {
  spec?: { template?: { spec?: { containers?: Array<{ name?: string; env?: EnvVar[] }> } } };
}

export interface LeaderView {
  /** The Lease that decides who acts on this Redis, and its namespace. */
  lease: string;
  namespace: string;
  shard: number;
  shards: number;
  /**
   * Where SHARDS was read: the Deployment's sidecar env, or the Leases that exist when the Deployment could not be
   * read.
   */
  shardsFrom: 'deployment' | 'leases';
  /**
   * held: a live holder acts; expired: the holder stopped renewing (nobody acts until another takes it); unheld:
   * released or never taken.
   */
  state: 'held' | 'expired' | 'unheld';
  holder: string | null;
  /** Seconds since the last renewal, on the cluster's clock. */
  renewedSecondsAgo: number | null;
}

export type LeaderLookup = { ok: true; view: LeaderView } | { ok: false; reason: string };

function sidecarEnv(d: DeploymentLike | null): Map<string, string> {
  const c = d?.spec?.template?.spec?.containers?.find((x) => x.name === 'sidecar');
  return new Map(
    (c?.env ?? []).flatMap((e) => (e.name !== undefined && e.value !== undefined ? [[e.name, e.value] as const] : [])),
  );
}

/**
 * The sidecar instance that leads namespace/name. `deployment` and `leases` are null when they
 * could not be read; `operatorNamespace` is where the plugin looked (--operator-namespace).
 */
export function leaderOf(
  namespace: string,
  name: string,
  deployment: DeploymentLike | null,
  leases: LeaseLike[] | null,
  operatorNamespace: string,
  now: number,
): LeaderLookup {
  const env = sidecarEnv(deployment);
  const base = env.get('LEASE_NAME') ?? DEFAULT_LEASE_NAME;
  const leaseNamespace = operatorNamespace;
  if (leases === null)
    return {
      ok: false,
      reason: `the Leases in namespace "${leaseNamespace}" could not be read (no access, or not the operator's namespace: --operator-namespace)`,
    };
  let shards: number;
  let shardsFrom: LeaderView['shardsFrom'];
  if (deployment !== null) {
    // The sidecar's own default when SHARDS is unset is one Lease for all.
    shards = Number(env.get('SHARDS') ?? '1');
    shardsFrom = 'deployment';
  } else {
    const names = leases.map((l) => l.metadata?.name ?? '');
    const indices = names.flatMap((n) =>
      n.startsWith(`${base}-shard-`) && /^\d+$/.test(n.slice(base.length + 7))
        ? [Number(n.slice(base.length + 7))]
        : [],
    );
    if (indices.length > 0) shards = Math.max(...indices) + 1;
    else if (names.includes(base)) shards = 1;
    else
      return {
        ok: false,
        reason: `no Lease ${base} or ${base}-shard-N in namespace "${leaseNamespace}", and the Deployment could not be read: is the operator installed there?`,
      };
    shardsFrom = 'leases';
  }
  if (!Number.isInteger(shards) || shards < 1)
    return { ok: false, reason: `the Deployment's SHARDS is not a shard count: ${env.get('SHARDS')}` };
  const shard = shardOf(namespace, name, shards);
  const lease = shardLeaseName(base, shard, shards);
  const found = leases.find((l) => l.metadata?.name === lease);
  const holder = found?.spec?.holderIdentity || null;
  const renew = found?.spec?.renewTime ? new Date(found.spec.renewTime).getTime() : NaN;
  const ago = Number.isFinite(renew) ? Math.max(0, Math.round((now - renew) / 1000)) : null;
  const live =
    holder !== null && Number.isFinite(renew) && renew + (found?.spec?.leaseDurationSeconds ?? 15) * 1000 >= now;
  return {
    ok: true,
    view: {
      lease,
      namespace: leaseNamespace,
      shard,
      shards,
      shardsFrom,
      state: live ? 'held' : holder !== null ? 'expired' : 'unheld',
      holder,
      renewedSecondsAgo: ago,
    },
  };
}

/** The lines `kubectl redis status` prints about the leading instance. */
export function leaderLines(l: LeaderLookup): string[] {
  if (!l.ok) return [`  unknown: ${l.reason}`];
  const v = l.view;
  const where = `Lease ${v.namespace}/${v.lease}${v.shards > 1 ? `, shard ${v.shard} of ${v.shards}` : ''}${v.shardsFrom === 'leases' ? ' (SHARDS from the Leases: the Deployment could not be read)' : ''}`;
  const ago = v.renewedSecondsAgo === null ? '' : `, renewed ${v.renewedSecondsAgo}s ago`;
  if (v.state === 'held')
    return [
      `  ${v.holder} leads it (${where}${ago})`,
      `  its log: kubectl logs -n ${v.namespace} ${v.holder} -c sidecar`,
    ];
  if (v.state === 'expired')
    return [
      `  nobody leads it: ${v.holder} held ${where} and stopped renewing it${ago}; another sidecar takes it within the lease duration`,
      `  the last holder's log, while its pod exists: kubectl logs -n ${v.namespace} ${v.holder} -c sidecar`,
    ];
  return [`  nobody leads it: ${where} has no holder (RedisOperatorShardUnheld / RedisOperatorNoLeader)`];
}

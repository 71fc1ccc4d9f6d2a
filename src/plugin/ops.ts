// The plugin's decisions: the documented objects each command writes, what a waited-for state
// means (done, refused, still going), and what an API failure means for the user. Pure.
// Invariant: every write is a documented one (README "Day-2 operations", "Backup and restore"):
// the switchover annotation (on a Redis or a RedisCluster), spec.hibernate by merge patch, a
// RedisBackup, a new Redis with spec.restore, the bootstrap-without annotation.
import { parseBootstrapWithout, waitedPods } from '../api/bootstrap.ts';
import {
  API_VERSION,
  BOOTSTRAP_STATUS_ANNOTATION,
  BOOTSTRAP_WITHOUT_ANNOTATION,
  KIND,
  SWITCHOVER_ANNOTATION,
  readSwitchoverRecord,
} from '../api/labels.ts';
import { REDISBACKUP_KIND } from '../api/redisbackup-schema.ts';
import type { RedisStatus } from '../api/schema.ts';
import type { RedisBackupStatus } from '../api/redisbackup-schema.ts';

export type Progress = { state: 'done' | 'refused' | 'waiting'; line: string };

/** The request value: a repeat of the last handled request gets a fresh `@tag`, or it would never run. */
export function switchoverRequest(target: string | undefined, current: string | undefined, tag: string): string {
  const base = target ?? 'any';
  const prev = current?.split('@')[0];
  return prev === base ? `${base}@${tag}` : base;
}

export function switchoverPatch(request: string) {
  return { metadata: { annotations: { [SWITCHOVER_ANNOTATION]: request } } };
}

/** `<request>: <Done|Refused|Running>: <why>`, as the sidecar writes it, for this request only. */
export function switchoverProgress(request: string, status: RedisStatus | undefined): Progress {
  return switchoverRecordProgress(request, status?.switchover);
}

/**
 * A RedisCluster's switchover request: a replica pod (`--to`), or `shard-<N>` for that shard's best
 * replica (`--shard`); exactly one of them.
 */
export function clusterSwitchoverTarget(
  to: string | undefined,
  shard: string | undefined,
): { ok: true; target: string } | { ok: false; reason: string } {
  if ((to === undefined) === (shard === undefined))
    return {
      ok: false,
      reason: 'a RedisCluster has a master per shard: give --shard N (its best replica) or --to POD',
    };
  if (to !== undefined) return { ok: true, target: to };
  return /^(0|[1-9][0-9]?)$/.test(shard!)
    ? { ok: true, target: `shard-${shard}` }
    : { ok: false, reason: `--shard ${shard}: not a shard number` };
}

/** The record as written on the Redis (status.switchover) or the RedisCluster (its switchover-status annotation). */
export function switchoverRecordProgress(request: string, value: string | undefined): Progress {
  const record = readSwitchoverRecord(value);
  if (record === null || record.request !== request || record.result === '')
    return { state: 'waiting', line: `waiting for the operator to take request ${request}` };
  const rest = record.result;
  if (rest.startsWith('Done')) return { state: 'done', line: rest };
  if (rest.startsWith('Refused')) return { state: 'refused', line: rest };
  return { state: 'waiting', line: rest };
}

export const hibernatePatch = (on: boolean) => ({ spec: { hibernate: on } });

/** Done when hibernated (every pod stopped), or awake and Ready; a Redis's or a RedisCluster's status. */
export function hibernateProgress(
  on: boolean,
  status: (Pick<RedisStatus, 'conditions'> & { phase?: string | undefined }) | undefined,
): Progress {
  const phase = status?.phase ?? 'Unknown';
  const cond = status?.conditions?.find((c) => c.type === 'Hibernated');
  const why = cond ? `${cond.reason}: ${cond.message}` : 'no Hibernated condition yet';
  if (on)
    return {
      state: phase === 'Hibernated' && cond?.status === 'True' ? 'done' : 'waiting',
      line: `phase ${phase}, ${why}`,
    };
  const ready = status?.conditions?.find((c) => c.type === 'Ready');
  return {
    state: phase === 'Running' && ready?.status === 'True' ? 'done' : 'waiting',
    line: `phase ${phase}, Ready ${ready ? `${ready.status} (${ready.reason})` : 'unknown'}`,
  };
}

/**
 * Giving up on pods a bootstrap waits for: only pods the sidecar's bootstrap-status record names
 * (it waits for them now), so the annotation can never be left armed for a later full restart.
 */
export function bootstrapWithout(
  redis: { metadata: { name: string; annotations?: Record<string, string> } },
  requested: readonly string[],
): { ok: true; pods: string[]; patch: object; warning: string } | { ok: false; reason: string } {
  const name = redis.metadata.name;
  const waited = waitedPods(redis.metadata.annotations?.[BOOTSTRAP_STATUS_ANNOTATION]);
  if (waited.length === 0)
    return { ok: false, reason: `no bootstrap of ${name} waits for a pod now: nothing to give up on` };
  const { pods, invalid } = parseBootstrapWithout(requested.join(','), name);
  if (invalid > 0 || pods.length === 0)
    return { ok: false, reason: `give pod names of ${name} (${name}-master-N, ${name}-replica-N)` };
  const other = pods.filter((p) => !waited.includes(p));
  if (other.length > 0)
    return {
      ok: false,
      reason: `the bootstrap does not wait for ${other.join(', ')}; it waits for ${waited.join(', ')}`,
    };
  return {
    ok: true,
    pods,
    patch: { metadata: { annotations: { [BOOTSTRAP_WITHOUT_ANNOTATION]: pods.join(',') } } },
    warning: `WARNING: the master is chosen without ${pods.join(', ')}: writes only ${pods.length === 1 ? 'it' : 'they'} held are lost when ${pods.length === 1 ? 'it rejoins' : 'they rejoin'} as a replica`,
  };
}

/** Done once a pod is labelled master (the bootstrap chose). */
export function bootstrapProgress(status: RedisStatus | undefined): Progress {
  const cond = status?.conditions?.find((c) => c.type === 'MasterAvailable');
  const line = `master ${status?.master ?? 'none yet'}${cond ? `, MasterAvailable ${cond.status} (${cond.reason}): ${cond.message}` : ''}`;
  return { state: status?.master !== undefined ? 'done' : 'waiting', line };
}

export function backupObject(redis: string, namespace: string, name: string) {
  return { apiVersion: API_VERSION, kind: REDISBACKUP_KIND, metadata: { name, namespace }, spec: { redis } };
}

/**
 * Why `kubectl redis backup` cannot work for this Redis, or undefined: a RedisBackup goes where the
 * Redis's spec.backup.storage says, so without it the RedisBackup could only fail.
 */
export function backupRefusal(redis: {
  metadata: { name: string };
  spec?: Record<string, unknown>;
}): string | undefined {
  const backup = redis.spec?.['backup'];
  const storage =
    typeof backup === 'object' && backup !== null ? (backup as Record<string, unknown>)['storage'] : undefined;
  if (typeof storage === 'object' && storage !== null) return undefined;
  return `${redis.metadata.name} has no spec.backup.storage: a backup goes where it says (s3 or pvc; no schedule needed), so set it first (README "Backup and restore")`;
}

export function backupProgress(status: RedisBackupStatus | undefined): Progress {
  const phase = status?.phase ?? 'Pending';
  const why = [status?.reason, status?.message].filter(Boolean).join(': ');
  const line = `phase ${phase}${why ? `, ${why}` : ''}`;
  if (phase === 'Completed')
    return {
      state: 'done',
      line: `${line}; ${status?.location ?? ''} ${status?.sizeBytes ?? '?'} bytes at offset ${status?.replicationOffset ?? '?'}`,
    };
  if (phase === 'Failed') return { state: 'refused', line };
  return { state: 'waiting', line };
}

/** A restore is a new Redis: spec.restore is honoured at creation only, into empty volumes. */
export function restoreObject(
  name: string,
  namespace: string,
  from: { backup?: string; location?: string },
  spec: Record<string, unknown>,
) {
  const restore = from.backup ? { backup: from.backup } : { location: from.location };
  return { apiVersion: API_VERSION, kind: KIND, metadata: { name, namespace }, spec: { ...spec, restore } };
}

/** A Secret name (a DNS subdomain), the only form --tls-secret takes. */
const SECRET_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

export type LikeSpec = { ok: true; spec: Record<string, unknown>; leftOut: string[] } | { ok: false; reason: string };

/**
 * The spec of a restore `--like` another Redis: a copy of its spec without what cannot carry over
 * to a new Redis, each named in `leftOut` with why. `tlsSecret` (--tls-secret) is the new Redis's
 * TLS Secret. Left out: spec.restore (the new one restores from what the command says),
 * spec.hibernate (a hibernated copy would never start, so never restore), and spec.tls.secretName
 * (its certificate names the other Redis, which the sidecar refuses for this one): with
 * tls.certManager, cert-manager issues one for the new name; without it, the command is refused
 * unless --tls-secret names a Secret for the new Redis (leaving TLS out would serve the restored
 * data in plaintext).
 */
export function likeSpec(
  source: string,
  sourceSpec: Record<string, unknown>,
  target: { name: string; namespace: string },
  tlsSecret?: string,
): LikeSpec {
  if (tlsSecret !== undefined && !SECRET_NAME.test(tlsSecret))
    return { ok: false, reason: `--tls-secret ${JSON.stringify(tlsSecret)}: not a Secret name` };
  const spec = structuredClone(sourceSpec);
  const leftOut: string[] = [];
  if (spec['restore'] !== undefined)
    leftOut.push(`spec.restore of ${source} (this Redis restores from the backup given here)`);
  delete spec['restore'];
  if (spec['hibernate'] === true)
    leftOut.push(`spec.hibernate: true of ${source} (a hibernated Redis would never start, so never restore)`);
  delete spec['hibernate'];
  const tls =
    typeof spec['tls'] === 'object' && spec['tls'] !== null
      ? { ...(spec['tls'] as Record<string, unknown>) }
      : undefined;
  const secret = typeof tls?.['secretName'] === 'string' ? tls['secretName'] : undefined;
  const headless = `*.${target.name}-headless.${target.namespace}.svc`;
  if (tlsSecret !== undefined) {
    if (secret !== undefined && secret !== tlsSecret)
      leftOut.push(`spec.tls.secretName ${secret} of ${source} (replaced by --tls-secret ${tlsSecret})`);
    spec['tls'] = { ...(tls ?? {}), secretName: tlsSecret };
  } else if (tls !== undefined && secret !== undefined) {
    if (tls['certManager'] === undefined)
      return {
        ok: false,
        reason: `${source}'s spec.tls.secretName ${secret} holds a certificate for ${source}, not for ${target.name} (it must name ${headless}): give --tls-secret with a Secret for ${target.name}`,
      };
    delete tls['secretName'];
    spec['tls'] = tls;
    leftOut.push(
      `spec.tls.secretName ${secret} of ${source} (its certificate names ${source}; cert-manager issues ${target.name}-tls for this one)`,
    );
  }
  return { ok: true, spec, leftOut };
}

export function restoreProgress(status: RedisStatus | undefined): Progress {
  const r = status?.restore;
  const line = `phase ${status?.phase ?? 'Unknown'}, restore ${r?.phase ?? 'not started'}${r?.message ? `: ${r.message}` : ''}`;
  if (r?.phase === 'Failed') return { state: 'refused', line };
  return { state: r?.phase === 'Completed' && status?.phase === 'Running' ? 'done' : 'waiting', line };
}

export interface Failure {
  code: number | undefined;
  errno?: string | undefined;
  message: string;
}
export interface Target {
  verb: string;
  resource: string;
  name?: string;
  namespace: string;
}

/** Exit codes: 1 refused or failed, 2 usage, 3 not found, 4 forbidden, 5 unreachable or operator down, 6 timed out. */
export function explain(f: Failure, t: Target): { message: string; exit: number } {
  if (f.code === 404)
    return t.resource === 'redises' && t.name
      ? { message: `no such Redis "${t.name}" in namespace "${t.namespace}"`, exit: 3 }
      : { message: `no such ${t.resource} ${t.name ?? ''} in namespace "${t.namespace}"`.replace('  ', ' '), exit: 3 };
  if (f.code === 403)
    return {
      message: `not allowed by RBAC: you cannot ${t.verb} ${t.resource} in namespace "${t.namespace}" (${f.message})`,
      exit: 4,
    };
  if (f.code === 401) return { message: `not authenticated to the API server (${f.message})`, exit: 4 };
  if (
    f.code === undefined &&
    /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ETIMEDOUT|ECONNRESET/.test(`${f.errno ?? ''} ${f.message}`)
  )
    return { message: `the API server is unreachable: ${f.message}`, exit: 5 };
  return { message: `${t.verb} ${t.resource}${t.name ? ` ${t.name}` : ''} failed: ${f.message}`, exit: 1 };
}

interface LeaseLike {
  metadata?: { name?: string };
  spec?: { holderIdentity?: string; renewTime?: string | Date; leaseDurationSeconds?: number };
}

/**
 * "Now" for the Lease check, on the cluster's clock: the API server's Date header from the Lease
 * read. The sidecars write renewTime on the cluster's clocks and their Leases last 3 s by default
 * (LEASE_DURATION_SECONDS), so a user's clock a few seconds ahead would call a running operator
 * stopped. The header has whole seconds (up to 1 s behind): that errs towards "running", never
 * towards a refusal. No usable header: the local clock.
 */
export function clusterNow(dateHeader: string | undefined, local: number): number {
  const server = dateHeader ? Date.parse(dateHeader) : NaN;
  return Number.isFinite(server) ? server : local;
}

/**
 * The Leases an acting sidecar holds: the single one, or one per shard with SHARDS > 1 (the manifests' default is 4).
 */
const ACTING_LEASE = /^redis-operator-sidecar(-shard-\d+)?$/;

/**
 * The operator runs when its Deployment has a ready pod and some sidecar holds one of its acting
 * Leases. What cannot be read (no access to its namespace, no such objects) refuses nothing.
 */
export function operatorRunning(
  deployment: { status?: { readyReplicas?: number } } | null,
  leases: LeaseLike[] | null,
  now: number,
): { running: boolean; reason: string } {
  if (deployment && !(deployment.status?.readyReplicas && deployment.status.readyReplicas > 0))
    return { running: false, reason: 'the operator is not running: its Deployment has no ready pod' };
  const acting = (leases ?? []).filter((l) => ACTING_LEASE.test(l.metadata?.name ?? ''));
  const live = (l: LeaseLike) => {
    const renew = l.spec?.renewTime ? new Date(l.spec.renewTime).getTime() : 0;
    return (l.spec?.holderIdentity ?? '') !== '' && renew + (l.spec?.leaseDurationSeconds ?? 15) * 1000 >= now;
  };
  if (acting.length > 0 && !acting.some(live))
    return { running: false, reason: 'the operator is not running: no sidecar holds its Leases' };
  return {
    running: true,
    reason:
      deployment || acting.length > 0
        ? 'the operator is running'
        : 'the operator could not be checked (no access to its namespace)',
  };
}

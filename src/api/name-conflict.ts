// Which parents of the other kind (Redis vs RedisCluster) would make children with the same
// names as this one, and which of two such parents keeps its names. The hook of each kind refuses
// the younger one (no child made, the ones it has kept as last applied), and the sidecar acts on
// no refused parent. Children are never renamed: names already in use hold data (claims of a
// StatefulSet) and Metacontroller would delete and recreate a renamed child.
// Invariants: pure; a claim is `<resource kind>/<name>` exactly as the children are named
// (labels.ts childNames, backup.ts, rediscluster-names.ts), over every name a parent may ever
// make whatever its spec, so the verdict does not change with a spec edit; rivalNames lists every
// name of the other kind whose claims can meet this one's (test/api/name-conflict.test.ts checks
// both directions over arbitrary names); the older parent (creationTimestamp, then uid) wins.
import { backupCronJobName } from './backup.ts';
import { childNames } from './labels.ts';
import { MAX_REDIS_CLUSTER_SHARDS } from './rediscluster-schema.ts';
import { REDIS_CLUSTER_KIND, redisClusterChildNames } from './rediscluster-names.ts';

export type ParentKind = 'Redis' | typeof REDIS_CLUSTER_KIND;

/** Ready (and SpecValid) say this reason on a refused parent; the sidecar and the monitoring decorator read it. */
export const NAME_CONFLICT_REASON = 'NameConflict';

const shardIndices = Array.from({ length: MAX_REDIS_CLUSTER_SHARDS }, (_, i) => i);

/** Every child name (`Kind/name`) a parent of this kind and name may make, sorted. */
export function nameClaims(kind: ParentKind, name: string): string[] {
  const claims: string[] = [];
  if (kind === 'Redis') {
    const n = childNames(name);
    claims.push(`StatefulSet/${n.masterSet}`, `StatefulSet/${n.replicaSet}`);
    for (const s of [n.headless, n.masterService, n.replicasService, n.metricsService]) claims.push(`Service/${s}`);
    for (const s of [n.generatedAuthSecret, n.operatorSecret, n.exporterSecret, n.certificate])
      claims.push(`Secret/${s}`);
    claims.push(
      `ConfigMap/${n.config}`,
      `PodDisruptionBudget/${n.pdb}`,
      `NetworkPolicy/${n.networkPolicy}`,
      `Certificate/${n.certificate}`,
      `CronJob/${backupCronJobName(name)}`,
      `PodMonitor/${n.podMonitor}`,
      `PrometheusRule/${n.prometheusRule}`,
    );
  } else {
    const n = redisClusterChildNames(name);
    for (const i of shardIndices)
      claims.push(
        `StatefulSet/${n.shardSet(i)}`,
        `PodDisruptionBudget/${n.shardPdb(i)}`,
        `CronJob/${n.shardBackup(i)}`,
      );
    for (const s of [n.headless, n.client, n.metricsService]) claims.push(`Service/${s}`);
    // The exporter and certificate Secrets follow the Redis scheme should the kind grow them.
    for (const s of [n.generatedAuthSecret, n.operatorSecret, `${name}-exporter`, `${name}-tls`])
      claims.push(`Secret/${s}`);
    claims.push(`ConfigMap/${n.config}`, `PodMonitor/${name}`, `PrometheusRule/${name}`);
  }
  return [...new Set(claims)].sort();
}

const REDIS_SERVICE_SUFFIXES = ['-headless', '-master', '-replicas', '-metrics'];
const SHARD_SUFFIX = /^(.+)-shard-(0|[1-9][0-9]?)$/;

/**
 * The names a parent of the other kind must have for its claims to meet this one's: what the
 * customize hook asks Metacontroller for (by name: cheap, and only those objects trigger a sync).
 */
export function rivalNames(kind: ParentKind, name: string): string[] {
  const out = [name];
  if (kind === 'Redis') {
    // A RedisCluster's client Service is named as the RedisCluster: Redis x's Services x-master...
    for (const s of REDIS_SERVICE_SUFFIXES) out.push(`${name}${s}`);
    // Redis x-shard-i's backup CronJob x-shard-i-backup is RedisCluster x's shard i's.
    const shard = SHARD_SUFFIX.exec(name);
    if (shard?.[1] !== undefined && Number(shard[2]) < MAX_REDIS_CLUSTER_SHARDS) out.push(shard[1]);
  } else {
    for (const s of REDIS_SERVICE_SUFFIXES)
      if (name.endsWith(s) && name.length > s.length) out.push(name.slice(0, -s.length));
    for (const i of shardIndices) out.push(`${name}-shard-${i}`);
  }
  return [...new Set(out)].sort();
}

/** The names two parents of different kinds would both make, sorted; empty when none. */
export function sharedClaims(a: { kind: ParentKind; name: string }, b: { kind: ParentKind; name: string }): string[] {
  if (a.kind === b.kind) return [];
  const theirs = new Set(nameClaims(b.kind, b.name));
  return nameClaims(a.kind, a.name).filter((c) => theirs.has(c));
}

export interface ParentFacts {
  kind: ParentKind;
  name: string;
  /** RFC 3339 as the API server writes it (same length, so strings order as times); absent: youngest. */
  creationTimestamp: string | undefined;
  uid: string | undefined;
}

/** True when `a` was there first: the earlier creationTimestamp, then (same second) the smaller uid. */
export function olderThan(a: ParentFacts, b: ParentFacts): boolean {
  const at = a.creationTimestamp ?? '\uffff';
  const bt = b.creationTimestamp ?? '\uffff';
  if (at !== bt) return at < bt;
  return (a.uid ?? '\uffff') < (b.uid ?? '\uffff');
}

export interface NameConflict {
  /** The older parent that keeps the names. */
  holder: ParentFacts;
  /** Shared child names (`Kind/name`), sorted. */
  shared: string[];
  message: string;
}

function describe(p: ParentFacts): string {
  return `${p.kind} ${p.name}`;
}

/**
 * The conflict that refuses `self`: the oldest parent of the other kind, older than `self`, whose
 * children would share names with its own; undefined when `self` keeps its names.
 */
export function nameConflictOf(self: ParentFacts, others: readonly ParentFacts[]): NameConflict | undefined {
  const older = others
    .filter((o) => o.kind !== self.kind && olderThan(o, self))
    .map((o) => ({ o, shared: sharedClaims(self, o) }))
    .filter((x) => x.shared.length > 0)
    .sort((x, y) => (olderThan(x.o, y.o) ? -1 : olderThan(y.o, x.o) ? 1 : 0));
  const first = older[0];
  if (first === undefined) return undefined;
  const shown = first.shared.slice(0, 4).join(', ') + (first.shared.length > 4 ? ', ...' : '');
  return {
    holder: first.o,
    shared: first.shared,
    message:
      `${describe(first.o)} is older and makes children with the same names as this ${self.kind} would ` +
      `(${shown}): this ${self.kind} makes no child and is not managed until ${describe(first.o)} is deleted; ` +
      `to run both, delete this ${self.kind} and create it under another name`,
  };
}

/** The hook's message when it refused this parent its names (Ready says NameConflict); read defensively. */
export function nameRefusalOf(status: unknown): string | undefined {
  const conditions: unknown =
    typeof status === 'object' && status !== null ? Reflect.get(status, 'conditions') : undefined;
  if (!Array.isArray(conditions)) return undefined;
  const ready: unknown = conditions.find(
    (c: unknown) => typeof c === 'object' && c !== null && Reflect.get(c, 'type') === 'Ready',
  );
  if (typeof ready !== 'object' || ready === null) return undefined;
  if (Reflect.get(ready, 'status') !== 'False' || Reflect.get(ready, 'reason') !== NAME_CONFLICT_REASON)
    return undefined;
  const message: unknown = Reflect.get(ready, 'message');
  return typeof message === 'string' ? message : 'refused: another parent keeps the names of its children';
}

/** True when the hook refused this parent its names. */
export function refusedForName(status: unknown): boolean {
  return nameRefusalOf(status) !== undefined;
}

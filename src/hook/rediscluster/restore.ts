// spec.restore of a RedisCluster, decided from what sync observes: the RedisBackup of a
// RedisCluster it names (per shard a snapshot and the slots the shard served), whether the shard
// StatefulSets may be created yet, what their pods and the ConfigMap carry, and status.restore.
// Pure. Invariants:
// - Once known, the storage and each shard's location and slots are carried in status.restore and
//   never re-read, so the pod template never changes and the sidecar forms the cluster with the
//   recorded layout (status.restore.shards) even after the RedisBackup is deleted.
// - Refused, before any StatefulSet exists, unless the backup has exactly as many shards as
//   master.replicas, every location passes the location allow-list (api/backup-validate.ts: the
//   RedisBackup's status is another object's, writable by whoever may write it), and the slots
//   are one whole layout (api/slot-layout.ts).
// - No StatefulSet is created until the source is known AND the observed <name>-config carries
//   every shard's location (a ConfigMap of an earlier RedisCluster of this name, still being
//   garbage-collected, would have pod 0 start empty). StatefulSets already observed are kept.
// - Only pod 0 of each shard restores (common/restore-container.ts, firstPodOnly): the master the
//   shard is formed around. Completed only on evidence: every shard's pod 0 reported that its data
//   is its shard's snapshot (restoredFrom); a pod 0 that started without it fails the restore.
//   Completed is final: the ConfigMap keys go, and nothing restores again.
import { RESTORE_CONTAINER, shardRestoreLocationKey } from '../../api/backup.ts';
import { parseLocation } from '../../api/backup-validate.ts';
import { API_VERSION } from '../../api/labels.ts';
import { REDISBACKUP_KIND } from '../../api/redisbackup-schema.ts';
import { SHARD_LABEL, redisClusterChildNames, redisClusterPodBelongsTo } from '../../api/rediscluster-names.ts';
import type { RedisClusterRestoreStatus, RedisClusterSpec } from '../../api/rediscluster-schema.ts';
import type { BackupStorage } from '../../api/schema.ts';
import { slotLayoutProblem } from '../../api/slot-layout.ts';
import { readStorage } from '../../api/validate.ts';
import { REDIS_UID } from '../common/pod-template.ts';
import { restoreInit } from '../common/restore-container.ts';
import { findObject, memberMeta, ofKind } from '../common/observed.ts';
import type { KubeObject } from '../common/types.ts';
import { array, at, isRecord, str } from '../common/util.ts';
import type { RedisClusterState } from './state.ts';

type ShardRestore = NonNullable<RedisClusterRestoreStatus['shards']>[number];

export interface ClusterRestorePlan {
  status: RedisClusterRestoreStatus;
  /** Known: every shard's pod template gets the restore init container. */
  resolved: { storage: BackupStorage; shards: ShardRestore[] } | undefined;
  /** Create no shard StatefulSet (nor its PDB or backup CronJob) yet. */
  hold: boolean;
  /** The ConfigMap carries each shard's location. */
  pending: boolean;
}

type Resolution =
  { ok: true; storage: BackupStorage; shards: ShardRestore[] } | { ok: false; failed: boolean; message: string };

function resolve(state: RedisClusterState, spec: RedisClusterSpec, name: string): Resolution {
  const backup = findObject(state.related, API_VERSION, REDISBACKUP_KIND, state.namespace, name);
  if (backup === undefined)
    return { ok: false, failed: false, message: `RedisBackup ${name} not found in ${state.namespace}; waiting for it` };
  const phase = str(at(backup, 'status', 'phase')) ?? 'Pending';
  if (str(at(backup, 'spec', 'redisCluster')) === undefined)
    return {
      ok: false,
      failed: true,
      message: `RedisBackup ${name} is a backup of a Redis (spec.redis): a RedisCluster restores from a backup of a RedisCluster`,
    };
  if (phase === 'Failed') return { ok: false, failed: true, message: `RedisBackup ${name} failed: nothing to restore` };
  if (phase !== 'Completed')
    return { ok: false, failed: false, message: `RedisBackup ${name} is ${phase}; waiting for it to complete` };
  const recorded = array(at(backup, 'status', 'shards'));
  if (recorded.length !== spec.master.replicas)
    return {
      ok: false,
      failed: true,
      message: `RedisBackup ${name} has ${recorded.length} shards and master.replicas is ${spec.master.replicas}: a restore keeps each shard's slots, so they must be equal (create the RedisCluster with master.replicas: ${recorded.length}; scale it afterwards)`,
    };
  const shards: ShardRestore[] = [];
  for (let i = 0; i < recorded.length; i++) {
    const entry = recorded.find((s) => at(s, 'shard') === i);
    const location = str(at(entry, 'location'));
    const slots = str(at(entry, 'slots'));
    if (location === undefined || slots === undefined)
      return { ok: false, failed: true, message: `RedisBackup ${name} records no location and slots for shard ${i}` };
    const parsed = parseLocation(location);
    if (!parsed.ok)
      return { ok: false, failed: true, message: `RedisBackup ${name} shard ${i}: location ${parsed.message}` };
    shards.push({ shard: i, location, slots });
  }
  const problem = slotLayoutProblem(shards);
  if (problem !== undefined) return { ok: false, failed: true, message: `RedisBackup ${name}: ${problem}` };
  // As for a Redis: the backup's recorded storage, else this RedisCluster's own spec.backup.storage.
  const storage = readStorage(at(backup, 'status', 'storage')) ?? spec.backup?.storage;
  if (storage === undefined)
    return {
      ok: false,
      failed: true,
      message: `RedisBackup ${name} records no storage to reach its snapshots, and spec.backup.storage is not set`,
    };
  return { ok: true, storage, shards };
}

/** What pod 0 of a shard says its data came from, once its restore container ended. */
function startedFrom(pod: KubeObject | undefined): { from: string } | { why: string } | { failed: string } | undefined {
  const s = array(at(pod, 'status', 'initContainerStatuses')).find((c) => at(c, 'name') === RESTORE_CONTAINER);
  const done = at(s, 'state', 'terminated') ?? at(s, 'lastState', 'terminated');
  if (done === undefined) return undefined;
  const message = str(at(done, 'message'))?.trim() ?? '';
  if (at(done, 'exitCode') === 2) return { failed: message || 'the restore failed permanently' };
  if (at(done, 'exitCode') !== 0 || at(s, 'state', 'terminated') === undefined) return undefined;
  try {
    const result: unknown = JSON.parse(message);
    const from = str(at(result, 'restoredFrom'));
    return from !== undefined ? { from } : { why: str(at(result, 'reason')) ?? 'it restored nothing' };
  } catch {
    return { why: `its restore container left no result (${JSON.stringify(message.slice(0, 200))})` };
  }
}

function previous(state: RedisClusterState): Partial<RedisClusterRestoreStatus> {
  const r = at(state.request.parent.status, 'restore');
  return isRecord(r) ? (r as Partial<RedisClusterRestoreStatus>) : {};
}

export function planClusterRestore(state: RedisClusterState, spec: RedisClusterSpec): ClusterRestorePlan | undefined {
  if (spec.restore === undefined) return undefined;
  const source = `${REDISBACKUP_KIND}/${spec.restore.backup}`;
  const before = previous(state);
  const setsObserved = state.sets.size > 0;
  let storage: BackupStorage;
  let shards: ShardRestore[];
  if (before.source === source && before.storage !== undefined && before.shards !== undefined) {
    storage = before.storage;
    shards = before.shards;
  } else {
    const r = resolve(state, spec, spec.restore.backup);
    if (!r.ok)
      return {
        status: { source, phase: r.failed ? 'Failed' : 'Pending', message: r.message },
        resolved: undefined,
        hold: !setsObserved,
        pending: false,
      };
    storage = r.storage;
    shards = r.shards;
  }
  const known = { source, storage, shards };
  const resolved = { storage, shards };
  if (before.source === source && before.phase === 'Completed')
    return {
      status: { ...known, phase: 'Completed', message: before.message ?? '' },
      resolved,
      hold: false,
      pending: false,
    };

  const names = redisClusterChildNames(state.name);
  const pods = ofKind(state.related, 'v1', 'Pod', state.namespace).filter((p) =>
    redisClusterPodBelongsTo(memberMeta(p, state.namespace), { namespace: state.namespace, name: state.name }),
  );
  const outcomes = shards.map((s) => ({
    s,
    pod: `${names.shardSet(s.shard)}-0`,
    started: startedFrom(pods.find((p) => p.metadata.name === `${names.shardSet(s.shard)}-0`)),
  }));
  const wrong = outcomes.flatMap(({ s, pod, started }) =>
    started === undefined || ('from' in started && started.from === s.location)
      ? []
      : [
          `${pod}: ${'failed' in started ? started.failed : 'from' in started ? `holds ${started.from}, not ${s.location}` : started.why}`,
        ],
  );
  if (wrong.length > 0)
    return {
      status: {
        ...known,
        phase: 'Failed',
        message: `${wrong.join('; ')}; delete this RedisCluster (and its claims) and create it again to restore`,
      },
      resolved,
      hold: false,
      pending: true,
    };
  if (outcomes.every((o) => o.started !== undefined))
    return {
      status: {
        ...known,
        phase: 'Completed',
        message: `pod 0 of each of the ${shards.length} shards started from its shard's snapshot`,
      },
      resolved,
      hold: false,
      pending: false,
    };
  const config = findObject(state.observed, 'v1', 'ConfigMap', state.namespace, names.config);
  const published = shards.every((s) => at(config, 'data', shardRestoreLocationKey(s.shard)) === s.location);
  if (!setsObserved && !published)
    return {
      status: {
        ...known,
        phase: 'Restoring',
        message: `waiting for ConfigMap ${names.config} to carry every shard's location before any pod starts`,
      },
      resolved,
      hold: true,
      pending: true,
    };
  return {
    status: {
      ...known,
      phase: 'Restoring',
      message: `pod 0 of each shard loads its shard's snapshot before Redis starts`,
    },
    resolved,
    hold: false,
    pending: true,
  };
}

const SHARD_KINDS = new Set(['StatefulSet', 'PodDisruptionBudget', 'CronJob']);

/**
 * The children with the restore applied: the ConfigMap's per-shard locations while pending, the
 * restore init container in every shard's pod template, and no new shard object while holding.
 */
export function withClusterRestore(
  children: readonly KubeObject[],
  plan: ClusterRestorePlan,
  state: RedisClusterState,
  spec: RedisClusterSpec,
): KubeObject[] {
  const names = redisClusterChildNames(state.name);
  const init = plan.resolved
    ? (shard: number) =>
        restoreInit(
          {
            operatorImage: state.options.operatorImage,
            configMap: names.config,
            locationKey: shardRestoreLocationKey(shard),
            appendOnly: spec.persistence.enableAof,
            firstPodOnly: true,
          },
          plan.resolved!.storage,
          REDIS_UID,
        )
    : undefined;
  const out: KubeObject[] = [];
  for (const child of children) {
    const kept = findObject(state.observed, child.apiVersion, child.kind, state.namespace, child.metadata.name);
    if (plan.hold && SHARD_KINDS.has(child.kind) && kept === undefined) continue;
    if (child.kind === 'ConfigMap' && child.metadata.name === names.config && plan.pending && plan.resolved) {
      const data = { ...((child['data'] as Record<string, string> | undefined) ?? {}) };
      for (const s of plan.resolved.shards) data[shardRestoreLocationKey(s.shard)] = s.location;
      out.push({ ...child, data });
      continue;
    }
    const shard = Number(child.metadata.labels?.[SHARD_LABEL]);
    const present = array(at(child, 'spec', 'template', 'spec', 'initContainers')).some(
      (c) => at(c, 'name') === RESTORE_CONTAINER,
    );
    if (child.kind !== 'StatefulSet' || init === undefined || !Number.isInteger(shard) || present) {
      out.push(child);
      continue;
    }
    const copy = structuredClone(child);
    const podSpec = at(copy, 'spec', 'template', 'spec');
    if (isRecord(podSpec)) {
      const add = init(shard);
      podSpec['initContainers'] = [...add.initContainers, ...array(podSpec['initContainers'])];
      if (add.volumes.length > 0) podSpec['volumes'] = [...array(podSpec['volumes']), ...add.volumes];
    }
    out.push(copy);
  }
  return out;
}

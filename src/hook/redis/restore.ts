// spec.restore, decided from what sync observes: which backup (a RedisBackup's recorded location
// and storage, or a location), whether the pods may be created yet, and what status.restore says.
// Pure. Invariants:
// - Once known, the location and storage are carried in status.restore and never re-read, so the
//   pod template built from them never changes (a RedisBackup deleted later changes nothing).
// - No StatefulSet is created until the source is known AND the observed <name>-config (this
//   Redis's own: Metacontroller shows no child another parent controls) carries the location: a
//   ConfigMap of an earlier Redis of the same name, still being garbage-collected, would have
//   the pods start empty. StatefulSets already observed are kept as they are.
// - Completed only on evidence: the Ready master's restore container reported that its data is
//   this backup (restoredFrom). A master that started without it is Failed, never Completed.
// - Completed, and Failed because the master started without the backup, are final (decidedBy):
//   from then on the ConfigMap key is gone and nothing restores again.
// - Claims of an earlier Redis of the same name (kept by whenDeleted: Retain) refuse the restore
//   before any StatefulSet exists (`refused`): its pods would bind them and start on the old data,
//   which a restore never overwrites. Refused rather than restored into fresh claims because those
//   claims may hold the only copy of that data: deleting or renaming them is the user's call. A
//   claim is an earlier Redis's when it was created before this Redis (or either time is unknown);
//   the refusal lifts once they are gone, and never applies once StatefulSets are observed.
import { RESTORE_CONTAINER, RESTORE_LOCATION_KEY } from '../../api/backup.ts';
import { parseLocation } from '../../api/backup-validate.ts';
import { ROLE_LABEL, ROLE_MASTER, childNames, podSelectorLabels } from '../../api/labels.ts';
import { podBelongsTo } from '../../api/membership.ts';
import { REDISBACKUP_KIND } from '../../api/redisbackup-schema.ts';
import type { BackupStorage, RedisSpec, RestoreStatus } from '../../api/schema.ts';
import { readStorage } from '../../api/validate.ts';
import { findObject, memberMeta, ofKind } from '../common/observed.ts';
import type { HookState } from './state.ts';
import type { KubeObject } from '../common/types.ts';
import { array, at, isRecord, selectorString, str } from '../common/util.ts';

export interface RestorePlan {
  status: RestoreStatus;
  /** Known location and storage: the pods get the restore init container. */
  resolved: { location: string; storage: BackupStorage } | undefined;
  /** The source is not known yet: create no StatefulSet. */
  hold: boolean;
  /** The restore is still to happen: the ConfigMap carries the location. */
  pending: boolean;
  /** Claims of an earlier Redis of this name exist: no child is created or changed (status says why). */
  refused?: true;
}

/** Shown by name up to this many; the selector in the message covers them all. */
const CLAIMS_NAMED = 5;

/** Claims of this Redis's name made before it: an earlier Redis's, kept by whenDeleted: Retain. */
function earlierClaims(state: HookState): string[] {
  const born = Date.parse(str(state.request.parent.metadata.creationTimestamp) ?? '');
  return ofKind(state.related, 'v1', 'PersistentVolumeClaim', state.namespace)
    .filter((pvc) => podBelongsTo(memberMeta(pvc, state.namespace), state))
    .filter((pvc) => {
      const made = Date.parse(str(pvc.metadata.creationTimestamp) ?? '');
      return !(Number.isFinite(born) && Number.isFinite(made) && made >= born);
    })
    .map((pvc) => pvc.metadata.name);
}

function refusal(state: HookState, claims: readonly string[]): string {
  const named =
    claims.slice(0, CLAIMS_NAMED).join(', ') +
    (claims.length > CLAIMS_NAMED ? ` and ${claims.length - CLAIMS_NAMED} more` : '');
  const selector = selectorString(podSelectorLabels(state.name));
  return (
    `PersistentVolumeClaim(s) ${named} of an earlier Redis named ${state.name} still exist (persistence.whenDeleted: Retain, the default, keeps them): ` +
    `its pods would start on that data, and a restore never overwrites data, so nothing is created until they are gone. ` +
    `Delete them once their data is no longer needed (kubectl delete pvc -n ${state.namespace} -l ${selector}), or restore under another name`
  );
}

function previousRestore(state: HookState): Partial<RestoreStatus> {
  const r = at(state.request.parent.status, 'restore');
  return isRecord(r) ? (r as Partial<RestoreStatus>) : {};
}

type Resolution =
  { ok: true; location: string; storage: BackupStorage } | { ok: false; phase: 'Pending' | 'Failed'; message: string };

function resolve(state: HookState, spec: RedisSpec): Resolution {
  const restore = spec.restore!;
  if (restore.location !== undefined) {
    const storage = restore.storage ?? spec.backup?.storage;
    // validateSpec refuses a location without storage for it.
    return storage === undefined
      ? { ok: false, phase: 'Failed', message: 'no storage to reach the location' }
      : { ok: true, location: restore.location, storage };
  }
  const name = restore.backup!;
  const backup = findObject(state.related, 'redis.example.com/v1', REDISBACKUP_KIND, state.namespace, name);
  if (backup === undefined)
    return {
      ok: false,
      phase: 'Pending',
      message: `RedisBackup ${name} not found in ${state.namespace}; waiting for it`,
    };
  const phase = str(at(backup, 'status', 'phase')) ?? 'Pending';
  if (phase === 'Failed')
    return {
      ok: false,
      phase: 'Failed',
      message: `RedisBackup ${name} failed (${str(at(backup, 'status', 'message')) ?? 'no reason given'}): nothing to restore`,
    };
  const location = str(at(backup, 'status', 'location'));
  if (phase !== 'Completed' || location === undefined)
    return { ok: false, phase: 'Pending', message: `RedisBackup ${name} is ${phase}; waiting for it to complete` };
  // Status is another object's, writable by whoever may write it: checked as spec.restore.location is.
  const parsed = parseLocation(location);
  if (!parsed.ok)
    return {
      ok: false,
      phase: 'Failed',
      message: `RedisBackup ${name} status.location ${parsed.message}: it cannot be restored`,
    };
  const storage = restore.storage ?? readStorage(at(backup, 'status', 'storage')) ?? spec.backup?.storage;
  if (storage === undefined)
    return {
      ok: false,
      phase: 'Failed',
      message: `RedisBackup ${name} records no storage; set spec.restore.storage to reach ${location}`,
    };
  return { ok: true, location, storage };
}

/** A restore init container that ended for good: its message (the restore's own JSON, or its log). */
function restoreFailure(pods: readonly KubeObject[]): string | undefined {
  for (const pod of pods) {
    for (const s of array(at(pod, 'status', 'initContainerStatuses'))) {
      if (at(s, 'name') !== RESTORE_CONTAINER) continue;
      const done = at(s, 'state', 'terminated') ?? at(s, 'lastState', 'terminated');
      if (at(done, 'exitCode') === 2)
        return `${pod.metadata.name}: ${str(at(done, 'message'))?.trim() || 'the restore failed permanently'}`;
    }
  }
  return undefined;
}

function readyMaster(pods: readonly KubeObject[]): KubeObject | undefined {
  return pods.find(
    (p) =>
      p.metadata.labels?.[ROLE_LABEL] === ROLE_MASTER &&
      array(at(p, 'status', 'conditions')).some((c) => at(c, 'type') === 'Ready' && at(c, 'status') === 'True'),
  );
}

/** Which backup the pod's data came from, as its restore container reported it, or why that is not known. */
function startedFrom(pod: KubeObject): { from: string } | { why: string } {
  const status = array(at(pod, 'status', 'initContainerStatuses')).find((s) => at(s, 'name') === RESTORE_CONTAINER);
  const done = at(status, 'state', 'terminated');
  if (status === undefined || at(done, 'exitCode') !== 0) return { why: 'its restore container did not complete' };
  const message = str(at(done, 'message'))?.trim() ?? '';
  let result: unknown;
  try {
    result = JSON.parse(message);
  } catch {
    return { why: `its restore container left no result (${JSON.stringify(message.slice(0, 200))})` };
  }
  const from = str(at(result, 'restoredFrom'));
  return from !== undefined ? { from } : { why: str(at(result, 'reason')) ?? 'its restore container restored nothing' };
}

/** The observed ConfigMap is this Redis's own and tells the restore containers where the backup is. */
function locationPublished(state: HookState, location: string): boolean {
  const config = findObject(state.observed, 'v1', 'ConfigMap', state.namespace, childNames(state.name).config);
  return at(config, 'data', RESTORE_LOCATION_KEY) === location;
}

export function planRestore(
  state: HookState,
  spec: RedisSpec,
  redisPods: readonly KubeObject[],
  setsObserved: boolean,
): RestorePlan | undefined {
  if (spec.restore === undefined) return undefined;
  const source =
    spec.restore.backup !== undefined ? `${REDISBACKUP_KIND}/${spec.restore.backup}` : (spec.restore.location ?? '');
  const before = previousRestore(state);
  const decided =
    before.source === source &&
    (before.phase === 'Completed' || before.phase === 'Failed') &&
    before.decidedBy !== undefined;
  if (!setsObserved && !decided) {
    const claims = earlierClaims(state);
    if (claims.length > 0) {
      const carried =
        before.source === source && before.location !== undefined && before.storage !== undefined
          ? { location: before.location, storage: before.storage }
          : {};
      return {
        status: { source, ...carried, phase: 'Pending', message: refusal(state, claims) },
        resolved: undefined,
        hold: true,
        pending: false,
        refused: true,
      };
    }
  }
  let location: string | undefined;
  let storage: BackupStorage | undefined;
  if (before.source === source && before.location !== undefined && before.storage !== undefined) {
    location = before.location;
    storage = before.storage;
  } else {
    const r = resolve(state, spec);
    if (!r.ok) {
      return {
        status: { source, phase: r.phase, message: r.message },
        resolved: undefined,
        hold: !setsObserved,
        pending: false,
      };
    }
    location = r.location;
    storage = r.storage;
  }
  const known = { source, location, storage };
  const resolved = { location, storage };
  if (decided)
    return {
      status: { ...known, phase: before.phase!, message: before.message ?? '', decidedBy: before.decidedBy! },
      resolved,
      hold: false,
      pending: false,
    };
  const master = readyMaster(redisPods);
  if (master !== undefined) {
    const decidedBy = master.metadata.name;
    const started = startedFrom(master);
    return 'from' in started && started.from === location
      ? {
          status: {
            ...known,
            phase: 'Completed',
            message: `the master ${decidedBy} started from ${location}`,
            decidedBy,
          },
          resolved,
          hold: false,
          pending: false,
        }
      : {
          status: {
            ...known,
            phase: 'Failed',
            message: `the master ${decidedBy} started without ${location}: ${'from' in started ? `it holds ${started.from}` : started.why}; delete this Redis and create it again to restore`,
            decidedBy,
          },
          resolved,
          hold: false,
          pending: false,
        };
  }
  const failure = restoreFailure(redisPods);
  if (failure !== undefined)
    return { status: { ...known, phase: 'Failed', message: failure }, resolved, hold: false, pending: true };
  if (!setsObserved && !locationPublished(state, location))
    return {
      status: {
        ...known,
        phase: 'Restoring',
        message: `waiting for ConfigMap ${childNames(state.name).config} to carry ${location} before any pod starts (an earlier Redis of this name may still be being deleted)`,
      },
      resolved,
      hold: true,
      pending: true,
    };
  return {
    status: { ...known, phase: 'Restoring', message: `every pod loads ${location} before Redis starts` },
    resolved,
    hold: false,
    pending: true,
  };
}

// spec.restore, decided from what sync observes: which backup (a RedisBackup's recorded location
// and storage, or a location), whether the pods may be created yet, and what status.restore says.
// Pure. Invariants:
// - Once known, the location and storage are carried in status.restore and never re-read, so the
//   pod template built from them never changes (a RedisBackup deleted later changes nothing).
// - Until the source is known, no StatefulSet is created (pods started empty would never load
//   it); StatefulSets already observed are kept as they are.
// - Completed is final: the master became Ready after the restore; from then on the ConfigMap
//   key is gone and nothing restores again.
import { RESTORE_CONTAINER } from '../api/backup.ts';
import { ROLE_LABEL, ROLE_MASTER } from '../api/labels.ts';
import { REDISBACKUP_KIND } from '../api/redisbackup-schema.ts';
import type { BackupStorage, RedisSpec, RestoreStatus } from '../api/schema.ts';
import { findObject } from './observed.ts';
import type { HookState } from './state.ts';
import type { KubeObject } from './types.ts';
import { array, at, isRecord, str } from './util.ts';

export interface RestorePlan {
  status: RestoreStatus;
  /** Known location and storage: the pods get the restore init container. */
  resolved: { location: string; storage: BackupStorage } | undefined;
  /** The source is not known yet: create no StatefulSet. */
  hold: boolean;
  /** The restore is still to happen: the ConfigMap carries the location. */
  pending: boolean;
}

function previousRestore(state: HookState): Partial<RestoreStatus> {
  const r = at(state.request.parent.status, 'restore');
  return isRecord(r) ? (r as Partial<RestoreStatus>) : {};
}

/** A RedisBackup's recorded storage, as another object's status: checked and defaulted like a spec's. */
function recordedStorage(value: unknown): BackupStorage | undefined {
  const pvc = str(at(value, 'pvc', 'claimName'));
  if (pvc !== undefined) return { pvc: { claimName: pvc } };
  const bucket = str(at(value, 's3', 'bucket'));
  const region = str(at(value, 's3', 'region'));
  if (bucket === undefined || region === undefined) return undefined;
  const endpoint = str(at(value, 's3', 'endpoint'));
  const creds = at(value, 's3', 'credentialsSecret');
  const credName = str(at(creds, 'name'));
  return {
    s3: {
      bucket,
      region,
      prefix: str(at(value, 's3', 'prefix')) ?? '',
      ...(endpoint !== undefined ? { endpoint } : {}),
      ...(credName !== undefined
        ? {
            credentialsSecret: {
              name: credName,
              accessKeyIdKey: str(at(creds, 'accessKeyIdKey')) ?? 'AWS_ACCESS_KEY_ID',
              secretAccessKeyKey: str(at(creds, 'secretAccessKeyKey')) ?? 'AWS_SECRET_ACCESS_KEY',
            },
          }
        : {}),
    },
  };
}

type Resolution = { ok: true; location: string; storage: BackupStorage } | { ok: false; phase: 'Pending' | 'Failed'; message: string };

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
  if (backup === undefined) return { ok: false, phase: 'Pending', message: `RedisBackup ${name} not found in ${state.namespace}; waiting for it` };
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
  const storage = restore.storage ?? recordedStorage(at(backup, 'status', 'storage')) ?? spec.backup?.storage;
  if (storage === undefined)
    return { ok: false, phase: 'Failed', message: `RedisBackup ${name} records no storage; set spec.restore.storage to reach ${location}` };
  return { ok: true, location, storage };
}

/** A restore init container that ended for good: its message (the restore's own JSON, or its log). */
function restoreFailure(pods: readonly KubeObject[]): string | undefined {
  for (const pod of pods) {
    for (const s of array(at(pod, 'status', 'initContainerStatuses'))) {
      if (at(s, 'name') !== RESTORE_CONTAINER) continue;
      const done = at(s, 'state', 'terminated') ?? at(s, 'lastState', 'terminated');
      if (at(done, 'exitCode') === 2) return `${pod.metadata.name}: ${str(at(done, 'message'))?.trim() || 'the restore failed permanently'}`;
    }
  }
  return undefined;
}

function masterReady(pods: readonly KubeObject[]): boolean {
  return pods.some(
    (p) =>
      p.metadata.labels?.[ROLE_LABEL] === ROLE_MASTER &&
      array(at(p, 'status', 'conditions')).some((c) => at(c, 'type') === 'Ready' && at(c, 'status') === 'True'),
  );
}

export function planRestore(state: HookState, spec: RedisSpec, redisPods: readonly KubeObject[], setsObserved: boolean): RestorePlan | undefined {
  if (spec.restore === undefined) return undefined;
  const source = spec.restore.backup !== undefined ? `${REDISBACKUP_KIND}/${spec.restore.backup}` : (spec.restore.location ?? '');
  const before = previousRestore(state);
  let location: string | undefined;
  let storage: BackupStorage | undefined;
  if (before.source === source && before.location !== undefined && before.storage !== undefined) {
    location = before.location;
    storage = before.storage;
  } else {
    const r = resolve(state, spec);
    if (!r.ok) {
      return { status: { source, phase: r.phase, message: r.message }, resolved: undefined, hold: !setsObserved, pending: false };
    }
    location = r.location;
    storage = r.storage;
  }
  const known = { source, location, storage };
  const resolved = { location, storage };
  if (before.phase === 'Completed' && before.source === source)
    return { status: { ...known, phase: 'Completed', message: before.message ?? `restored from ${location}` }, resolved, hold: false, pending: false };
  if (masterReady(redisPods))
    return { status: { ...known, phase: 'Completed', message: `the master started from ${location}` }, resolved, hold: false, pending: false };
  const failure = restoreFailure(redisPods);
  if (failure !== undefined) return { status: { ...known, phase: 'Failed', message: failure }, resolved, hold: false, pending: true };
  return { status: { ...known, phase: 'Restoring', message: `every pod loads ${location} before Redis starts` }, resolved, hold: false, pending: true };
}

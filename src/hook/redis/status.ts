// The Redis status, computed only from observed pods (role label, Ready condition, pod IP, link
// annotation), the validity of the spec and the previous status's condition times. Invariants:
// deterministic (pods sorted by name, map keys sorted, conditions in a fixed order), no clock
// (a lastTransitionTime is carried over while a condition's status is unchanged, otherwise
// taken from pod Ready transition times, otherwise absent), never observedGeneration, and a
// split brain (two pods labelled master) is reported, never resolved by picking one.
import {
  BOOTSTRAP_WITHOUT_ANNOTATION,
  LINK_ANNOTATION,
  ROLE_LABEL,
  ROLE_MASTER,
  podSelectorLabels,
} from '../../api/labels.ts';
import { podBelongsTo } from '../../api/membership.ts';
import { ENGINE_ANNOTATION } from '../../api/node-engine.ts';
import type { Condition, RedisStatus, RestoreStatus } from '../../api/schema.ts';
import type { BackupVerdict } from '../common/backup-status.ts';
import { latest, previousConditions } from '../common/conditions.ts';
import { nodesStatus } from '../common/engines.ts';
import { memberMeta } from '../common/observed.ts';
import type { RolloutView } from './rollout.ts';
import { SECRETS_CONDITION, type SecretProblem, type SecretsCondition } from '../common/secret-status.ts';
import type { KubeObject } from '../common/types.ts';
import { array, at, compare, isRecord, selectorString, str, stringMap } from '../common/util.ts';

export const CONDITION_TYPES = [
  'Ready',
  'MasterAvailable',
  'ReplicasInSync',
  'SpecValid',
  'Updated',
  'Hibernated',
] as const;

/** refusals: spec wishes held back on purpose (the scale-down rule), reported like conflicts. */
/** reason: why Ready and SpecValid are False when the spec is not acted on (default InvalidSpec; NameConflict). */
export type SpecState =
  { valid: true; conflicts: string[]; refusals?: string[] } | { valid: false; message: string; reason?: string };

export interface StatusInput {
  name: string;
  namespace: string;
  /** Related pods as observed (any Redis, any namespace: filtered here). */
  pods: readonly KubeObject[];
  /** Replica pods that should exist (spec.replicas, or what the replica StatefulSet runs). */
  desiredReplicas: number;
  /** parent.status as received: anything. */
  previous: unknown;
  spec: SpecState;
  /** Why pods cannot start for want of a Secret (password or certificate), when we can see that. */
  secretProblem?: SecretProblem | undefined;
  /** Set during finalize: what teardown is waiting for. */
  deleting?: string | undefined;
  /** podViews(pods, name, namespace) when the caller already has them (so /sync builds them once). */
  views?: PodView[] | undefined;
  /** Rolling update progress (rollout.ts); absent on an invalid spec. */
  rollout?: RolloutView | undefined;
  /** spec.hibernate of a valid spec. */
  hibernate?: boolean | undefined;
  /** The sidecar's record of what a bootstrap waits for (an annotation on the Redis), while there is no master. */
  bootstrap?: string | undefined;
  /** The sidecar's record of the last switchover request (an annotation on the Redis). */
  switchover?: string | undefined;
  /** Scheduled and on-demand backups (common/backup-status.ts); absent when there are none and no spec.backup. */
  backup?: BackupVerdict | undefined;
  /** spec.restore's progress (restore.ts). */
  restore?: RestoreStatus | undefined;
  /** The restore is refused until an earlier Redis's claims are gone (restore.ts): Ready says RestoreRefused. */
  restoreRefused?: boolean | undefined;
  /** The named Secrets' versions, from the sidecar's report (common/secret-status.ts); absent before it. */
  secrets?: RedisStatus['secrets'];
  /** The SecretsReady condition (common/secret-status.ts); absent: not judged (a direct caller). */
  secretsCondition?: SecretsCondition | undefined;
}

export type ReplicaState = 'Ready' | 'Syncing' | 'NotReady';

export interface PodView {
  name: string;
  ip: string | undefined;
  role: string | undefined;
  link: string | undefined;
  ready: boolean;
  /** lastTransitionTime of the pod's Ready condition. */
  readySince: string | undefined;
  running: boolean;
  terminating: boolean;
  /** The sidecar's engine annotation (api/node-engine.ts), once the pod's node answered. */
  engine?: string | undefined;
}

/** The pods of Redis `name` (by its pod selector labels, in its namespace), sorted by name. */
export function podViews(pods: readonly KubeObject[], name: string, namespace: string): PodView[] {
  const views: PodView[] = [];
  for (const pod of pods) {
    if (pod.kind !== 'Pod' || !podBelongsTo(memberMeta(pod, namespace), { namespace, name })) continue;
    const labels = stringMap(pod.metadata.labels);
    const readyCondition = array(at(pod, 'status', 'conditions')).find((c) => isRecord(c) && c['type'] === 'Ready');
    views.push({
      name: pod.metadata.name,
      ip: str(at(pod, 'status', 'podIP')) || undefined,
      role: labels[ROLE_LABEL],
      link: stringMap(pod.metadata.annotations)[LINK_ANNOTATION],
      ready: at(readyCondition, 'status') === 'True',
      readySince: str(at(readyCondition, 'lastTransitionTime')),
      running: at(pod, 'status', 'phase') === 'Running',
      terminating: typeof pod.metadata.deletionTimestamp === 'string',
      engine: stringMap(pod.metadata.annotations)[ENGINE_ANNOTATION],
    });
  }
  return views.sort((a, b) => compare(a.name, b.name));
}

export function replicaState(pod: PodView): ReplicaState {
  if (pod.terminating || !pod.running) return 'NotReady';
  // The sidecar writes the link annotation on transitions, sooner than a probe turns NotReady.
  if (pod.link === 'down') return 'Syncing';
  if (pod.ready) return 'Ready';
  return pod.link === 'up' ? 'Syncing' : 'NotReady';
}

interface Verdict {
  ok: boolean;
  reason: string;
  message: string;
  /** Observed time of the change, when one is known. */
  since: string | undefined;
}

function list(names: readonly string[]): string {
  return names.join(', ');
}

/**
 * The sidecar's `Waiting: <pod> (<why>), ...` record, when it is one: printable ASCII of a bounded
 * length only, since anyone who may annotate the Redis can write it.
 */
function bootstrapWaiting(record: string | undefined): string | undefined {
  const m = /^Waiting: ([ -~]{1,2000})$/.exec(record ?? '');
  return m ? m[1] : undefined;
}

function masterVerdict(masters: readonly PodView[], bootstrap: string | undefined): Verdict {
  const waiting = bootstrapWaiting(bootstrap);
  if (masters.length === 0 && waiting !== undefined) {
    return {
      ok: false,
      reason: 'BootstrapWaiting',
      message: `no master yet: the sidecar waits for pods that may hold data newer than the pods that answer: ${waiting} (annotation ${BOOTSTRAP_WITHOUT_ANNOTATION} gives up on the pods it names, losing writes only they held)`,
      since: undefined,
    };
  }
  if (masters.length === 0) {
    return {
      ok: false,
      reason: 'NoMaster',
      message: `no pod is labelled ${ROLE_LABEL}=${ROLE_MASTER} yet (the sidecar labels the master)`,
      since: undefined,
    };
  }
  if (masters.length > 1) {
    return {
      ok: false,
      reason: 'MultipleMasters',
      message: `pods ${list(masters.map((p) => p.name))} are all labelled ${ROLE_LABEL}=${ROLE_MASTER}; the master Service selects all of them until the sidecar demotes all but one`,
      since: latest(masters.map((p) => p.readySince)),
    };
  }
  const master = masters[0] as PodView;
  const ready = master.ready && !master.terminating;
  return ready
    ? { ok: true, reason: 'MasterReady', message: `${master.name} is master and Ready`, since: master.readySince }
    : {
        ok: false,
        reason: 'MasterNotReady',
        message: `${master.name} is labelled master but is not Ready`,
        since: master.readySince,
      };
}

function replicasVerdict(replicas: readonly PodView[], states: Record<string, ReplicaState>, desired: number): Verdict {
  const ready = replicas.filter((p) => states[p.name] === 'Ready').length;
  const lagging = replicas.filter((p) => states[p.name] !== 'Ready');
  const since = latest(replicas.map((p) => p.readySince));
  if (lagging.length > 0) {
    const syncing = lagging.some((p) => states[p.name] === 'Syncing');
    return {
      ok: false,
      reason: syncing ? 'ReplicasSyncing' : 'ReplicasNotReady',
      message: `${ready}/${desired} replicas in sync; not in sync: ${list(lagging.map((p) => `${p.name} (${states[p.name]})`))}`,
      since: latest(lagging.map((p) => p.readySince)),
    };
  }
  if (replicas.length < desired) {
    return {
      ok: false,
      reason: 'ReplicasMissing',
      message: `${replicas.length} of ${desired} replica pods exist`,
      since,
    };
  }
  return { ok: true, reason: 'ReplicasInSync', message: `${ready}/${desired} replicas linked to the master`, since };
}

export function computeStatus(input: StatusInput): RedisStatus {
  const pods = input.views ?? podViews(input.pods, input.name, input.namespace);
  const masters = pods.filter((p) => p.role === ROLE_MASTER);
  const replicas = pods.filter((p) => p.role !== ROLE_MASTER);
  const states: Record<string, ReplicaState> = {};
  for (const pod of replicas) states[pod.name] = replicaState(pod);
  const readyReplicas = replicas.filter((p) => states[p.name] === 'Ready').length;

  const master = masterVerdict(masters, input.bootstrap);
  const inSync = replicasVerdict(replicas, states, input.desiredReplicas);

  const hibernated = hibernationVerdict(input.hibernate === true, pods);
  let ready: Verdict;
  if (!input.spec.valid)
    ready = { ok: false, reason: input.spec.reason ?? 'InvalidSpec', message: input.spec.message, since: undefined };
  else if (input.hibernate === true)
    ready = { ok: false, reason: 'Hibernated', message: hibernated.message, since: undefined };
  else if (input.deleting !== undefined)
    ready = { ok: false, reason: 'Deleting', message: input.deleting, since: undefined };
  else if (input.restore !== undefined && (input.restore.phase === 'Pending' || input.restore.phase === 'Failed'))
    ready = {
      ok: false,
      reason:
        input.restoreRefused === true
          ? 'RestoreRefused'
          : input.restore.phase === 'Pending'
            ? 'RestorePending'
            : 'RestoreFailed',
      message: input.restore.message,
      since: undefined,
    };
  else if (!master.ok && input.secretProblem !== undefined)
    ready = { ok: false, reason: input.secretProblem.reason, message: input.secretProblem.message, since: undefined };
  else if (!master.ok) ready = master;
  else if (!inSync.ok) ready = inSync;
  else {
    ready = {
      ok: true,
      reason: 'AllReady',
      message: `master ${masters[0]?.name ?? ''} and ${readyReplicas} replica(s) Ready`,
      since: latest([master.since, inSync.since]),
    };
  }

  let specValid: Verdict;
  if (!input.spec.valid)
    specValid = {
      ok: false,
      reason: input.spec.reason ?? 'InvalidSpec',
      message: input.spec.message,
      since: undefined,
    };
  else if (input.spec.conflicts.length > 0) {
    specValid = {
      ok: false,
      reason: 'ImmutableFieldChanged',
      message: input.spec.conflicts.join('; '),
      since: undefined,
    };
  } else if ((input.spec.refusals ?? []).length > 0) {
    specValid = {
      ok: false,
      reason: 'ScaleDownRefused',
      message: (input.spec.refusals ?? []).join('; '),
      since: undefined,
    };
  } else specValid = { ok: true, reason: 'Valid', message: 'spec is valid', since: undefined };

  const previous = previousConditions(input.previous);
  const verdicts: Record<(typeof CONDITION_TYPES)[number], Verdict> = {
    Ready: ready,
    MasterAvailable: master,
    ReplicasInSync: inSync,
    SpecValid: specValid,
    Updated:
      input.rollout === undefined
        ? {
            ok: false,
            reason: 'Unknown',
            message: 'the rollout state is not known while the spec is invalid',
            since: undefined,
          }
        : { ok: input.rollout.ok, reason: input.rollout.reason, message: input.rollout.message, since: undefined },
    Hibernated: hibernated,
  };
  const judged: Array<{
    type: string;
    status: 'True' | 'False' | 'Unknown';
    reason: string;
    message: string;
    since: string | undefined;
  }> = CONDITION_TYPES.map((type) => ({
    type,
    status: verdicts[type].ok ? 'True' : 'False',
    reason: verdicts[type].reason,
    message: verdicts[type].message,
    since: verdicts[type].since,
  }));
  if (input.secretsCondition !== undefined)
    judged.push({ type: SECRETS_CONDITION, ...input.secretsCondition, since: undefined });
  if (input.backup?.condition !== undefined) judged.push({ type: 'BackupHealthy', ...input.backup.condition });
  const conditions: Condition[] = judged.map((verdict) => {
    const { type, status } = verdict;
    const before = previous.get(type);
    const since =
      before !== undefined && before.status === status ? (before.lastTransitionTime ?? verdict.since) : verdict.since;
    return {
      type,
      status,
      reason: verdict.reason,
      message: verdict.message,
      ...(since !== undefined ? { lastTransitionTime: since } : {}),
    };
  });

  const single = masters.length === 1 ? masters[0] : undefined;
  const replicaStatus: Record<string, string> = {};
  for (const pod of replicas) replicaStatus[pod.name] = states[pod.name] as ReplicaState;

  return {
    phase: !input.spec.valid ? 'Failed' : input.hibernate === true ? 'Hibernated' : master.ok ? 'Running' : 'Pending',
    masterStatus: masters.length === 0 ? 'None' : master.ok ? 'Ready' : 'NotReady',
    ...(single !== undefined ? { master: single.name } : {}),
    ...(single?.ip !== undefined ? { masterIP: single.ip } : {}),
    replicaStatus,
    readyReplicas,
    replicas: replicas.length,
    summary: { replicas: `${readyReplicas}/${input.desiredReplicas}` },
    selector: selectorString(podSelectorLabels(input.name)),
    ...(input.rollout !== undefined
      ? { rollout: { updatedPods: input.rollout.updatedPods, stalePods: input.rollout.stalePods } }
      : {}),
    ...(input.switchover !== undefined ? { switchover: input.switchover } : {}),
    ...nodesField(pods),
    ...(input.backup !== undefined ? { backup: input.backup.status } : {}),
    ...(input.restore !== undefined ? { restore: input.restore } : {}),
    ...(input.secrets !== undefined ? { secrets: input.secrets } : {}),
    conditions,
  };
}

/** status.nodes, absent until some pod's node answered. */
function nodesField(pods: readonly PodView[]) {
  const nodes = nodesStatus(pods);
  return nodes.length > 0 ? { nodes } : {};
}

function hibernationVerdict(hibernate: boolean, pods: readonly PodView[]): Verdict {
  if (!hibernate) return { ok: false, reason: 'Awake', message: 'spec.hibernate is false', since: undefined };
  if (pods.length === 0) {
    return {
      ok: true,
      reason: 'Hibernated',
      message: 'every pod is stopped; the data volumes are kept (spec.hibernate: false brings the Redis back)',
      since: undefined,
    };
  }
  return {
    ok: false,
    reason: 'Hibernating',
    message: `spec.hibernate is true; waiting for ${pods.map((p) => p.name).join(', ')} to stop`,
    since: undefined,
  };
}

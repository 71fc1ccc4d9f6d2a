// The StatefulSet controller's decisions (pkg/controller/statefulset/stateful_set_control.go),
// as a pure function of the set, its pods and the namespace's claims: which claims and pods to
// create, which pods to delete, which claim ownerReferences to change, and the status.
// Invariants (Kubernetes' documented guarantees):
// - Pod identity: `<set>-<ordinal>`, ordinals 0..replicas-1; a missing pod is recreated with the
//   same name (and its claims), a pod with another ordinal is condemned.
// - OrderedReady: one change at a time; pod i+1 is created only when 0..i are Running and Ready;
//   scale-down removes the highest ordinal only when all others are healthy. Parallel: all at once.
// - Claims `<template>-<set>-<ordinal>` are created before their pod and never deleted here;
//   persistentVolumeClaimRetentionPolicy is expressed as ownerReferences (whenDeleted: Delete ->
//   owned by the set; whenScaled: Delete -> a condemned pod's claims owned by that pod) and the
//   garbage collector does the deleting.
// - RollingUpdate replaces pods whose revision differs, highest ordinal first, one at a time,
//   waiting for each to be Running and Ready; ordinals below `partition` are left alone.
import { createHash } from 'node:crypto';
import type { KubeObject, OwnerReference, StoredObject } from '../../support/kube-api/index.ts';

export const POD_NAME_LABEL = 'statefulset.kubernetes.io/pod-name';
export const POD_INDEX_LABEL = 'apps.kubernetes.io/pod-index';
export const REVISION_LABEL = 'controller-revision-hash';

type Json = Record<string, unknown>;

export type StsAction =
  | { kind: 'createClaim'; claim: KubeObject; reason: string }
  | { kind: 'createPod'; pod: KubeObject; reason: string }
  | { kind: 'deletePod'; name: string; uid: string; reason: string }
  | { kind: 'setClaimOwners'; name: string; ownerReferences: OwnerReference[]; reason: string };

export interface StsPlan {
  actions: StsAction[];
  status: Json;
  /** Why the plan stopped short (OrderedReady waiting, a rollout waiting), for logs. */
  waiting?: string;
}

export interface StsPlanInput {
  sts: StoredObject;
  /** Pods whose controller is this set. */
  pods: StoredObject[];
  /** All claims in the set's namespace. */
  claims: StoredObject[];
  nowMs: number;
  /** Template of an earlier revision, when still known (for pods below the rollout partition). */
  templateOf?: (revision: string) => Json | undefined;
}

const SAFE = 'bcdfghjklmnpqrstvwxz2456789';

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Json)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** ControllerRevision name for the set's current template: `<set>-<hash>` (key order does not matter). */
export function revisionName(sts: StoredObject): string {
  const digest = createHash('sha256')
    .update(canonical((sts['spec'] as Json | undefined)?.['template'] ?? {}))
    .digest();
  let hash = '';
  for (let i = 0; i < 10; i++) hash += SAFE[digest[i]! % SAFE.length];
  return `${sts.metadata.name}-${hash}`;
}

export function ordinalOf(setName: string, podName: string): number {
  const m = /^(.*)-(0|[1-9][0-9]*)$/.exec(podName);
  return m && m[1] === setName ? Number(m[2]) : -1;
}

export function claimName(templateName: string, setName: string, ordinal: number): string {
  return `${templateName}-${setName}-${ordinal}`;
}

function phase(pod: StoredObject): string | undefined {
  return (pod['status'] as { phase?: string } | undefined)?.phase;
}

function readySince(pod: StoredObject): string | undefined {
  const conditions = (pod['status'] as { conditions?: Array<{ type: string; status: string; lastTransitionTime?: string }> } | undefined)?.conditions ?? [];
  const ready = conditions.find((c) => c.type === 'Ready' && c.status === 'True');
  return ready ? (ready.lastTransitionTime ?? '') : undefined;
}

export const isCreated = (p: StoredObject) => phase(p) !== undefined;
export const isTerminating = (p: StoredObject) => p.metadata.deletionTimestamp !== undefined;
const isFinished = (p: StoredObject) => phase(p) === 'Failed' || phase(p) === 'Succeeded';
export const isRunningAndReady = (p: StoredObject) => phase(p) === 'Running' && readySince(p) !== undefined;
const isHealthy = (p: StoredObject) => isRunningAndReady(p) && !isTerminating(p);

function stsSpec(sts: StoredObject): Json {
  return (sts['spec'] ?? {}) as Json;
}

function claimTemplates(sts: StoredObject): Json[] {
  return (stsSpec(sts)['volumeClaimTemplates'] as Json[] | undefined) ?? [];
}

function templateName(t: Json): string {
  return ((t['metadata'] as Json | undefined)?.['name'] as string | undefined) ?? '';
}

function setRef(sts: StoredObject, controller: boolean): OwnerReference {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    name: sts.metadata.name,
    uid: sts.metadata.uid,
    ...(controller ? { controller: true, blockOwnerDeletion: true } : {}),
  };
}

function retention(sts: StoredObject): { whenDeleted: string; whenScaled: string } {
  const p = (stsSpec(sts)['persistentVolumeClaimRetentionPolicy'] ?? {}) as Json;
  return { whenDeleted: (p['whenDeleted'] as string | undefined) ?? 'Retain', whenScaled: (p['whenScaled'] as string | undefined) ?? 'Retain' };
}

export function newClaim(sts: StoredObject, template: Json, ordinal: number, owners: OwnerReference[]): KubeObject {
  const meta = (template['metadata'] ?? {}) as Json;
  const matchLabels = ((stsSpec(sts)['selector'] as Json | undefined)?.['matchLabels'] ?? {}) as Record<string, string>;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: claimName(templateName(template), sts.metadata.name, ordinal),
      namespace: sts.metadata.namespace,
      labels: { ...((meta['labels'] as Record<string, string> | undefined) ?? {}), ...matchLabels },
      ...(meta['annotations'] ? { annotations: structuredClone(meta['annotations'] as Record<string, string>) } : {}),
      ...(owners.length > 0 ? { ownerReferences: owners } : {}),
    },
    spec: structuredClone(template['spec'] ?? {}),
  };
}

export function newPod(sts: StoredObject, ordinal: number, revision: string, template: Json): KubeObject {
  const name = `${sts.metadata.name}-${ordinal}`;
  const t = structuredClone(template);
  const meta = (t['metadata'] ?? {}) as Json;
  const spec = (t['spec'] ?? {}) as Json;
  const claims = claimTemplates(sts).map(templateName);
  const volumes = (spec['volumes'] as Json[] | undefined) ?? [];
  spec['volumes'] = [
    ...claims.map((c) => ({ name: c, persistentVolumeClaim: { claimName: claimName(c, sts.metadata.name, ordinal) } })),
    ...volumes.filter((v) => !claims.includes(v['name'] as string)),
  ];
  spec['hostname'] = name;
  const serviceName = stsSpec(sts)['serviceName'];
  if (typeof serviceName === 'string' && serviceName !== '') spec['subdomain'] = serviceName;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      generateName: `${sts.metadata.name}-`,
      namespace: sts.metadata.namespace,
      labels: {
        ...((meta['labels'] as Record<string, string> | undefined) ?? {}),
        [POD_NAME_LABEL]: name,
        [POD_INDEX_LABEL]: String(ordinal),
        [REVISION_LABEL]: revision,
      },
      ...(meta['annotations'] ? { annotations: meta['annotations'] as Record<string, string> } : {}),
      ownerReferences: [setRef(sts, true)],
    },
    spec,
  };
}

/**
 * The ownerReferences a claim should carry under the retention policy (other owners kept), as
 * updateClaimOwnerRefForSetAndPod decides: whenDeleted Delete -> owned by the set; whenScaled
 * Delete and the ordinal condemned -> owned by its pod only (so the garbage collector deletes
 * the claim with the pod, even when whenDeleted is Delete too).
 */
export function desiredClaimOwners(sts: StoredObject, claim: StoredObject, pod: StoredObject | undefined, condemned: boolean): OwnerReference[] {
  const policy = retention(sts);
  const refs = (claim.metadata.ownerReferences ?? []).filter(
    (r) => r.uid !== sts.metadata.uid && !(r.kind === 'Pod' && ordinalOf(sts.metadata.name, r.name) >= 0),
  );
  if (policy.whenScaled === 'Delete' && condemned) {
    if (pod) refs.push({ apiVersion: 'v1', kind: 'Pod', name: pod.metadata.name, uid: pod.metadata.uid });
  } else if (policy.whenDeleted === 'Delete') {
    refs.push(setRef(sts, false));
  }
  return refs;
}

function sameRefs(a: OwnerReference[] | undefined, b: OwnerReference[]): boolean {
  const key = (r: OwnerReference) => `${r.uid}/${r.controller === true}`;
  return JSON.stringify((a ?? []).map(key).sort()) === JSON.stringify(b.map(key).sort());
}

export function computeStatus(input: StsPlanInput, updateRevision: string): Json {
  const { sts, pods, nowMs } = input;
  const spec = stsSpec(sts);
  const prev = (sts['status'] ?? {}) as Json;
  const minReady = (spec['minReadySeconds'] as number | undefined) ?? 0;
  let currentRevision = (prev['currentRevision'] as string | undefined) ?? updateRevision;
  let replicas = 0;
  let ready = 0;
  let available = 0;
  let current = 0;
  let updated = 0;
  for (const pod of pods) {
    if (isCreated(pod)) replicas++;
    if (isRunningAndReady(pod)) {
      ready++;
      const since = Date.parse(readySince(pod) ?? '');
      if (minReady === 0 || (Number.isFinite(since) && nowMs - since >= minReady * 1000)) available++;
    }
    if (isCreated(pod) && !isTerminating(pod)) {
      const rev = pod.metadata.labels?.[REVISION_LABEL];
      if (rev === currentRevision) current++;
      if (rev === updateRevision) updated++;
    }
  }
  const type = ((spec['updateStrategy'] as Json | undefined)?.['type'] as string | undefined) ?? 'RollingUpdate';
  if (currentRevision !== updateRevision && type === 'RollingUpdate' && updated === replicas && ready === replicas) {
    currentRevision = updateRevision;
    current = updated;
  }
  return {
    observedGeneration: sts.metadata.generation ?? 1,
    replicas,
    readyReplicas: ready,
    currentReplicas: current,
    updatedReplicas: updated,
    availableReplicas: available,
    currentRevision,
    updateRevision,
    collisionCount: 0,
  };
}

export function planStatefulSet(input: StsPlanInput): StsPlan {
  const { sts, pods, claims } = input;
  const spec = stsSpec(sts);
  const setName = sts.metadata.name;
  const replicaCount = (spec['replicas'] as number | undefined) ?? 1;
  const monotonic = (spec['podManagementPolicy'] ?? 'OrderedReady') !== 'Parallel';
  const updateRevision = revisionName(sts);
  const status = computeStatus(input, updateRevision);
  const currentRevision = status['currentRevision'] as string;
  const strategy = (spec['updateStrategy'] ?? {}) as Json;
  const partition = ((strategy['rollingUpdate'] as Json | undefined)?.['partition'] as number | undefined) ?? 0;
  const actions: StsAction[] = [];

  const byOrdinal = new Map<number, StoredObject>();
  const condemned: StoredObject[] = [];
  for (const pod of pods) {
    const ord = ordinalOf(setName, pod.metadata.name);
    if (ord >= 0 && ord < replicaCount) byOrdinal.set(ord, pod);
    else condemned.push(pod);
  }
  condemned.sort((a, b) => ordinalOf(setName, b.metadata.name) - ordinalOf(setName, a.metadata.name));
  const claimByName = new Map(claims.map((c) => [c.metadata.name, c]));
  const templates = claimTemplates(sts);

  // Retention policy as ownerReferences, for the claims of every ordinal that has a pod or is wanted.
  const ordinals = new Set<number>([...Array(replicaCount).keys(), ...pods.map((p) => ordinalOf(setName, p.metadata.name)).filter((o) => o >= 0)]);
  for (const ord of [...ordinals].sort((a, b) => a - b)) {
    const pod = ord < replicaCount ? byOrdinal.get(ord) : condemned.find((p) => ordinalOf(setName, p.metadata.name) === ord);
    for (const t of templates) {
      const claim = claimByName.get(claimName(templateName(t), setName, ord));
      if (!claim || claim.metadata.deletionTimestamp) continue;
      const want = desiredClaimOwners(sts, claim, pod, ord >= replicaCount);
      if (!sameRefs(claim.metadata.ownerReferences, want)) {
        actions.push({ kind: 'setClaimOwners', name: claim.metadata.name, ownerReferences: want, reason: 'persistentVolumeClaimRetentionPolicy' });
      }
    }
  }

  const unhealthy = [...[...byOrdinal.entries()].sort((a, b) => a[0] - b[0]).map(([, p]) => p), ...[...condemned].reverse()].find((p) => !isHealthy(p));
  const done = (waiting?: string): StsPlan => ({ actions, status, ...(waiting ? { waiting } : {}) });

  /** Creates the missing claims of an ordinal; false when one is being deleted (the pod must wait). */
  const ensureClaims = (ord: number): boolean => {
    for (const t of templates) {
      const name = claimName(templateName(t), setName, ord);
      const claim = claimByName.get(name);
      if (claim?.metadata.deletionTimestamp) return false;
      if (!claim) {
        const owners = retention(sts).whenDeleted === 'Delete' ? [setRef(sts, false)] : [];
        actions.push({ kind: 'createClaim', claim: newClaim(sts, t, ord, owners), reason: `claim for ${setName}-${ord}` });
      }
    }
    return true;
  };

  for (let ord = 0; ord < replicaCount; ord++) {
    const pod = byOrdinal.get(ord);
    if (pod && isFinished(pod) && !isTerminating(pod)) {
      actions.push({ kind: 'deletePod', name: pod.metadata.name, uid: pod.metadata.uid, reason: `pod is ${phase(pod)}; it will be recreated` });
      if (monotonic) return done(`waiting for ${pod.metadata.name} to be replaced`);
      continue;
    }
    if (!pod) {
      if (!ensureClaims(ord)) {
        if (monotonic) return done(`a claim of ${setName}-${ord} is being deleted`);
        continue;
      }
      const revision = ord < partition && input.templateOf?.(currentRevision) ? currentRevision : updateRevision;
      const template = revision === updateRevision ? (spec['template'] as Json) : input.templateOf!(currentRevision)!;
      actions.push({ kind: 'createPod', pod: newPod(sts, ord, revision, template), reason: `ordinal ${ord} missing` });
      if (monotonic) return done(`waiting for ${setName}-${ord} to be Running and Ready`);
      continue;
    }
    ensureClaims(ord);
    if (isTerminating(pod)) {
      if (monotonic) return done(`waiting for ${pod.metadata.name} to terminate`);
      continue;
    }
    if (!isRunningAndReady(pod) && monotonic) return done(`waiting for ${pod.metadata.name} to be Running and Ready`);
  }

  for (const pod of condemned) {
    if (isTerminating(pod)) {
      if (monotonic) return done(`waiting for ${pod.metadata.name} to terminate`);
      continue;
    }
    if (monotonic && !isRunningAndReady(pod) && pod !== unhealthy) return done(`waiting for ${unhealthy?.metadata.name} to be healthy before scaling down`);
    actions.push({ kind: 'deletePod', name: pod.metadata.name, uid: pod.metadata.uid, reason: `scale down to ${replicaCount}` });
    if (monotonic) return done(`waiting for ${pod.metadata.name} to terminate`);
  }

  if (((strategy['type'] as string | undefined) ?? 'RollingUpdate') !== 'RollingUpdate') return done();
  for (let ord = replicaCount - 1; ord >= partition; ord--) {
    const pod = byOrdinal.get(ord);
    if (!pod) return done();
    if (pod.metadata.labels?.[REVISION_LABEL] !== updateRevision && !isTerminating(pod)) {
      actions.push({ kind: 'deletePod', name: pod.metadata.name, uid: pod.metadata.uid, reason: `rolling update to ${updateRevision}` });
      return done(`rolling update: replacing ${pod.metadata.name}`);
    }
    if (!isHealthy(pod)) return done(`rolling update: waiting for ${pod.metadata.name} to be Running and Ready`);
  }
  return done();
}

// The immutable part of a StatefulSet, for every kind that runs one. Invariant: the fields the API
// server never lets change (selector, serviceName, volumeClaimTemplates, podManagementPolicy) of an
// observed StatefulSet are echoed exactly: the API server rejects any change to them on every
// sync, and observed claim templates carry server defaults that would otherwise diff forever.
// When the spec asks for something they cannot give, it is reported as a conflict instead.
import type { IStatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import type { IStatefulSetSpec } from 'kubernetes-models/apps/v1/StatefulSetSpec';
import type { IPersistentVolumeClaim } from 'kubernetes-models/v1/PersistentVolumeClaim';
import type { IPersistentVolumeClaimSpec } from 'kubernetes-models/v1/PersistentVolumeClaimSpec';
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec';
import { DATA_VOLUME, ENGINE_LABEL, ROLE_LABEL, VERSION_LABEL } from '../../api/labels.ts';
import type { Engine } from '../../api/engine.ts';
import type { PersistenceSpec } from '../../api/schema.ts';
import { versionLabelValue, type Child, type ChildMetadata } from './child.ts';
import { CONFIG_HASH_ANNOTATION } from './pod-template.ts';
import { parseQuantity } from './quantity.ts';
import type { KubeObject } from './types.ts';
import { array, at, isRecord, sortedMap, str, stringMap, type Json } from './util.ts';

/** The fields the API server never lets change on a StatefulSet; the selector is always set. */
export type Immutable = Pick<
  IStatefulSetSpec,
  'selector' | 'serviceName' | 'podManagementPolicy' | 'volumeClaimTemplates'
>;
export type LabelSelector = IStatefulSetSpec['selector'];

/** Why the observed claim templates of `setName` cannot give what spec.persistence asks for (each names the field). */
export function claimConflicts(persistence: PersistenceSpec, setName: string, observedTemplates: unknown[]): string[] {
  const observedData = observedTemplates.find((t) => at(t, 'metadata', 'name') === DATA_VOLUME);
  const wanted = persistence.enableRdb || persistence.enableAof;
  if (wanted && observedData === undefined) {
    return [
      `spec.persistence: RDB/AOF is on but StatefulSet ${setName} was created without a data volume claim (volumeClaimTemplates are immutable); data stays in an emptyDir until the StatefulSet is recreated`,
    ];
  }
  if (!wanted && observedData !== undefined) {
    return [
      `spec.persistence: RDB and AOF are off but StatefulSet ${setName} keeps its data volume claims (volumeClaimTemplates are immutable)`,
    ];
  }
  if (observedData === undefined) return [];
  const conflicts: string[] = [];
  const { size, storageClassName } = persistence;
  const observedSize = at(observedData, 'spec', 'resources', 'requests', 'storage');
  const observedBytes = parseQuantity(observedSize);
  const wantedBytes = parseQuantity(size);
  // A larger size is no conflict: the sidecar grows the claims (when the storage class allows it)
  // and then replaces the StatefulSet with its pods orphaned, so the next sync builds templates
  // of the new size. A smaller one cannot happen to a volume.
  if (observedBytes === undefined || wantedBytes === undefined || wantedBytes < observedBytes) {
    conflicts.push(
      `spec.persistence.size: ${size} requested but StatefulSet ${setName} creates volumes of ${String(observedSize)} (volumeClaimTemplates are immutable, and volumes never shrink)`,
    );
  }
  const observedClass = str(at(observedData, 'spec', 'storageClassName'));
  if (observedClass !== storageClassName) {
    conflicts.push(
      `spec.persistence.storageClassName: ${storageClassName ?? '(cluster default)'} requested but StatefulSet ${setName} uses ${observedClass ?? '(cluster default)'} (volumeClaimTemplates are immutable)`,
    );
  }
  return conflicts;
}

/**
 * The immutable part of a StatefulSet: on creation what `templates` gives (claims only with
 * persistence on), afterwards what was observed, echoed, with the claim templates the spec can no
 * longer apply said in `conflicts`; and whether the pods get their data from a claim.
 */
export function immutablePart(
  observedSpec: Json | undefined,
  selectorLabels: Record<string, string>,
  serviceName: string,
  templates: () => IPersistentVolumeClaim[],
  persistence: PersistenceSpec,
  setName: string,
): { immutable: Immutable; conflicts: string[]; claimsData: boolean } {
  let immutable: Immutable;
  let conflicts: string[] = [];
  if (observedSpec === undefined) {
    const claims = templates();
    immutable = {
      selector: { matchLabels: selectorLabels },
      serviceName,
      podManagementPolicy: 'Parallel',
      ...(claims.length > 0 ? ({ volumeClaimTemplates: claims } satisfies Partial<Immutable>) : {}),
    };
  } else {
    immutable = echoedImmutable(observedSpec, { matchLabels: selectorLabels });
    conflicts = claimConflicts(persistence, setName, array(observedSpec['volumeClaimTemplates']));
  }
  const claimsData = array(immutable.volumeClaimTemplates).some((t) => at(t, 'metadata', 'name') === DATA_VOLUME);
  return { immutable, conflicts, claimsData };
}

/**
 * The immutable fields of an observed StatefulSet, echoed exactly: never rebuilt (the API server
 * refuses any change) and never checked (the API server wrote them, so they have Kubernetes'
 * types; a hand edit could leave anything, which is why they are read with util.ts below).
 */
export function echoedImmutable(observedSpec: Json, fallbackSelector: LabelSelector): Immutable {
  const observed = observedSpec as Partial<Immutable>;
  return {
    selector: observed.selector ?? fallbackSelector,
    ...('serviceName' in observed ? { serviceName: observed.serviceName } : {}),
    ...('podManagementPolicy' in observed ? { podManagementPolicy: observed.podManagementPolicy } : {}),
    ...('volumeClaimTemplates' in observed ? { volumeClaimTemplates: observed.volumeClaimTemplates } : {}),
  };
}

/**
 * The data claim template when RDB or AOF is on; `labels` land on every claim, so the customize hook finds them for
 * finalize.
 */
export function dataClaimTemplates(
  persistence: PersistenceSpec,
  labels: Record<string, string>,
): IPersistentVolumeClaim[] {
  if (!persistence.enableRdb && !persistence.enableAof) return [];
  const { size, storageClassName } = persistence;
  return [
    {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: DATA_VOLUME, labels },
      spec: {
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: size } },
        ...(storageClassName !== undefined ? ({ storageClassName } satisfies Partial<IPersistentVolumeClaimSpec>) : {}),
        volumeMode: 'Filesystem',
      },
    },
  ];
}

/**
 * The pod template's labels: `labels` (the selector's and the component), the engine and version,
 * and every label of the selector in effect but the role, since an echoed selector must keep
 * matching the template or the API server refuses the update. The engine label makes an engine
 * change a template change even under spec.image: a rollout, stale pods told apart by revision.
 * It is set for valkey only (absent means redis, as engine-transition.ts reads it): a label new on
 * every template would roll every existing Redis once when the operator is upgraded.
 */
export function podTemplateLabels(
  labels: Record<string, string>,
  version: string,
  engine: Engine,
  immutable: Immutable,
): Record<string, string> {
  const out: Record<string, string> = { ...labels };
  if (engine !== 'redis') out[ENGINE_LABEL] = engine;
  const value = versionLabelValue(version);
  if (value !== undefined) out[VERSION_LABEL] = value;
  for (const [key, v] of Object.entries(stringMap(at(immutable.selector, 'matchLabels'))))
    if (key !== ROLE_LABEL) out[key] = v;
  return out;
}

export interface SetTemplate {
  replicas: number;
  immutable: Immutable;
  whenDeleted: PersistenceSpec['whenDeleted'];
  labels: Record<string, string>;
  podAnnotations: Record<string, string> | undefined;
  confHash: string;
  podSpec: IPodSpec;
}

/**
 * A StatefulSet spec of every kind: the immutable part as decided, OnDelete (a template change
 * never restarts a pod by itself: the sidecar orders rollouts, or nobody does), claims kept when
 * scaled down, and the config hash on the pod template so a static config change rolls the pods.
 */
export function statefulSetSpec(t: SetTemplate): IStatefulSetSpec {
  const { immutable } = t;
  return {
    replicas: t.replicas,
    selector: immutable.selector,
    ...('serviceName' in immutable ? ({ serviceName: immutable.serviceName } satisfies Partial<IStatefulSetSpec>) : {}),
    ...('podManagementPolicy' in immutable
      ? ({ podManagementPolicy: immutable.podManagementPolicy } satisfies Partial<IStatefulSetSpec>)
      : {}),
    updateStrategy: { type: 'OnDelete' },
    persistentVolumeClaimRetentionPolicy: { whenDeleted: t.whenDeleted, whenScaled: 'Retain' },
    template: {
      metadata: {
        labels: t.labels,
        annotations: { ...sortedMap(t.podAnnotations ?? {}), [CONFIG_HASH_ANNOTATION]: t.confHash },
      },
      spec: t.podSpec,
    },
    ...('volumeClaimTemplates' in immutable
      ? ({ volumeClaimTemplates: immutable.volumeClaimTemplates } satisfies Partial<IStatefulSetSpec>)
      : {}),
  };
}

/** One StatefulSet a kind wants, before what the observed one allows is known. */
export interface SetRequest {
  setName: string;
  metadata: ChildMetadata;
  observed: KubeObject | undefined;
  serviceName: string;
  selectorLabels: Record<string, string>;
  /** The labels of the data claim templates and of the pod template (before version and selector). */
  podLabels: Record<string, string>;
  persistence: PersistenceSpec;
  version: string;
  engine: Engine;
  podAnnotations: Record<string, string> | undefined;
  replicas: number;
  confHash: string;
  /** The pod spec, given whether the pods have the data claim (immutablePart decides). */
  podSpec: (claimsData: boolean) => IPodSpec;
}

/** A kind's StatefulSet: the immutable part kept as observed (with why it differs), the rest as wanted. */
export function statefulSetPlan(r: SetRequest): { object: Child<IStatefulSet>; conflicts: string[] } {
  const observedSpec = isRecord(r.observed?.['spec']) ? (r.observed['spec'] as Json) : undefined;
  const { immutable, conflicts, claimsData } = immutablePart(
    observedSpec,
    r.selectorLabels,
    r.serviceName,
    () => dataClaimTemplates(r.persistence, r.podLabels),
    r.persistence,
    r.setName,
  );
  const spec = statefulSetSpec({
    replicas: r.replicas,
    immutable,
    // whenScaled Retain: a pod removed by lowering the replicas leaves its volume.
    whenDeleted: r.persistence.whenDeleted,
    labels: podTemplateLabels(r.podLabels, r.version, r.engine, immutable),
    podAnnotations: r.podAnnotations,
    confHash: r.confHash,
    podSpec: r.podSpec(claimsData),
  });
  return { object: { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: r.metadata, spec }, conflicts };
}

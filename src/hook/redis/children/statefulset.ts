// The two StatefulSets, <name>-master (master.replicas pods) and <name>-replica (spec.replicas
// pods). The names say where a pod started, not its role: after a failover the master may be
// <name>-replica-0. Invariants:
// - The pod template never carries the role label (the sidecar writes it on pods).
// - Immutable fields of an observed StatefulSet are echoed exactly (common/statefulset.ts), and
//   what the spec can no longer apply to them is reported as a conflict.
// - The pod's `data` volume follows the claim templates actually in effect, so the template is
//   valid whichever way persistence went.
// - updateStrategy OnDelete: the sidecar, not the StatefulSet controller, orders a rollout.
// - Pods run as the redis image's user (999) with the restricted Pod Security profile
//   (common/pod-template.ts, shared with a RedisCluster's pods).
// - Built with Kubernetes' types (common/child.ts). Optional fields are spread in only when set, so an
//   unset field is absent rather than `undefined`; each spread piece `satisfies` its type,
//   because TypeScript checks no keys inside a spread.
import type { IStatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import type { IStatefulSetSpec } from 'kubernetes-models/apps/v1/StatefulSetSpec';
import type { IAffinity } from 'kubernetes-models/v1/Affinity';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IPersistentVolumeClaim } from 'kubernetes-models/v1/PersistentVolumeClaim';
import type { IPersistentVolumeClaimSpec } from 'kubernetes-models/v1/PersistentVolumeClaimSpec';
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec';
import type { IResourceRequirements } from 'kubernetes-models/v1/ResourceRequirements';
import type { IVolume } from 'kubernetes-models/v1/Volume';
import {
  CONFIG_MOUNT,
  COMPONENT_LABEL,
  COMPONENT_MASTER_SET,
  COMPONENT_REPLICA_SET,
  DATA_MOUNT,
  DATA_VOLUME,
  REDIS_CONTAINER,
  REDIS_PORT,
  ROLE_LABEL,
  TLS_MOUNT,
  TLS_VOLUME,
  VERSION_LABEL,
  childNames,
  podSelectorLabels,
} from '../../../api/labels.ts';
import { authSecretRef as redisAuthSecretRef, operatorSecretRef } from '../../../api/auth.ts';
import { tlsSecretName } from '../../../api/tls.ts';
import { versionLabelValue, type Child } from '../../common/child.ts';
import { exporterRedisEnv } from '../../common/exporter.ts';
import { PASSWORD_CHECK_SCRIPT, passwordSourceEnv } from '../../common/password-check.ts';
import { CONFIG_HASH_ANNOTATION, CONFIG_VOLUME, REDIS_UID, TMP_VOLUME, exec, livenessScript, redisCli } from '../../common/pod-template.ts';
import { REDIS_FEED_SCRIPT } from '../../common/redis-start.ts';
import { immutablePart } from '../../common/statefulset.ts';
import type { KubeObject } from '../../common/types.ts';
import { at, isRecord, sortedMap, stringMap, type Json } from '../../common/util.ts';
import type { HookContext } from '../context.ts';
import { childMetadata } from './meta.ts';
import { exporterContainers, exporterEnabled } from './metrics.ts';
import type { RestoreInit } from './restore-container.ts';

export type SetKind = 'master' | 'replica';

export interface StatefulSetPlan {
  object: Child<IStatefulSet>;
  /** Human-readable reasons the spec cannot be applied to immutable fields, each naming the field. */
  conflicts: string[];
}

/** Ready iff this node is a master, or a replica whose link to its master is up. */
export function readinessScript(tls: boolean): string {
  return [
    `out=$(${redisCli(tls)} info replication) || exit 1`,
    'case "$out" in *role:master*) exit 0 ;; *master_link_status:up*) exit 0 ;; esac',
    'exit 1',
  ].join('\n');
}

export const READINESS_SCRIPT = readinessScript(false);
export const LIVENESS_SCRIPT = livenessScript(false);

/** The Redis container's script: the passwords checked (common/password-check.ts), then fed to redis-server. */
export const REDIS_START_SCRIPT = [PASSWORD_CHECK_SCRIPT, REDIS_FEED_SCRIPT].join('\n');
export const REDIS_COMMAND = ['sh', '-c', REDIS_START_SCRIPT];

export function authSecretRef(ctx: HookContext): { name: string; key: string } {
  const ref = redisAuthSecretRef(ctx.name, ctx.spec);
  return { name: ref.secretName, key: ref.key };
}

export function persistenceOn(ctx: HookContext): boolean {
  return ctx.spec.persistence.enableRdb || ctx.spec.persistence.enableAof;
}

function claimTemplates(ctx: HookContext, component: string): IPersistentVolumeClaim[] {
  if (!persistenceOn(ctx)) return [];
  const { size, storageClassName } = ctx.spec.persistence;
  return [
    {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      // The pod selector labels land on every PVC, so the customize hook can find them for finalize.
      metadata: { name: DATA_VOLUME, labels: { ...podSelectorLabels(ctx.name), [COMPONENT_LABEL]: component } },
      spec: {
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: size } },
        ...(storageClassName !== undefined ? ({ storageClassName } satisfies Partial<IPersistentVolumeClaimSpec>) : {}),
        volumeMode: 'Filesystem',
      },
    },
  ];
}

function defaultAffinity(ctx: HookContext): IAffinity {
  return {
    podAntiAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: [
        {
          weight: 100,
          podAffinityTerm: {
            labelSelector: { matchLabels: podSelectorLabels(ctx.name) },
            topologyKey: 'kubernetes.io/hostname',
          },
        },
      ],
    },
  };
}

function resources(ctx: HookContext): IResourceRequirements {
  const { requests, limits } = ctx.spec.resources;
  return {
    ...(requests !== undefined ? ({ requests: sortedMap(requests) } satisfies IResourceRequirements) : {}),
    ...(limits !== undefined ? ({ limits: sortedMap(limits) } satisfies IResourceRequirements) : {}),
  };
}

function container(ctx: HookContext): IContainer {
  const spec = ctx.spec;
  const secret = authSecretRef(ctx);
  const operator = operatorSecretRef(ctx.name);
  const tls = spec.tls !== undefined;
  return {
    name: REDIS_CONTAINER,
    image: spec.image ?? `redis:${spec.version}`,
    ...(spec.imagePullPolicy !== undefined ? ({ imagePullPolicy: spec.imagePullPolicy } satisfies Partial<IContainer>) : {}),
    command: REDIS_COMMAND,
    ports: [{ name: 'redis', containerPort: REDIS_PORT, protocol: 'TCP' }],
    env: [
      { name: 'POD_IP', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'status.podIP' } } },
      { name: 'POD_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } },
      { name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: secret.name, key: secret.key } } },
      { name: 'OPERATOR_PASSWORD', valueFrom: { secretKeyRef: { name: operator.secretName, key: operator.key } } },
      ...exporterRedisEnv(ctx.name, exporterEnabled(ctx)),
      passwordSourceEnv('REDIS_PASSWORD', secret.name, secret.key),
      passwordSourceEnv('OPERATOR_PASSWORD', operator.secretName, operator.key),
    ],
    resources: resources(ctx),
    securityContext: {
      runAsNonRoot: true,
      runAsUser: REDIS_UID,
      runAsGroup: REDIS_UID,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    },
    // Only "does it answer", with five minutes before the first answer: start-up cost is the
    // data set load, and LOADING replies count as alive afterwards (see LIVENESS_SCRIPT).
    startupProbe: { ...exec(livenessScript(tls)), periodSeconds: 1, timeoutSeconds: 5, successThreshold: 1, failureThreshold: 300 },
    readinessProbe: { ...exec(readinessScript(tls)), periodSeconds: 1, timeoutSeconds: 2, successThreshold: 1, failureThreshold: 2 },
    livenessProbe: { ...exec(livenessScript(tls)), periodSeconds: 10, timeoutSeconds: 5, successThreshold: 1, failureThreshold: 6 },
    volumeMounts: [
      { name: CONFIG_VOLUME, mountPath: CONFIG_MOUNT, readOnly: true },
      { name: DATA_VOLUME, mountPath: DATA_MOUNT },
      { name: TMP_VOLUME, mountPath: '/tmp' },
      ...(tls ? [{ name: TLS_VOLUME, mountPath: TLS_MOUNT, readOnly: true }] : []),
    ],
  };
}

export function desiredStatefulSet(
  ctx: HookContext,
  which: SetKind,
  observed: KubeObject | undefined,
  confHash: string,
  minPods = 0,
  restore?: RestoreInit,
): StatefulSetPlan {
  const spec = ctx.spec;
  const names = childNames(ctx.name);
  const setName = which === 'master' ? names.masterSet : names.replicaSet;
  const component = which === 'master' ? COMPONENT_MASTER_SET : COMPONENT_REPLICA_SET;
  const selectorLabels = { ...podSelectorLabels(ctx.name), [COMPONENT_LABEL]: component };

  const observedSpec = isRecord(observed?.['spec']) ? (observed['spec'] as Json) : undefined;
  const { immutable, conflicts, claimsData } = immutablePart(
    observedSpec,
    selectorLabels,
    names.headless,
    () => claimTemplates(ctx, component),
    spec.persistence,
    setName,
  );

  // An echoed selector must keep matching the template, or the API server refuses the update.
  const templateLabels: Record<string, string> = { ...selectorLabels };
  const version = versionLabelValue(spec.version);
  if (version !== undefined) templateLabels[VERSION_LABEL] = version;
  for (const [key, value] of Object.entries(stringMap(at(immutable.selector, 'matchLabels')))) {
    if (key !== ROLE_LABEL) templateLabels[key] = value;
  }

  const volumes: IVolume[] = [{ name: CONFIG_VOLUME, configMap: { name: names.config } }];
  if (!claimsData) volumes.push({ name: DATA_VOLUME, emptyDir: {} });
  volumes.push({ name: TMP_VOLUME, emptyDir: {} });
  const tlsSecret = tlsSecretName(ctx.name, spec);
  // The key is readable by the pod's group only (fsGroup: the redis user). The kubelet replaces
  // the files when the Secret is renewed; the sidecar then has every node load them.
  if (tlsSecret !== undefined) volumes.push({ name: TLS_VOLUME, secret: { secretName: tlsSecret, defaultMode: 0o440 } });
  if (restore !== undefined) volumes.push(...restore.volumes);

  const podSpec: IPodSpec = {
    automountServiceAccountToken: false,
    enableServiceLinks: false,
    terminationGracePeriodSeconds: 60,
    securityContext: {
      runAsNonRoot: true,
      runAsUser: REDIS_UID,
      runAsGroup: REDIS_UID,
      fsGroup: REDIS_UID,
      fsGroupChangePolicy: 'OnRootMismatch',
      seccompProfile: { type: 'RuntimeDefault' },
    },
    // The CRD keeps spec.affinity unstructured (preserve-unknown-fields): it is passed through as
    // written, and the API server validates it as an Affinity when the StatefulSet is applied.
    affinity: (spec.affinity as IAffinity | undefined) ?? defaultAffinity(ctx),
    // Empty maps and lists are left out: the API server stores them as absent (omitempty), so
    // returning {} or [] would differ from what is observed on every sync.
    ...(spec.nodeSelector !== undefined && Object.keys(spec.nodeSelector).length > 0
      ? ({ nodeSelector: sortedMap(spec.nodeSelector) } satisfies Partial<IPodSpec>)
      : {}),
    ...(spec.tolerations !== undefined && spec.tolerations.length > 0 ? ({ tolerations: spec.tolerations } satisfies Partial<IPodSpec>) : {}),
    ...(spec.priorityClassName !== undefined ? ({ priorityClassName: spec.priorityClassName } satisfies Partial<IPodSpec>) : {}),
    ...(spec.imagePullSecrets !== undefined && spec.imagePullSecrets.length > 0
      ? ({ imagePullSecrets: spec.imagePullSecrets } satisfies Partial<IPodSpec>)
      : {}),
    ...(restore !== undefined ? ({ initContainers: restore.initContainers } satisfies Partial<IPodSpec>) : {}),
    containers: [container(ctx), ...exporterContainers(ctx, REDIS_UID)],
    volumes,
  };

  const stsSpec: IStatefulSetSpec = {
    // Hibernation stops every pod and keeps the claims (whenScaled: Retain).
    replicas: spec.hibernate ? 0 : Math.max(minPods, which === 'master' ? spec.master.replicas : spec.replicas),
    selector: immutable.selector,
    ...('serviceName' in immutable ? ({ serviceName: immutable.serviceName } satisfies Partial<IStatefulSetSpec>) : {}),
    ...('podManagementPolicy' in immutable ? ({ podManagementPolicy: immutable.podManagementPolicy } satisfies Partial<IStatefulSetSpec>) : {}),
    // OnDelete: a template change never restarts a pod by itself. The sidecar replaces pods one
    // at a time, replicas first and each only when every other pod is linked, and moves the
    // master away before its pod goes (the StatefulSet controller knows none of that).
    updateStrategy: { type: 'OnDelete' },
    persistentVolumeClaimRetentionPolicy: { whenDeleted: spec.persistence.whenDeleted, whenScaled: 'Retain' },
    template: {
      metadata: {
        labels: templateLabels,
        annotations: { ...sortedMap(spec.podAnnotations ?? {}), [CONFIG_HASH_ANNOTATION]: confHash },
      },
      spec: podSpec,
    },
    ...('volumeClaimTemplates' in immutable ? ({ volumeClaimTemplates: immutable.volumeClaimTemplates } satisfies Partial<IStatefulSetSpec>) : {}),
  };

  return {
    object: { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: childMetadata(ctx, setName, component), spec: stsSpec },
    conflicts,
  };
}

// The two StatefulSets, <name>-master (master.replicas pods) and <name>-replica (spec.replicas
// pods). The names say where a pod started, not its role: after a failover the master may be
// <name>-replica-0. Invariants:
// - The pod template never carries the role label (the sidecar writes it on pods).
// - Immutable fields (selector, serviceName, volumeClaimTemplates, podManagementPolicy) of an
//   observed StatefulSet are echoed exactly: the API server rejects any change to them on every
//   sync, and observed claim templates carry server defaults that would otherwise diff forever.
//   When the spec asks for something they cannot give, it is reported as a conflict instead.
// - The pod's `data` volume follows the claim templates actually in effect, so the template is
//   valid whichever way persistence went.
// - updateStrategy OnDelete: the sidecar, not the StatefulSet controller, orders a rollout.
// - Pods run as the redis image's user (999) with the restricted Pod Security profile.
// - Built with Kubernetes' types (types.ts). Optional fields are spread in only when set, so an
//   unset field is absent rather than `undefined`; each spread piece `satisfies` its type,
//   because TypeScript checks no keys inside a spread.
import type { IStatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import type { IStatefulSetSpec } from 'kubernetes-models/apps/v1/StatefulSetSpec';
import type { IAffinity } from 'kubernetes-models/v1/Affinity';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IPersistentVolumeClaim } from 'kubernetes-models/v1/PersistentVolumeClaim';
import type { IPersistentVolumeClaimSpec } from 'kubernetes-models/v1/PersistentVolumeClaimSpec';
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec';
import type { IProbe } from 'kubernetes-models/v1/Probe';
import type { IResourceRequirements } from 'kubernetes-models/v1/ResourceRequirements';
import type { IVolume } from 'kubernetes-models/v1/Volume';
import {
  CONFIG_KEY,
  CONFIG_MOUNT,
  COMPONENT_LABEL,
  COMPONENT_MASTER_SET,
  COMPONENT_REPLICA_SET,
  DATA_MOUNT,
  DATA_VOLUME,
  GROUP,
  REDIS_CONTAINER,
  REDIS_PORT,
  ROLE_LABEL,
  TLS_MOUNT,
  TLS_VOLUME,
  VERSION_LABEL,
  childNames,
  podSelectorLabels,
} from '../../../api/labels.ts';
import { OPERATOR_RULES, OPERATOR_USER, authSecretRef as redisAuthSecretRef, operatorSecretRef } from '../../../api/auth.ts';
import { TLS_FILE_DIRECTIVES, tlsSecretName } from '../../../api/tls.ts';
import type { PersistenceSpec } from '../../../api/schema.ts';
import type { HookContext } from '../../common/options.ts';
import { parseQuantity } from '../../common/quantity.ts';
import type { KubeObject } from '../../common/types.ts';
import { array, at, isRecord, sortedMap, str, stringMap, type Json } from '../../common/util.ts';
import { EXPORTER_USER_CONFIG_LINE, EXPORTER_USER_SCRIPT, exporterContainers, exporterEnabled, exporterRedisEnv } from '../../common/exporter.ts';
import { PASSWORD_CHECK_SCRIPT, passwordSourceEnv } from '../../common/password-check.ts';
import { childMetadata, versionLabelValue } from './meta.ts';
import type { RestoreInit } from './restore-container.ts';
import type { Child } from '../../common/child.ts';

/** Pod template annotation with a hash of redis.conf: a config change rolls the pods. */
export const CONFIG_HASH_ANNOTATION = `${GROUP}/config-hash`;
/** uid/gid of the `redis` user in the official redis images (Debian and Alpine). */
export const REDIS_UID = 999;
export const CONFIG_VOLUME = 'config';
export const TMP_VOLUME = 'tmp';

export type SetKind = 'master' | 'replica';

/** The fields the API server never lets change on a StatefulSet; the selector is always set. */
export type Immutable = Pick<IStatefulSetSpec, 'selector' | 'serviceName' | 'podManagementPolicy' | 'volumeClaimTemplates'>;
export type LabelSelector = IStatefulSetSpec['selector'];

export interface StatefulSetPlan {
  object: Child<IStatefulSet>;
  /** Human-readable reasons the spec cannot be applied to immutable fields, each naming the field. */
  conflicts: string[];
}

/**
 * Probes authenticate as the operator's user, whose password never rotates: a rotation of the
 * password clients use (the default user's) can never fail a probe (issue 10's outage). With TLS
 * they verify the node's certificate chain against the mounted CA.
 */
export function redisCli(tls: boolean): string {
  const transport = tls ? ` --tls --cacert ${TLS_FILE_DIRECTIVES['tls-ca-cert-file']}` : '';
  return `REDISCLI_AUTH="$OPERATOR_PASSWORD" redis-cli${transport} --user ${OPERATOR_USER} -h "$POD_IP" -p ${REDIS_PORT}`;
}

/** Ready iff this node is a master, or a replica whose link to its master is up. */
export function readinessScript(tls: boolean): string {
  return [
    `out=$(${redisCli(tls)} info replication) || exit 1`,
    'case "$out" in *role:master*) exit 0 ;; *master_link_status:up*) exit 0 ;; esac',
    'exit 1',
  ].join('\n');
}

/** Alive iff redis-server answers at all: loading a big data set or running a long script is not death. */
export function livenessScript(tls: boolean): string {
  return [`out=$(${redisCli(tls)} ping 2>&1)`, 'case "$out" in *PONG*|*LOADING*|*BUSY*|*MASTERDOWN*) exit 0 ;; esac', 'exit 1'].join('\n');
}

export const READINESS_SCRIPT = readinessScript(false);
export const LIVENESS_SCRIPT = livenessScript(false);

/**
 * The passwords reach redis-server on its standard input (`-` reads config lines from stdin after
 * the file), from the env: never on a command line (/proc/<pid>/cmdline, `ps`) and never in the
 * ConfigMap. printf is a shell builtin, and sed gets each password on a pipe; every `"` and `\`
 * is escaped inside redis.conf's double quotes, so spaces, `#`, quotes and backslashes arrive as
 * written (no other escape survives: `\n` becomes `\\n`). Control characters never get here
 * (PASSWORD_CHECK_SCRIPT runs first). A here-document keeps `exec`, so redis-server stays the
 * container's process and gets SIGTERM itself.
 * - `requirepass`: the default user's password, the one clients use (and rotate);
 * - `user redis-operator`: the operator's own user, for probes, the sidecar and replication
 *   (`masteruser`/`masterauth`), so a rotation of the clients' password never breaks a link.
 */
export const REDIS_FEED_SCRIPT = [
  `pw=$(printf '%s' "$REDIS_PASSWORD" | sed 's/[\\\\"]/\\\\&/g')`,
  `opw=$(printf '%s' "$OPERATOR_PASSWORD" | sed 's/[\\\\"]/\\\\&/g')`,
  ...EXPORTER_USER_SCRIPT,
  `exec redis-server ${CONFIG_MOUNT}/${CONFIG_KEY} - <<EOF`,
  'requirepass "$pw"',
  `user ${OPERATOR_USER} on ">$opw" ${OPERATOR_RULES.join(' ')}`,
  `masteruser ${OPERATOR_USER}`,
  'masterauth "$opw"',
  EXPORTER_USER_CONFIG_LINE,
  'EOF',
].join('\n');
/** The Redis container's script: the passwords checked (password-check.ts), then fed to redis-server. */
export const REDIS_START_SCRIPT = [PASSWORD_CHECK_SCRIPT, REDIS_FEED_SCRIPT].join('\n');
export const REDIS_COMMAND = ['sh', '-c', REDIS_START_SCRIPT];

export function authSecretRef(ctx: HookContext): { name: string; key: string } {
  const ref = redisAuthSecretRef(ctx.name, ctx.spec);
  return { name: ref.secretName, key: ref.key };
}

export function persistenceOn(ctx: HookContext): boolean {
  return ctx.spec.persistence.enableRdb || ctx.spec.persistence.enableAof;
}

export function exec(script: string): Pick<IProbe, 'exec'> {
  return { exec: { command: ['sh', '-c', script] } };
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
    return [`spec.persistence: RDB and AOF are off but StatefulSet ${setName} keeps its data volume claims (volumeClaimTemplates are immutable)`];
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

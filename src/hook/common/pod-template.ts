// Pieces of the pod template every kind's Redis pods share (a Redis's two StatefulSets, a
// RedisCluster's shards): the uid they run as, the restricted container security context, the
// config and tmp volumes, the probes' redis-cli and liveness script, the image by engine. Invariants: pods run as the
// redis image's user (999) with the restricted Pod Security profile; probes authenticate as the
// operator's user, never the one clients use. A change here changes every kind's pods.
import type { IAffinity } from 'kubernetes-models/v1/Affinity';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IEnvVar } from 'kubernetes-models/v1/EnvVar';
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec';
import type { IProbe } from 'kubernetes-models/v1/Probe';
import type { IResourceRequirements } from 'kubernetes-models/v1/ResourceRequirements';
import type { ISecurityContext } from 'kubernetes-models/v1/SecurityContext';
import type { IVolume } from 'kubernetes-models/v1/Volume';
import type { IVolumeMount } from 'kubernetes-models/v1/VolumeMount';
import { OPERATOR_USER, operatorSecretRef } from '../../api/auth.ts';
import { CONFIG_MOUNT, DATA_MOUNT, DATA_VOLUME, GROUP, REDIS_PORT, TLS_MOUNT, TLS_VOLUME } from '../../api/labels.ts';
import { defaultImage, type Engine } from '../../api/engine.ts';
import type { RedisSpec } from '../../api/schema.ts';
import { TLS_FILE_DIRECTIVES } from '../../api/tls.ts';
import { exporterRedisEnv } from './exporter.ts';
import { passwordSourceEnv } from './password-check.ts';
import { sortedMap } from './util.ts';

/** Pod template annotation with a hash of redis.conf: a config change rolls the pods. */
export const CONFIG_HASH_ANNOTATION = `${GROUP}/config-hash`;
/** uid/gid of the `redis` user in the official redis images (Debian and Alpine). */
export const REDIS_UID = 999;
export const CONFIG_VOLUME = 'config';
export const TMP_VOLUME = 'tmp';

export const restrictedContainer = (uid: number): ISecurityContext => ({
  runAsNonRoot: true,
  runAsUser: uid,
  runAsGroup: uid,
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
});

/** The Redis container's image: spec.image, else the engine's own image of spec.version. */
export function redisImage(spec: { image?: string | undefined; engine: Engine; version: string }): string {
  return spec.image ?? defaultImage(spec.engine, spec.version);
}

/**
 * Probes authenticate as the operator's user, whose password never rotates: a rotation of the
 * password clients use (the default user's) can never fail a probe. With TLS they verify the
 * node's certificate chain against the mounted CA. `redis-cli` on either engine: the valkey
 * images link redis-cli to valkey-cli (as Valkey's `make install` does), so one script serves both
 * and an engine change rewrites no probe.
 */
export function redisCli(tls: boolean): string {
  const transport = tls ? ` --tls --cacert ${TLS_FILE_DIRECTIVES['tls-ca-cert-file']}` : '';
  return `REDISCLI_AUTH="$OPERATOR_PASSWORD" redis-cli${transport} --user ${OPERATOR_USER} -h "$POD_IP" -p ${REDIS_PORT}`;
}

/** Alive iff redis-server answers at all: loading a big data set or running a long script is not death. */
export function livenessScript(tls: boolean): string {
  return [
    `out=$(${redisCli(tls)} ping 2>&1)`,
    'case "$out" in *PONG*|*LOADING*|*BUSY*|*MASTERDOWN*) exit 0 ;; esac',
    'exit 1',
  ].join('\n');
}

export function exec(script: string): Pick<IProbe, 'exec'> {
  return { exec: { command: ['sh', '-c', script] } };
}

/**
 * The probes of a redis container: only "does it answer" to start, with five minutes before the
 * first answer (start-up cost is the data set load, and LOADING replies count as alive
 * afterwards, see livenessScript); readiness is the kind's own script.
 */
export function redisProbes(
  tls: boolean,
  readinessScript: string,
): Pick<IContainer, 'startupProbe' | 'readinessProbe' | 'livenessProbe'> {
  return {
    startupProbe: {
      ...exec(livenessScript(tls)),
      periodSeconds: 1,
      timeoutSeconds: 5,
      successThreshold: 1,
      failureThreshold: 300,
    },
    readinessProbe: {
      ...exec(readinessScript),
      periodSeconds: 1,
      timeoutSeconds: 2,
      successThreshold: 1,
      failureThreshold: 2,
    },
    livenessProbe: {
      ...exec(livenessScript(tls)),
      periodSeconds: 10,
      timeoutSeconds: 5,
      successThreshold: 1,
      failureThreshold: 6,
    },
  };
}

/**
 * The redis container's env: its own address and name, the two passwords the start script feeds
 * to redis-server (the clients' from `auth`, the operator's), the exporter user's when the
 * exporter runs, and where each password comes from (for the password check's message).
 */
export function redisEnv(name: string, auth: { secretName: string; key: string }, exporterOn: boolean): IEnvVar[] {
  const operator = operatorSecretRef(name);
  return [
    { name: 'POD_IP', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'status.podIP' } } },
    { name: 'POD_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } },
    { name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: auth.secretName, key: auth.key } } },
    { name: 'OPERATOR_PASSWORD', valueFrom: { secretKeyRef: { name: operator.secretName, key: operator.key } } },
    ...exporterRedisEnv(name, exporterOn),
    passwordSourceEnv('REDIS_PASSWORD', auth.secretName, auth.key),
    passwordSourceEnv('OPERATOR_PASSWORD', operator.secretName, operator.key),
  ];
}

export function containerResources(resources: RedisSpec['resources']): IResourceRequirements {
  const { requests, limits } = resources;
  return {
    ...(requests !== undefined ? ({ requests: sortedMap(requests) } satisfies IResourceRequirements) : {}),
    ...(limits !== undefined ? ({ limits: sortedMap(limits) } satisfies IResourceRequirements) : {}),
  };
}

/** The redis container's mounts: redis.conf read-only, the data, a writable /tmp, and the TLS files when on. */
export function redisVolumeMounts(tls: boolean): IVolumeMount[] {
  return [
    { name: CONFIG_VOLUME, mountPath: CONFIG_MOUNT, readOnly: true },
    { name: DATA_VOLUME, mountPath: DATA_MOUNT },
    { name: TMP_VOLUME, mountPath: '/tmp' },
    ...(tls ? [{ name: TLS_VOLUME, mountPath: TLS_MOUNT, readOnly: true }] : []),
  ];
}

/** The pod's volumes: redis.conf from `configMap`, the data in an emptyDir unless a claim holds it, /tmp. */
export function redisVolumes(configMap: string, claimsData: boolean): IVolume[] {
  const volumes: IVolume[] = [{ name: CONFIG_VOLUME, configMap: { name: configMap } }];
  if (!claimsData) volumes.push({ name: DATA_VOLUME, emptyDir: {} });
  volumes.push({ name: TMP_VOLUME, emptyDir: {} });
  return volumes;
}

type PodSettings = Pick<
  RedisSpec,
  'affinity' | 'nodeSelector' | 'tolerations' | 'priorityClassName' | 'imagePullSecrets'
>;

/**
 * The pod spec of every kind's Redis pods: no service account token, no service links, a minute
 * to shut down, the redis user owning the volumes (fsGroup), and where the spec says to run.
 */
export function redisPodSpec(
  spec: PodSettings,
  defaultAffinity: () => IAffinity,
  containers: IContainer[],
  volumes: IVolume[],
  initContainers?: IContainer[],
): IPodSpec {
  return {
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
    affinity: (spec.affinity as IAffinity | undefined) ?? defaultAffinity(),
    // Empty maps and lists are left out: the API server stores them as absent (omitempty), so
    // returning {} or [] would differ from what is observed on every sync.
    ...(spec.nodeSelector !== undefined && Object.keys(spec.nodeSelector).length > 0
      ? ({ nodeSelector: sortedMap(spec.nodeSelector) } satisfies Partial<IPodSpec>)
      : {}),
    ...(spec.tolerations !== undefined && spec.tolerations.length > 0
      ? ({ tolerations: spec.tolerations } satisfies Partial<IPodSpec>)
      : {}),
    ...(spec.priorityClassName !== undefined
      ? ({ priorityClassName: spec.priorityClassName } satisfies Partial<IPodSpec>)
      : {}),
    ...(spec.imagePullSecrets !== undefined && spec.imagePullSecrets.length > 0
      ? ({ imagePullSecrets: spec.imagePullSecrets } satisfies Partial<IPodSpec>)
      : {}),
    ...(initContainers !== undefined ? ({ initContainers } satisfies Partial<IPodSpec>) : {}),
    containers,
    volumes,
  };
}

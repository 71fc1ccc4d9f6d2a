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
import type { IAffinity } from 'kubernetes-models/v1/Affinity';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec';
import { authSecretRef } from '../../../api/auth.ts';
import {
  COMPONENT_LABEL,
  COMPONENT_MASTER_SET,
  COMPONENT_REPLICA_SET,
  REDIS_CONTAINER,
  REDIS_PORT,
  TLS_VOLUME,
  childNames,
  podSelectorLabels,
} from '../../../api/labels.ts';
import { tlsSecretName } from '../../../api/tls.ts';
import type { Child } from '../../common/child.ts';
import { PASSWORD_CHECK_SCRIPT } from '../../common/password-check.ts';
import {
  REDIS_UID,
  containerResources,
  livenessScript,
  redisCli,
  redisEnv,
  redisImage,
  redisPodSpec,
  redisProbes,
  redisVolumeMounts,
  redisVolumes,
  restrictedContainer,
} from '../../common/pod-template.ts';
import { REDIS_FEED_SCRIPT } from '../../common/redis-start.ts';
import { statefulSetPlan } from '../../common/statefulset.ts';
import type { KubeObject } from '../../common/types.ts';
import type { HookContext } from '../context.ts';
import { childMetadata } from './meta.ts';
import { exporterContainers, exporterEnabled } from './metrics.ts';
import type { RestoreInit } from '../../common/restore-container.ts';

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

function container(ctx: HookContext): IContainer {
  const spec = ctx.spec;
  const tls = spec.tls !== undefined;
  return {
    name: REDIS_CONTAINER,
    image: redisImage(spec),
    ...(spec.imagePullPolicy !== undefined
      ? ({ imagePullPolicy: spec.imagePullPolicy } satisfies Partial<IContainer>)
      : {}),
    command: REDIS_COMMAND,
    ports: [{ name: 'redis', containerPort: REDIS_PORT, protocol: 'TCP' }],
    env: redisEnv(ctx.name, authSecretRef(ctx.name, spec), exporterEnabled(ctx)),
    resources: containerResources(spec.resources),
    securityContext: restrictedContainer(REDIS_UID),
    ...redisProbes(tls, readinessScript(tls)),
    volumeMounts: redisVolumeMounts(tls),
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

  return statefulSetPlan({
    setName,
    metadata: childMetadata(ctx, setName, component),
    observed,
    serviceName: names.headless,
    selectorLabels,
    podLabels: selectorLabels,
    persistence: spec.persistence,
    version: spec.version,
    engine: spec.engine,
    podAnnotations: spec.podAnnotations,
    // Hibernation stops every pod and keeps the claims (whenScaled: Retain).
    replicas: spec.hibernate ? 0 : Math.max(minPods, which === 'master' ? spec.master.replicas : spec.replicas),
    confHash,
    podSpec: (claimsData) => podSpecOf(ctx, claimsData, restore),
  });
}

function podSpecOf(ctx: HookContext, claimsData: boolean, restore: RestoreInit | undefined): IPodSpec {
  const spec = ctx.spec;
  const volumes = redisVolumes(childNames(ctx.name).config, claimsData);
  const tlsSecret = tlsSecretName(ctx.name, spec);
  // The key is readable by the pod's group only (fsGroup: the redis user). The kubelet replaces
  // the files when the Secret is renewed; the sidecar then has every node load them.
  if (tlsSecret !== undefined)
    volumes.push({ name: TLS_VOLUME, secret: { secretName: tlsSecret, defaultMode: 0o440 } });
  if (restore !== undefined) volumes.push(...restore.volumes);
  const containers = [container(ctx), ...exporterContainers(ctx, REDIS_UID)];
  return redisPodSpec(spec, () => defaultAffinity(ctx), containers, volumes, restore?.initContainers);
}

// The StatefulSet of one shard, <name>-shard-<i>: 1 + spec.replicas pods of one master and its
// replicas (which pod is master is the cluster's business: it moves on failover). Invariants:
// - The pod contract the sidecar relies on: container `redis` running redis-server from
//   REDIS_CLUSTER_START_SCRIPT (passwords on stdin, as on Redis pods: `default` from REDIS_PASSWORD,
//   the operator's ACL user from OPERATOR_PASSWORD, which is also the replication user), ports
//   `redis` 6379 and `cluster-bus` 16379, data in /data with nodes.conf there, labels
//   redisClusterPodSelectorLabels + shard + component `shard`, never the role (the sidecar's).
// - Immutable fields of an observed StatefulSet (selector, serviceName, podManagementPolicy,
//   volumeClaimTemplates) are echoed exactly, as for Redis (common/statefulset.ts); a spec they
//   cannot honour is reported as a conflict naming the field.
// - updateStrategy OnDelete: the sidecar replaces the pods one at a time, replicas first and
//   each shard's master after a switchover (sidecar/rediscluster/decide/rollout.ts); the
//   Updated condition tells how far it got.
// - podManagementPolicy Parallel: a shard's pods start together (the cluster is formed by the
//   sidecar, not by pod order).
import type { IStatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import type { IAffinity } from 'kubernetes-models/v1/Affinity';
import type { IContainer } from 'kubernetes-models/v1/Container';
import { authSecretRef, OPERATOR_USER } from '../../api/auth.ts';
import {
  CLUSTER_BUS_PORT,
  CLUSTER_BUS_PORT_NAME,
  COMPONENT_SHARD,
  redisClusterChildNames,
  redisClusterPodSelectorLabels,
  NODES_CONF,
  shardPodSelectorLabels,
} from '../../api/rediscluster-names.ts';
import { COMPONENT_LABEL, DATA_MOUNT, REDIS_CONTAINER, REDIS_PORT } from '../../api/labels.ts';
import type { Child } from '../common/child.ts';
import { metricsContainers } from '../common/exporter.ts';
import { PASSWORD_CHECK_SCRIPT } from '../common/password-check.ts';
import {
  REDIS_UID,
  containerResources,
  redisCli,
  redisEnv,
  redisImage,
  redisPodSpec,
  redisProbes,
  redisVolumeMounts,
  redisVolumes,
  restrictedContainer,
} from '../common/pod-template.ts';
import { REDIS_FEED_SCRIPT } from '../common/redis-start.ts';
import { statefulSetPlan } from '../common/statefulset.ts';
import type { KubeObject } from '../common/types.ts';
import { redisClusterChildMetadata, type RedisClusterContext } from './context.ts';

/**
 * The hold before a node that served slots as a master when it stopped (a crash, the container
 * restarted in place) starts again. A restart faster than cluster-node-timeout is no failure to
 * the cluster, so it would serve its slots again with whatever its volume holds (an old snapshot,
 * or nothing), and its replicas would resync from it and drop the writes they hold. It waits until
 * a peer it knows from nodes.conf (asked as the operator's user, two seconds at most each:
 * redis-cli 7.0 has no timeout of its own) shows it with no slot: another node serves them under a
 * newer epoch, and it rejoins as that node's replica. RESTART_HOLD_SECONDS (node timeout +
 * failoverTimeout + 2 s, 0 without replicas) bounds the wait: with no peer answering (the whole
 * cluster restarting) it starts after that.
 * Relative paths: the container runs in the data directory (workingDir), where nodes.conf lives.
 */
export const RESTART_HOLD_SCRIPT = [
  `if [ "\${RESTART_HOLD_SECONDS:-0}" -gt 0 ] && grep -qE ' myself,master .* connected [0-9]' ./${NODES_CONF} 2>/dev/null; then`,
  `  me=$(awk '$3 ~ /myself/ {print $1}' ./${NODES_CONF})`,
  `  peers=$(awk 'NF >= 8 && $3 !~ /myself|noaddr/ {split($2, a, "@"); print a[1]}' ./${NODES_CONF})`,
  '  echo "this node served slots as a master when it stopped: waiting up to $RESTART_HOLD_SECONDS s for another node to serve them"',
  '  end=$(( $(date +%s) + RESTART_HOLD_SECONDS ))',
  '  held=yes',
  '  while [ "$held" = yes ] && [ "$(date +%s)" -lt "$end" ]; do',
  '    for peer in $peers; do',
  `      if REDISCLI_AUTH="$OPERATOR_PASSWORD" timeout 2 redis-cli -h "\${peer%:*}" -p "\${peer##*:}" --user ${OPERATOR_USER} --no-auth-warning CLUSTER NODES 2>/dev/null |`,
  `        awk -v me="$me" '$1 == me && NF == 8 {found = 1} END {exit !found}'; then`,
  '        echo "$peer shows another node serving its slots: starting, to rejoin as a replica"',
  '        held=no',
  '        break',
  '      fi',
  '    done',
  '    [ "$held" = yes ] && sleep 1',
  '  done',
  '  [ "$held" = yes ] && echo "no peer showed its slots served elsewhere within $RESTART_HOLD_SECONDS s: starting"',
  'fi',
].join('\n');

/**
 * The password check (common/password-check.ts), the restart hold, then Redis' own feed
 * (common/redis-start.ts: requirepass, the operator's ACL user and the replication credentials
 * on stdin, never on a command line or in the ConfigMap) plus the address the node announces to
 * the cluster: the pod IP, which is how the others reach it.
 */
export const REDIS_CLUSTER_START_SCRIPT = [
  // Before the hold: a password Redis could not take stops the container at once, not 20 s later.
  PASSWORD_CHECK_SCRIPT,
  RESTART_HOLD_SCRIPT,
  REDIS_FEED_SCRIPT.replace(/\nEOF$/, '\ncluster-announce-ip "$POD_IP"\nEOF'),
].join('\n');

/** The longest a node that was a master waits before it starts again (RESTART_HOLD_SCRIPT); 0 without replicas. */
export function restartHoldSeconds(spec: RedisClusterContext['spec']): number {
  if (spec.replicas === 0) return 0;
  return Math.ceil((spec.sentinel.downAfterMilliseconds + spec.sentinel.failoverTimeout) / 1000) + 2;
}
export const REDIS_CLUSTER_COMMAND = ['sh', '-c', REDIS_CLUSTER_START_SCRIPT];

/**
 * Ready iff the node sees the cluster as OK (every slot served: clients would get CLUSTERDOWN
 * otherwise) and it is a master, or a replica whose link to its master is up. A node the sidecar
 * has not met yet, or a cluster with a slot uncovered, serves nothing: not Ready.
 */
export function redisClusterReadinessScript(): string {
  return [
    `out=$(${redisCli(false)} cluster info) || exit 1`,
    'case "$out" in *cluster_state:ok*) ;; *) exit 1 ;; esac',
    `out=$(${redisCli(false)} info replication) || exit 1`,
    'case "$out" in *role:master*) exit 0 ;; *master_link_status:up*) exit 0 ;; esac',
    'exit 1',
  ].join('\n');
}

/**
 * Pods of one shard prefer separate nodes (a master and its replicas must not die together), and all pods of the
 * cluster somewhat (losing a majority of masters at once stops every failover).
 */
function defaultAffinity(ctx: RedisClusterContext, shard: number): IAffinity {
  return {
    podAntiAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: [
        {
          weight: 100,
          podAffinityTerm: {
            labelSelector: { matchLabels: shardPodSelectorLabels(ctx.name, shard) },
            topologyKey: 'kubernetes.io/hostname',
          },
        },
        {
          weight: 50,
          podAffinityTerm: {
            labelSelector: { matchLabels: redisClusterPodSelectorLabels(ctx.name) },
            topologyKey: 'kubernetes.io/hostname',
          },
        },
      ],
    },
  };
}

function redisContainer(ctx: RedisClusterContext): IContainer {
  const { spec } = ctx;
  return {
    name: REDIS_CONTAINER,
    image: redisImage(spec),
    ...(spec.imagePullPolicy !== undefined
      ? ({ imagePullPolicy: spec.imagePullPolicy } satisfies Partial<IContainer>)
      : {}),
    command: REDIS_CLUSTER_COMMAND,
    // The redis image's own WORKDIR, said explicitly: the start script reads ./nodes.conf.
    workingDir: DATA_MOUNT,
    ports: [
      { name: 'redis', containerPort: REDIS_PORT, protocol: 'TCP' },
      { name: CLUSTER_BUS_PORT_NAME, containerPort: CLUSTER_BUS_PORT, protocol: 'TCP' },
    ],
    env: [
      ...redisEnv(ctx.name, authSecretRef(ctx.name, spec), spec.monitoring.enabled && spec.monitoring.exporter.enabled),
      { name: 'RESTART_HOLD_SECONDS', value: String(restartHoldSeconds(spec)) },
    ],
    resources: containerResources(spec.resources),
    securityContext: restrictedContainer(REDIS_UID),
    // As on Redis pods: "does it answer" with five minutes for the data set to load.
    ...redisProbes(false, redisClusterReadinessScript()),
    volumeMounts: redisVolumeMounts(false),
  };
}

export interface ShardSetPlan {
  object: Child<IStatefulSet>;
  conflicts: string[];
}

/**
 * minPods: the shard's floor (its master's ordinal + 1), kept even when spec.replicas asks for fewer.
 * stopped: hibernation, 0 pods (the claims stay: whenScaled Retain keeps them, nodes.conf with the data).
 */
export function desiredShardSet(
  ctx: RedisClusterContext,
  shard: number,
  observed: KubeObject | undefined,
  confHash: string,
  minPods = 0,
  stopped = false,
): ShardSetPlan {
  const { spec } = ctx;
  const names = redisClusterChildNames(ctx.name);
  const setName = names.shardSet(shard);
  const selectorLabels = shardPodSelectorLabels(ctx.name, shard);
  const podLabels = { ...selectorLabels, [COMPONENT_LABEL]: COMPONENT_SHARD };
  const exporter =
    spec.monitoring.enabled && spec.monitoring.exporter.enabled
      ? metricsContainers(ctx.name, spec.monitoring.exporter, false, REDIS_UID, ctx.operatorImage)
      : [];
  return statefulSetPlan({
    setName,
    metadata: redisClusterChildMetadata(ctx, setName, COMPONENT_SHARD, shard),
    observed,
    serviceName: names.headless,
    selectorLabels,
    podLabels,
    persistence: spec.persistence,
    version: spec.version,
    engine: spec.engine,
    podAnnotations: spec.podAnnotations,
    replicas: stopped ? 0 : Math.max(minPods, 1 + spec.replicas),
    confHash,
    podSpec: (claimsData) =>
      redisPodSpec(
        spec,
        () => defaultAffinity(ctx, shard),
        [redisContainer(ctx), ...exporter],
        redisVolumes(names.config, claimsData),
      ),
  });
}

// The complete desired child set of a RedisCluster with a valid spec, in a fixed order: the
// ConfigMap, the Services (headless, client, and metrics with the exporter on), per shard the
// StatefulSet, its PodDisruptionBudget and (with spec.backup) its backup CronJob, shards in index
// order. Which shards are returned, and how many pods each keeps (none while hibernating), is
// shards.ts's decision.
// Invariants: deterministic; every child built with Kubernetes' types; every child carries the
// cluster's labels (context.ts); a shard's PDB and CronJob live and go with its StatefulSet.
import type { ICronJob } from 'kubernetes-models/batch/v1/CronJob';
import type { IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import type { IPodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import type { IService } from 'kubernetes-models/v1/Service';
import type { IServicePort } from 'kubernetes-models/v1/ServicePort';
import { BACKUP_TRIGGER_LABEL, SCHEDULED_TRIGGER } from '../../api/backup.ts';
import {
  CLUSTER_BUS_PORT,
  CLUSTER_BUS_PORT_NAME,
  redisClusterBackupSelectorLabels,
  redisClusterChildNames,
  redisClusterPodSelectorLabels,
  SHARD_LABEL,
  shardPodSelectorLabels,
} from '../../api/rediscluster-names.ts';
import { CONFIG_KEY, REDIS_PORT } from '../../api/labels.ts';
import { backupJobSpecFor, backupPodSpecFor, shardBackupHosts } from '../common/backup-job.ts';
import { asKubeObject, type Child, type DesiredChild } from '../common/child.ts';
import { metricsService } from '../common/exporter.ts';
import { configHash } from '../common/redis-conf.ts';
import type { KubeObject } from '../common/types.ts';
import { renderRedisClusterConf } from './conf.ts';
import { redisClusterChildMetadata, type RedisClusterContext } from './context.ts';
import type { ShardPlan } from './shards.ts';
import { desiredShardSet } from './statefulset.ts';

const REDIS: IServicePort = { name: 'redis', port: REDIS_PORT, targetPort: REDIS_PORT, protocol: 'TCP' };
const BUS: IServicePort = {
  name: CLUSTER_BUS_PORT_NAME,
  port: CLUSTER_BUS_PORT,
  targetPort: CLUSTER_BUS_PORT,
  protocol: 'TCP',
};

export function desiredRedisClusterConfigMap(ctx: RedisClusterContext, conf: string): Child<IConfigMap> {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: redisClusterChildMetadata(ctx, redisClusterChildNames(ctx.name).config, 'config'),
    data: { [CONFIG_KEY]: conf },
  };
}

/**
 * The headless Service (the StatefulSets' serviceName: stable pod DNS names, not-ready addresses
 * published so nodes find each other before the cluster is formed, both ports), the client
 * Service (every Ready node: where a cluster-aware client starts, it follows MOVED from there),
 * and the metrics Service with the exporter on.
 */
export function desiredRedisClusterServices(ctx: RedisClusterContext): Array<Child<IService>> {
  const names = redisClusterChildNames(ctx.name);
  const pods = redisClusterPodSelectorLabels(ctx.name);
  const services: Array<Child<IService>> = [
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: redisClusterChildMetadata(ctx, names.headless, 'headless'),
      spec: { clusterIP: 'None', publishNotReadyAddresses: true, selector: pods, ports: [REDIS, BUS] },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: redisClusterChildMetadata(ctx, names.client, 'client'),
      spec: { type: 'ClusterIP', selector: pods, ports: [REDIS] },
    },
  ];
  if (ctx.spec.monitoring.enabled && ctx.spec.monitoring.exporter.enabled) {
    services.push(metricsService(redisClusterChildMetadata(ctx, names.metricsService, 'metrics'), pods));
  }
  return services;
}

/**
 * One pod of a shard at a time for voluntary disruptions. IfHealthyBudget (Kubernetes' default),
 * not Redis's AlwaysAllow: a cluster's pods all turn NotReady while a slot is uncovered, and a
 * drain must not then take a shard's master and replica together (without persistence that is
 * the shard's data).
 */
export function desiredShardPdb(ctx: RedisClusterContext, shard: number): Child<IPodDisruptionBudget> {
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: redisClusterChildMetadata(ctx, redisClusterChildNames(ctx.name).shardPdb(shard), 'pdb', shard),
    spec: {
      maxUnavailable: 1,
      selector: { matchLabels: shardPodSelectorLabels(ctx.name, shard) },
      unhealthyPodEvictionPolicy: 'IfHealthyBudget',
    },
  };
}

/**
 * The scheduled backup of shard `shard` (spec.backup set): the Redis backup pod (common/backup-job.ts)
 * pointed at the shard's pods, replicas before the master (the backup program reads a replica
 * whenever one answers), writing to the shard's own folder (BACKUP_SHARD: src/backup/naming.ts).
 */
export function desiredShardCronJob(
  ctx: RedisClusterContext,
  shard: number,
  pods: number,
): Child<ICronJob> | undefined {
  const backup = ctx.spec.backup;
  if (backup === undefined) return undefined;
  const labels = {
    ...redisClusterBackupSelectorLabels(ctx.name),
    [SHARD_LABEL]: String(shard),
    [BACKUP_TRIGGER_LABEL]: SCHEDULED_TRIGGER,
  };
  const pod = backupPodSpecFor(
    {
      namespace: ctx.namespace,
      name: ctx.name,
      hosts: shardBackupHosts(ctx.name, ctx.namespace, shard, pods),
      tlsSecret: undefined,
      backup,
      imagePullSecrets: ctx.spec.imagePullSecrets,
      env: [{ name: 'BACKUP_SHARD', value: String(shard) }],
    },
    backup.storage,
    ctx.operatorImage,
  );
  return {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: redisClusterChildMetadata(ctx, redisClusterChildNames(ctx.name).shardBackup(shard), 'backup', shard),
    spec: {
      schedule: backup.schedule,
      // Suspended while hibernating: no pod answers, every run would fail.
      suspend: backup.suspend || ctx.spec.hibernate,
      // Never two backups of one shard at once; a run missed by more than an hour is skipped.
      concurrencyPolicy: 'Forbid',
      startingDeadlineSeconds: 3600,
      successfulJobsHistoryLimit: 3,
      failedJobsHistoryLimit: 3,
      jobTemplate: { metadata: { labels }, spec: backupJobSpecFor(labels, pod) },
    },
  };
}

export interface RedisClusterChildren {
  children: KubeObject[];
  /** Spec wishes the observed immutable fields cannot honour (reported in SpecValid). */
  conflicts: string[];
}

export function desiredRedisClusterChildren(
  ctx: RedisClusterContext,
  sets: ReadonlyMap<number, KubeObject>,
  plan: ShardPlan,
): RedisClusterChildren {
  const conf = renderRedisClusterConf(ctx.namespace, ctx.name, ctx.spec);
  // The whole file: a cluster's sidecar applies no directive at run time, so any change needs new pods.
  const hash = configHash(conf);
  const children: DesiredChild[] = [desiredRedisClusterConfigMap(ctx, conf), ...desiredRedisClusterServices(ctx)];
  const conflicts: string[] = [];
  for (const shard of plan.keep) {
    const floor = plan.floors.get(shard) ?? 0;
    const set = desiredShardSet(ctx, shard, sets.get(shard), hash, floor, plan.stopped);
    conflicts.push(...set.conflicts);
    // The pods the shard has when it runs: a hibernating shard's CronJob is suspended, not emptied.
    const cron = desiredShardCronJob(ctx, shard, Math.max(floor, 1 + ctx.spec.replicas));
    children.push(set.object, desiredShardPdb(ctx, shard), ...(cron ? [cron] : []));
  }
  return { children: children.map(asKubeObject), conflicts };
}

// The complete desired child set for a valid spec, in a fixed order: ConfigMap, Services (headless, master, replicas,
// and metrics with the exporter on), StatefulSets (master, replica; not yet while a restore waits for its backup),
// PodDisruptionBudget, and the NetworkPolicy, the cert-manager Certificate and the backup CronJob when the spec asks
// for them. Each is built with Kubernetes' type for its kind (common/child.ts) and handed on as the wire's KubeObject.
import { RESTORE_LOCATION_KEY } from '../../../api/backup.ts';
import { ROLE_LABEL, ROLE_MASTER, childNames } from '../../../api/labels.ts';
import { podBelongsTo } from '../../../api/membership.ts';
import type { HookContext } from '../context.ts';
import { findObject, memberMeta } from '../../common/observed.ts';
import { configHash } from '../../common/redis-conf.ts';
import { renderRedisConf, staticRedisConf } from '../redis-conf.ts';
import type { KubeObject } from '../../common/types.ts';
import type { RestorePlan } from '../restore.ts';
import { desiredCronJob } from './backup-cronjob.ts';
import { desiredCertificate } from './certificate.ts';
import { desiredConfigMap } from './configmap.ts';
import { desiredMetricsService } from './metrics.ts';
import { desiredNetworkPolicy } from './network-policy.ts';
import { desiredPdb } from './pdb.ts';
import { desiredServices } from './services.ts';
import { restoreInit } from '../../common/restore-container.ts';
import { REDIS_UID } from '../../common/pod-template.ts';
import { desiredStatefulSet } from './statefulset.ts';
import { asKubeObject, type DesiredChild } from '../../common/child.ts';

export interface ChildPlan {
  children: KubeObject[];
  /** Spec wishes the observed immutable fields cannot honour (reported in SpecValid). */
  conflicts: string[];
}

/**
 * Replica pods that must stay while the master lives on one of them: scaling down removes the
 * highest ordinals, and removing the master would turn a planned change into a failover. The
 * replica StatefulSet is held at (master's ordinal + 1) until the sidecar has switched the
 * master to a pod that stays (it does so when the master's ordinal is beyond spec.replicas).
 */
export function replicaFloor(ctx: HookContext, pods: readonly KubeObject[]): number {
  const prefix = `${childNames(ctx.name).replicaSet}-`;
  let floor = 0;
  for (const pod of pods) {
    const labels = pod.metadata.labels ?? {};
    if (labels[ROLE_LABEL] !== ROLE_MASTER) continue;
    if (!podBelongsTo(memberMeta(pod, ctx.namespace), ctx)) continue;
    const name = pod.metadata.name;
    if (!name.startsWith(prefix)) continue;
    const ordinal = name.slice(prefix.length);
    if (!/^(0|[1-9][0-9]{0,4})$/.test(ordinal)) continue;
    floor = Math.max(floor, Number(ordinal) + 1);
  }
  return floor;
}

export function desiredChildren(
  ctx: HookContext,
  observed: readonly KubeObject[],
  pods: readonly KubeObject[] = [],
  restore?: RestorePlan,
): ChildPlan {
  const names = childNames(ctx.name);
  const from = {
    operatorImage: ctx.operatorImage,
    configMap: names.config,
    locationKey: RESTORE_LOCATION_KEY,
    appendOnly: ctx.spec.persistence.enableAof,
  };
  const init = restore?.resolved !== undefined ? restoreInit(from, restore.resolved.storage, REDIS_UID) : undefined;
  const conf = renderRedisConf(ctx.namespace, ctx.name, ctx.spec);
  // Dynamic directives reach running nodes through the sidecar (CONFIG SET): only the rest rolls pods.
  const hash = configHash(staticRedisConf(ctx.namespace, ctx.name, ctx.spec));
  const master = desiredStatefulSet(
    ctx,
    'master',
    findObject(observed, 'apps/v1', 'StatefulSet', ctx.namespace, names.masterSet),
    hash,
    0,
    init,
  );
  const replica = desiredStatefulSet(
    ctx,
    'replica',
    findObject(observed, 'apps/v1', 'StatefulSet', ctx.namespace, names.replicaSet),
    hash,
    replicaFloor(ctx, pods),
    init,
  );
  const policy = desiredNetworkPolicy(ctx);
  const certificate = desiredCertificate(ctx);
  // No backup runs before a restore is complete: it would store a Redis that is still empty.
  const cron =
    restore === undefined || restore.status.phase === 'Completed' ? desiredCronJob(ctx, ctx.operatorImage) : undefined;
  const metrics = desiredMetricsService(ctx);
  const children: DesiredChild[] = [
    desiredConfigMap(ctx, conf, restore?.pending ? restore.resolved?.location : undefined),
    ...desiredServices(ctx),
    ...(metrics ? [metrics] : []),
    ...(restore?.hold ? [] : [master.object, replica.object]),
    desiredPdb(ctx),
    ...(policy ? [policy] : []),
    ...(certificate ? [certificate] : []),
    ...(cron ? [cron] : []),
  ];
  return {
    children: children.map(asKubeObject),
    conflicts: [...master.conflicts, ...replica.conflicts],
  };
}

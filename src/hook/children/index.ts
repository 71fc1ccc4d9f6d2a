// The complete desired child set for a valid spec, in a fixed order: ConfigMap, Services
// (headless, master, replicas), StatefulSets (master, replica), PodDisruptionBudget.
import { childNames } from '../../api/labels.ts';
import type { HookContext } from '../context.ts';
import { findObject } from '../observed.ts';
import { configHash, renderRedisConf } from '../redis-conf.ts';
import type { KubeObject } from '../types.ts';
import { desiredConfigMap } from './configmap.ts';
import { desiredPdb } from './pdb.ts';
import { desiredServices } from './services.ts';
import { desiredStatefulSet } from './statefulset.ts';

export interface ChildPlan {
  children: KubeObject[];
  /** Spec wishes the observed immutable fields cannot honour (reported in SpecValid). */
  conflicts: string[];
}

export function desiredChildren(ctx: HookContext, observed: readonly KubeObject[]): ChildPlan {
  const names = childNames(ctx.name);
  const conf = renderRedisConf(ctx.namespace, ctx.name, ctx.spec);
  const hash = configHash(conf);
  const master = desiredStatefulSet(ctx, 'master', findObject(observed, 'apps/v1', 'StatefulSet', ctx.namespace, names.masterSet), hash);
  const replica = desiredStatefulSet(ctx, 'replica', findObject(observed, 'apps/v1', 'StatefulSet', ctx.namespace, names.replicaSet), hash);
  return {
    children: [desiredConfigMap(ctx, conf), ...desiredServices(ctx), master.object, replica.object, desiredPdb(ctx)],
    conflicts: [...master.conflicts, ...replica.conflicts],
  };
}

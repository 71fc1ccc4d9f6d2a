// PodDisruptionBudget <name>-pdb: voluntary disruptions (drains) take at most one Redis pod at a
// time. Unhealthy pods may always be evicted: a pod that is not Ready serves nothing, and
// keeping it would block node drains forever.
import type { IPodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { childNames, podSelectorLabels } from '../../../api/labels.ts';
import type { HookContext } from '../context.ts';
import { childMetadata } from './meta.ts';
import type { Child } from '../../common/child.ts';

export function desiredPdb(ctx: HookContext): Child<IPodDisruptionBudget> {
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: childMetadata(ctx, childNames(ctx.name).pdb, 'pdb'),
    spec: {
      maxUnavailable: 1,
      selector: { matchLabels: podSelectorLabels(ctx.name) },
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
    },
  };
}

// PodDisruptionBudget <name>-pdb: voluntary disruptions (drains) take at most one Redis pod at a
// time. Unhealthy pods may always be evicted: a pod that is not Ready serves nothing, and
// keeping it would block node drains forever.
import { childNames, podSelectorLabels } from '../../api/labels.ts';
import type { HookContext } from '../context.ts';
import type { KubeObject } from '../types.ts';
import { childMetadata } from './meta.ts';

export function desiredPdb(ctx: HookContext): KubeObject {
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

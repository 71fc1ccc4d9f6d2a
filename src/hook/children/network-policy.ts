// NetworkPolicy <name>-ingress, only when spec.networkPolicy is set: port 6379 of this Redis's pods
// is reachable from the pods of the same Redis (replication), the operator's pods in its own
// namespace (probes, promotion, fencing) and the client pods the user labels; nothing else. With
// the exporter on, its metrics port is open to any peer: Prometheus runs wherever the platform
// put it, and the port serves counters only (no keys, no credentials).
// Invariants: the selector is the pods' own (never the role label: a failover must not change
// who may connect); the operator peer needs BOTH its namespace and its pod labels.
import type { INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { EXPORTER_PORT, OPERATOR_POD_LABELS, REDIS_PORT, childNames, podSelectorLabels } from '../../api/labels.ts';
import type { HookContext } from '../context.ts';
import { sortedMap } from '../util.ts';
import { exporterEnabled } from './exporter.ts';
import { childMetadata } from './meta.ts';
import type { Child } from './types.ts';

/** Kubernetes sets this label on every namespace (1.22+): the only portable way to select one by name. */
const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

export function desiredNetworkPolicy(ctx: HookContext): Child<INetworkPolicy> | undefined {
  const policy = ctx.spec.networkPolicy;
  if (policy === undefined) return undefined;
  const pods = { matchLabels: podSelectorLabels(ctx.name) };
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: childMetadata(ctx, childNames(ctx.name).networkPolicy, 'network-policy'),
    spec: {
      podSelector: pods,
      policyTypes: ['Ingress'],
      ingress: [
        {
          from: [
            { podSelector: pods },
            {
              namespaceSelector: { matchLabels: { [NAMESPACE_NAME_LABEL]: policy.operatorNamespace } },
              podSelector: { matchLabels: { ...OPERATOR_POD_LABELS } },
            },
            { podSelector: { matchLabels: sortedMap(policy.allowFrom) } },
          ],
          ports: [{ protocol: 'TCP', port: REDIS_PORT }],
        },
        ...(exporterEnabled(ctx) ? [{ ports: [{ protocol: 'TCP' as const, port: EXPORTER_PORT }] }] : []),
      ],
    },
  };
}

// NetworkPolicy <name>-ingress, only when spec.networkPolicy is set: port 6379 of this Redis's pods
// is reachable from the pods of the same Redis (replication), the operator's pods in its own
// namespace (probes, promotion, fencing; spec.networkPolicy.operatorNamespace, else the namespace
// the hook runs in) and the client pods the user labels; nothing else. With
// the exporter on, its metrics port is reachable only from the peers of monitoringFrom (where the
// monitoring stack runs), and from nobody when it is empty (the default): the metrics name the
// node's clients, memory, replication links and keyspace sizes, which are nobody else's business,
// and the port is a proxy of the exporter (common/exporter.ts), which once was not.
// Invariants: the selector is the pods' own (never the role label: a failover must not change
// who may connect); the operator peer needs BOTH its namespace and its pod labels; a
// monitoringFrom peer is written as given (both selectors must match when both are set), never
// widened: no rule at all for the metrics port rather than a rule with an empty `from`, which
// Kubernetes reads as "from everywhere".
import type { INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import type { INetworkPolicyPeer } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicyPeer';
import type { RedisSpec } from '../../../api/schema.ts';
import { EXPORTER_PORT, OPERATOR_POD_LABELS, REDIS_PORT, childNames, podSelectorLabels } from '../../../api/labels.ts';
import type { HookContext } from '../context.ts';
import { sortedMap } from '../../common/util.ts';
import { exporterEnabled } from './metrics.ts';
import { childMetadata } from './meta.ts';
import type { Child } from '../../common/child.ts';

/** Kubernetes sets this label on every namespace (1.22+): the only portable way to select one by name. */
const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

function monitoringPeer(peer: NonNullable<RedisSpec['networkPolicy']>['monitoringFrom'][number]): INetworkPolicyPeer {
  return {
    ...(peer.namespaceSelector !== undefined
      ? { namespaceSelector: { matchLabels: sortedMap(peer.namespaceSelector.matchLabels) } }
      : {}),
    ...(peer.podSelector !== undefined
      ? { podSelector: { matchLabels: sortedMap(peer.podSelector.matchLabels) } }
      : {}),
  };
}

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
              namespaceSelector: {
                matchLabels: { [NAMESPACE_NAME_LABEL]: policy.operatorNamespace ?? ctx.operatorNamespace },
              },
              podSelector: { matchLabels: { ...OPERATOR_POD_LABELS } },
            },
            { podSelector: { matchLabels: sortedMap(policy.allowFrom) } },
          ],
          ports: [{ protocol: 'TCP', port: REDIS_PORT }],
        },
        ...(exporterEnabled(ctx) && policy.monitoringFrom.length > 0
          ? [
              {
                from: policy.monitoringFrom.map(monitoringPeer),
                ports: [{ protocol: 'TCP' as const, port: EXPORTER_PORT }],
              },
            ]
          : []),
      ],
    },
  };
}

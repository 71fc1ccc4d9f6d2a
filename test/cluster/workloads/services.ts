// Which pods a Service routes to right now, by the endpoints controller's rules
// (pkg/controller/endpoint + ShouldPodBeInEndpoints): pods in the Service's namespace whose
// labels match spec.selector, that have a pod IP, are not in a terminal phase, and are Ready;
// with publishNotReadyAddresses, not-ready and terminating pods are included too.
// Pure. A Service without a selector has no managed endpoints (they would be set by hand).
import type { StoredObject } from '../../support/kube-api/index.ts';

export interface Endpoint {
  pod: string;
  ip: string;
  ready: boolean;
  terminating: boolean;
}

export function podReady(pod: StoredObject): boolean {
  const conditions = (pod['status'] as { conditions?: Array<{ type: string; status: string }> } | undefined)?.conditions ?? [];
  return conditions.some((c) => c.type === 'Ready' && c.status === 'True');
}

export function selectorMatches(selector: Record<string, string>, labels: Record<string, string> | undefined): boolean {
  return Object.entries(selector).every(([k, v]) => labels?.[k] === v);
}

/** The addresses a Service routes to, sorted by pod name. */
export function serviceEndpoints(service: StoredObject, pods: readonly StoredObject[]): Endpoint[] {
  const spec = (service['spec'] ?? {}) as { selector?: Record<string, string>; publishNotReadyAddresses?: boolean };
  if (spec.selector === undefined || Object.keys(spec.selector).length === 0) return [];
  const publishNotReady = spec.publishNotReadyAddresses === true;
  const out: Endpoint[] = [];
  for (const pod of pods) {
    if (pod.metadata.namespace !== service.metadata.namespace) continue;
    if (!selectorMatches(spec.selector, pod.metadata.labels)) continue;
    const status = (pod['status'] ?? {}) as { podIP?: string; phase?: string };
    if (!status.podIP) continue;
    if (status.phase === 'Failed' || status.phase === 'Succeeded') continue;
    const terminating = pod.metadata.deletionTimestamp !== undefined;
    const ready = podReady(pod) && !terminating;
    if (!publishNotReady && (!ready || terminating)) continue;
    out.push({ pod: pod.metadata.name, ip: status.podIP, ready, terminating });
  }
  return out.sort((a, b) => (a.pod < b.pod ? -1 : a.pod > b.pod ? 1 : 0));
}

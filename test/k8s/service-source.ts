// Feeds the service proxy from a KubeClient's informer cache: Services and their EndpointSlices,
// as kube-proxy reads them. An endpoint counts when its slice says ready (a missing `ready` means
// ready, per the EndpointSlice API) and it is not terminating.
import type { KubeClient, ResourceRef } from '../support/kube-client/index.ts';
import { asRecord as rec } from '../support/records.ts';
import type { ReadyEndpoint, ServicePort, ServiceSource, ServiceView } from './service-proxy.ts';

const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

export function kubeClientSource(client: KubeClient, services: ResourceRef, slices: ResourceRef): ServiceSource {
  return {
    services(): ServiceView[] {
      return client.list(services).map((s) => {
        const spec = rec(s['spec']);
        const clusterIP = typeof spec['clusterIP'] === 'string' && spec['clusterIP'] !== 'None' ? spec['clusterIP'] : undefined;
        return {
          namespace: s.metadata.namespace ?? '',
          name: s.metadata.name,
          clusterIP,
          ports: arr(spec['ports']).map((p) => rec(p) as unknown as ServicePort),
        };
      });
    },
    readyEndpoints(namespace, service): ReadyEndpoint[] {
      const out: ReadyEndpoint[] = [];
      for (const slice of client.list(slices, { namespace, labelSelector: `kubernetes.io/service-name=${service}` })) {
        if (slice['addressType'] !== 'IPv4') continue;
        const ports: Record<string, number> = {};
        for (const p of arr(slice['ports']).map(rec)) if (typeof p['port'] === 'number') ports[typeof p['name'] === 'string' ? p['name'] : ''] = p['port'];
        for (const ep of arr(slice['endpoints']).map(rec)) {
          const cond = rec(ep['conditions']);
          if (cond['ready'] === false || cond['terminating'] === true) continue;
          for (const ip of arr(ep['addresses'])) if (typeof ip === 'string') out.push({ ip, ports });
        }
      }
      return out;
    },
    onChange(cb) {
      const handles = [client.watch(services, cb), client.watch(slices, cb)];
      return () => {
        for (const h of handles) h.stop();
      };
    },
  };
}

// A Redis's metrics: whether its pods run the exporter (common/exporter.ts builds the containers),
// and the headless <name>-metrics Service in front of them. Invariant: neither exists while
// spec.monitoring or its exporter is off.
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IService } from 'kubernetes-models/v1/Service';
import { EXPORTER_PORT, METRICS_PORT_NAME, childNames, podSelectorLabels } from '../../../api/labels.ts';
import type { Child } from '../../common/child.ts';
import { metricsContainers } from '../../common/exporter.ts';
import type { HookContext } from '../context.ts';
import { childMetadata } from './meta.ts';

export function exporterEnabled(ctx: HookContext): boolean {
  return ctx.spec.monitoring.enabled && ctx.spec.monitoring.exporter.enabled;
}

/** The exporter and its proxy, or none when the exporter is off. */
export function exporterContainers(ctx: HookContext, uid: number): IContainer[] {
  return exporterEnabled(ctx)
    ? metricsContainers(ctx.name, ctx.spec.monitoring.exporter, ctx.spec.tls !== undefined, uid, ctx.operatorImage)
    : [];
}

/**
 * Headless, so a scraper sees every pod (not one behind a ClusterIP) and no extra address is
 * allocated. Not-ready pods are published too: a replica that cannot sync is when its metrics
 * matter most. The prometheus.io annotations serve a Prometheus without the Operator.
 */
export function desiredMetricsService(ctx: HookContext): Child<IService> | undefined {
  if (!exporterEnabled(ctx)) return undefined;
  const meta = childMetadata(ctx, childNames(ctx.name).metricsService, 'metrics');
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      ...meta,
      annotations: {
        'prometheus.io/path': '/metrics',
        'prometheus.io/port': String(EXPORTER_PORT),
        'prometheus.io/scrape': 'true',
      },
    },
    spec: {
      clusterIP: 'None',
      publishNotReadyAddresses: true,
      selector: podSelectorLabels(ctx.name),
      ports: [{ name: METRICS_PORT_NAME, port: EXPORTER_PORT, targetPort: METRICS_PORT_NAME, protocol: 'TCP' }],
    },
  };
}

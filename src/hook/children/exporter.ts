// The redis_exporter container beside Redis in every pod, and the headless <name>-metrics Service
// in front of them, when spec.monitoring (and its exporter) is on. Invariants:
// - It logs in as the operator's user, whose password never rotates: rotating the clients'
//   password can never blind the metrics. (Any user that may CONFIG GET, which the exporter
//   needs for maxmemory, can read masterauth anyway, so a narrower ACL user would hide nothing.)
// - It talks to 127.0.0.1, inside the pod's own network namespace. With TLS the connection is
//   encrypted but the certificate is not verified: it names the Services and pods, never
//   127.0.0.1, and nothing can sit between two containers on the pod's loopback.
// - No readiness probe: the exporter must never make a Redis pod NotReady (which would take it
//   out of the master Service). Only liveness, which restarts the exporter alone.
// - Configuration through the environment only, as the official image takes it: no command, so
//   the image's own entrypoint runs whatever its path inside the image.
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IService } from 'kubernetes-models/v1/Service';
import { operatorSecretRef, OPERATOR_USER } from '../../api/auth.ts';
import { EXPORTER_CONTAINER, EXPORTER_PORT, METRICS_PORT_NAME, REDIS_PORT, childNames, podSelectorLabels } from '../../api/labels.ts';
import type { MonitoringSpec } from '../../api/monitoring-schema.ts';
import type { HookContext } from '../context.ts';
import { sortedMap } from '../util.ts';
import { restrictedContainer } from './backup-job.ts';
import { childMetadata } from './meta.ts';
import type { Child } from './types.ts';

export function exporterEnabled(ctx: HookContext): boolean {
  return ctx.spec.monitoring.enabled && ctx.spec.monitoring.exporter.enabled;
}

/** The exporter container, or none when it is off. */
export function exporterContainers(ctx: HookContext, uid: number): IContainer[] {
  return exporterEnabled(ctx) ? [exporterContainer(ctx.name, ctx.spec.monitoring.exporter, ctx.spec.tls !== undefined, uid)] : [];
}

/** The exporter of the pods of the Redis (or RedisCluster: its pods run the same container) called `name`. */
export function exporterContainer(name: string, exporter: MonitoringSpec['exporter'], tls: boolean, uid: number): IContainer {
  const operator = operatorSecretRef(name);
  const { requests, limits } = exporter.resources;
  return {
    name: EXPORTER_CONTAINER,
    image: exporter.image,
    ...(exporter.imagePullPolicy !== undefined ? ({ imagePullPolicy: exporter.imagePullPolicy } satisfies Partial<IContainer>) : {}),
    env: [
      { name: 'REDIS_ADDR', value: `${tls ? 'rediss' : 'redis'}://127.0.0.1:${REDIS_PORT}` },
      { name: 'REDIS_USER', value: OPERATOR_USER },
      { name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: operator.secretName, key: operator.key } } },
      { name: 'REDIS_EXPORTER_WEB_LISTEN_ADDRESS', value: `:${EXPORTER_PORT}` },
      ...(tls ? [{ name: 'REDIS_EXPORTER_SKIP_TLS_VERIFICATION', value: 'true' }] : []),
    ],
    ports: [{ name: METRICS_PORT_NAME, containerPort: EXPORTER_PORT, protocol: 'TCP' }],
    resources: {
      ...(requests !== undefined ? { requests: sortedMap(requests) } : {}),
      ...(limits !== undefined ? { limits: sortedMap(limits) } : {}),
    },
    livenessProbe: {
      httpGet: { path: '/health', port: METRICS_PORT_NAME, scheme: 'HTTP' },
      periodSeconds: 10,
      timeoutSeconds: 5,
      successThreshold: 1,
      failureThreshold: 6,
    },
    securityContext: restrictedContainer(uid),
  };
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
    metadata: { ...meta, annotations: { 'prometheus.io/path': '/metrics', 'prometheus.io/port': String(EXPORTER_PORT), 'prometheus.io/scrape': 'true' } },
    spec: {
      clusterIP: 'None',
      publishNotReadyAddresses: true,
      selector: podSelectorLabels(ctx.name),
      ports: [{ name: METRICS_PORT_NAME, port: EXPORTER_PORT, targetPort: METRICS_PORT_NAME, protocol: 'TCP' }],
    },
  };
}

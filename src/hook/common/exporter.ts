// The metrics containers beside Redis in every pod of a Redis or a RedisCluster, when
// spec.monitoring (and its exporter) is on, and the metrics Service in front of them. Invariants:
// - redis_exporter logs in as its own ACL user (EXPORTER_USER: read-only diagnostics, no key, no
//   channel; api/auth.ts), never the operator's: whoever reaches its port or its env gets nothing
//   that can write, replicate or read data. Its password is the generated <name>-exporter Secret
//   (the sidecar creates it in the same read as <name>-operator, which Redis itself needs),
//   handed to Redis at start (EXPORTER_PASSWORD, optional: Redis never waits for the exporter)
//   and to nodes started without it by the sidecar. The exporter's own reference is not
//   optional: an exporter started without its password would stay blind until restarted.
// - The exporter listens on the pod's loopback only (EXPORTER_LOCAL_PORT): its /scrape endpoint
//   connects wherever a caller says, and no flag of the versions in use closes it. The metrics
//   port (EXPORTER_PORT, named metrics) is the metrics proxy's (src/metrics-proxy, from the
//   operator image), which passes `GET /metrics` and `/health` without a query string, nothing
//   else. Newer exporters are told as well to disable /scrape and key values (their own flags,
//   ignored by older ones), and to skip CONFIG, which their user may not run.
// - It talks to 127.0.0.1, inside the pod's own network namespace. With TLS the connection is
//   encrypted but the certificate is not verified: it names the Services and pods, never
//   127.0.0.1, and nothing can sit between two containers on the pod's loopback.
// - No readiness probe on either: the metrics must never make a Redis pod NotReady (which would
//   take it out of the master Service). Only liveness, which restarts the container alone; the
//   exporter's goes through the proxy (the kubelet cannot reach loopback).
// - The exporter is configured through the environment only, as the official image takes it: no
//   command, so the image's own entrypoint runs whatever its path inside the image.
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IService } from 'kubernetes-models/v1/Service';
import type { IEnvVar } from 'kubernetes-models/v1/EnvVar';
import { EXPORTER_RULES, EXPORTER_USER, exporterSecretRef } from '../../api/auth.ts';
import {
  EXPORTER_CONTAINER,
  EXPORTER_LOCAL_PORT,
  EXPORTER_PORT,
  METRICS_PORT_NAME,
  METRICS_PROXY_CONTAINER,
  REDIS_PORT,
} from '../../api/labels.ts';
import type { MonitoringSpec } from '../../api/monitoring-schema.ts';
import type { Child, ChildMetadata } from './child.ts';
import { sortedMap } from './util.ts';
import { restrictedContainer } from './pod-template.ts';

/** The env var the Redis start script reads the exporter user's password from. */
export const EXPORTER_PASSWORD_ENV = 'EXPORTER_PASSWORD';

/**
 * The start script's part for the exporter's user (redis-start.ts's REDIS_FEED_SCRIPT):
 * before `exec`, a config line in $eu, empty without EXPORTER_PASSWORD (exporter off, or its
 * Secret not made yet: the sidecar adds the user then); `"` and `\` escaped as for the other
 * passwords. The line goes to redis-server on stdin with the others, never on a command line.
 */
export const EXPORTER_USER_SCRIPT = [
  `epw=$(printf '%s' "$${EXPORTER_PASSWORD_ENV}" | sed 's/[\\\\"]/\\\\&/g')`,
  `eu=; [ -z "$${EXPORTER_PASSWORD_ENV}" ] || eu="user ${EXPORTER_USER} on \\">$epw\\" ${EXPORTER_RULES.join(' ')}"`,
];
/** The heredoc line it fills. */
export const EXPORTER_USER_CONFIG_LINE = '$eu';

/**
 * The proxy's memory: measured at 61 MiB RSS after 300 scrapes of a 30 KB answer (17 MiB of it
 * anonymous, the rest the node binary's pages, shared between pods on a node), on Node 24 with
 * these flags. Fixed, not part of the API: it does the same work whatever the Redis.
 */
const PROXY_RESOURCES = { requests: { cpu: '5m', memory: '32Mi' }, limits: { memory: '96Mi' } };
const PROXY_COMMAND = [
  'node',
  '--lite-mode',
  '--max-old-space-size=16',
  '--max-semi-space-size=1',
  'dist/metrics-proxy/main.js',
];

/** What the Redis container needs so that a node starts with the exporter's user (none when the exporter is off). */
export function exporterRedisEnv(name: string, enabled: boolean): IEnvVar[] {
  if (!enabled) return [];
  const ref = exporterSecretRef(name);
  return [
    {
      name: EXPORTER_PASSWORD_ENV,
      valueFrom: { secretKeyRef: { name: ref.secretName, key: ref.key, optional: true } },
    },
  ];
}

/** The metrics containers of the pods of the Redis (or RedisCluster: its pods run the same) called `name`. */
export function metricsContainers(
  name: string,
  exporter: MonitoringSpec['exporter'],
  tls: boolean,
  uid: number,
  operatorImage: string,
): IContainer[] {
  return [exporterContainer(name, exporter, tls, uid), metricsProxyContainer(operatorImage, uid)];
}

export function exporterContainer(
  name: string,
  exporter: MonitoringSpec['exporter'],
  tls: boolean,
  uid: number,
): IContainer {
  const secret = exporterSecretRef(name);
  const { requests, limits } = exporter.resources;
  return {
    name: EXPORTER_CONTAINER,
    image: exporter.image,
    ...(exporter.imagePullPolicy !== undefined
      ? ({ imagePullPolicy: exporter.imagePullPolicy } satisfies Partial<IContainer>)
      : {}),
    env: [
      { name: 'REDIS_ADDR', value: `${tls ? 'rediss' : 'redis'}://127.0.0.1:${REDIS_PORT}` },
      { name: 'REDIS_USER', value: EXPORTER_USER },
      { name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: secret.secretName, key: secret.key } } },
      { name: 'REDIS_EXPORTER_WEB_LISTEN_ADDRESS', value: `127.0.0.1:${EXPORTER_LOCAL_PORT}` },
      // 1.83+ and 1.52+; older releases ignore variables they do not know (the proxy covers them).
      { name: 'REDIS_EXPORTER_DISABLE_SCRAPE_ENDPOINT', value: 'true' },
      { name: 'REDIS_EXPORTER_DISABLE_EXPORTING_KEY_VALUES', value: 'true' },
      // No CONFIG for its user: "-" skips it (1.61+); older ones send an unknown command `-`,
      // refused before any ACL check, so ACL LOG is not filled with the exporter's attempts.
      { name: 'REDIS_EXPORTER_CONFIG_COMMAND', value: '-' },
      ...(tls ? [{ name: 'REDIS_EXPORTER_SKIP_TLS_VERIFICATION', value: 'true' }] : []),
    ],
    resources: {
      ...(requests !== undefined ? { requests: sortedMap(requests) } : {}),
      ...(limits !== undefined ? { limits: sortedMap(limits) } : {}),
    },
    // By number: a probe's port name is looked up in its own container's ports, and the name is the proxy's.
    livenessProbe: {
      httpGet: { path: '/health', port: EXPORTER_PORT, scheme: 'HTTP' },
      periodSeconds: 10,
      timeoutSeconds: 5,
      successThreshold: 1,
      failureThreshold: 6,
    },
    securityContext: restrictedContainer(uid),
  };
}

/**
 * The only listener on the metrics port (src/metrics-proxy): GET /metrics and /health, passed to the exporter on
 * loopback.
 */
export function metricsProxyContainer(operatorImage: string, uid: number): IContainer {
  return {
    name: METRICS_PROXY_CONTAINER,
    image: operatorImage,
    command: PROXY_COMMAND,
    env: [
      { name: 'LISTEN_PORT', value: String(EXPORTER_PORT) },
      { name: 'UPSTREAM_PORT', value: String(EXPORTER_LOCAL_PORT) },
    ],
    ports: [{ name: METRICS_PORT_NAME, containerPort: EXPORTER_PORT, protocol: 'TCP' }],
    resources: PROXY_RESOURCES,
    livenessProbe: {
      tcpSocket: { port: METRICS_PORT_NAME },
      periodSeconds: 10,
      timeoutSeconds: 5,
      successThreshold: 1,
      failureThreshold: 6,
    },
    securityContext: restrictedContainer(uid),
  };
}

/**
 * The metrics Service of a kind, over the pods `selector` picks. Headless, so a scraper sees every
 * pod (not one behind a ClusterIP) and no extra address is allocated. Not-ready pods are published
 * too: a replica that cannot sync is when its metrics matter most. The prometheus.io annotations
 * serve a Prometheus without the Operator.
 */
export function metricsService(meta: ChildMetadata, selector: Record<string, string>): Child<IService> {
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
      selector,
      ports: [{ name: METRICS_PORT_NAME, port: EXPORTER_PORT, targetPort: METRICS_PORT_NAME, protocol: 'TCP' }],
    },
  };
}

// The monitoring part of the Redis API: the redis_exporter container in every pod,
// the Prometheus Operator objects the monitoring component attaches (a PodMonitor and a
// PrometheusRule per Redis), and the alerts in the design article's shape (`monitoring.alerts`:
// name, threshold, duration). Part of the one schema source (schema.ts composes it into
// RedisSpec); the same invariants hold: every property described, defaults here and only here,
// structural output. What each alert means and which thresholds it takes is monitoring.ts's.
import { NO_CONTROL_OR_SPACE_PATTERN } from './text.ts';
import { Type, type Static } from '@sinclair/typebox';
import { ALERT_NAMES, PROMETHEUS_DURATION_PATTERN } from './monitoring.ts';
import { Quantity, StringEnum, StringMap } from './typebox-helpers.ts';

/** The exporter image by default: the release the tests run (Debian bookworm's 1.45.0 build). */
export const DEFAULT_EXPORTER_IMAGE = 'oliver006/redis_exporter:v1.45.0';

const ExporterResources = Type.Object(
  {
    requests: Type.Optional(StringMap(Quantity, 'Minimum resources of the exporter container.')),
    limits: Type.Optional(StringMap(Quantity, 'Maximum resources of the exporter container.')),
  },
  {
    description:
      'CPU and memory of the exporter container (it scrapes one Redis: a few MiB and millicores). The metrics-proxy container beside it has its own fixed ones (5m CPU, 32Mi requested, 96Mi limit).',
    default: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '128Mi' } },
  },
);

export const ExporterSpec = Type.Object(
  {
    enabled: Type.Boolean({
      default: true,
      description:
        "Run redis_exporter beside Redis in every pod (on the pod's loopback), a proxy serving its GET /metrics on port 9121 (named metrics), and a headless Service <name>-metrics in front of them. Changing it rolls the pods.",
    }),
    image: Type.String({
      default: DEFAULT_EXPORTER_IMAGE,
      minLength: 1,
      maxLength: 1024,
      pattern: NO_CONTROL_OR_SPACE_PATTERN,
      description:
        'The redis_exporter image. It is configured by environment variables only (REDIS_ADDR, REDIS_USER, REDIS_PASSWORD, REDIS_EXPORTER_WEB_LISTEN_ADDRESS), as the official image takes them.',
    }),
    imagePullPolicy: Type.Optional(
      StringEnum(['Always', 'IfNotPresent', 'Never'] as const, {
        description: 'Image pull policy of the exporter container.',
      }),
    ),
    resources: ExporterResources,
  },
  {
    default: {},
    description:
      'The Redis metrics exporter: it logs in as its own read-only ACL user (redis-exporter: INFO and a few diagnostics, no key, no CONFIG), over TLS when spec.tls is set; only GET /metrics and /health reach it through the metrics port.',
  },
);

export const PrometheusSpec = Type.Object(
  {
    enabled: Type.Boolean({
      default: true,
      description:
        'Have the monitoring component (manifests/components/monitoring, for clusters with the Prometheus Operator) attach a PodMonitor and a PrometheusRule named like this Redis. Without the component nothing happens.',
    }),
    labels: Type.Optional(
      StringMap(
        Type.String({ maxLength: 63 }),
        'Labels on the PodMonitor and the PrometheusRule, for a Prometheus whose podMonitorSelector or ruleSelector asks for them (for example prometheus: main).',
      ),
    ),
    scrapeInterval: Type.Optional(
      Type.String({
        pattern: PROMETHEUS_DURATION_PATTERN,
        maxLength: 32,
        description: "How often Prometheus scrapes the exporters, for example 30s; Prometheus' own default when unset.",
      }),
    ),
  },
  { default: {}, description: 'Prometheus Operator objects for this Redis.' },
);

export const AlertSpec = Type.Object(
  {
    name: StringEnum(ALERT_NAMES, {
      description:
        'Which alert: HighMemoryUsage, ReplicationLag, InstanceDown, NoMaster, MultipleMasters, NotRunning, ReplicasNotInSync, FrequentFailovers, BackupFailed, BackupTooOld (docs/monitoring.md says what each means). The Prometheus alert is Redis<name>.',
    }),
    enabled: Type.Boolean({ default: true, description: 'false leaves this alert out of the PrometheusRule.' }),
    threshold: Type.Optional(
      Type.Unsafe<string | number>({
        'x-kubernetes-int-or-string': true,
        anyOf: [{ type: 'integer' }, { type: 'string', maxLength: 32 }],
        description:
          'The alert threshold, in the alert\'s own unit: HighMemoryUsage a percentage of maxmemory (80 or "80%"), ReplicationLag seconds (10 or "10s"), FrequentFailovers a number of failovers within duration, BackupTooOld a multiple of the backup schedule\'s interval ("2", "1.5"). The other alerts take none.',
      }),
    ),
    duration: Type.Optional(
      Type.String({
        pattern: PROMETHEUS_DURATION_PATTERN,
        maxLength: 32,
        description:
          'How long the condition must hold before the alert fires (Prometheus `for`, for example 5m); for FrequentFailovers the window the failovers are counted in (for example 1h).',
      }),
    ),
    severity: Type.Optional(
      StringEnum(['critical', 'warning', 'info'] as const, {
        description: "The alert's severity label; each alert has its own default.",
      }),
    ),
  },
  {
    description:
      'One alert, overriding its defaults (every alert is on with its defaults unless listed with enabled: false).',
  },
);

export const MonitoringSpec = Type.Object(
  {
    enabled: Type.Boolean({
      default: true,
      description:
        'false turns everything below off: no exporter, no metrics Service, no PodMonitor or PrometheusRule.',
    }),
    exporter: ExporterSpec,
    prometheus: PrometheusSpec,
    alerts: Type.Array(AlertSpec, {
      default: [],
      maxItems: 32,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['name'],
      description:
        'Overrides of the alerts the PrometheusRule holds, as the design article writes them: [{name: HighMemoryUsage, threshold: 80, duration: 5m}, {name: ReplicationLag, threshold: 10s}]. Alerts not listed keep their defaults.',
    }),
  },
  { default: {}, description: 'Metrics and alerts (docs/monitoring.md). On by default: every pod runs the exporter.' },
);

export type MonitoringSpec = Static<typeof MonitoringSpec>;
export type AlertSpec = Static<typeof AlertSpec>;

// The names the hook and the sidecar agree on: labels, annotations, child names, ports.
// Invariants: the hook only ever READS the role label and the link annotation (the sidecar is
// the sole writer), so the master Service can never select a pod the sidecar did not promote.
// Changing any value here is an API change for running clusters: pods already carry them.

export const GROUP = 'redis.example.com';
export const VERSION = 'v1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = 'Redis';
export const PLURAL = 'redises';
export const SINGULAR = 'redis';
export const SHORT_NAMES = ['rd'];

/** Written by the sidecar on pods: `master` or `replica`. Absent until the sidecar decides. */
export const ROLE_LABEL = `${GROUP}/role`;
export const ROLE_MASTER = 'master';
export const ROLE_REPLICA = 'replica';

/**
 * Written by the sidecar on pods, only on transitions: `up` when the pod is the master or its
 * link to the master is up, `down` otherwise. The hook reports it in status.
 */
export const LINK_ANNOTATION = `${GROUP}/link`;
/** Written by the sidecar on the master pod: the replication offset it last saw (for humans). */
export const ROLE_SINCE_ANNOTATION = `${GROUP}/role-changed-by`;

/**
 * Written by the sidecar on each pod, for humans (`kubectl redis status`): the node's replication
 * offset and, on a replica, how many bytes it is behind by the master's own view (master offset
 * minus what the replica acknowledged), with the time they were read. Refreshed at most once a
 * minute and only when the offset moved (decide/replication-report.ts), so it may be that old.
 */
export const REPLICATION_ANNOTATION = `${GROUP}/replication`;

export interface ReplicationRecord {
  offset: number;
  /** Bytes behind the master; null on the master, or when the master did not list the replica. */
  lagBytes: number | null;
  /** ISO time the figures were read. */
  at: string;
}

export function replicationRecord(r: ReplicationRecord): string {
  return `offset=${r.offset} lag=${r.lagBytes ?? '-'} at=${r.at}`;
}

/** The record in a replication annotation; null when absent or not one. */
export function readReplicationRecord(value: string | undefined): ReplicationRecord | null {
  const m = /^offset=(\d+) lag=(\d+|-) at=(\S+)$/.exec(value ?? '');
  if (!m || Number.isNaN(Date.parse(m[3]!))) return null;
  return { offset: Number(m[1]), lagBytes: m[2] === '-' ? null : Number(m[2]), at: m[3]! };
}

/**
 * On the Redis, written by the user: a switchover on demand. The value names the target pod, or
 * `any` for the best replica; anything after an `@` only makes the request distinct from the last
 * one (`any@2`), since a request equal to the one already handled is never run twice.
 */
export const SWITCHOVER_ANNOTATION = `${GROUP}/switchover`;
/** On the Redis, written by the sidecar: `<request>: <Done|Refused|Running>: <why>` of the last switchover request. */
export const SWITCHOVER_STATUS_ANNOTATION = `${GROUP}/switchover-status`;

/** The switchover-status record the sidecar writes for a handled request. */
export function switchoverRecord(request: string, outcome: 'Done' | 'Refused', why: string): string {
  return `${request}: ${outcome}: ${why}`;
}

/**
 * A switchover-status record split into its request and what follows it (`<Outcome>: <why>`); null when there is none.
 */
export function readSwitchoverRecord(record: string | undefined): { request: string; result: string } | null {
  if (record === undefined) return null;
  const at = record.indexOf(': ');
  return at < 0 ? { request: record, result: '' } : { request: record.slice(0, at), result: record.slice(at + 2) };
}
/**
 * On the Redis, written by the user: confirms a scale-down by more than half in one step. Its
 * value must equal the new spec.replicas, so a confirmation left behind never lets a later one through.
 */
export const CONFIRM_SCALE_DOWN_ANNOTATION = `${GROUP}/confirm-scale-down-to`;
/**
 * On the Redis, written by the sidecar: the application users it manages (comma-separated), so a removed one is deleted
 * everywhere.
 */
export const MANAGED_USERS_ANNOTATION = `${GROUP}/managed-users`;
/**
 * On the Redis, written by the sidecar: per user whose password changed, when its grace period
 * ends (JSON, user -> ISO time). Until then the old and the new password both work.
 */
export const PASSWORD_GRACE_ANNOTATION = `${GROUP}/password-grace`;
/**
 * On the Redis, written by the user: comma-separated pods a bootstrap (no master yet: a full
 * restart, a wake from hibernation) stops waiting for, because they are gone for good. Writes only
 * they held are lost. Honoured only while a bootstrap waits; the sidecar removes it once a master
 * is labelled.
 */
export const BOOTSTRAP_WITHOUT_ANNOTATION = `${GROUP}/bootstrap-without`;
/**
 * On the Redis, written by the sidecar while a bootstrap waits: `Waiting: <pod> (<why>), ...`, the
 * pods that may hold data and do not answer yet (the hook shows it in MasterAvailable). Removed
 * once a master is labelled.
 */
export const BOOTSTRAP_STATUS_ANNOTATION = `${GROUP}/bootstrap-status`;
/** On a claim, written by the sidecar: why the storage class refused to grow it (the hook reports it). */
export const RESIZE_REFUSED_ANNOTATION = `${GROUP}/resize-refused`;
/** Set by the StatefulSet controller on each pod: the template revision the pod was made from. */
export const REVISION_LABEL = 'controller-revision-hash';

/** Set by Metacontroller's generateSelector; the hook must put it on every child it returns. */
export const CONTROLLER_UID_LABEL = 'controller-uid';

export const NAME_LABEL = 'app.kubernetes.io/name';
export const INSTANCE_LABEL = 'app.kubernetes.io/instance';
export const COMPONENT_LABEL = 'app.kubernetes.io/component';
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const PART_OF_LABEL = 'app.kubernetes.io/part-of';
export const VERSION_LABEL = 'app.kubernetes.io/version';
/**
 * The engine a pod template runs (spec.engine: redis or valkey), beside its version label; the
 * hook reads it back from the StatefulSets it applied to judge an engine change. Absent on
 * templates made before engines existed: those run redis.
 */
export const ENGINE_LABEL = `${GROUP}/engine`;

export const APP_NAME = 'redis';
export const MANAGED_BY = 'redis-operator';

/** `master` for pods of the <name>-master StatefulSet, `replica` for <name>-replica: never a role. */
export const COMPONENT_MASTER_SET = 'master-set';
export const COMPONENT_REPLICA_SET = 'replica-set';

export const REDIS_PORT = 6379;
/** The operator's pods (manifests/deployment.yaml): the sidecars that talk to every Redis pod. */
export const OPERATOR_POD_LABELS = { [NAME_LABEL]: MANAGED_BY } as const;
/**
 * Where every node points at start (redis.conf `replicaof 127.0.0.1 1`): a replica of nowhere, so
 * no node ever starts as a writable master; a node still pointing here was never re-pointed.
 */
export const PLACEHOLDER_MASTER = { host: '127.0.0.1', port: 1 } as const;
export const REDIS_CONTAINER = 'redis';
/**
 * The redis_exporter container beside Redis (spec.monitoring.exporter). It listens on the pod's
 * loopback only (EXPORTER_LOCAL_PORT); the metrics proxy container serves EXPORTER_PORT, the
 * metrics port, and passes it nothing but `GET /metrics` and `/health`.
 */
export const EXPORTER_CONTAINER = 'exporter';
export const METRICS_PROXY_CONTAINER = 'metrics-proxy';
export const EXPORTER_PORT = 9121;
export const EXPORTER_LOCAL_PORT = 9122;
export const METRICS_PORT_NAME = 'metrics';
export const CONFIG_KEY = 'redis.conf';
export const CONFIG_MOUNT = '/etc/redis';
export const DATA_MOUNT = '/data';
export const DATA_VOLUME = 'data';
/** Where the TLS Secret (tls.crt, tls.key, ca.crt) is mounted when spec.tls is set. */
export const TLS_MOUNT = '/tls';
export const TLS_VOLUME = 'tls';

/** Key inside the auth Secret when spec.auth.key is not given, and in the generated Secret. */
export const DEFAULT_PASSWORD_KEY = 'password';

/** Names of the objects that belong to one Redis called `name`. */
export function childNames(name: string) {
  return {
    masterSet: `${name}-master`,
    replicaSet: `${name}-replica`,
    headless: `${name}-headless`,
    masterService: `${name}-master`,
    replicasService: `${name}-replicas`,
    config: `${name}-config`,
    pdb: `${name}-pdb`,
    /** Only when spec.networkPolicy is set. */
    networkPolicy: `${name}-ingress`,
    /** Created by the sidecar when spec.auth is not set: a random password owned by the Redis. */
    generatedAuthSecret: `${name}-auth`,
    /** Created by the sidecar: the password of the operator's own ACL user, owned by the Redis. */
    operatorSecret: `${name}-operator`,
    /** Created by the sidecar: the password of the exporter's read-only ACL user, owned by the Redis. */
    exporterSecret: `${name}-exporter`,
    /** Only when spec.tls.certManager is set: the Certificate, and the default Secret it writes. */
    certificate: `${name}-tls`,
    /** Only with the exporter on: a headless Service in front of every pod's metrics port. */
    metricsService: `${name}-metrics`,
    /** Attached by the monitoring component's DecoratorController: the PodMonitor and the PrometheusRule. */
    podMonitor: name,
    prometheusRule: name,
  } as const;
}

/**
 * The labels every pod of one Redis carries (never the role). The customize hook selects
 * related pods with these, and the sidecar lists pods with them.
 */
export function podSelectorLabels(name: string): Record<string, string> {
  return { [NAME_LABEL]: APP_NAME, [INSTANCE_LABEL]: name, [MANAGED_BY_LABEL]: MANAGED_BY };
}

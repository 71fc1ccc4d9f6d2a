// Which redis.conf directives spec.config may set: an ALLOW-list, for a Redis and a RedisCluster.
// Owns the list (the runtime table of config-directives.ts, its aliases, and the vetted static set
// below), the CEL rule and the hook's check that enforce it, and the reason a refused directive
// is given.
// Invariants:
// - A directive is allowed only when listed here; everything else is refused, including names a
//   future Redis adds. The reasons below only word the refusal: they never decide it.
// - Nothing listed touches authentication, ACL users, modules, debugging, files or paths,
//   networking, replication or fencing, persistence files or rules, command renaming, includes,
//   or a directive the operator writes itself (test/api/config-allow.test.ts checks the list
//   against RESERVED_CONFIG_KEYS and renderRedisConf, and every entry against a real redis-server).
// - Cluster-only directives are allowed on a RedisCluster only: on a Redis they would not apply.
import { DYNAMIC_DIRECTIVES } from './config-directives.ts';

export type ConfigKind = 'Redis' | 'RedisCluster';

export interface StaticDirective {
  name: string;
  /** A value a real redis-server 7.0 takes at start (the test writes it into a redis.conf). */
  sample: string;
  /** Why it is harmless on a managed Redis. */
  why: string;
}

/** Directives Redis reads at start that only tune performance, memory or limits of the node itself. */
export const STATIC_DIRECTIVES: readonly StaticDirective[] = [
  { name: 'io-threads', sample: '4', why: 'threads for client I/O' },
  { name: 'io-threads-do-reads', sample: 'yes', why: 'threads for client I/O' },
  { name: 'databases', sample: '32', why: 'number of logical databases' },
  { name: 'maxclients', sample: '5000', why: 'a limit on client connections' },
  { name: 'maxmemory-clients', sample: '10%', why: 'a limit on client buffers' },
  { name: 'client-output-buffer-limit', sample: 'pubsub 64mb 16mb 90', why: 'limits on client output buffers' },
  { name: 'proto-max-bulk-len', sample: '256mb', why: 'a limit on one request element' },
  { name: 'tcp-backlog', sample: '1024', why: 'the listen queue length (no address or port)' },
  // 'yes' needs Redis' own jemalloc (the official images have it; Debian's redis-server has not).
  { name: 'activedefrag', sample: 'no', why: 'memory defragmentation' },
  { name: 'active-defrag-ignore-bytes', sample: '200mb', why: 'memory defragmentation' },
  { name: 'active-defrag-threshold-lower', sample: '20', why: 'memory defragmentation' },
  { name: 'active-defrag-threshold-upper', sample: '90', why: 'memory defragmentation' },
  { name: 'active-defrag-cycle-min', sample: '2', why: 'memory defragmentation' },
  { name: 'active-defrag-cycle-max', sample: '30', why: 'memory defragmentation' },
  { name: 'active-defrag-max-scan-fields', sample: '2000', why: 'memory defragmentation' },
  { name: 'jemalloc-bg-thread', sample: 'no', why: "the allocator's purge thread" },
  { name: 'latency-tracking-info-percentiles', sample: '50 99 99.99', why: 'what INFO latencystats prints' },
  { name: 'rdbcompression', sample: 'no', why: 'compression inside the RDB file (not its name or place)' },
  { name: 'rdb-save-incremental-fsync', sample: 'no', why: 'how an RDB file is flushed (not its name or place)' },
  { name: 'aof-rewrite-incremental-fsync', sample: 'no', why: 'how an AOF rewrite is flushed (not its name or place)' },
  { name: 'no-appendfsync-on-rewrite', sample: 'yes', why: 'fsync pauses during a rewrite' },
  { name: 'sanitize-dump-payload', sample: 'yes', why: 'stricter checks of RESTORE payloads' },
];

/** Directives that mean something on a cluster node only; allowed on a RedisCluster. */
export const REDIS_CLUSTER_STATIC_DIRECTIVES: readonly StaticDirective[] = [
  { name: 'cluster-allow-reads-when-down', sample: 'yes', why: 'reads while the cluster is down' },
  { name: 'cluster-allow-pubsubshard-when-down', sample: 'no', why: 'shard pub/sub while the cluster is down' },
  { name: 'cluster-link-sendbuf-limit', sample: '64mb', why: "a limit on a cluster bus link's buffer" },
];

/**
 * Redis directives (7.0 to 7.4) that are NOT allowed, so that the API server's message can name the
 * ones a spec sets (a CEL message cannot print a user's map key within the cost budget, but can
 * print these literals). Wording only: a directive missing here is still refused, as a name that
 * is no known directive. test/api/config-allow.test.ts checks that every directive a real
 * redis-server knows is allowed or listed here.
 */
export const KNOWN_REFUSED_DIRECTIVES: readonly string[] = [
  'acl-pubsub-default',
  'aclfile',
  'always-show-logo',
  'aof-disable-auto-gc',
  'aof-load-truncated',
  'aof-timestamp-enabled',
  'aof-use-rdb-preamble',
  'aof_rewrite_cpulist',
  'appenddirname',
  'appendfilename',
  'appendfsync',
  'appendonly',
  'bgsave_cpulist',
  'bind',
  'bind-source-addr',
  'bio_cpulist',
  'cluster-allow-replica-migration',
  'cluster-announce-bus-port',
  'cluster-announce-hostname',
  'cluster-announce-human-nodename',
  'cluster-announce-ip',
  'cluster-announce-port',
  'cluster-announce-tls-port',
  'cluster-config-file',
  'cluster-enabled',
  'cluster-migration-barrier',
  'cluster-node-timeout',
  'cluster-port',
  'cluster-preferred-endpoint-type',
  'cluster-replica-no-failover',
  'cluster-replica-validity-factor',
  'cluster-require-full-coverage',
  'cluster-slave-no-failover',
  'cluster-slave-validity-factor',
  'crash-log-enabled',
  'crash-memcheck-enabled',
  'daemonize',
  'dbfilename',
  'dir',
  'disable-thp',
  'enable-debug-command',
  'enable-module-command',
  'enable-protected-configs',
  'hide-user-data-from-log',
  'ignore-warnings',
  'include',
  'loadmodule',
  'locale-collate',
  'logfile',
  'lua-replicate-commands',
  'masterauth',
  'masteruser',
  'max-new-connections-per-cycle',
  'max-new-tls-connections-per-cycle',
  'maxmemory',
  'min-replicas-max-lag',
  'min-replicas-to-write',
  'min-slaves-max-lag',
  'min-slaves-to-write',
  'oom-score-adj',
  'oom-score-adj-values',
  'pidfile',
  'port',
  'proc-title-template',
  'propagation-error-behavior',
  'protected-mode',
  'rdb-del-sync-files',
  'rdbchecksum',
  'rename-command',
  'repl-disable-tcp-nodelay',
  'repl-diskless-load',
  'repl-diskless-sync',
  'repl-diskless-sync-delay',
  'repl-diskless-sync-max-replicas',
  'repl-ping-replica-period',
  'repl-ping-slave-period',
  'repl-timeout',
  'replica-announce-ip',
  'replica-announce-port',
  'replica-announced',
  'replica-ignore-disk-write-errors',
  'replica-ignore-maxmemory',
  'replica-lazy-flush',
  'replica-priority',
  'replica-read-only',
  'replica-serve-stale-data',
  'replicaof',
  'requirepass',
  'save',
  'sentinel',
  'server_cpulist',
  'set-max-listpack-entries',
  'set-max-listpack-value',
  'set-proc-title',
  'shutdown-on-sigint',
  'shutdown-on-sigterm',
  'shutdown-timeout',
  'slave-announce-ip',
  'slave-announce-port',
  'slave-ignore-maxmemory',
  'slave-lazy-flush',
  'slave-priority',
  'slave-read-only',
  'slave-serve-stale-data',
  'slaveof',
  'socket-mark-id',
  'supervised',
  'syslog-enabled',
  'syslog-facility',
  'syslog-ident',
  'tls-auth-clients',
  'tls-ca-cert-dir',
  'tls-ca-cert-file',
  'tls-cert-file',
  'tls-ciphers',
  'tls-ciphersuites',
  'tls-client-cert-file',
  'tls-client-key-file',
  'tls-client-key-file-pass',
  'tls-cluster',
  'tls-dh-params-file',
  'tls-key-file',
  'tls-key-file-pass',
  'tls-port',
  'tls-prefer-server-ciphers',
  'tls-protocols',
  'tls-replication',
  'tls-session-cache-size',
  'tls-session-cache-timeout',
  'tls-session-caching',
  'unixsocket',
  'unixsocketperm',
  'user',
];

const RUNTIME_NAMES = DYNAMIC_DIRECTIVES.flatMap((d) => [d.name, ...(d.aliases ?? [])]);

/** Every directive spec.config of `kind` may set, sorted. */
export function allowedDirectives(kind: ConfigKind): readonly string[] {
  return kind === 'Redis' ? REDIS_ALLOWED : REDIS_CLUSTER_ALLOWED;
}

const REDIS_ALLOWED = [...RUNTIME_NAMES, ...STATIC_DIRECTIVES.map((d) => d.name)].sort();
const REDIS_CLUSTER_ALLOWED = [...REDIS_ALLOWED, ...REDIS_CLUSTER_STATIC_DIRECTIVES.map((d) => d.name)].sort();

export function isAllowedDirective(kind: ConfigKind, name: string): boolean {
  return allowedDirectives(kind).includes(name);
}

// Wording only: which family a refused directive belongs to, first match wins.
const REASONS: ReadonlyArray<readonly [RegExp, string]> = [
  [/^(loadmodule|enable-module-command)$/, 'modules run code inside Redis'],
  [/^(enable-debug-command|enable-protected-configs)$/, 'it opens debugging or protected commands to clients'],
  [
    /^(user|requirepass|masterauth|masteruser|aclfile|acl-pubsub-default)$/,
    "users and passwords are the operator's: it sets them from Secrets (spec.auth, spec.users)",
  ],
  [/^rename-command$/, 'it renames commands the operator, its probes and clients rely on'],
  [/^include$/, 'it reads another file into the configuration'],
  [/^tls-/, "TLS is the operator's (spec.tls)"],
  [/^(save|appendonly|appendfsync|appenddirname)$/, "persistence is the operator's (spec.persistence)"],
  [
    /^(dir|dbfilename|appendfilename|logfile|pidfile|unixsocket|unixsocketperm|syslog-.*|proc-title-template|set-proc-title)$/,
    'it names a file, a path or the process',
  ],
  [/^(bind|bind-source-addr|port|protected-mode|.*announce.*)$/, "networking is the operator's"],
  [
    /^(replicaof|slaveof|replica-.*|slave-.*|repl-.*|min-replicas-.*|min-slaves-.*)$/,
    "replication and write fencing are the operator's",
  ],
  [/^maxmemory$/, 'it is derived from resources.limits.memory'],
  [/^(daemonize|supervised|shutdown-.*|oom-score-adj.*|disable-thp)$/, 'the pod runs and stops the process'],
];

/** Why `name` may not be set in spec.config of `kind` (the directive is not on the allow-list). */
export function refusalReason(kind: ConfigKind, name: string): string {
  if (name.startsWith('cluster-'))
    return kind === 'Redis'
      ? "cluster mode is a RedisCluster's"
      : "the cluster's wiring and failover are the operator's";
  for (const [pattern, reason] of REASONS) if (pattern.test(name)) return reason;
  return 'only directives checked to be safe on a managed Redis can be set';
}

/**
 * The hook's message for a refused directive: why, then every allowed one. The list is long, so
 * `withList` false (the second refusal of one spec onwards) refers back to the first.
 */
export function refusalMessage(kind: ConfigKind, name: string, withList: boolean): string {
  const allowed = withList ? allowedDirectives(kind).join(', ') : 'as listed above';
  return `not an allowed directive (${refusalReason(kind, name)}); allowed: ${allowed}`;
}

const CEL_REFUSAL_PREFIX = 'config sets directives that are not allowed:';
const CEL_REFUSAL_SUFFIX =
  ' (only the directives listed in the description of spec.config can be set; the others touch authentication, users, modules, debugging, files, networking, replication or persistence, which the operator owns)';
/** How the API server names directives it cannot print (see KNOWN_REFUSED_DIRECTIVES). */
export const UNKNOWN_DIRECTIVE = 'and a name that is no known Redis directive';

/** The refused directives the API server's message can name for `kind`, sorted. */
function namedInMessages(kind: ConfigKind): string[] {
  const redisClusterOnly = kind === 'Redis' ? REDIS_CLUSTER_STATIC_DIRECTIVES.map((d) => d.name) : [];
  return [...KNOWN_REFUSED_DIRECTIVES, ...redisClusterOnly].filter((d) => !isAllowedDirective(kind, d)).sort();
}

/**
 * What the API server says when spec.config of `kind` sets `names`: the CEL rule's
 * messageExpression, evaluated (known names in sorted order, then unknown ones as one phrase).
 */
export function allowListRefusal(kind: ConfigKind, names: readonly string[]): string {
  const refused = names.filter((n) => !isAllowedDirective(kind, n));
  const nameable = namedInMessages(kind);
  const known = nameable.filter((d) => refused.includes(d)).map((d) => ` ${d}`);
  const unknown = refused.some((n) => !nameable.includes(n)) ? ` ${UNKNOWN_DIRECTIVE}` : '';
  return `${CEL_REFUSAL_PREFIX}${known.join('')}${unknown}${CEL_REFUSAL_SUFFIX}`;
}

const celList = (names: readonly string[]) => `[${names.map((d) => `'${d}'`).join(', ')}]`;

/**
 * The CEL rule (on spec.config) for the CRD, its directives named by messageExpression. The
 * message is built from literals only (one conditional term per nameable directive): a join of
 * the user's keys is estimated far over the cost budget, since a map key's length is unbounded.
 */
export function allowListValidation(kind: ConfigKind): { rule: string; messageExpression: string; message: string } {
  const allowed = celList(allowedDirectives(kind));
  const nameable = namedInMessages(kind);
  const terms = nameable.map((d) => `('${d}' in self ? ' ${d}' : '')`).join(' + ');
  const unknown = `(self.exists(k, !(k in ${allowed}) && !(k in ${celList(nameable)})) ? ' ${UNKNOWN_DIRECTIVE}' : '')`;
  return {
    rule: `self.all(k, k in ${allowed})`,
    messageExpression: `'${CEL_REFUSAL_PREFIX}' + ${terms} + ${unknown} + '${CEL_REFUSAL_SUFFIX}'`,
    // When the message expression cannot be evaluated (the server falls back to this).
    message: `${CEL_REFUSAL_PREFIX} see the description of spec.config${CEL_REFUSAL_SUFFIX}`,
  };
}

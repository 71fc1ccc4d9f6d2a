// The redis.conf directives of spec.config that the operator manages at RUNTIME: the sidecar
// applies them to every running node with CONFIG SET (no restart), so only the other (static)
// directives go into the pod template's config hash and roll the pods. Owns the curated table,
// each entry's Redis default, the normaliser that makes a spec value comparable with what
// CONFIG GET prints, and the split of spec.config into static and dynamic parts.
// Why a curated list and not "whatever CONFIG SET takes": a directive missing here is treated as
// static, which costs a rollout but is always safe; a directive wrongly treated as dynamic would
// leave running nodes on the old value, or make the sidecar retry a CONFIG SET Redis refuses (or
// silently adjusts) every round. Each entry is checked against a real redis-server by
// test/api/config-directives.test.ts: it exists, CONFIG SET takes its default, and its default is
// what CONFIG GET shows on a fresh server.
// Invariants:
// - Pure (no I/O): the hook (config hash) and the sidecar's decide layer (desired values) share it.
// - No entry is a directive the operator owns or writes itself (RESERVED_CONFIG_KEYS, maxmemory
//   derived from the memory limit, and every line renderRedisConf writes): a node started from
//   the ConfigMap without the directive must report the table's default, or removing it from
//   spec.config would reset running nodes to a value new pods do not get.
// - normaliseDirective(name, v) equals what CONFIG GET prints after CONFIG SET name v succeeds.
//   A value Redis would refuse is returned as written (trimmed, unquoted), so the CONFIG SET of it
//   fails visibly instead of the sidecar quietly applying something redis.conf refuses at start.
// - Aliases (old ziplist names, lua-time-limit) resolve to their entry, in the order redis.conf
//   reads them (sorted keys, the last line wins), so runtime and start agree.
import { compareCodeUnits } from './order.ts';

/**
 * How a value is written and printed. bool: yes/no, any case. enum: one word, any case, printed
 * lower-case. int: a plain integer (Redis refuses leading zeros, '+' and units). memory: bytes
 * with an optional unit (k=1000, kb=1024, m, mb, g, gb; any case), printed as bytes.
 * keyspace-events: notify-keyspace-events class letters, printed in Redis' canonical order.
 */
export type DirectiveKind = 'bool' | 'enum' | 'int' | 'memory' | 'keyspace-events';

export interface DynamicDirective {
  name: string;
  kind: DirectiveKind;
  /** What CONFIG GET shows on a Redis 7.0 / 7.2 started without the directive. */
  default: string;
  /** Older names redis.conf and CONFIG SET accept for the same setting. */
  aliases?: readonly string[];
  /** Redis moves a value below min up to min (and above max down to max) instead of refusing it. */
  clamp?: { min?: number; max?: number };
}

// Commonly tuned settings only; replication, persistence files, security and networking are left
// to the operator (or to a rollout) on purpose. maxclients is left out too: Redis lowers its
// default to what the process' file limit allows, so "the default" depends on the node.
export const DYNAMIC_DIRECTIVES: readonly DynamicDirective[] = [
  // Eviction
  { name: 'maxmemory-policy', kind: 'enum', default: 'noeviction' },
  { name: 'maxmemory-samples', kind: 'int', default: '5' },
  { name: 'maxmemory-eviction-tenacity', kind: 'int', default: '10' },
  { name: 'lfu-log-factor', kind: 'int', default: '10' },
  { name: 'lfu-decay-time', kind: 'int', default: '1' },
  // Clients and the event loop
  { name: 'timeout', kind: 'int', default: '0' },
  { name: 'tcp-keepalive', kind: 'int', default: '300' },
  // Redis keeps hz within 1..500 (CONFIG_MIN_HZ, CONFIG_MAX_HZ) rather than refusing it.
  { name: 'hz', kind: 'int', default: '10', clamp: { min: 1, max: 500 } },
  { name: 'dynamic-hz', kind: 'bool', default: 'yes' },
  { name: 'active-expire-effort', kind: 'int', default: '1' },
  { name: 'activerehashing', kind: 'bool', default: 'yes' },
  { name: 'busy-reply-threshold', kind: 'int', default: '5000', aliases: ['lua-time-limit'] },
  { name: 'client-query-buffer-limit', kind: 'memory', default: '1073741824' },
  { name: 'tracking-table-max-keys', kind: 'int', default: '1000000' },
  // Observability
  { name: 'loglevel', kind: 'enum', default: 'notice' },
  { name: 'slowlog-log-slower-than', kind: 'int', default: '10000' },
  { name: 'slowlog-max-len', kind: 'int', default: '128' },
  { name: 'latency-monitor-threshold', kind: 'int', default: '0' },
  { name: 'latency-tracking', kind: 'bool', default: 'yes' },
  { name: 'acllog-max-len', kind: 'int', default: '128' },
  { name: 'notify-keyspace-events', kind: 'keyspace-events', default: '' },
  // Lazy freeing
  { name: 'lazyfree-lazy-eviction', kind: 'bool', default: 'no' },
  { name: 'lazyfree-lazy-expire', kind: 'bool', default: 'no' },
  { name: 'lazyfree-lazy-server-del', kind: 'bool', default: 'no' },
  { name: 'lazyfree-lazy-user-del', kind: 'bool', default: 'no' },
  { name: 'lazyfree-lazy-user-flush', kind: 'bool', default: 'no' },
  // Encodings. The compiled-in hash default is 512 (the redis.conf shipped with Redis says 128,
  // but our pods start from the operator's file, not that one).
  { name: 'hash-max-listpack-entries', kind: 'int', default: '512', aliases: ['hash-max-ziplist-entries'] },
  { name: 'hash-max-listpack-value', kind: 'memory', default: '64', aliases: ['hash-max-ziplist-value'] },
  { name: 'list-max-listpack-size', kind: 'int', default: '-2', aliases: ['list-max-ziplist-size'] },
  { name: 'list-compress-depth', kind: 'int', default: '0' },
  { name: 'set-max-intset-entries', kind: 'int', default: '512' },
  { name: 'zset-max-listpack-entries', kind: 'int', default: '128', aliases: ['zset-max-ziplist-entries'] },
  { name: 'zset-max-listpack-value', kind: 'memory', default: '64', aliases: ['zset-max-ziplist-value'] },
  { name: 'hll-sparse-max-bytes', kind: 'memory', default: '3000' },
  { name: 'stream-node-max-bytes', kind: 'memory', default: '4096' },
  { name: 'stream-node-max-entries', kind: 'int', default: '100' },
  // Persistence triggers (the files and the save rule are the operator's). CONFIG SET raises a
  // backlog below 16 KiB to 16 KiB (a node started with less reports it as written until then).
  { name: 'stop-writes-on-bgsave-error', kind: 'bool', default: 'yes' },
  { name: 'auto-aof-rewrite-percentage', kind: 'int', default: '100' },
  { name: 'auto-aof-rewrite-min-size', kind: 'memory', default: '67108864' },
  { name: 'repl-backlog-size', kind: 'memory', default: '1048576', clamp: { min: 16384 } },
  { name: 'repl-backlog-ttl', kind: 'int', default: '3600' },
];

const BY_NAME: ReadonlyMap<string, DynamicDirective> = new Map(
  DYNAMIC_DIRECTIVES.flatMap((d) => [[d.name, d] as const, ...(d.aliases ?? []).map((a) => [a, d] as const)]),
);

/** The table entry a redis.conf directive name (or one of its aliases) belongs to. */
export function dynamicDirective(name: string): DynamicDirective | undefined {
  return BY_NAME.get(name);
}

/** Does Redis take this directive at runtime, and does the operator manage it so? */
export function isDynamicDirective(name: string): boolean {
  return BY_NAME.has(name);
}

/** redis.conf quoting: a value wholly in "..." or '...' (no escapes) is the text inside. */
function unquote(value: string): string {
  const v = value.trim();
  const m = /^"([^"\\]*)"$/.exec(v) ?? /^'([^'\\]*)'$/.exec(v);
  return m ? (m[1] ?? '') : v;
}

function clamped(n: bigint, clamp: DynamicDirective['clamp']): bigint {
  if (clamp?.min !== undefined && n < BigInt(clamp.min)) return BigInt(clamp.min);
  if (clamp?.max !== undefined && n > BigInt(clamp.max)) return BigInt(clamp.max);
  return n;
}

const MEMORY_UNITS: Record<string, bigint> = {
  '': 1n,
  b: 1n,
  k: 1000n,
  kb: 1024n,
  m: 1000n ** 2n,
  mb: 1024n ** 2n,
  g: 1000n ** 3n,
  gb: 1024n ** 3n,
};

/** What 'A' stands for (every class but key-miss 'm' and new-key 'n'), and the print order. */
const KEYSPACE_ALL = 'g$lshzxetd';
const KEYSPACE_CLASSES = 'g$lshzxetdn';
const KEYSPACE_TYPES = 'KEm';

function keyspaceEvents(value: string): string {
  const set = new Set<string>();
  for (const c of value) {
    if (c === 'A') for (const a of KEYSPACE_ALL) set.add(a);
    else if (KEYSPACE_CLASSES.includes(c) || KEYSPACE_TYPES.includes(c)) set.add(c);
    else return value;
  }
  // Redis prints 'A' when every class of A is on, and then drops 'n' (a quirk kept here).
  const all = [...KEYSPACE_ALL].every((c) => set.has(c));
  const classes = all ? 'A' : [...KEYSPACE_CLASSES].filter((c) => set.has(c)).join('');
  return classes + [...KEYSPACE_TYPES].filter((c) => set.has(c)).join('');
}

/**
 * A value of a table directive as CONFIG GET would print it once CONFIG SET took it; any other
 * directive's value only trimmed and unquoted. Values Redis refuses come back as written.
 */
export function normaliseDirective(name: string, value: string): string {
  // Every probe and every round normalise the same few values of every pod (the sidecar's
  // largest share of plan() at fleet scale): remembered, within a bound, since the answer is pure.
  const key = `${name}\n${value}`;
  const known = NORMALISED.get(key);
  if (known !== undefined) return known;
  const normalised = normalise(name, value);
  if (NORMALISED.size >= MAX_NORMALISED) NORMALISED.clear();
  NORMALISED.set(key, normalised);
  return normalised;
}

const NORMALISED = new Map<string, string>();
const MAX_NORMALISED = 4096;

function normalise(name: string, value: string): string {
  const v = unquote(value);
  const d = BY_NAME.get(name);
  if (!d) return v;
  switch (d.kind) {
    case 'bool':
      return /^(yes|no)$/i.test(v) ? v.toLowerCase() : v;
    case 'enum':
      return v.toLowerCase();
    case 'int':
      // Only the form Redis' string2ll takes: "010" or "+5" would be refused, at start as well.
      return /^-?(0|[1-9][0-9]*)$/.test(v) && v !== '-0' ? String(clamped(BigInt(v), d.clamp)) : v;
    case 'memory': {
      const m = /^([0-9]+)([a-z]*)$/i.exec(v);
      const unit = MEMORY_UNITS[(m?.[2] ?? '').toLowerCase()];
      return m?.[1] !== undefined && unit !== undefined ? String(clamped(BigInt(m[1]) * unit, d.clamp)) : v;
    }
    case 'keyspace-events':
      return keyspaceEvents(v);
  }
}

/** spec.config split: static directives go to the config hash, dynamic ones to the sidecar. */
export function splitConfig(config: Readonly<Record<string, string>> | undefined): {
  static: Record<string, string>;
  dynamic: Record<string, string>;
} {
  const out = { static: {} as Record<string, string>, dynamic: {} as Record<string, string> };
  for (const [key, value] of Object.entries(config ?? {}))
    (isDynamicDirective(key) ? out.dynamic : out.static)[key] = value;
  return out;
}

/**
 * What every node should report for EVERY table directive: the spec's value (normalised, through
 * an alias too) or Redis' default, so removing a directive from spec.config resets running nodes.
 * Keys are the table's canonical names.
 */
export function desiredRuntimeConfig(config: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const d of DYNAMIC_DIRECTIVES) out[d.name] = d.default;
  // Sorted like renderRedisConf writes them: of a name and its alias, the later line wins.
  for (const key of Object.keys(config ?? {}).sort(compareCodeUnits)) {
    const d = BY_NAME.get(key);
    if (d) out[d.name] = normaliseDirective(d.name, config?.[key] ?? '');
  }
  return out;
}

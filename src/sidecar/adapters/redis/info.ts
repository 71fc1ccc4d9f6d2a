// Parsing of INFO text and CONFIG GET replies into typed facts. Pure: no I/O.
// Invariants: unknown or missing fields never throw (a newer Redis adds fields, an older one
// lacks some); -1 sentinels become null; `slave` wording becomes `replica` in our types.
import { DYNAMIC_DIRECTIVES } from '../../../api/config-directives.ts';
import { engineFromInfo } from '../../../api/node-engine.ts';
import type { RedisFacts, ReplicaLine, ReplicationInfo } from './types.ts';

/** INFO text -> flat field map (sections merged; later sections never override earlier ones). */
export function parseInfoFields(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const key = line.slice(0, colon);
    if (!fields.has(key)) fields.set(key, line.slice(colon + 1));
  }
  return fields;
}

function int(fields: Map<string, string>, key: string): number | null {
  const v = fields.get(key);
  if (v === undefined || v === '') return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

/** -1 means "never"/"not applicable" in INFO: report it as null. */
function duration(fields: Map<string, string>, key: string): number | null {
  const n = int(fields, key);
  return n === null || n < 0 ? null : n;
}

/** `ip=1.2.3.4,port=6379,state=online,offset=84,lag=1` */
export function parseReplicaLine(value: string): ReplicaLine | null {
  const kv = new Map<string, string>();
  for (const part of value.split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0) kv.set(part.slice(0, eq), part.slice(eq + 1));
  }
  const ip = kv.get('ip');
  const port = Number(kv.get('port'));
  if (ip === undefined || !Number.isInteger(port)) return null;
  return {
    ip,
    port,
    state: kv.get('state') ?? 'unknown',
    offset: Number(kv.get('offset') ?? 0) || 0,
    lag: Number(kv.get('lag') ?? 0) || 0,
  };
}

export function parseReplication(fields: Map<string, string>): ReplicationInfo {
  const role = fields.get('role') === 'master' ? 'master' : 'replica';
  const replicas: ReplicaLine[] = [];
  for (const [key, value] of fields) {
    if (/^slave\d+$/.test(key)) {
      const line = parseReplicaLine(value);
      if (line) replicas.push(line);
    }
  }
  const link = fields.get('master_link_status');
  const isReplica = role === 'replica';
  return {
    role,
    masterHost: isReplica ? (fields.get('master_host') ?? null) : null,
    masterPort: isReplica ? int(fields, 'master_port') : null,
    masterLinkStatus: isReplica ? (link === 'up' ? 'up' : 'down') : null,
    masterLastIoSecondsAgo: isReplica ? duration(fields, 'master_last_io_seconds_ago') : null,
    masterLinkDownSinceSeconds: isReplica ? duration(fields, 'master_link_down_since_seconds') : null,
    masterSyncInProgress: fields.get('master_sync_in_progress') === '1',
    masterSyncLastIoSecondsAgo: duration(fields, 'master_sync_last_io_seconds_ago'),
    slaveReplOffset: isReplica ? int(fields, 'slave_repl_offset') : null,
    slavePriority: int(fields, 'slave_priority') ?? int(fields, 'replica_priority'),
    masterReplOffset: int(fields, 'master_repl_offset') ?? 0,
    masterReplid: fields.get('master_replid') ?? '',
    masterReplid2: fields.get('master_replid2') ?? '',
    secondReplOffset: duration(fields, 'second_repl_offset'),
    connectedSlaves: int(fields, 'connected_slaves') ?? 0,
    replicas,
    failoverState: fields.get('master_failover_state') ?? null,
  };
}

/** `db0:keys=3,expires=0,avg_ttl=0` lines summed over all databases. */
export function parseKeyCount(fields: Map<string, string>): number {
  let keys = 0;
  for (const [key, value] of fields) {
    if (!/^db\d+$/.test(key)) continue;
    const m = /(?:^|,)keys=(\d+)/.exec(value);
    if (m?.[1]) keys += Number(m[1]);
  }
  return keys;
}

/** CONFIG GET reply: a flat [name, value, name, value, ...] list. */
export function parseConfigReply(reply: unknown): Map<string, string> {
  const out = new Map<string, string>();
  if (!Array.isArray(reply)) return out;
  for (let i = 0; i + 1 < reply.length; i += 2) out.set(String(reply[i]), String(reply[i + 1]));
  return out;
}

/** The runtime-managed directives (src/api/config-directives.ts) a CONFIG GET reply carries. */
export function parseRuntimeConfig(config: Map<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const { name } of DYNAMIC_DIRECTIVES) {
    const value = config.get(name);
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/**
 * INFO server/replication/persistence/keyspace plus CONFIG GET of the settings we manage.
 * The config map may be empty (CONFIG GET refused); the INFO values are then used.
 */
export function parseFacts(infoText: string, config: Map<string, string>): RedisFacts {
  const fields = parseInfoFields(infoText);
  const replication = parseReplication(fields);
  const cfg = (key: string, fallback: number) => {
    const v = config.get(key);
    const n = v === undefined ? NaN : Number(v);
    return Number.isFinite(n) ? n : fallback;
  };
  return {
    runId: fields.get('run_id') ?? '',
    version: fields.get('redis_version') ?? '',
    engine: engineFromInfo(fields),
    uptimeSeconds: int(fields, 'uptime_in_seconds') ?? 0,
    replication,
    replicaPriority: cfg('replica-priority', replication.slavePriority ?? 100),
    minReplicasToWrite: cfg('min-replicas-to-write', 0),
    minReplicasMaxLag: cfg('min-replicas-max-lag', 10),
    loading: fields.get('loading') === '1' || fields.get('async_loading') === '1',
    keys: parseKeyCount(fields),
    aofEnabled: fields.get('aof_enabled') === '1',
    runtimeConfig: parseRuntimeConfig(config),
  };
}

// The Redis side of the RedisCluster worker: probe a node (CLUSTER NODES and INFO), and the
// cluster commands the decisions call for. Owns all cluster Redis I/O; decides nothing.
// Invariants:
// - No method throws for a Redis or network failure: each returns a result carrying the
//   classified error (redis/errors.ts), as the Redis adapter does.
// - Two pools, one password: probes and short commands with the sidecar's command timeout, and
//   a slow pool for what may legitimately take long (MIGRATE of a batch), so a big batch is
//   never cut off as a "hung node" and a hung node never stalls a probe for seconds.
// - MIGRATE authenticates to the target as the operator's user (AUTH2): the password clients use
//   may rotate under a running reshard.
// - The *Many methods write their commands at once, one pipeline on one connection (Redis runs
//   them in one pass: one nodes.conf write for many SETSLOTs) and answer each on its own, in
//   order; a reply that breaks the connection (a timeout) drops it, as a single command's does.
import { Command, type ChainableCommander, type Pipeline, type Redis } from 'ioredis';
import { CLUSTER_BUS_PORT } from '../../../api/rediscluster-names.ts';
import { REDIS_PORT } from '../../../api/labels.ts';
import { breaksConnection, classifyError } from './errors.ts';
import { RedisPool, type PoolOptions } from './pool.ts';
import type { Endpoint, RedisFailure } from './types.ts';
import { parseClusterNodes, parseNodeInfo } from '../../rediscluster/decide/cluster-nodes.ts';
import type { ProbeOutcome } from '../../rediscluster/decide/types.ts';

export type Result<T = string> = { ok: true; value: T } | { ok: false; error: RedisFailure };

export interface ClusterAdapterOptions extends Omit<PoolOptions, 'password'> {
  /** Bound on MIGRATE (default 10 s). */
  slowCommandTimeoutMs?: number;
}

export const endpointOf = (ip: string): Endpoint => ({ host: ip, port: REDIS_PORT });

/** One slot's CLUSTER SETSLOT: STABLE takes no node id. */
export type SlotState =
  { slot: number; state: 'IMPORTING' | 'MIGRATING' | 'NODE'; id: string } | { slot: number; state: 'STABLE' };

export class ClusterAdapter {
  readonly #fast: RedisPool;
  readonly #slow: RedisPool;
  readonly #username: string | undefined;
  #password: string | undefined;

  constructor(options: ClusterAdapterOptions) {
    const slowMs = options.slowCommandTimeoutMs ?? 10_000;
    this.#username = options.username;
    this.#fast = new RedisPool({ ...options, password: undefined });
    this.#slow = new RedisPool({
      ...options,
      password: undefined,
      onLost: undefined,
      timeouts: { ...options.timeouts, commandTimeoutMs: slowMs },
    });
  }

  get password(): string | undefined {
    return this.#password;
  }

  /** A new password: connections made with the old one are closed. */
  setPassword(password: string | undefined): void {
    this.#password = password;
    this.#fast.setPassword(password);
    this.#slow.setPassword(password);
  }

  /** Connections only to these addresses. */
  retain(ips: Iterable<string>): void {
    const keep = [...ips].map(endpointOf);
    this.#fast.retain(keep);
    this.#slow.retain(keep);
  }

  close(): void {
    this.#fast.close();
    this.#slow.close();
  }

  /**
   * CLUSTER NODES, INFO server/replication/memory/keyspace, CLUSTER INFO and TIME, pipelined. TIME is the
   * clock CLUSTER NODES' ping-sent and pong-recv are read against (how long this node has waited
   * for a pong), so no two machines' clocks are ever compared.
   */
  async probe(ip: string): Promise<ProbeOutcome> {
    try {
      const [nodes, infoText, cluster, time] = await this.#fast.run(endpointOf(ip), (c) =>
        Promise.all([
          c.call('CLUSTER', 'NODES'),
          c.call('INFO', 'server', 'replication', 'memory', 'keyspace'),
          c.call('CLUSTER', 'INFO'),
          c.call('TIME'),
        ]),
      );
      const parsed = parseNodeInfo(String(infoText), String(cluster));
      const [sec, usec] = Array.isArray(time) ? time.map(Number) : [NaN, NaN];
      const clockMs = sec! * 1000 + Math.floor(usec! / 1000);
      const info = Number.isFinite(clockMs) ? { ...parsed, clockMs } : parsed;
      return { ok: true, nodes: parseClusterNodes(String(nodes)), info };
    } catch (err) {
      const e = classifyError(err);
      return { ok: false, kind: e.kind, message: e.message };
    }
  }

  /** ACL SETUSER on one node (ACLs do not replicate): the exporter's user (core/exporter-user.ts). */
  setUser(ip: string, user: string, args: readonly string[]): Promise<Result> {
    return this.#run(ip, (c) => c.call('ACL', 'SETUSER', user, ...args));
  }

  meet(ip: string, targetIp: string): Promise<Result> {
    return this.#run(ip, (c) => c.call('CLUSTER', 'MEET', targetIp, String(REDIS_PORT), String(CLUSTER_BUS_PORT)));
  }

  addSlotsRange(ip: string, ranges: ReadonlyArray<readonly [number, number]>): Promise<Result> {
    return this.#run(ip, (c) =>
      c.call('CLUSTER', 'ADDSLOTSRANGE', ...ranges.flatMap(([a, b]) => [String(a), String(b)])),
    );
  }

  /** Only works on a node that knows no other node and has epoch 0: a failure is no harm. */
  setConfigEpoch(ip: string, epoch: number): Promise<Result> {
    return this.#run(ip, (c) => c.call('CLUSTER', 'SET-CONFIG-EPOCH', String(epoch)));
  }

  replicate(ip: string, masterId: string): Promise<Result> {
    return this.#run(ip, (c) => c.call('CLUSTER', 'REPLICATE', masterId));
  }

  setSlot(ip: string, slot: number, state: 'IMPORTING' | 'MIGRATING' | 'NODE', id: string): Promise<Result>;
  setSlot(ip: string, slot: number, state: 'STABLE'): Promise<Result>;
  setSlot(ip: string, slot: number, state: string, id?: string): Promise<Result> {
    return this.#run(ip, (c) => c.call('CLUSTER', 'SETSLOT', String(slot), state, ...(id ? [id] : [])));
  }

  /**
   * Keys as bytes: a key that is not UTF-8 must reach MIGRATE exactly as Redis has it.
   * (A Command with no reply encoding, not callBuffer: ioredis' auto-pipelining sends callBuffer's
   * first argument as the command name.)
   */
  async getKeysInSlot(ip: string, slot: number, count: number): Promise<Result<Buffer[]>> {
    try {
      const command = new Command('cluster', ['GETKEYSINSLOT', String(slot), String(count)], { replyEncoding: null });
      const keys = (await this.#fast.run(endpointOf(ip), async (c) => {
        void c.sendCommand(command);
        return command.promise as Promise<unknown>;
      })) as Buffer[];
      return { ok: true, value: keys };
    } catch (err) {
      return { ok: false, error: classifyError(err) };
    }
  }

  /**
   * MIGRATE host port "" 0 timeout [REPLACE] AUTH2 user pw KEYS ... from `ip` to `targetIp`.
   * "NOKEY" (every key already gone) is a success.
   */
  async migrate(
    ip: string,
    targetIp: string,
    keys: readonly Buffer[],
    timeoutMs: number,
    replace: boolean,
  ): Promise<Result> {
    try {
      const value = await this.#slow.run(endpointOf(ip), (c) =>
        c.call('MIGRATE', ...this.#migrateArgs(targetIp, keys, timeoutMs, replace)),
      );
      return { ok: true, value: String(value) };
    } catch (err) {
      return { ok: false, error: classifyError(err) };
    }
  }

  /** CLUSTER SETSLOT for several slots on one node, in one pipeline: an answer each, in order. */
  setSlots(ip: string, entries: readonly SlotState[]): Promise<Result[]> {
    return this.#many(this.#fast, ip, entries.length, (p) => {
      for (const e of entries)
        p.call('CLUSTER', 'SETSLOT', String(e.slot), e.state, ...(e.state === 'STABLE' ? [] : [e.id]));
    }).then((rs) => rs.map((r) => (r.ok ? { ok: true, value: String(r.value) } : r)));
  }

  /** GETKEYSINSLOT for several slots on one node, in one pipeline (keys as bytes, see getKeysInSlot). */
  getKeysInSlots(ip: string, slots: readonly number[], count: number): Promise<Result<Buffer[]>[]> {
    return this.#many(this.#fast, ip, slots.length, (p) => {
      for (const slot of slots)
        p.sendCommand(new Command('cluster', ['GETKEYSINSLOT', String(slot), String(count)], { replyEncoding: null }));
    }) as Promise<Result<Buffer[]>[]>;
  }

  /**
   * One MIGRATE per key list (Redis refuses keys of two slots in one: CROSSSLOT), in one pipeline
   * from `ip` to `targetIp`; see migrate().
   */
  migrateMany(
    ip: string,
    targetIp: string,
    batches: ReadonlyArray<readonly Buffer[]>,
    timeoutMs: number,
    replace: boolean,
  ): Promise<Result[]> {
    return this.#many(this.#slow, ip, batches.length, (p) => {
      for (const keys of batches) p.call('MIGRATE', ...this.#migrateArgs(targetIp, keys, timeoutMs, replace));
    }).then((rs) => rs.map((r) => (r.ok ? { ok: true, value: String(r.value) } : r)));
  }

  /**
   * Where the node is in its replication stream: a master's master_repl_offset, a replica's
   * slave_repl_offset (what it has processed from its master).
   */
  async replicationOffset(ip: string): Promise<Result<number>> {
    const r = await this.#run(ip, (c) => c.call('INFO', 'replication'));
    if (!r.ok) return r;
    const m = /^slave_repl_offset:(\d+)/m.exec(r.value) ?? /^master_repl_offset:(\d+)/m.exec(r.value);
    if (!m) return { ok: false, error: { kind: 'other', message: 'INFO replication names no offset' } };
    return { ok: true, value: Number(m[1]) };
  }

  forget(ip: string, id: string): Promise<Result> {
    return this.#run(ip, (c) => c.call('CLUSTER', 'FORGET', id));
  }

  failover(ip: string, mode: 'FORCE' | 'TAKEOVER' | null): Promise<Result> {
    return this.#run(ip, (c) => c.call('CLUSTER', 'FAILOVER', ...(mode ? [mode] : [])));
  }

  reset(ip: string, hard: boolean): Promise<Result> {
    return this.#run(ip, (c) => c.call('CLUSTER', 'RESET', hard ? 'HARD' : 'SOFT'));
  }

  /** MIGRATE's arguments: host port "" 0 timeout [REPLACE] AUTH2 user pw KEYS ... */
  #migrateArgs(targetIp: string, keys: readonly Buffer[], timeoutMs: number, replace: boolean): Array<string | Buffer> {
    const auth =
      this.#username !== undefined
        ? ['AUTH2', this.#username, this.#password ?? '']
        : this.#password !== undefined
          ? ['AUTH', this.#password]
          : [];
    return [
      targetIp,
      String(REDIS_PORT),
      '',
      '0',
      String(timeoutMs),
      ...(replace ? ['REPLACE'] : []),
      ...auth,
      'KEYS',
      ...keys,
    ];
  }

  /**
   * Commands written at once (one pipeline: Redis reads them in one go and runs them in one pass)
   * on the connection of `pool`; each answer on its own.
   */
  async #many(
    pool: RedisPool,
    ip: string,
    n: number,
    add: (p: ChainableCommander & Pick<Pipeline, 'sendCommand'>) => void,
  ): Promise<Result<unknown>[]> {
    if (n === 0) return [];
    let replies: Array<[Error | null, unknown]>;
    try {
      replies = await pool.run(endpointOf(ip), async (c) => {
        // A Pipeline is both: ChainableCommander is the type pipeline() is declared with.
        const p = c.pipeline() as ChainableCommander & Pick<Pipeline, 'sendCommand'>;
        add(p);
        return (await p.exec()) ?? [];
      });
    } catch (err) {
      const error = classifyError(err);
      return Array.from({ length: n }, () => ({ ok: false, error }));
    }
    const out = Array.from({ length: n }, (_, i): Result<unknown> => {
      const [err, value] = replies[i] ?? [new Error('no reply'), null];
      return err ? { ok: false, error: classifyError(err) } : { ok: true, value };
    });
    if (out.some((r) => !r.ok && breaksConnection(r.error.kind))) pool.drop(endpointOf(ip));
    return out;
  }

  /** One command on the fast pool; its reply as text. */
  async #run(ip: string, fn: (c: Redis) => Promise<unknown>): Promise<Result> {
    try {
      return { ok: true, value: String(await this.#fast.run(endpointOf(ip), fn)) };
    } catch (err) {
      return { ok: false, error: classifyError(err) };
    }
  }
}

// The Redis side of the RedisCluster worker: probe a node (CLUSTER NODES and INFO), and the
// cluster commands the decisions call for. Owns all cluster Redis I/O; decides nothing.
// Invariants:
// - No method throws for a Redis or network failure: each returns a result carrying the
//   classified error (redis/errors.ts), as the Redis adapter does.
// - Two pools, one password: probes and short commands with the sidecar's command timeout, and
//   a slow pool for what may legitimately take long (MIGRATE of a batch, WAIT), so a big batch is
//   never cut off as a "hung node" and a hung node never stalls a probe for seconds.
// - MIGRATE authenticates to the target as the operator's user (AUTH2): the password clients use
//   may rotate under a running reshard.
import { Command, type Redis } from 'ioredis';
import { CLUSTER_BUS_PORT } from '../../../api/rediscluster-names.ts';
import { REDIS_PORT } from '../../../api/labels.ts';
import { classifyError } from './errors.ts';
import { RedisPool, type PoolOptions } from './pool.ts';
import type { Endpoint, RedisFailure } from './types.ts';
import { parseClusterNodes, parseNodeInfo } from '../../rediscluster/decide/cluster-nodes.ts';
import type { ProbeOutcome } from '../../rediscluster/decide/types.ts';

export type Result<T = string> = { ok: true; value: T } | { ok: false; error: RedisFailure };

export interface ClusterAdapterOptions extends Omit<PoolOptions, 'password'> {
  /** Bound on MIGRATE and WAIT (default 10 s). */
  slowCommandTimeoutMs?: number;
}

export const endpointOf = (ip: string): Endpoint => ({ host: ip, port: REDIS_PORT });

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
   * CLUSTER NODES, INFO replication/memory/keyspace, CLUSTER INFO and TIME, pipelined. TIME is the
   * clock CLUSTER NODES' ping-sent and pong-recv are read against (how long this node has waited
   * for a pong), so no two machines' clocks are ever compared.
   */
  async probe(ip: string): Promise<ProbeOutcome> {
    try {
      const [nodes, infoText, cluster, time] = await this.#fast.run(endpointOf(ip), (c) =>
        Promise.all([
          c.call('CLUSTER', 'NODES'),
          c.call('INFO', 'replication', 'memory', 'keyspace'),
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
    const auth =
      this.#username !== undefined
        ? ['AUTH2', this.#username, this.#password ?? '']
        : this.#password !== undefined
          ? ['AUTH', this.#password]
          : [];
    const args = [
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
    try {
      const value = await this.#slow.run(endpointOf(ip), (c) => c.call('MIGRATE', ...args));
      return { ok: true, value: String(value) };
    } catch (err) {
      return { ok: false, error: classifyError(err) };
    }
  }

  /** WAIT n timeout on the node: how many replicas acknowledged everything it has. */
  async wait(ip: string, replicas: number, timeoutMs: number): Promise<Result<number>> {
    try {
      const n = await this.#slow.run(endpointOf(ip), (c) => c.call('WAIT', String(replicas), String(timeoutMs)));
      return { ok: true, value: Number(n) };
    } catch (err) {
      return { ok: false, error: classifyError(err) };
    }
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

  /** One command on the fast pool; its reply as text. */
  async #run(ip: string, fn: (c: Redis) => Promise<unknown>): Promise<Result> {
    try {
      return { ok: true, value: String(await this.#fast.run(endpointOf(ip), fn)) };
    } catch (err) {
      return { ok: false, error: classifyError(err) };
    }
  }
}

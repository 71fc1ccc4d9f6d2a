// The Redis side of the replication manager: probe a node, re-point it, promote it, set its
// fencing, switch the master over on purpose (switchover.ts). Owns all Redis I/O; decides nothing.
// Invariants: no method throws for a Redis or network failure: each returns a result carrying a
// classified error (see errors.ts) and the time it took; every call is bounded by the pool's
// connect + command timeouts (switchover by its own deadline).
import { performance } from 'node:perf_hooks';
import type { ConnectionOptions } from 'node:tls';
import type { Redis } from 'ioredis';
import { DYNAMIC_DIRECTIVES } from '../../../api/config-directives.ts';
import { passwordHash } from '../../../api/users.ts';
import { classifyError } from './errors.ts';
import { parseConfigReply, parseFacts } from './info.ts';
import { RedisPool, type PoolOptions } from './pool.ts';
import { switchover, type SwitchoverOptions, type SwitchoverResult } from './switchover.ts';
import { servedFingerprint } from './tls.ts';
import type { ActionResult, Endpoint, ProbeResult, RedisFailure } from './types.ts';

/** The settings the manager keeps right on a master (fencing). */
export const MANAGED_CONFIG = ['replica-priority', 'min-replicas-to-write', 'min-replicas-max-lag'] as const;

/**
 * What one probe reads with CONFIG GET (one command: Redis 7 takes several names): the fencing
 * settings and the runtime-managed directives of spec.config. Redis 6 takes one name only, so
 * there the command is refused and the probe goes on without any of them (see probe()).
 */
export const PROBED_CONFIG: readonly string[] = [...MANAGED_CONFIG, ...DYNAMIC_DIRECTIVES.map((d) => d.name)];

export type RoleResult =
  | {
      ok: true;
      role: 'master' | 'replica';
      masterHost: string | null;
      masterPort: number | null;
      offset: number;
      latencyMs: number;
    }
  | { ok: false; error: RedisFailure; latencyMs: number };

/** The `passwords` field of an ACL GETUSER reply (RESP2: a flat field/value list), or null for no user. */
function passwordsOf(reply: unknown): string[] | null {
  if (!Array.isArray(reply)) return null;
  const i = reply.indexOf('passwords');
  const value: unknown = i >= 0 ? reply[i + 1] : [];
  return Array.isArray(value) ? value.map(String).sort() : [];
}

export class RedisAdapter {
  readonly pool: RedisPool;

  constructor(options: PoolOptions) {
    this.pool = new RedisPool(options);
  }

  /**
   * One round trip (two pipelined commands): INFO server/replication/persistence/keyspace and
   * CONFIG GET of PROBED_CONFIG. INFO and CONFIG GET both work while a node loads.
   */
  async probe(endpoint: Endpoint): Promise<ProbeResult> {
    const started = performance.now();
    try {
      const facts = await this.pool.run(endpoint, async (client) => {
        const [info, config] = await Promise.all([
          client.call('INFO', 'server', 'replication', 'persistence', 'keyspace'),
          client.call('CONFIG', 'GET', ...PROBED_CONFIG).catch((err: unknown) => {
            // A refused CONFIG (renamed command, ACL) still leaves INFO useful; a dead link does not.
            const kind = classifyError(err).kind;
            if (kind === 'other' || kind === 'loading') return [];
            throw err;
          }),
        ]);
        return parseFacts(String(info), parseConfigReply(config));
      });
      return { ok: true, facts, latencyMs: performance.now() - started };
    } catch (err) {
      return { ok: false, error: classifyError(err), latencyMs: performance.now() - started };
    }
  }

  /** ROLE, compact: whom a node follows and how far it got. */
  async role(endpoint: Endpoint): Promise<RoleResult> {
    const started = performance.now();
    try {
      const reply = (await this.pool.run(endpoint, (c) => c.call('ROLE'))) as unknown[];
      const latencyMs = performance.now() - started;
      if (reply[0] === 'master') {
        return {
          ok: true,
          role: 'master',
          masterHost: null,
          masterPort: null,
          offset: Number(reply[1]) || 0,
          latencyMs,
        };
      }
      return {
        ok: true,
        role: 'replica',
        masterHost: String(reply[1]),
        masterPort: Number(reply[2]),
        offset: Number(reply[4]) || 0,
        latencyMs,
      };
    } catch (err) {
      return { ok: false, error: classifyError(err), latencyMs: performance.now() - started };
    }
  }

  /** REPLICAOF host port, or REPLICAOF NO ONE (promotion) when master is null. Idempotent. */
  async replicaOf(endpoint: Endpoint, master: Endpoint | null): Promise<ActionResult> {
    const args = master ? [master.host, String(master.port)] : ['NO', 'ONE'];
    return this.#action(endpoint, (c) => c.call('REPLICAOF', ...args));
  }

  /** CONFIG SET of several settings at once (atomic in Redis 7). */
  async configSet(endpoint: Endpoint, settings: Record<string, string | number>): Promise<ActionResult> {
    const args = Object.entries(settings).flatMap(([k, v]) => [k, String(v)]);
    if (args.length === 0) return { ok: true, latencyMs: 0 };
    return this.#action(endpoint, (c) => c.call('CONFIG', 'SET', ...args));
  }

  /**
   * Application users on one node (ACLs do not replicate): ACL SETUSER of each, then ACL DELUSER of
   * the removed ones, in one MULTI so a node never holds half the change.
   */
  async applyUsers(
    endpoint: Endpoint,
    users: ReadonlyArray<{ name: string; args: readonly string[] }>,
    removed: readonly string[],
  ): Promise<ActionResult> {
    if (users.length === 0 && removed.length === 0) return { ok: true, latencyMs: 0 };
    return this.#action(endpoint, async (c) => {
      const tx = c.multi();
      for (const u of users) tx.call('ACL', 'SETUSER', u.name, ...u.args);
      if (removed.length > 0) tx.call('ACL', 'DELUSER', ...removed);
      const results = (await tx.exec()) ?? [];
      const failed = results.find(([err]) => err !== null);
      if (failed?.[0]) throw failed[0];
      return 'OK';
    });
  }

  /**
   * The password hashes of each user on one node (ACL GETUSER, pipelined); null for a user the node
   * does not have. ACLs do not replicate, so each node is asked.
   */
  async aclPasswords(
    endpoint: Endpoint,
    users: readonly string[],
  ): Promise<{ ok: true; hashes: Map<string, string[] | null> } | { ok: false; error: RedisFailure }> {
    try {
      const replies = await this.pool.run(endpoint, (c) => Promise.all(users.map((u) => c.call('ACL', 'GETUSER', u))));
      const hashes = new Map<string, string[] | null>();
      users.forEach((u, i) => hashes.set(u, passwordsOf(replies[i])));
      return { ok: true, hashes };
    } catch (err) {
      return { ok: false, error: classifyError(err) };
    }
  }

  /**
   * Gives a node started without the operator's user (by an earlier version), or with an older
   * password of it (its Secret was made again), that user with `password`, and points its
   * replication link at it: one MULTI. Passwords the user already has are kept: the probes of
   * the running container still log in with the one its env was started with.
   */
  async adoptOperator(
    endpoint: Endpoint,
    user: string,
    rules: readonly string[],
    password: string,
  ): Promise<ActionResult> {
    return this.#action(endpoint, async (c) => {
      const tx = c.multi();
      tx.call('ACL', 'SETUSER', user, 'on', `#${passwordHash(password)}`, ...rules);
      tx.call('CONFIG', 'SET', 'masteruser', user, 'masterauth', password);
      const results = (await tx.exec()) ?? [];
      const failed = results.find(([err]) => err !== null);
      if (failed?.[0]) throw failed[0];
    });
  }

  /** New TLS settings for every connection (spec.tls, a new CA). */
  setTls(options: ConnectionOptions | undefined): void {
    this.pool.setTls(options);
  }

  /** The fingerprint of the certificate the node serves to a new TLS connection now. */
  async servedCertificate(
    endpoint: Endpoint,
  ): Promise<{ ok: true; fingerprint: string } | { ok: false; error: RedisFailure }> {
    const options = this.pool.tls;
    if (!options) return { ok: false, error: classifyError(new Error('TLS is off')) };
    try {
      return {
        ok: true,
        fingerprint: await servedFingerprint(
          endpoint,
          options,
          this.pool.localAddress,
          this.pool.timeouts.connectTimeoutMs + this.pool.timeouts.commandTimeoutMs,
        ),
      };
    } catch (err) {
      return { ok: false, error: classifyError(err) };
    }
  }

  /**
   * Has the node load its TLS files again: CONFIG SET of the paths it reports (Redis 7 re-reads
   * TLS files on every such CONFIG SET, even of the same path). Its paths, not ours: they are its
   * own view of the mounted Secret.
   */
  async reloadTls(endpoint: Endpoint): Promise<ActionResult> {
    return this.#action(endpoint, async (c) => {
      const reply = (await c.call('CONFIG', 'GET', 'tls-cert-file', 'tls-key-file', 'tls-ca-cert-file')) as string[];
      if (reply.length === 0) throw new Error('the node reports no TLS files');
      await c.call('CONFIG', 'SET', ...reply);
    });
  }

  /** Fencing on a master: it refuses writes unless `count` replicas acked within `maxLagSeconds`. */
  async setMinReplicas(endpoint: Endpoint, count: number, maxLagSeconds: number): Promise<ActionResult> {
    return this.configSet(endpoint, { 'min-replicas-to-write': count, 'min-replicas-max-lag': maxLagSeconds });
  }

  /**
   * Planned switchover from the master `from` to its replica `to`, losing no write: writes on
   * `from` are paused until `to` has everything, then the roles swap.
   * - pause-and-promote (default): CLIENT PAUSE WRITE on from, WAIT until `to` reports from's
   *   offset, REPLICAOF NO ONE on to, REPLICAOF to on from, CLIENT UNPAUSE.
   * - failover-command: Redis' FAILOVER TO host port TIMEOUT ms, then poll until done.
   * On failure writes are unpaused (or FAILOVER ABORTed) and `from` stays master when possible.
   */
  async switchover(from: Endpoint, to: Endpoint, options: SwitchoverOptions = {}): Promise<SwitchoverResult> {
    return switchover(this.pool, from, to, options);
  }

  /** Closes connections to addresses not in `keep` (pods that went away or changed IP). */
  retain(keep: Iterable<Endpoint>): void {
    this.pool.retain(keep);
  }

  setPassword(password: string | undefined): void {
    this.pool.setPassword(password);
  }

  close(): void {
    this.pool.close();
  }

  async #action(endpoint: Endpoint, fn: (client: Redis) => Promise<unknown>): Promise<ActionResult> {
    const started = performance.now();
    try {
      await this.pool.run(endpoint, fn);
      return { ok: true, latencyMs: performance.now() - started };
    } catch (err) {
      return { ok: false, error: classifyError(err), latencyMs: performance.now() - started };
    }
  }
}

// The Redis side of the replication manager: probe a node, re-point it, promote it, set its
// fencing, switch the master over on purpose. Owns all Redis I/O; decides nothing.
// Invariants: no method throws for a Redis or network failure: each returns a result carrying a
// classified error (see errors.ts) and the time it took; every call is bounded by the pool's
// connect + command timeouts (switchover by its own deadline).
import { performance } from 'node:perf_hooks';
import type { ConnectionOptions } from 'node:tls';
import type { Redis } from 'ioredis';
import { DYNAMIC_DIRECTIVES } from '../../../api/config-directives.ts';
import { passwordHash } from '../../../api/users.ts';
import { classifyError } from './errors.ts';
import { parseConfigReply, parseFacts, parseInfoFields, parseReplication } from './info.ts';
import { RedisPool, type PoolOptions } from './pool.ts';
import { servedFingerprint } from './tls.ts';
import type { ActionResult, Endpoint, ProbeResult, RedisFailure, ReplicationInfo } from './types.ts';

/** The settings the manager keeps right on a master (fencing). */
export const MANAGED_CONFIG = ['replica-priority', 'min-replicas-to-write', 'min-replicas-max-lag'] as const;

/**
 * What one probe reads with CONFIG GET (one command: Redis 7 takes several names): the fencing
 * settings and the runtime-managed directives of spec.config. Redis 6 takes one name only, so
 * there the command is refused and the probe goes on without any of them (see probe()).
 */
export const PROBED_CONFIG: readonly string[] = [...MANAGED_CONFIG, ...DYNAMIC_DIRECTIVES.map((d) => d.name)];

export type SwitchoverMethod = 'failover-command' | 'pause-and-promote';

export interface SwitchoverOptions {
  /** Whole-operation deadline; writes on the old master are paused at most this long. Default 2000. */
  timeoutMs?: number;
  method?: SwitchoverMethod;
}

/** demoted false: the target is master, but the old master missed REPLICAOF (it may be going away). */
export type SwitchoverResult =
  | { ok: true; method: SwitchoverMethod; ms: number; offset: number; demoted: boolean }
  | { ok: false; method: SwitchoverMethod; ms: number; phase: string; error: RedisFailure };

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

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

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
    const method = options.method ?? 'pause-and-promote';
    const timeoutMs = options.timeoutMs ?? 2000;
    return method === 'failover-command'
      ? this.#failoverCommand(from, to, timeoutMs)
      : this.#pauseAndPromote(from, to, timeoutMs);
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

  async #replication(endpoint: Endpoint): Promise<ReplicationInfo> {
    const text = await this.pool.run(endpoint, (c) => c.call('INFO', 'replication'));
    return parseReplication(parseInfoFields(String(text)));
  }

  async #pauseAndPromote(from: Endpoint, to: Endpoint, timeoutMs: number): Promise<SwitchoverResult> {
    const method = 'pause-and-promote' as const;
    const started = performance.now();
    const elapsed = () => performance.now() - started;
    const fail = (phase: string, err: unknown): SwitchoverResult => ({
      ok: false,
      method,
      ms: elapsed(),
      phase,
      error: classifyError(err),
    });
    let paused = false;
    try {
      const before = await this.#replication(to);
      if (
        before.role !== 'replica' ||
        before.masterHost !== from.host ||
        before.masterPort !== from.port ||
        before.masterLinkStatus !== 'up'
      ) {
        return fail(
          'check',
          new Error(`target ${to.host}:${to.port} is not a linked replica of ${from.host}:${from.port}`),
        );
      }
      // The pause bounds itself server-side, so a crash of ours cannot leave writes paused.
      await this.pool.run(from, (c) => c.call('CLIENT', 'PAUSE', String(timeoutMs), 'WRITE'));
      paused = true;
      const target = (await this.#replication(from)).masterReplOffset;
      // WAIT makes the master ask for an ACK now instead of at the replica's next 1 s report.
      for (;;) {
        const left = timeoutMs - elapsed();
        if (left <= 0)
          return await this.#unpauseAnd(
            from,
            fail('catch-up', new Error(`replica did not reach offset ${target} in ${timeoutMs} ms`)),
          );
        await this.pool
          .run(from, (c) => c.call('WAIT', '1', String(Math.max(1, Math.min(20, Math.floor(left))))))
          .catch(() => 0);
        const r = await this.#replication(to);
        if (r.masterReplOffset >= target) break;
        await sleep(5);
      }
      await this.pool.run(to, (c) => c.call('REPLICAOF', 'NO', 'ONE'));
      // The target is master now, with everything the old one acknowledged (it reached the paused
      // offset). Failing to demote the old master does not undo that: it is often going away (its
      // pod is being deleted and Redis is shutting down). Then it stays paused (the pause runs out
      // on its own, after the labels have moved) and the next rounds demote it if it is still up.
      const demoted = await this.pool
        .run(from, (c) => c.call('REPLICAOF', to.host, String(to.port)))
        .then(
          () => true,
          () => false,
        );
      if (demoted) await this.pool.run(from, (c) => c.call('CLIENT', 'UNPAUSE')).catch(() => undefined);
      return { ok: true, method, ms: elapsed(), offset: target, demoted };
    } catch (err) {
      const result = fail(paused ? 'promote' : 'pause', err);
      return paused ? this.#unpauseAnd(from, result) : result;
    }
  }

  async #unpauseAnd(from: Endpoint, result: SwitchoverResult): Promise<SwitchoverResult> {
    await this.pool.run(from, (c) => c.call('CLIENT', 'UNPAUSE')).catch(() => undefined);
    return result;
  }

  async #failoverCommand(from: Endpoint, to: Endpoint, timeoutMs: number): Promise<SwitchoverResult> {
    const method = 'failover-command' as const;
    const started = performance.now();
    const elapsed = () => performance.now() - started;
    const fail = (phase: string, err: unknown): SwitchoverResult => ({
      ok: false,
      method,
      ms: elapsed(),
      phase,
      error: classifyError(err),
    });
    try {
      // FAILOVER TO refuses a replica its master does not list as online yet, which after a
      // diskless sync lasts until the replica's first ACK (up to a second): WAIT asks for it now.
      for (;;) {
        const r = await this.#replication(from);
        if (r.replicas.some((l) => l.ip === to.host && l.port === to.port && l.state === 'online')) break;
        if (elapsed() > timeoutMs)
          return fail(
            'check',
            new Error(`${from.host}:${from.port} does not list ${to.host}:${to.port} as an online replica`),
          );
        await this.pool.run(from, (c) => c.call('WAIT', '1', '20')).catch(() => 0);
        await sleep(5);
      }
    } catch (err) {
      return fail('check', err);
    }
    try {
      await this.pool.run(from, (c) =>
        c.call('FAILOVER', 'TO', to.host, String(to.port), 'TIMEOUT', String(timeoutMs)),
      );
    } catch (err) {
      return fail('start', err);
    }
    for (;;) {
      try {
        const r = await this.#replication(from);
        if (r.role === 'replica' && r.failoverState === 'no-failover') {
          const t = await this.#replication(to);
          if (t.role === 'master')
            return { ok: true, method, ms: elapsed(), offset: t.masterReplOffset, demoted: true };
        }
        if (r.role === 'master' && r.failoverState === 'no-failover' && elapsed() > 50) {
          return fail('timeout', new Error('FAILOVER ended with the old master still master (timed out or aborted)'));
        }
      } catch {
        // the old master is mid-switch; poll again until the deadline
      }
      if (elapsed() > timeoutMs + 1000) {
        await this.pool.run(from, (c) => c.call('FAILOVER', 'ABORT')).catch(() => undefined);
        return fail('timeout', new Error(`FAILOVER not finished after ${Math.round(elapsed())} ms`));
      }
      await sleep(10);
    }
  }
}

// A planned switchover of a master to one of its replicas, losing no write: the two methods the
// adapter offers (RedisAdapter.switchover), over the adapter's pool.
// Invariants: nothing throws for a Redis or network failure: the result names the phase that
// failed and carries the classified error; the whole operation is bounded by its deadline (plus
// the pool's timeouts of the last call); on failure writes on the old master are unpaused (or its
// FAILOVER aborted) so that it stays master when it can.
import { performance } from 'node:perf_hooks';
import { classifyError } from './errors.ts';
import { parseInfoFields, parseReplication } from './info.ts';
import type { RedisPool } from './pool.ts';
import type { Endpoint, RedisFailure, ReplicationInfo } from './types.ts';

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

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** RedisAdapter.switchover: pause-and-promote unless options.method says otherwise. */
export async function switchover(
  pool: RedisPool,
  from: Endpoint,
  to: Endpoint,
  options: SwitchoverOptions = {},
): Promise<SwitchoverResult> {
  const method = options.method ?? 'pause-and-promote';
  const timeoutMs = options.timeoutMs ?? 2000;
  return method === 'failover-command'
    ? failoverCommand(pool, from, to, timeoutMs)
    : pauseAndPromote(pool, from, to, timeoutMs);
}

/** One switchover's clock, started now, and its failure result naming the phase that failed. */
function attempt(method: SwitchoverMethod) {
  const started = performance.now();
  const elapsed = () => performance.now() - started;
  const fail = (phase: string, err: unknown): SwitchoverResult => ({
    ok: false,
    method,
    ms: elapsed(),
    phase,
    error: classifyError(err),
  });
  return { elapsed, fail };
}

async function replication(pool: RedisPool, endpoint: Endpoint): Promise<ReplicationInfo> {
  const text = await pool.run(endpoint, (c) => c.call('INFO', 'replication'));
  return parseReplication(parseInfoFields(String(text)));
}

async function pauseAndPromote(
  pool: RedisPool,
  from: Endpoint,
  to: Endpoint,
  timeoutMs: number,
): Promise<SwitchoverResult> {
  const method = 'pause-and-promote' as const;
  const { elapsed, fail } = attempt(method);
  let paused = false;
  try {
    const before = await replication(pool, to);
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
    await pool.run(from, (c) => c.call('CLIENT', 'PAUSE', String(timeoutMs), 'WRITE'));
    paused = true;
    const target = (await replication(pool, from)).masterReplOffset;
    // WAIT makes the master ask for an ACK now instead of at the replica's next 1 s report.
    for (;;) {
      const left = timeoutMs - elapsed();
      if (left <= 0)
        return await unpauseAnd(
          pool,
          from,
          fail('catch-up', new Error(`replica did not reach offset ${target} in ${timeoutMs} ms`)),
        );
      await pool
        .run(from, (c) => c.call('WAIT', '1', String(Math.max(1, Math.min(20, Math.floor(left))))))
        .catch(() => 0);
      const r = await replication(pool, to);
      if (r.masterReplOffset >= target) break;
      await sleep(5);
    }
    await pool.run(to, (c) => c.call('REPLICAOF', 'NO', 'ONE'));
    // The target is master now, with everything the old one acknowledged (it reached the paused
    // offset). Failing to demote the old master does not undo that: it is often going away (its
    // pod is being deleted and Redis is shutting down). Then it stays paused (the pause runs out
    // on its own, after the labels have moved) and the next rounds demote it if it is still up.
    const demoted = await pool
      .run(from, (c) => c.call('REPLICAOF', to.host, String(to.port)))
      .then(
        () => true,
        () => false,
      );
    if (demoted) await pool.run(from, (c) => c.call('CLIENT', 'UNPAUSE')).catch(() => undefined);
    return { ok: true, method, ms: elapsed(), offset: target, demoted };
  } catch (err) {
    const result = fail(paused ? 'promote' : 'pause', err);
    return paused ? unpauseAnd(pool, from, result) : result;
  }
}

async function unpauseAnd(pool: RedisPool, from: Endpoint, result: SwitchoverResult): Promise<SwitchoverResult> {
  await pool.run(from, (c) => c.call('CLIENT', 'UNPAUSE')).catch(() => undefined);
  return result;
}

async function failoverCommand(
  pool: RedisPool,
  from: Endpoint,
  to: Endpoint,
  timeoutMs: number,
): Promise<SwitchoverResult> {
  const method = 'failover-command' as const;
  const { elapsed, fail } = attempt(method);
  try {
    // FAILOVER TO refuses a replica its master does not list as online yet, which after a
    // diskless sync lasts until the replica's first ACK (up to a second): WAIT asks for it now.
    for (;;) {
      const r = await replication(pool, from);
      if (r.replicas.some((l) => l.ip === to.host && l.port === to.port && l.state === 'online')) break;
      if (elapsed() > timeoutMs)
        return fail(
          'check',
          new Error(`${from.host}:${from.port} does not list ${to.host}:${to.port} as an online replica`),
        );
      await pool.run(from, (c) => c.call('WAIT', '1', '20')).catch(() => 0);
      await sleep(5);
    }
  } catch (err) {
    return fail('check', err);
  }
  try {
    await pool.run(from, (c) => c.call('FAILOVER', 'TO', to.host, String(to.port), 'TIMEOUT', String(timeoutMs)));
  } catch (err) {
    return fail('start', err);
  }
  for (;;) {
    try {
      const r = await replication(pool, from);
      if (r.role === 'replica' && r.failoverState === 'no-failover') {
        const t = await replication(pool, to);
        if (t.role === 'master') return { ok: true, method, ms: elapsed(), offset: t.masterReplOffset, demoted: true };
      }
      if (r.role === 'master' && r.failoverState === 'no-failover' && elapsed() > 50) {
        return fail('timeout', new Error('FAILOVER ended with the old master still master (timed out or aborted)'));
      }
    } catch {
      // the old master is mid-switch; poll again until the deadline
    }
    if (elapsed() > timeoutMs + 1000) {
      await pool.run(from, (c) => c.call('FAILOVER', 'ABORT')).catch(() => undefined);
      return fail('timeout', new Error(`FAILOVER not finished after ${Math.round(elapsed())} ms`));
    }
    await sleep(10);
  }
}

// For the tests of other languages' Sentinel clients through the endpoint: a real master and replica, the endpoint
// serving them from a view (as the sidecar's feed builds it), a failover done on the real nodes and then announced by
// the next view; and the client program, a child process speaking one JSON object per line.
// Invariants: the child dies with the test (t.after); passwords reach it through its environment, never its command
// line; nothing is addressed outside 127.0.0.0/8.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { addr, startRedis, TEST_PASSWORD, type RedisServer } from '../../../support/redis-server.ts';
import { until } from '../../../support/until.ts';
import { startSentinelServer, type SentinelServer } from '../../../../src/sidecar/sentinel/server.ts';
import { EMPTY_VIEW, buildView, type SentinelView } from '../../../../src/sidecar/sentinel/decide/view.ts';

export const MASTER_NAME = 'mymaster';
export const SENTINEL_PASSWORD = 'sentinel-clients-password';

export interface Fixture {
  server: SentinelServer;
  host: string;
  nodes: [RedisServer, RedisServer];
  admins: [Redis, Redis];
  /** The node the view publishes as master. */
  master(): RedisServer;
  /** Demotes the master, promotes the replica once it has every write, then publishes the new view. */
  failover(): Promise<void>;
}

async function admin(t: TestContext, s: RedisServer): Promise<Redis> {
  const c = new Redis({ host: s.ip, port: 6379, password: TEST_PASSWORD, lazyConnect: true, maxRetriesPerRequest: 1 });
  t.after(() => c.disconnect());
  await c.connect();
  return c;
}

async function linked(c: Redis): Promise<void> {
  await until('the replica linked', async () => /master_link_status:up/.test(await c.info('replication')));
}

export async function startFixture(t: TestContext, octet: number): Promise<Fixture> {
  const extra = { 'repl-diskless-sync-delay': '0' };
  const started = await Promise.all(
    [1, 2].map((h) => startRedis(t, { ip: addr(octet, h), minReplicasToWrite: 0, extra })),
  );
  const nodes = [started[0]!, started[1]!] as [RedisServer, RedisServer];
  const admins = [await admin(t, nodes[0]), await admin(t, nodes[1])] as [Redis, Redis];
  await admins[0].replicaof('NO', 'ONE');
  await admins[1].replicaof(nodes[0].ip, 6379);
  await linked(admins[1]);
  const host = addr(octet, 100);
  const server = await startSentinelServer({ host, port: 0, myid: 'c'.repeat(40), logger: pino({ level: 'silent' }) });
  t.after(() => server.close());
  let m = 0;
  let view: SentinelView = EMPTY_VIEW;
  const publish = (): void => {
    const pods = nodes.map((n, i) => ({
      name: `cache-${i}`,
      ip: n.ip,
      ready: true,
      role: i === m ? ('master' as const) : ('replica' as const),
    }));
    const redis = {
      namespace: 'apps',
      name: 'cache',
      masterName: MASTER_NAME,
      password: SENTINEL_PASSWORD,
      port: 6379,
    };
    view = buildView([{ ...redis, pods }], [], view);
    server.update(view);
  };
  publish();
  return {
    server,
    host,
    nodes,
    admins,
    master: () => nodes[m]!,
    async failover() {
      const [old, next] = [m, 1 - m];
      // The replica is promoted first: from then on the old master's WAIT counts no replica, so a write it takes
      // in between is never acknowledged (and is dropped when it follows the new master), while an acknowledged one
      // reached the replica before its promotion.
      await admins[next]!.replicaof('NO', 'ONE');
      await admins[old]!.replicaof(nodes[next]!.ip, 6379);
      await linked(admins[old]!);
      m = next;
      publish();
    },
  };
}

/** A client program: its JSON lines in order, and a line to its stdin. */
export function runClient(
  t: TestContext,
  command: string,
  args: string[],
  env: Record<string, string>,
): {
  next(what: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  send(line: string): void;
  /** What it wrote to stderr (the start of it): its own logs, for a failure's message. */
  stderr(): string;
} {
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  t.after(() => child.kill('SIGKILL'));
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    if (stderr.length < 65536) stderr += chunk.toString();
  });
  const lines: string[] = [];
  let exited = false;
  createInterface({ input: child.stdout }).on('line', (l) => lines.push(l));
  child.on('exit', () => (exited = true));
  return {
    async next(what, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (lines.length === 0) {
        if (exited || Date.now() > deadline)
          throw new Error(`${command}: no ${what} line (exited: ${exited}):\n${stderr}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      const line = lines.shift()!;
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        throw new Error(`${command}: not JSON: ${line}\n${stderr}`);
      }
    },
    send: (line) => void child.stdin.write(`${line}\n`),
    stderr: () => stderr,
  };
}

/**
 * The scenario every client program runs: it finds the master the view publishes and writes there (SET + WAIT 1
 * acknowledged), then follows a failover the next view announces to the new master, which holds every acknowledged
 * write. `program(host, port)`: the command line (no password on it). `subscribes`: the client listens for
 * +switch-master, so the failover waits until it does (else the message could be missed and the test would prove
 * nothing about it). `env`: more of the program's environment.
 */
export async function followsFailover(
  t: TestContext,
  octet: number,
  program: (host: string, port: number) => [string, string[]],
  o: { subscribes: boolean; env?: Record<string, string> },
): Promise<void> {
  const f = await startFixture(t, octet);
  const first = f.master();
  const [command, args] = program(f.host, f.server.port);
  const client = runClient(t, command, [...args, MASTER_NAME], {
    ...o.env,
    SENTINEL_PASSWORD,
    REDIS_PASSWORD: TEST_PASSWORD,
  });
  const ready = await client.next('ready');
  assert.equal(ready['event'], 'ready');
  assert.equal(ready['discovered'], `${first.ip}:6379`, 'the master the view publishes');
  assert.equal(ready['master'], `${first.ip}:6379`, 'the first write landed there');
  assert.equal(ready['acked'], 1, 'SET + WAIT 1 acknowledged by the replica');
  if (o.subscribes) await until('the client subscribed to the endpoint', () => f.server.subscribers() > 0);

  await f.failover();
  client.send('go');
  const moved = await client.next('moved', 30_000);
  assert.equal(moved['event'], 'moved', `${JSON.stringify(moved)}\n${client.stderr()}`);
  const second = f.master();
  assert.notEqual(second.ip, first.ip);
  assert.equal(moved['master'], `${second.ip}:6379`, 'the client writes on the master the view announced');
  const acked = moved['acked'] as number;
  assert.ok(acked > 1, 'writes were acknowledged after the failover');
  const stored = Number(await f.admins[f.nodes.indexOf(second)]!.get('k'));
  assert.ok(stored >= acked, `the new master holds k=${stored}, the last acknowledged write was ${acked}`);
}

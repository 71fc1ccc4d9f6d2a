// Redis clients for the manager tests: fail-fast connections (no retry, no offline queue, short
// timeouts), so a test that asks a hung or partitioned node gets an answer (an error) at once
// instead of waiting on ioredis' reconnects; every helper closes the connection it opened.
import { Redis } from 'ioredis';
import { clientTlsFor, TEST_PASSWORD } from '../../../support/redis-server.ts';
import { missingKeysOn, replicasCaughtUp } from '../../../support/redis-keys.ts';

export function redisClient(ip: string, password = TEST_PASSWORD, commandTimeout = 1500, username?: string): Redis {
  const c = new Redis({
    host: ip,
    port: 6379,
    ...(username !== undefined ? { username } : {}),
    password,
    // A server started with TLS is reached over TLS (it has no plaintext port).
    ...(clientTlsFor(ip) ? { tls: clientTlsFor(ip) } : {}),
    lazyConnect: true,
    enableReadyCheck: false,
    disableClientInfo: true,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
    connectTimeout: 500,
    commandTimeout,
    // Closing a connection to a hung node: do not wait for its FIN (ioredis' default is 2 s).
    disconnectTimeout: 1,
  });
  c.on('error', () => {});
  return c;
}

/** One command on a fresh connection; its reply, or the error thrown. */
export async function redisCommand(ip: string, ...args: string[]): Promise<unknown> {
  const c = redisClient(ip);
  await c.connect();
  try {
    return await c.call(args[0]!, ...args.slice(1));
  } finally {
    c.disconnect();
  }
}

/** One command on a fresh connection; the error's first word on failure. */
export async function redisCall(ip: string, ...args: string[]): Promise<string> {
  const c = redisClient(ip);
  try {
    await c.connect();
    const r = await c.call(args[0]!, ...args.slice(1));
    return Array.isArray(r) ? JSON.stringify(r) : String(r);
  } catch (err) {
    return String((err as Error).message).split(' ')[0]!;
  } finally {
    c.disconnect();
  }
}

/** INFO replication of the node at ip as a field map (empty when it does not answer). */
export async function replicationOf(ip: string): Promise<Record<string, string>> {
  const text = await redisCall(ip, 'INFO', 'replication');
  const out: Record<string, string> = {};
  for (const line of text.split('\r\n')) {
    const i = line.indexOf(':');
    if (i > 0) out[line.slice(0, i)] = line.slice(i + 1);
  }
  return out;
}

/**
 * Waits until the master at ip has `replicas` online replicas that acknowledged everything it has
 * (replicasCaughtUp): a replica whose link just came up after a full sync may still be catching up
 * with the stream.
 */
export async function settle(ip: string, replicas: number, timeoutMs = 10_000): Promise<void> {
  const c = redisClient(ip, TEST_PASSWORD, timeoutMs + 1000);
  await c.connect();
  try {
    await replicasCaughtUp(c, replicas, timeoutMs, ip);
  } finally {
    c.disconnect();
  }
}

/** Keys among `keys` missing on the node at ip. */
export async function missingKeys(ip: string, keys: string[]): Promise<string[]> {
  const c = redisClient(ip, TEST_PASSWORD, 5000);
  await c.connect();
  // A replica in a full sync answers LOADING until its new data set is in: the question is what it
  // holds once it serves reads, so LOADING is waited out (bounded), never counted as missing keys.
  const deadline = Date.now() + 20_000;
  try {
    for (;;) {
      try {
        return await missingKeysOn(c, keys);
      } catch (err) {
        if (!String((err as Error).message).startsWith('LOADING') || Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } finally {
    c.disconnect();
  }
}

/** Whether a node takes this password (as `username`, default `default`) now. */
export async function authWorks(ip: string, password: string, username?: string): Promise<boolean> {
  const c = redisClient(ip, password, 1500, username);
  try {
    await c.connect();
    return (await c.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    c.disconnect();
  }
}

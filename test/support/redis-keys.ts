// Reading back acknowledged writes: the check every "no acknowledged write lost" test ends with.
// Writers store each key with its own name as the value, so a key is missing when its value is
// absent or different. Also what a given login may do on a node (replyAs).
import type { Redis } from 'ioredis';

/** Keys among `keys` missing on the node `client` is connected to (chunked MGET). */
export async function missingKeysOn(client: Redis, keys: readonly string[]): Promise<string[]> {
  const missing: string[] = [];
  for (let i = 0; i < keys.length; i += 500) {
    const chunk = keys.slice(i, i + 500);
    const values = await client.mget(...chunk);
    chunk.forEach((k, j) => {
      if (values[j] !== k) missing.push(k);
    });
  }
  return missing;
}

/**
 * Logs in on a fresh, not yet connected client with AUTH as its own command (so a refused password
 * is a reply, not a closed connection), runs one command, and disconnects. The reply, or the first
 * word of the error (WRONGPASS, NOPERM, ...).
 */
export async function replyAs(client: Redis, auth: readonly string[], command: readonly string[]): Promise<string> {
  client.on('error', () => {});
  try {
    await client.connect();
    await client.call('AUTH', ...auth);
    return String(await client.call(command[0]!, ...command.slice(1)));
  } catch (err) {
    return String((err as Error).message).split(' ')[0]!;
  } finally {
    client.disconnect();
  }
}

/**
 * Waits until `replicas` replicas of the master `client` is connected to are online and have
 * acknowledged everything it had when called (its master_repl_offset then), read from its own
 * INFO replication. Not `WAIT`: WAIT counts acknowledgements of the calling connection's own last
 * write, so on a connection that wrote nothing it answers at once with every online replica, one
 * still applying a backlog of writes included (measured on 7.2.6: a frozen replica 200 writes
 * behind was counted).
 */
export async function replicasCaughtUp(
  client: Redis,
  replicas: number,
  timeoutMs: number,
  what = 'the master',
): Promise<void> {
  const info = async () =>
    Object.fromEntries(
      String(await client.call('INFO', 'replication'))
        .split('\r\n')
        .map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1)]),
    );
  const target = Number((await info())['master_repl_offset']);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const lines = Object.entries(await info())
      .filter(([k]) => /^slave\d+$/.test(k))
      .map(([, v]) => Object.fromEntries(v.split(',').map((kv) => kv.split('='))));
    const caught = lines.filter((l) => l['state'] === 'online' && Number(l['offset']) >= target).length;
    if (caught >= replicas) return;
    if (Date.now() > deadline)
      throw new Error(
        `only ${caught} of ${replicas} replicas of ${what} caught up with offset ${target} within ${timeoutMs} ms (${JSON.stringify(lines)})`,
      );
    await new Promise((r) => setTimeout(r, 50));
  }
}

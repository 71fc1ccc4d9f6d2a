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

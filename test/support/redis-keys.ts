// Reading back acknowledged writes: the check every "no acknowledged write lost" test ends with.
// Writers store each key with its own name as the value, so a key is missing when its value is
// absent or different.
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

// Which shard a Redis belongs to and the name of that shard's Lease: the sidecar acts on the Redis
// of the shards whose Leases it holds, and `kubectl redis status` reads the same Lease to name the
// sidecar that leads a Redis. Pure; shared so that both compute it with one function, never a copy.
// Invariants: shardOf depends on its arguments only; the Lease names are those the sidecar creates.

/** The Lease name the sidecar uses when LEASE_NAME is not set (one shard: the only Lease). */
export const DEFAULT_LEASE_NAME = 'redis-operator-sidecar';

/** 32-bit FNV-1a of a string's UTF-16 code units: small, stable, and well spread for names. */
export function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

export function shardOf(namespace: string, name: string, shards: number): number {
  return shards <= 1 ? 0 : fnv1a(`${namespace}/${name}`) % shards;
}

/** The Lease of a shard; with one shard, the single leader-election Lease of before. */
export function shardLeaseName(base: string, shard: number, shards: number): string {
  return shards <= 1 ? base : `${base}-shard-${shard}`;
}

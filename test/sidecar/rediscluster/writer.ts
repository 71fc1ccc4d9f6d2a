// A cluster client for the RedisCluster tests that does exactly what the issue asks and nothing
// clever: SET a key on the node that owns its slot, following MOVED (learn the owner, retry) and
// ASK (ASKING + SET on the target), then WAIT 1 on that same connection. A write is acknowledged
// only when WAIT counted a replica. Reads follow the same redirections. Errors that are not
// redirections are counted with their message: a client following MOVED/ASK must not see any.
// Invariants: one connection per node and one command sequence in flight at a time (ASKING applies
// to the next command on its connection); every connection is closed by close().
import { Redis } from 'ioredis';
import { keySlot } from '../../support/cluster-writer.ts';
import { TEST_PASSWORD } from '../../support/redis-server.ts';

export { keySlot };

export class SlotWriter {
  readonly acked: Array<{ key: string; value: string }> = [];
  readonly errors: string[] = [];
  redirections = 0;
  /**
   * A node that did not answer (gone, reset): the slot's owner is asked of a seed instead, as a client refreshes its
   * map.
   */
  refreshes = 0;
  unacked = 0;
  readonly #conns = new Map<string, Redis>();
  readonly #owner = new Map<number, string>();
  readonly #seeds: string[];
  #stop = false;
  #loop: Promise<void> | null = null;

  constructor(seeds: string[]) {
    this.#seeds = seeds;
  }

  #conn(ip: string): Redis {
    let c = this.#conns.get(ip);
    if (!c || c.status === 'end' || c.status === 'close') {
      // No reconnects of its own: a node gone is noticed at once, and the slot map refreshed.
      c = new Redis({
        host: ip,
        port: 6379,
        password: TEST_PASSWORD,
        maxRetriesPerRequest: 0,
        retryStrategy: () => null,
        connectTimeout: 1000,
        commandTimeout: 5000,
      });
      c.on('error', () => {});
      this.#conns.set(ip, c);
    }
    return c;
  }

  /** Runs `cmd` for `key` where the cluster says its slot lives; returns the reply. */
  async #routed(
    key: string,
    cmd: (c: Redis, asking: boolean) => Promise<unknown>,
  ): Promise<{ reply: unknown; ip: string }> {
    const slot = keySlot(key);
    let ip = this.#owner.get(slot) ?? this.#seeds[slot % this.#seeds.length]!;
    let asking = false;
    for (let hop = 0; hop < 20; hop++) {
      try {
        return { reply: await cmd(this.#conn(ip), asking), ip };
      } catch (err) {
        const message = (err as Error).message;
        const m = /^(MOVED|ASK) \d+ ([\d.]+):\d+/.exec(message);
        const seed = this.#seeds[hop % this.#seeds.length]!;
        // ioredis says "Command aborted due to connection close" for a command in flight when the node dies.
        if (
          !m &&
          /ECONNREFUSED|Connection is closed|Command aborted due to connection close|CLUSTERDOWN Hash slot not served/.test(
            message,
          )
        ) {
          // As a cluster client does: that node is gone (or not in the cluster any more); ask a seed.
          this.refreshes++;
          this.#conns.get(ip)?.disconnect();
          this.#conns.delete(ip);
          if (this.#owner.get(slot) === ip) this.#owner.delete(slot);
          ip = seed;
          asking = false;
          continue;
        }
        if (!m) throw err;
        this.redirections++;
        ip = m[2]!;
        asking = m[1] === 'ASK';
        if (!asking) this.#owner.set(slot, ip);
      }
    }
    throw new Error(`${key}: too many redirections`);
  }

  /** SET then WAIT 1 on the node that took it. */
  async write(key: string, value: string): Promise<boolean> {
    const { reply } = await this.#routed(key, async (c, asking) => {
      const p = c.pipeline();
      if (asking) p.call('ASKING');
      p.set(key, value).call('WAIT', '1', '2000');
      const out = (await p.exec()) ?? [];
      const rest = asking ? out.slice(1) : out;
      const [setErr] = rest[0] ?? [new Error('no reply')];
      if (setErr) throw setErr;
      const [waitErr, n] = rest[1] ?? [new Error('no reply')];
      if (waitErr) throw waitErr;
      return Number(n);
    });
    return (reply as number) >= 1;
  }

  async read(key: string): Promise<string | null> {
    const { reply } = await this.#routed(key, async (c, asking) => {
      if (!asking) return c.get(key);
      const out = (await c.pipeline().call('ASKING').get(key).exec()) ?? [];
      const [err, v] = out[1] ?? [new Error('no reply')];
      if (err) throw err;
      return v;
    });
    return reply as string | null;
  }

  /** Writes `<prefix>:<n>` keys back to back until stop(). */
  start(prefix: string): this {
    this.#loop = (async () => {
      for (let i = 0; !this.#stop; i++) {
        const key = `${prefix}:${i}`;
        try {
          if (await this.write(key, `v${i}`)) this.acked.push({ key, value: `v${i}` });
          else this.unacked++;
        } catch (err) {
          this.errors.push(`${key}: ${(err as Error).message}`);
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    })();
    return this;
  }

  async stop(): Promise<void> {
    this.#stop = true;
    await this.#loop;
  }

  /** Keys among `written` whose value is not what was written (read through the redirections). */
  async missing(written: ReadonlyArray<{ key: string; value: string }>): Promise<string[]> {
    const out: string[] = [];
    for (let i = 0; i < written.length; i += 200) {
      const batch = written.slice(i, i + 200);
      const values = await Promise.all(
        batch.map((w) => this.read(w.key).catch((err: Error) => `error ${err.message}`)),
      );
      batch.forEach((w, k) => {
        if (values[k] !== w.value) out.push(`${w.key}=${String(values[k])}`);
      });
    }
    return out;
  }

  close(): void {
    this.#stop = true;
    for (const c of this.#conns.values()) c.disconnect();
  }
}

/** Writes n keys `<prefix>:<i>` quickly (pipelined per owner, no WAIT): data for the slots to carry. */
export async function fill(
  writer: SlotWriter,
  prefix: string,
  n: number,
  valueBytes = 16,
): Promise<Array<{ key: string; value: string }>> {
  const out: Array<{ key: string; value: string }> = [];
  const pad = 'x'.repeat(Math.max(0, valueBytes - 8));
  for (let i = 0; i < n; i += 500) {
    const batch = Array.from({ length: Math.min(500, n - i) }, (_, k) => ({
      key: `${prefix}:${i + k}`,
      value: `${i + k}${pad}`,
    }));
    await Promise.all(batch.map((w) => writer.write(w.key, w.value)));
    out.push(...batch);
  }
  return out;
}

// A cluster-aware application for the RedisCluster tests and bench:reshard: ioredis' own Cluster
// client, as a user would run it, writing numbered keys and reading them back, while the cluster
// fails over or reshards underneath.
// Two kinds of write, both through the Cluster client:
// - plain: SET through ioredis' routing (it follows MOVED and ASK itself). OK means stored.
// - acknowledged: SET then WAIT <replicas> on the node that took the SET. ioredis sends a
//   pipeline to the node of the key's slot, so SET and WAIT reach the same node; when that node
//   answers MOVED or ASK, the pair is sent to the node named in the redirection (with ASKING for
//   ASK), so the WAIT always counts the replicas of the node that holds the write.
// Invariants: an error that is a redirection (MOVED, ASK) or a cluster in transition (TRYAGAIN,
// CLUSTERDOWN, a connection closed by a failed node) is retried and counted apart; anything else
// is an application-visible error, kept with its message. Every acknowledged and every stored key
// is recorded with its value, so a check can read all of them back afterwards.
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { Cluster, Redis, type ClusterNode } from 'ioredis';

export interface ClusterWriterOptions {
  seeds: ClusterNode[];
  password: string;
  username?: string;
  prefix?: string;
  /** 0: plain writes; n > 0: SET then WAIT n (acknowledged writes). */
  waitReplicas?: number;
  waitTimeoutMs?: number;
  /** Pause between writes (ms); 0 writes back to back. */
  pauseMs?: number;
  /** Read a random stored key after every write and compare its value. */
  verifyReads?: boolean;
}

export interface Written {
  key: string;
  value: string;
  at: number;
}

/**
 * Redis Cluster's key slot (CRC16 of the hash tag or the whole key, mod 16384) as ioredis computes
 * it: its own dependency cluster-key-slot, which ships no type declarations (typed here).
 */
export const keySlot = createRequire(import.meta.url)('cluster-key-slot') as (key: string) => number;

/** A failed or failing-over node, or a cluster in transition: retried, counted apart from errors. */
// ioredis' auto-pipelining groups commands by the node it maps their slots to; a slot map that
// changes under a batch (a reshard's moves, a refresh) fails the whole group with the last one.
const TRANSIENT_OR_REDIRECT =
  /^(MOVED|ASK) |^(TRYAGAIN|CLUSTERDOWN)|^All keys in the pipeline should belong to the same slots allocation group/;
const TRANSIENT =
  /^(TRYAGAIN|CLUSTERDOWN|LOADING|MASTERDOWN)|Connection is closed|Command aborted due to connection close|Reached the max retries per request limit|Command timed out|no answer in \d+ ms|ECONNREFUSED|ECONNRESET|EHOSTUNREACH|ETIMEDOUT|Too many Cluster redirections|Failed to refresh slots cache|None of startup nodes is available/;

/**
 * ioredis' Cluster client. With `bulk`, concurrent commands go out in one write per node
 * (auto-pipelining): for loading data only, since ioredis does not follow a MOVED that hits part
 * of such a batch (the batch fails; a loader retries it, see loadKeys).
 */
export function clusterClient(
  o: Pick<ClusterWriterOptions, 'seeds' | 'password' | 'username'> & { bulk?: boolean },
): Cluster {
  const cluster = new Cluster(o.seeds, {
    redisOptions: {
      password: o.password,
      ...(o.username ? { username: o.username } : {}),
      connectTimeout: 2000,
      commandTimeout: 3000,
      maxRetriesPerRequest: 2,
    },
    enableAutoPipelining: o.bulk ?? false,
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 50,
    maxRedirections: 64,
    slotsRefreshTimeout: 2000,
  });
  cluster.on('error', () => {});
  return cluster;
}

export class ClusterWriter {
  readonly cluster: Cluster;
  /** Keys stored (SET answered OK, and with waitReplicas, WAIT counted enough replicas). */
  readonly acked: Written[] = [];
  /** Keys SET answered OK for but WAIT did not confirm (not acknowledged: may be lost on failover). */
  readonly unacked: Written[] = [];
  /** Application-visible errors (not redirections, not transitions, not unblocked WAITs), with their messages. */
  readonly errors: string[] = [];
  /**
   * WAITs blocked on a master that a switchover made a replica, answered `UNBLOCKED ... (master ->
   * replica?)`: the write was never acknowledged (an application retries it), so not an error.
   */
  readonly unblocked: string[] = [];
  readonly readMismatches: string[] = [];
  redirections = 0;
  transient = 0;
  reads = 0;
  /** The last error of any kind (for a test's failure message). */
  lastError = '';
  readonly #o: Required<Omit<ClusterWriterOptions, 'username'>> & { username?: string };
  readonly #direct = new Map<string, Redis>();
  #n = 0;
  #running: Promise<void> | null = null;
  #stop = false;

  constructor(options: ClusterWriterOptions) {
    this.#o = { prefix: 'cw', waitReplicas: 0, waitTimeoutMs: 2000, pauseMs: 0, verifyReads: false, ...options };
    this.cluster = clusterClient(options);
  }

  start(): this {
    this.#running = this.#loop();
    return this;
  }

  async stop(): Promise<void> {
    this.#stop = true;
    await this.#running;
    this.cluster.disconnect();
    for (const r of this.#direct.values()) r.disconnect();
  }

  /** The first write acknowledged at or after `t`. */
  ackedAfter(t: number): Written | undefined {
    return this.acked.find((w) => w.at >= t);
  }

  async #loop(): Promise<void> {
    while (!this.#stop) {
      const i = this.#n++;
      const key = `${this.#o.prefix}:${i}`;
      const value = `v${i}`;
      try {
        const outcome = await withTimeout(this.#write(key, value), 5000, `${key}: no answer in 5000 ms`);
        if (outcome === 'acked') this.acked.push({ key, value, at: performance.now() });
        else if (outcome === 'unacked') this.unacked.push({ key, value, at: performance.now() });
        if (this.#o.verifyReads && this.acked.length > 0) await this.#read();
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        this.lastError = message;
        if (TRANSIENT.test(message)) {
          this.transient++;
          // The node of this slot failed: ask the cluster who serves it now rather than wait for
          // the client's periodic refresh, as an application retrying on such errors would.
          this.cluster.refreshSlotsCache();
        } else if (message.startsWith('UNBLOCKED')) this.unblocked.push(message);
        else this.errors.push(message);
        await sleep(20);
      }
      if (this.#o.pauseMs > 0) await sleep(this.#o.pauseMs);
    }
  }

  async #read(): Promise<void> {
    const w = this.acked[Math.floor(Math.random() * this.acked.length)]!;
    const got = await withTimeout(this.cluster.get(w.key), 5000, `GET ${w.key}: no answer in 5000 ms`);
    this.reads++;
    if (got !== w.value) this.readMismatches.push(`${w.key}: read ${String(got)}, wrote ${w.value}`);
  }

  async #write(key: string, value: string): Promise<'acked' | 'unacked' | 'skipped'> {
    if (this.#o.waitReplicas === 0) {
      await this.cluster.set(key, value);
      return 'acked';
    }
    // The pipeline goes to the node of the key's slot as ioredis knows it.
    let results = await this.cluster
      .pipeline()
      .set(key, value)
      .call('WAIT', this.#o.waitReplicas, this.#o.waitTimeoutMs)
      .exec();
    for (let hop = 0; hop < 16; hop++) {
      const [setErr] = results?.[0] ?? [new Error('no reply')];
      if (!setErr) {
        const [waitErr, count] = results![1]!;
        if (waitErr) throw waitErr;
        return Number(count) >= this.#o.waitReplicas ? 'acked' : 'unacked';
      }
      const m = /^(MOVED|ASK) \d+ (\S+):(\d+)/.exec(setErr.message);
      if (!m) throw setErr;
      this.redirections++;
      if (m[1] === 'MOVED') this.cluster.refreshSlotsCache();
      const node = this.#node(m[2]!, Number(m[3]));
      const p = node.pipeline();
      if (m[1] === 'ASK') p.call('ASKING');
      p.set(key, value).call('WAIT', this.#o.waitReplicas, this.#o.waitTimeoutMs);
      const direct = await p.exec();
      results = m[1] === 'ASK' ? (direct?.slice(1) ?? null) : direct;
    }
    throw new Error(`${key}: more than 16 redirections`);
  }

  /** A direct connection to one node (one the Cluster client may not know yet: a new shard's). */
  #node(host: string, port: number): Redis {
    const k = `${host}:${port}`;
    let r = this.#direct.get(k);
    if (!r) {
      r = new Redis({
        host,
        port,
        password: this.#o.password,
        ...(this.#o.username ? { username: this.#o.username } : {}),
        lazyConnect: false,
        maxRetriesPerRequest: 2,
      });
      r.on('error', () => {});
      this.#direct.set(k, r);
    }
    return r;
  }
}

/** Keys of `written` whose value the cluster does not return now (read through a fresh client). */
export async function missingFromCluster(
  o: Pick<ClusterWriterOptions, 'seeds' | 'password' | 'username'>,
  written: readonly Written[],
): Promise<string[]> {
  const cluster = clusterClient(o);
  const missing: string[] = [];
  try {
    for (let i = 0; i < written.length; i += 500) {
      const batch = written.slice(i, i + 500);
      const values = await Promise.all(batch.map((w) => cluster.get(w.key)));
      batch.forEach((w, j) => {
        if (values[j] !== w.value) missing.push(w.key);
      });
    }
  } finally {
    cluster.disconnect();
  }
  return missing;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** SETs every key through a bulk client, retrying a batch a redirection failed (after a slot refresh). */
export async function loadKeys(
  client: Cluster,
  keys: ReadonlyArray<{ key: string; value: string }>,
  batch = 1000,
): Promise<void> {
  for (let i = 0; i < keys.length; i += batch) {
    const part = keys.slice(i, i + batch);
    for (let attempt = 0; ; attempt++) {
      try {
        await Promise.all(part.map((k) => client.set(k.key, k.value)));
        break;
      } catch (err) {
        if (attempt >= 20 || !(err instanceof Error) || !TRANSIENT_OR_REDIRECT.test(err.message)) throw err;
        client.refreshSlotsCache();
        await sleep(100);
      }
    }
  }
}

/**
 * The promise, or a rejection after ms: a bound on every call, so a write that never returns is
 * counted as a transition and the writer goes on, instead of stalling a test until its deadline.
 */
function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms)));
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

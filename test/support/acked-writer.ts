// An application writing through "the master": SET k k then WAIT 1 against whatever address the
// harness says is master right now. Only writes acknowledged by at least one replica are
// recorded: those are the writes a failover must never lose. A request stuck on an address that
// is no longer the master is abandoned as soon as the target moves (a real client reconnects
// through the Service), so the figures measure the operator, not a client timeout.
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';

export interface WriteTarget {
  ip: string;
  /** What the write went through, as the test wants to name it (an IP or a pod name). */
  via: string;
}

export interface AckedWrite {
  key: string;
  at: number;
  via: string;
}

export interface AckedWriterOptions {
  /** Where writes go right now; null while there is no master. */
  target: () => WriteTarget | null;
  /** A lazily connecting client for an address. */
  connect: (ip: string) => Redis;
  prefix?: string;
  waitTimeoutMs?: number;
  /** Poll the target this often to abandon a request stuck on an old address; 0: only on retarget(). */
  followEveryMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class AckedWriter {
  readonly acked: AckedWrite[] = [];
  /** Writes that were not acknowledged (refused, timed out, or WAIT saw no replica): not counted. */
  failures = 0;
  readonly prefix: string;
  readonly #options: AckedWriterOptions;
  readonly #waitTimeoutMs: number;
  #running = false;
  #loop: Promise<void> | null = null;
  #follow: NodeJS.Timeout | null = null;
  #client: Redis | null = null;
  #clientIp: string | null = null;
  #seq = 0;

  constructor(options: AckedWriterOptions) {
    this.#options = options;
    this.prefix = options.prefix ?? 'w';
    this.#waitTimeoutMs = options.waitTimeoutMs ?? 500;
  }

  start(): this {
    this.#running = true;
    this.#loop = this.#run();
    const every = this.#options.followEveryMs ?? 0;
    if (every > 0) this.#follow = setInterval(() => this.retarget(), every);
    return this;
  }

  async stop(): Promise<void> {
    this.#running = false;
    if (this.#follow) clearInterval(this.#follow);
    await this.#loop;
    this.#drop();
  }

  /** The target may have moved: drop a client on an address that is no longer the master. */
  retarget(): void {
    if (this.#client && this.#clientIp !== (this.#options.target()?.ip ?? null)) this.#drop();
  }

  /** The first write acknowledged at or after `t` (performance.now()), optionally through `via`. */
  ackedAfter(t: number, via?: string): AckedWrite | undefined {
    return this.acked.find((a) => a.at >= t && (via === undefined || a.via === via));
  }

  #drop(): void {
    this.#client?.disconnect();
    this.#client = null;
    this.#clientIp = null;
  }

  async #run(): Promise<void> {
    while (this.#running) {
      const target = this.#options.target();
      if (!target) {
        await sleep(5);
        continue;
      }
      try {
        if (this.#clientIp !== target.ip || !this.#client || this.#client.status === 'end') {
          this.#drop();
          this.#client = this.#options.connect(target.ip);
          this.#clientIp = target.ip;
          await this.#client.connect();
        }
        const client = this.#client;
        const key = `${this.prefix}${++this.#seq}`;
        await client.set(key, key);
        const n = Number(await client.call('WAIT', '1', String(this.#waitTimeoutMs)));
        if (n >= 1) this.acked.push({ key, at: performance.now(), via: target.via });
        else this.failures++;
      } catch {
        this.failures++;
        if (this.#clientIp === target.ip) this.#drop();
        await sleep(5);
      }
    }
  }
}

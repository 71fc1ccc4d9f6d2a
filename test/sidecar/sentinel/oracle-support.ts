// For the oracle test: a real Sentinel (the redis-server binary in sentinel mode, as Debian's redis-sentinel runs it)
// on a loopback address, and a raw RESP client that keeps each reply's TYPE (a simple string and a bulk string differ
// on the wire, and clients such as redis-py parse them differently), so two servers' answers compare field by field.
// Invariants: the Sentinel process dies with the test (t.after, and setpriv --pdeathsig KILL if node dies); its
// config and log live in a temp dir removed after; nothing is addressed outside 127.0.0.0/8.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { selectedEngine } from '../../support/engines.ts';
import { assertLoopback } from '../../support/loopback-guard.ts';
import { until } from '../../support/until.ts';

export type Typed =
  | { t: 'simple' | 'error' | 'bulk' | 'double' | 'big'; s: string }
  | { t: 'int'; n: number }
  | { t: 'null' }
  | { t: 'bool'; b: boolean }
  | { t: 'array' | 'set' | 'push'; items: Typed[] }
  | { t: 'map'; pairs: Array<[Typed, Typed]> };

/** One reply at `pos` (RESP2 and the RESP3 types a Sentinel sends), or null when its bytes have not all arrived. */
export function parseReply(buf: Buffer, pos: number): { reply: Typed; next: number } | null {
  const eol = buf.indexOf('\r\n', pos);
  if (eol < 0) return null;
  const line = buf.toString('utf8', pos + 1, eol);
  const after = eol + 2;
  const many = (count: number): { items: Typed[]; next: number } | null => {
    const items: Typed[] = [];
    let p = after;
    for (let i = 0; i < count; i++) {
      const one = parseReply(buf, p);
      if (one === null) return null;
      items.push(one.reply);
      p = one.next;
    }
    return { items, next: p };
  };
  switch (String.fromCharCode(buf[pos]!)) {
    case '+':
      return { reply: { t: 'simple', s: line }, next: after };
    case '-':
      return { reply: { t: 'error', s: line }, next: after };
    case ':':
      return { reply: { t: 'int', n: Number(line) }, next: after };
    case ',':
      return { reply: { t: 'double', s: line }, next: after };
    case '(':
      return { reply: { t: 'big', s: line }, next: after };
    case '_':
      return { reply: { t: 'null' }, next: after };
    case '#':
      return { reply: { t: 'bool', b: line === 't' }, next: after };
    case '$': {
      const len = Number(line);
      if (len < 0) return { reply: { t: 'null' }, next: after };
      if (buf.length < after + len + 2) return null;
      return { reply: { t: 'bulk', s: buf.toString('utf8', after, after + len) }, next: after + len + 2 };
    }
    case '*':
    case '~':
    case '>': {
      const len = Number(line);
      if (len < 0) return { reply: { t: 'null' }, next: after };
      const r = many(len);
      const t = buf[pos] === 42 ? 'array' : buf[pos] === 126 ? 'set' : 'push';
      return r === null ? null : { reply: { t, items: r.items }, next: r.next };
    }
    case '%': {
      const r = many(Number(line) * 2);
      if (r === null) return null;
      const pairs: Array<[Typed, Typed]> = [];
      for (let i = 0; i < r.items.length; i += 2) pairs.push([r.items[i]!, r.items[i + 1]!]);
      return { reply: { t: 'map', pairs }, next: r.next };
    }
    default:
      throw new Error(`unexpected reply type byte ${buf[pos]} in ${JSON.stringify(buf.toString('utf8', pos, eol))}`);
  }
}

/** A connection that sends one command at a time and returns the typed reply; `next()` reads a pushed message. */
export class RawClient {
  readonly #socket: net.Socket;
  #buf = Buffer.alloc(0);
  readonly #replies: Typed[] = [];
  #wake: (() => void) | null = null;

  private constructor(socket: net.Socket) {
    this.#socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.#buf = Buffer.concat([this.#buf, chunk]);
      for (let one = parseReply(this.#buf, 0); one !== null; one = parseReply(this.#buf, 0)) {
        this.#replies.push(one.reply);
        this.#buf = this.#buf.subarray(one.next);
      }
      this.#wake?.();
    });
  }

  static connect(t: TestContext, host: string, port: number): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const socket = net.createConnection({ host, port }, () => resolve(new RawClient(socket)));
      socket.once('error', reject);
      t.after(() => socket.destroy());
    });
  }

  async next(timeoutMs = 5000): Promise<Typed> {
    const deadline = Date.now() + timeoutMs;
    while (this.#replies.length === 0) {
      if (Date.now() > deadline || this.#socket.destroyed) throw new Error('no reply');
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
        setTimeout(resolve, 50);
      });
    }
    return this.#replies.shift()!;
  }

  async call(...args: string[]): Promise<Typed> {
    this.#socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`);
    return this.next();
  }
}

/** A flat RESP2 field list (name, value, name, value...) as a Map of its string values. */
export function fields(reply: Typed): Map<string, string> {
  if (reply.t !== 'array') throw new Error(`not an array: ${JSON.stringify(reply)}`);
  const out = new Map<string, string>();
  for (let i = 0; i + 1 < reply.items.length; i += 2) {
    const [k, v] = [reply.items[i]!, reply.items[i + 1]!];
    out.set(k.t === 'bulk' ? k.s : JSON.stringify(k), v.t === 'bulk' ? v.s : v.t === 'int' ? String(v.n) : v.t);
  }
  return out;
}

/** The reply's shape: types and lengths, every leaf's value dropped. */
export function shape(r: Typed): unknown {
  switch (r.t) {
    case 'array':
    case 'set':
    case 'push':
      return { [r.t]: r.items.map(shape) };
    case 'map':
      return { map: r.pairs.map(([k, v]) => [shape(k), shape(v)]) };
    default:
      return r.t;
  }
}

/** A real Sentinel watching `master` (password `masterPassword`), requiring `password` of its own clients. */
export async function startRealSentinel(
  t: TestContext,
  o: { ip: string; masterName: string; master: string; masterPassword: string; password: string },
): Promise<{ ip: string; port: number }> {
  assertLoopback(o.ip);
  const root = mkdtempSync(path.join(os.tmpdir(), `sentinel-oracle-${o.ip}-`));
  const conf = path.join(root, 'sentinel.conf');
  // The file must be writable: Sentinel rewrites it with what it learns (replicas, its own id).
  writeFileSync(
    conf,
    [
      `bind ${o.ip}`,
      'port 26379',
      `dir ${root}`,
      `logfile ${path.join(root, 'sentinel.log')}`,
      `requirepass ${o.password}`,
      `sentinel monitor ${o.masterName} ${o.master} 6379 1`,
      `sentinel auth-pass ${o.masterName} ${o.masterPassword}`,
    ].join('\n') + '\n',
  );
  const child = spawn('setpriv', ['--pdeathsig', 'KILL', selectedEngine().server, conf, '--sentinel'], {
    stdio: 'ignore',
  });
  t.after(() => {
    child.kill('SIGKILL');
    rmSync(root, { recursive: true, force: true });
  });
  await until('the real Sentinel accepts connections', async () => {
    const c = net.createConnection({ host: o.ip, port: 26379 });
    const ok = await new Promise<boolean>((resolve) => {
      c.once('connect', () => resolve(true));
      c.once('error', () => resolve(false));
    });
    c.destroy();
    return ok;
  });
  return { ip: o.ip, port: 26379 };
}

// RESP2 for the Sentinel endpoint: requests in (multibulk or inline, as redis-server accepts them) and replies out.
// Invariants: parseRequests is a pure function of the bytes and the limits; it never throws, whatever the bytes
// (a hostile client gets a protocol error and the connection closes, as redis-server does); a request is returned
// only once complete, so bytes split anywhere parse to the same commands; nothing is buffered beyond the limits
// (an oversized length is refused when its header arrives, not after its bytes). encodeReply writes bulk lengths in
// bytes, not characters. Written here rather than taken from redis-parser: that parser reads replies (the client's
// side), and a server must read requests, inline ones included, under limits of its own.

export type Reply =
  | { readonly t: 'simple'; readonly s: string }
  | { readonly t: 'error'; readonly s: string }
  | { readonly t: 'int'; readonly n: number }
  | { readonly t: 'bulk'; readonly s: string | null }
  | { readonly t: 'array'; readonly items: readonly Reply[] | null };

export const ok: Reply = { t: 'simple', s: 'OK' };
export const simple = (s: string): Reply => ({ t: 'simple', s });
export const error = (s: string): Reply => ({ t: 'error', s });
export const int = (n: number): Reply => ({ t: 'int', n });
export const bulk = (s: string | null): Reply => ({ t: 'bulk', s });
export const array = (items: readonly Reply[] | null): Reply => ({ t: 'array', items });
export const bulks = (items: readonly string[]): Reply => array(items.map((s) => bulk(s)));

export interface RespLimits {
  /** Arguments in one request. */
  maxArgs: number;
  /** Bytes of one argument (Sentinel's commands are short: a name, an address, a password). */
  maxArgBytes: number;
  /** Bytes of one inline request line. */
  maxInlineBytes: number;
}

export const DEFAULT_RESP_LIMITS: RespLimits = { maxArgs: 64, maxArgBytes: 4096, maxInlineBytes: 8192 };

export type ParseResult =
  { ok: true; commands: string[][]; consumed: number } | { ok: false; error: string; commands: string[][] };

const CR = 13;
const LF = 10;

/** The decimal integer in buf[from, to) if it is one (optional '-', digits only, at most 15 of them); else null. */
function decimal(buf: Uint8Array, from: number, to: number): number | null {
  let i = from;
  let negative = false;
  if (i < to && buf[i] === 45) {
    negative = true;
    i++;
  }
  if (i === to || to - i > 15) return null;
  let n = 0;
  for (; i < to; i++) {
    const c = buf[i]!;
    if (c < 48 || c > 57) return null;
    n = n * 10 + (c - 48);
  }
  return negative ? -n : n;
}

/** Index of the CR of the next CRLF at or after `from`, looking no further than `limit` bytes; -1: not yet there. */
function lineEnd(buf: Uint8Array, from: number, limit: number): number | 'too-long' {
  const end = Math.min(buf.length, from + limit + 2);
  for (let i = from; i < end; i++) {
    if (buf[i] === LF) return i > from && buf[i - 1] === CR ? i - 1 : i;
  }
  return end - from >= limit + 2 ? 'too-long' : -1;
}

type One = { kind: 'command'; args: string[]; next: number } | { kind: 'partial' } | { kind: 'error'; error: string };

function multibulk(buf: Uint8Array, start: number, limits: RespLimits): One {
  const headerEnd = lineEnd(buf, start, 32);
  if (headerEnd === 'too-long') return { kind: 'error', error: 'Protocol error: invalid multibulk length' };
  if (headerEnd < 0) return { kind: 'partial' };
  const count = decimal(buf, start + 1, headerEnd);
  if (count === null || count > limits.maxArgs)
    return { kind: 'error', error: 'Protocol error: invalid multibulk length' };
  let pos = headerEnd + (buf[headerEnd] === CR ? 2 : 1);
  const args: string[] = [];
  for (let k = 0; k < count; k++) {
    if (pos >= buf.length) return { kind: 'partial' };
    if (buf[pos] !== 36) {
      return { kind: 'error', error: `Protocol error: expected '$', got '${String.fromCharCode(buf[pos]!)}'` };
    }
    const end = lineEnd(buf, pos, 32);
    if (end === 'too-long') return { kind: 'error', error: 'Protocol error: invalid bulk length' };
    if (end < 0) return { kind: 'partial' };
    const len = decimal(buf, pos + 1, end);
    if (len === null || len < 0 || len > limits.maxArgBytes) {
      return { kind: 'error', error: 'Protocol error: invalid bulk length' };
    }
    const body = end + (buf[end] === CR ? 2 : 1);
    if (body + len + 2 > buf.length) return { kind: 'partial' };
    if (buf[body + len] !== CR || buf[body + len + 1] !== LF) {
      return { kind: 'error', error: 'Protocol error: bulk not followed by CRLF' };
    }
    args.push(Buffer.from(buf.buffer, buf.byteOffset + body, len).toString('utf8'));
    pos = body + len + 2;
  }
  return { kind: 'command', args, next: pos };
}

function inline(buf: Uint8Array, start: number, limits: RespLimits): One {
  const end = lineEnd(buf, start, limits.maxInlineBytes);
  if (end === 'too-long') return { kind: 'error', error: 'Protocol error: too big inline request' };
  if (end < 0) return { kind: 'partial' };
  const text = Buffer.from(buf.buffer, buf.byteOffset + start, end - start).toString('utf8');
  const args = text.split(/[ \t]+/).filter((a) => a.length > 0);
  if (args.length > limits.maxArgs) return { kind: 'error', error: 'Protocol error: too many arguments' };
  return { kind: 'command', args, next: end + (buf[end] === CR ? 2 : 1) };
}

/**
 * Every complete request at the start of `buf`, and how many bytes they took (the caller keeps the rest for
 * the next read). An empty inline line is skipped, as redis-server does. On a protocol error: the commands before
 * it (to be answered first) and the error (then the connection closes).
 */
export function parseRequests(buf: Uint8Array, limits: RespLimits = DEFAULT_RESP_LIMITS): ParseResult {
  const commands: string[][] = [];
  let pos = 0;
  while (pos < buf.length) {
    const one = buf[pos] === 42 ? multibulk(buf, pos, limits) : inline(buf, pos, limits);
    if (one.kind === 'partial') break;
    if (one.kind === 'error') return { ok: false, error: one.error, commands };
    if (one.args.length > 0) commands.push(one.args);
    pos = one.next;
  }
  return { ok: true, commands, consumed: pos };
}

/** Simple strings and errors are one line: a CR or LF inside would let a value forge a second reply. */
const oneLine = (s: string): string => s.replace(/[\r\n]+/g, ' ');

export function encodeReply(reply: Reply): string {
  switch (reply.t) {
    case 'simple':
      return `+${oneLine(reply.s)}\r\n`;
    case 'error':
      return `-${oneLine(reply.s)}\r\n`;
    case 'int':
      return `:${Math.trunc(reply.n)}\r\n`;
    case 'bulk':
      return reply.s === null ? '$-1\r\n' : `$${Buffer.byteLength(reply.s, 'utf8')}\r\n${reply.s}\r\n`;
    case 'array':
      return reply.items === null ? '*-1\r\n' : `*${reply.items.length}\r\n${reply.items.map(encodeReply).join('')}`;
  }
}

/** A request as a client writes it (tests, and the shape the parser must accept). */
export function encodeRequest(args: readonly string[]): string {
  return encodeReply(bulks(args));
}

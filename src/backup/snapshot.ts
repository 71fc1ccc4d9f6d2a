// A consistent RDB snapshot of one Redis node, read over the replication protocol (what
// `redis-cli --rdb` does): `REPLCONF rdb-only 1` then `PSYNC ? -1`. Asked of a replica, the
// replica forks for it and the master never does. Owns the socket and the protocol parsing.
// Invariants:
// - The stream carries exactly the RDB payload: in the length-prefixed form (`$<n>`) and in the
//   diskless form (`$EOF:<40-byte mark>` ... mark), the mark is never part of it.
// - The replication id and offset the snapshot was taken at (`+FULLRESYNC <id> <offset>`) are
//   known before the first byte; the socket is destroyed once the payload ends or on any error.
// - Backpressure: the socket is paused while the consumer is not reading.
import net from 'node:net';
import { PassThrough, type Readable } from 'node:stream';
import tls, { type ConnectionOptions } from 'node:tls';

export interface SnapshotSource {
  host: string;
  port: number;
  username: string;
  password: string;
  tls?: ConnectionOptions | undefined;
  /** Until the snapshot starts (the node may first fork and write it). Default 60 s. */
  startTimeoutMs?: number;
}

export interface Snapshot {
  replicationId: string;
  offset: number;
  /** The RDB bytes; ends when the payload is complete, errors when it is cut short. */
  rdb: Readable;
  /** Resolves with the payload size once the whole RDB was read. */
  done: Promise<number>;
}

const command = (...args: string[]) =>
  `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;

const MARK_LENGTH = 40;

export function openSnapshot(source: SnapshotSource): Promise<Snapshot> {
  return new Promise((resolve, reject) => {
    const plain = net.createConnection({ host: source.host, port: source.port });
    // `host` too: over a given socket, it is the name the certificate is checked against (and SNI's).
    const socket = source.tls ? tls.connect({ ...source.tls, host: source.host, socket: plain }) : plain;
    const rdb = new PassThrough();
    let settled = false;
    let header = Buffer.alloc(0);
    let stage: 'auth' | 'rdb-only' | 'psync' | 'bulk' | 'payload' = 'auth';
    let replicationId = '';
    let offset = 0;
    let remaining = -1;
    let mark: Buffer | null = null;
    let tail = Buffer.alloc(0);
    let size = 0;
    let finish: (n: number) => void = () => {};
    let fail: (e: Error) => void = () => {};
    const done = new Promise<number>((res, rej) => {
      finish = res;
      fail = rej;
    });
    done.catch(() => {});
    const timer = setTimeout(
      () =>
        abort(new Error(`no snapshot from ${source.host}:${source.port} within ${source.startTimeoutMs ?? 60_000} ms`)),
      source.startTimeoutMs ?? 60_000,
    );

    const abort = (err: Error) => {
      clearTimeout(timer);
      socket.destroy();
      plain.destroy();
      if (!settled) {
        settled = true;
        reject(err);
      } else if (stage === 'payload') {
        rdb.destroy(err);
        fail(err);
      }
    };
    const end = () => {
      socket.destroy();
      plain.destroy();
      rdb.end();
      finish(size);
    };
    const emit = (chunk: Buffer) => {
      if (chunk.length === 0) return;
      size += chunk.length;
      if (!rdb.write(chunk)) {
        socket.pause();
        rdb.once('drain', () => socket.resume());
      }
    };
    const payload = (chunk: Buffer) => {
      if (mark === null) {
        const take = chunk.subarray(0, remaining);
        remaining -= take.length;
        emit(take);
        if (remaining === 0) end();
        return;
      }
      // Diskless form: hold back the last 40 bytes, which may be the end mark.
      const joined = Buffer.concat([tail, chunk]);
      if (joined.length >= MARK_LENGTH && joined.subarray(joined.length - MARK_LENGTH).equals(mark)) {
        emit(joined.subarray(0, joined.length - MARK_LENGTH));
        end();
        return;
      }
      const keep = Math.min(MARK_LENGTH, joined.length);
      emit(joined.subarray(0, joined.length - keep));
      tail = joined.subarray(joined.length - keep);
    };
    /** The next complete line of the header, without CRLF; keep-alive newlines are skipped. */
    const line = (): string | null => {
      for (;;) {
        while (header.length > 0 && header[0] === 0x0a) header = header.subarray(1);
        const at = header.indexOf('\r\n');
        if (at < 0) return null;
        const text = header.subarray(0, at).toString('latin1');
        header = header.subarray(at + 2);
        if (text !== '') return text;
      }
    };
    const onHeader = () => {
      for (;;) {
        const text = line();
        if (text === null) return;
        if (text.startsWith('-')) {
          // An old node without rdb-only: go on, it will send the stream after the RDB, which we cut.
          if (stage === 'rdb-only') {
            stage = 'psync';
            socket.write(command('PSYNC', '?', '-1'));
            continue;
          }
          abort(new Error(`${source.host}:${source.port} refused the snapshot at ${stage}: ${text.slice(1)}`));
          return;
        }
        // One command at a time: PSYNC is refused while earlier replies are still pending output.
        if (stage === 'auth') {
          stage = 'rdb-only';
          socket.write(command('REPLCONF', 'rdb-only', '1'));
          continue;
        }
        if (stage === 'rdb-only') {
          stage = 'psync';
          socket.write(command('PSYNC', '?', '-1'));
          continue;
        }
        if (stage === 'psync') {
          const m = /^\+FULLRESYNC (\S+) (\d+)$/.exec(text);
          if (!m)
            return abort(
              new Error(`unexpected reply to PSYNC from ${source.host}:${source.port}: ${text.slice(0, 80)}`),
            );
          replicationId = m[1]!;
          offset = Number(m[2]);
          stage = 'bulk';
          continue;
        }
        // stage bulk: `$<length>` or `$EOF:<mark>`
        const eof = /^\$EOF:(.{40})$/.exec(text);
        const length = /^\$(\d+)$/.exec(text);
        if (eof) mark = Buffer.from(eof[1]!, 'latin1');
        else if (length) remaining = Number(length[1]);
        else
          return abort(
            new Error(`unexpected snapshot header from ${source.host}:${source.port}: ${text.slice(0, 80)}`),
          );
        stage = 'payload';
        clearTimeout(timer);
        settled = true;
        resolve({ replicationId, offset, rdb, done });
        const rest = header;
        header = Buffer.alloc(0);
        if (remaining === 0) end();
        else payload(rest);
        return;
      }
    };

    socket.on('data', (chunk: Buffer) => {
      if (stage === 'payload') payload(chunk);
      else {
        header = Buffer.concat([header, chunk]);
        onHeader();
      }
    });
    socket.on('error', (err: Error) => abort(err));
    socket.on('close', () => {
      if (stage !== 'payload' || rdb.writableEnded) return;
      abort(new Error(`${source.host}:${source.port} closed the connection after ${size} bytes of the snapshot`));
    });
    socket.once(source.tls ? 'secureConnect' : 'connect', () => {
      socket.write(command('AUTH', source.username, source.password));
    });
  });
}

// The Sentinel endpoint's TCP adapter (node:net, port 26379 by default): bytes in, decide/commands.ts, bytes out,
// and the Pub/Sub messages of each view change pushed to the subscribers.
// Invariants: every decision is in decide/; this file only carries bytes and enforces the limits a hostile client
// meets: a bounded number of connections (the extra ones are closed at once with an error), an idle timeout for
// connections that are not subscribed (a subscriber waits for messages by design; TCP keep-alive finds its dead
// peers), a bound on unanswered input (the parser's limits) and on unsent output (a subscriber that does not read is
// dropped, as Redis drops it past client-output-buffer-limit pubsub). Nothing a client sends is logged: a request
// may carry a password.
import net from 'node:net';
import type { Logger } from 'pino';
import { handle } from './decide/commands.ts';
import { deliveries, viewEvents } from './decide/events.ts';
import { encodeReply, error, parseRequests, DEFAULT_RESP_LIMITS, type RespLimits } from './decide/resp.ts';
import { newSession, subscriptions, type Session } from './decide/session.ts';
import { EMPTY_VIEW, type SentinelView } from './decide/view.ts';

export const DEFAULT_SENTINEL_PORT = 26379;

export interface SentinelServerOptions {
  host: string;
  /** 0: any free port (tests). */
  port: number;
  /** This instance's Sentinel id (40 hex digits). */
  myid: string;
  logger: Logger;
  maxConnections?: number;
  /** A connection that is not subscribed and sends nothing this long is closed. */
  idleTimeoutMs?: number;
  /** Bytes queued for a client that does not read, past which it is dropped. */
  maxOutputBytes?: number;
  limits?: RespLimits;
}

export interface SentinelServer {
  port: number;
  /** The next view: answers use it from now on, and its changes are published to subscribers. */
  update(view: SentinelView): void;
  /** Open client connections (metrics, tests). */
  connections(): number;
  /** Of those, the ones subscribed to something (the clients that hear a failover at once). */
  subscribers(): number;
  close(): Promise<void>;
}

interface Conn {
  socket: net.Socket;
  session: Session;
  pending: Buffer;
  /** QUIT or a protocol error: what arrives after it is not read. */
  closing: boolean;
}

export async function startSentinelServer(o: SentinelServerOptions): Promise<SentinelServer> {
  const maxConnections = o.maxConnections ?? 1000;
  const idleTimeoutMs = o.idleTimeoutMs ?? 300_000;
  const maxOutputBytes = o.maxOutputBytes ?? 1 << 20;
  const limits = o.limits ?? DEFAULT_RESP_LIMITS;
  const log = o.logger.child({ component: 'sentinel' });
  let view: SentinelView = EMPTY_VIEW;
  let nextId = 1;
  const conns = new Set<Conn>();
  // Every socket, refused ones included: close() must not wait on a client that never reads its refusal.
  const sockets = new Set<net.Socket>();

  const send = (c: Conn, text: string): void => {
    if (c.socket.destroyed) return;
    c.socket.write(text);
    if (c.socket.writableLength > maxOutputBytes) {
      log.warn({ client: c.session.id }, 'sentinel client does not read its replies; closing it');
      c.socket.destroy();
    }
  };

  const onData = (c: Conn, chunk: Buffer): void => {
    if (c.closing) return;
    c.pending = c.pending.length === 0 ? chunk : Buffer.concat([c.pending, chunk]);
    const parsed = parseRequests(c.pending, limits);
    for (const argv of parsed.commands) {
      const out = handle({ view, myid: o.myid }, c.session, argv);
      c.session = out.session;
      send(c, out.replies.map(encodeReply).join(''));
      if (out.close) {
        c.closing = true;
        c.socket.end();
        return;
      }
    }
    if (!parsed.ok) {
      send(c, encodeReply(error(`ERR ${parsed.error}`)));
      c.closing = true;
      c.socket.end();
      return;
    }
    c.pending = c.pending.subarray(parsed.consumed);
    // A subscriber legitimately says nothing for hours; anyone else idle that long is gone or hostile.
    c.socket.setTimeout(subscriptions(c.session) > 0 ? 0 : idleTimeoutMs);
  };

  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    if (conns.size >= maxConnections) {
      socket.setTimeout(1000, () => socket.destroy());
      socket.end(encodeReply(error('ERR max number of clients reached')));
      return;
    }
    const c: Conn = { socket, session: newSession(nextId++), pending: Buffer.alloc(0), closing: false };
    conns.add(c);
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 10_000);
    socket.setTimeout(idleTimeoutMs);
    socket.on('timeout', () => socket.destroy());
    socket.on('data', (chunk: Buffer) => onData(c, chunk));
    socket.on('close', () => conns.delete(c));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (err) => log.error({ err: err.message }, 'sentinel endpoint error'));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : o.port;
  log.info({ host: o.host, port }, 'sentinel endpoint listening');

  return {
    port,
    update(next: SentinelView): void {
      const events = viewEvents(view, next);
      view = next;
      if (events.length === 0) return;
      for (const e of events) {
        log.info({ namespace: e.namespace, name: e.redis, event: `${e.channel} ${e.message}` }, 'sentinel publishes');
      }
      for (const c of conns) {
        const pushes = deliveries(c.session, events);
        if (pushes.length > 0) send(c, pushes.map(encodeReply).join(''));
      }
    },
    connections: () => conns.size,
    subscribers: () => [...conns].filter((c) => subscriptions(c.session) > 0).length,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}

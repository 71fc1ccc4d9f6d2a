// A fault-injecting proxy in front of the REAL API server, for tests that need the API to fail
// for one client only (a sidecar leader whose pod patches hang, say). The pods of a real cluster
// reach it as the `kubernetes` Service, so it serves TLS with a certificate for that Service's
// address. Every request is forwarded over TLS to the API server with its bearer token
// unchanged, so authentication and RBAC stay the real server's.
// Fault rules (faults.ts) match on a client name: the pod a bound
// service-account token was issued to, else the ServiceAccount's name (the token's claims are
// read, not verified: the API server verifies the token when the request reaches it). Every
// request is logged (`requests`) with that name and the status it got, for tests that count what
// a client asked. closeWatches() ends the watch streams in flight the way the API server ends one
// at its timeout (a clean end of the body), so clients' re-watching can be tested.
// Invariants: a request no rule matches is forwarded byte for byte (watches stream through);
// close() destroys every open connection, so a hung request never outlives the test.
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { Faults, type FaultAction } from './faults.ts';

export interface RequestRecord {
  /** Date.now() at arrival. */
  at: number;
  method: string;
  path: string;
  query: string;
  /** The client's name (tokenClient), '' for a request without a service-account token. */
  client: string;
  contentType: string | undefined;
  watch: boolean;
  /** Undefined while in flight (or for ever for a hung request). */
  status?: number;
  /**
   * The kind of the fault rule that took it, when one did (its status is then the rule's, not the API server's, but for
   * a delay or a rewind).
   */
  fault?: FaultAction['kind'];
}

export interface FaultProxy {
  readonly url: string;
  readonly port: number;
  readonly faults: Faults;
  /** Every request, in arrival order. */
  readonly requests: RequestRecord[];
  /** Ends every watch stream in flight, cleanly, as the API server does at a watch's timeout; returns how many. */
  closeWatches(): number;
  close(): Promise<void>;
}

export interface FaultProxyOptions {
  /** The API server's URL and the CA that signed its certificate. */
  server: string;
  caFile: string;
  /** Where to listen, with the serving certificate's files. */
  listen: { host: string; cert: string; key: string };
}

/**
 * Who a service-account token names: the pod it was bound to (`kubernetes.io.pod.name`), else its ServiceAccount; ''
 * for anything else.
 */
export function tokenClient(token: string): string {
  const payload = token.split('.')[1];
  if (!payload) return '';
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as {
      sub?: unknown;
      'kubernetes.io'?: { pod?: { name?: unknown } };
    };
    const pod = claims['kubernetes.io']?.pod?.name;
    if (typeof pod === 'string') return pod;
    const sub = typeof claims.sub === 'string' ? /^system:serviceaccount:[^:]+:([^:]+)$/.exec(claims.sub) : null;
    return sub?.[1] ?? '';
  } catch {
    return '';
  }
}

export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const upstream = new URL(options.server);
  const ca = readFileSync(options.caFile);
  const faults = new Faults();
  const requests: RequestRecord[] = [];
  const sockets = new Set<Socket>();
  /** How to end each watch stream being forwarded. */
  const watches = new Set<() => void>();

  function forward(req: IncomingMessage, res: ServerResponse, record: RequestRecord, path = req.url): void {
    const up = httpsRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path,
        headers: { ...req.headers, host: upstream.host },
        ca,
      },
      (ur) => {
        record.status = ur.statusCode ?? 502;
        res.writeHead(ur.statusCode ?? 502, ur.headers);
        // A quiet watch sends no body for a while: the client must see its headers now.
        res.flushHeaders();
        if (record.watch) {
          // The chunked body ends as at the server's timeout; closing `res` then drops the upstream watch.
          const end = () => {
            ur.unpipe(res);
            res.end();
          };
          watches.add(end);
          res.on('close', () => watches.delete(end));
        }
        ur.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    res.on('close', () => up.destroy());
    req.pipe(up);
  }

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const auth = req.headers.authorization ?? '';
    const token = auth.startsWith('Bearer ') ? auth.slice(7) : '';
    const url = new URL(req.url ?? '/', 'http://proxy');
    const watch = url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1';
    const record: RequestRecord = {
      at: Date.now(),
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.search.replace(/^\?/, ''),
      client: tokenClient(token),
      contentType: req.headers['content-type'],
      watch,
    };
    requests.push(record);
    const action = faults.take({ method: record.method, path: record.path, client: record.client, watch });
    if (!action) return forward(req, res, record);
    record.fault = action.kind;
    switch (action.kind) {
      case 'hang':
        return; // never answered; close() or the client's timeout ends it
      case 'reset':
        req.socket.destroy();
        return;
      case 'delay':
        setTimeout(() => forward(req, res, record), action.ms);
        return;
      case 'rewind':
        if (!watch) return forward(req, res, record);
        url.searchParams.set('resourceVersion', action.resourceVersion ?? '1');
        return forward(req, res, record, `${url.pathname}${url.search}`);
      case 'status': {
        const body = {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: action.message ?? 'injected fault',
          reason: action.reason ?? 'InternalError',
          code: action.code,
        };
        record.status = action.code;
        res.writeHead(action.code, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      }
    }
  };
  const { listen } = options;
  const server = createServer({ cert: readFileSync(listen.cert), key: readFileSync(listen.key) }, handle);
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, listen.host, resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `https://${listen.host}:${port}`,
    port,
    faults,
    requests,
    closeWatches() {
      const open = [...watches];
      watches.clear();
      for (const end of open) end();
      return open.length;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

// A fault-injecting proxy in front of the REAL API server, for tests that need the API to fail
// for one client only (a sidecar leader whose pod patches hang, say). The pods of a real cluster
// reach it as the `kubernetes` Service, so it serves TLS with a certificate for that Service's
// address. Every request is forwarded over TLS to the API server with its bearer token
// unchanged, so authentication and RBAC stay the real server's.
// Fault rules (test/support/kube-api/faults.ts) match on a client name: the pod a bound
// service-account token was issued to (its claims are read, not verified: the API server
// verifies the token when the request reaches it).
// Invariants: a request no rule matches is forwarded byte for byte (watches stream through);
// close() destroys every open connection, so a hung request never outlives the test.
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { Faults } from '../support/kube-api/faults.ts';

export interface FaultProxy {
  readonly url: string;
  readonly port: number;
  readonly faults: Faults;
  close(): Promise<void>;
}

export interface FaultProxyOptions {
  /** The API server's URL and the CA that signed its certificate. */
  server: string;
  caFile: string;
  /** Where to listen, with the serving certificate's files. */
  listen: { host: string; cert: string; key: string };
}

/** The pod a bound service-account token names (`kubernetes.io.pod.name`), or undefined. */
export function tokenPod(token: string): string | undefined {
  const payload = token.split('.')[1];
  if (!payload) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { 'kubernetes.io'?: { pod?: { name?: unknown } } };
    const name = claims['kubernetes.io']?.pod?.name;
    return typeof name === 'string' ? name : undefined;
  } catch {
    return undefined;
  }
}

export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const upstream = new URL(options.server);
  const ca = readFileSync(options.caFile);
  const faults = new Faults();
  const sockets = new Set<Socket>();

  function forward(req: IncomingMessage, res: ServerResponse): void {
    const up = httpsRequest(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host }, ca },
      (ur) => {
        res.writeHead(ur.statusCode ?? 502, ur.headers);
        // A quiet watch sends no body for a while: the client must see its headers now.
        res.flushHeaders();
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
    const action = faults.take({ method: req.method ?? 'GET', path: url.pathname, client: tokenPod(token) ?? '', watch });
    if (!action) return forward(req, res);
    switch (action.kind) {
      case 'hang':
        return; // never answered; close() or the client's timeout ends it
      case 'reset':
        req.socket.destroy();
        return;
      case 'delay':
        setTimeout(() => forward(req, res), action.ms);
        return;
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
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

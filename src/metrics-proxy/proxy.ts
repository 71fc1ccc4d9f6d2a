// The metrics proxy: the only listener on a Redis pod's metrics port. redis_exporter (every
// version up to 1.82 at least) serves `/scrape?target=<any address>&check-keys=...`, which
// connects to whatever a caller names with the exporter's credentials and can export key names
// and values; no flag of the versions a user may run closes it. So the exporter listens on the
// pod's loopback only, and this proxy passes it exactly two requests.
// Invariants:
// - Allow-list: `GET`/`HEAD` of `/metrics` or `/health`, with no query string at all, go to the
//   exporter; everything else is refused here and never reaches it (404 for another path, 400 for
//   a query string, 405 for another method). The request's path is never re-used: the upstream
//   path is one of the two constants.
// - Only the headers that shape the answer pass (Accept, Accept-Encoding, and the scrape timeout
//   Prometheus sends); the exporter's status, Content-Type and Content-Encoding come back.
// - No framework and no dependency: it runs in every Redis pod, so its memory is the whole point.
import http from 'node:http';

export interface ProxyOptions {
  /** The exporter's loopback port. */
  upstreamPort: number;
  upstreamHost?: string;
  /** How long one upstream request may take (ms); the scrape itself is bounded by Prometheus. */
  timeoutMs?: number;
}

export type Route = { pass: '/metrics' | '/health' } | { status: 400 | 404 | 405; reason: string };

const PATHS = ['/metrics', '/health'] as const;
const PASSED_HEADERS = ['accept', 'accept-encoding', 'x-prometheus-scrape-timeout-seconds'] as const;
const RETURNED_HEADERS = ['content-type', 'content-encoding'] as const;

/** What to do with one request: pure, so the allow-list is tested without a socket. */
export function route(method: string | undefined, url: string | undefined): Route {
  const raw = url ?? '';
  const path = PATHS.find((p) => p === raw);
  if (path === undefined) {
    const bare = raw.split('?')[0];
    if (raw.includes('?') && PATHS.some((p) => p === bare))
      return { status: 400, reason: 'query strings are not accepted' };
    return { status: 404, reason: 'only /metrics and /health are served' };
  }
  if (method !== 'GET' && method !== 'HEAD') return { status: 405, reason: 'only GET and HEAD' };
  return { pass: path };
}

/** A request handler that passes the allowed requests to the exporter on loopback. */
export function proxyHandler(options: ProxyOptions): http.RequestListener {
  const host = options.upstreamHost ?? '127.0.0.1';
  const timeout = options.timeoutMs ?? 60_000;
  return (req, res) => {
    const r = route(req.method, req.url);
    if (!('pass' in r)) {
      const body = `${r.reason}\n`;
      res.writeHead(r.status, {
        'content-type': 'text/plain; charset=utf-8',
        'content-length': Buffer.byteLength(body),
        ...(r.status === 405 ? { allow: 'GET, HEAD' } : {}),
      });
      res.end(req.method === 'HEAD' ? undefined : body);
      req.resume();
      return;
    }
    const headers: http.OutgoingHttpHeaders = {};
    for (const h of PASSED_HEADERS) if (req.headers[h] !== undefined) headers[h] = req.headers[h];
    const upstream = http.request(
      { host, port: options.upstreamPort, method: req.method, path: r.pass, headers, timeout },
      (up) => {
        const back: http.OutgoingHttpHeaders = {};
        for (const h of RETURNED_HEADERS) if (up.headers[h] !== undefined) back[h] = up.headers[h];
        res.writeHead(up.statusCode ?? 502, back);
        up.pipe(res);
      },
    );
    upstream.on('timeout', () => upstream.destroy(new Error('the exporter did not answer in time')));
    upstream.on('error', () => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      res.writeHead(502, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('the exporter is not answering\n');
    });
    req.resume();
    upstream.end();
  };
}

export function createProxyServer(options: ProxyOptions): http.Server {
  const server = http.createServer({ requestTimeout: 120_000, headersTimeout: 10_000 }, proxyHandler(options));
  // Prometheus keeps its connection open between scrapes; an idle one is cheap but not free.
  server.keepAliveTimeout = 65_000;
  return server;
}

// The metrics proxy's allow-list (src/metrics-proxy): the routing table, fast-check over any
// request line, and a real proxy on loopback in front of a stand-in exporter that records every
// request it receives, so "refused" means "never reached the exporter".
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import fc from 'fast-check';
import { createProxyServer, route } from '../../src/metrics-proxy/proxy.ts';

test('route: the allow-list', async (t) => {
  const cases: Array<[string, string, ReturnType<typeof route>]> = [
    ['GET', '/metrics', { pass: '/metrics' }],
    ['HEAD', '/metrics', { pass: '/metrics' }],
    ['GET', '/health', { pass: '/health' }],
    ['GET', '/scrape?target=redis://10.0.0.1:6379', { status: 404, reason: 'only /metrics and /health are served' }],
    ['GET', '/scrape', { status: 404, reason: 'only /metrics and /health are served' }],
    ['GET', '/metrics?check-keys=*', { status: 400, reason: 'query strings are not accepted' }],
    ['GET', '/metrics?', { status: 400, reason: 'query strings are not accepted' }],
    ['GET', '/health?x=1', { status: 400, reason: 'query strings are not accepted' }],
    ['GET', '/metrics/', { status: 404, reason: 'only /metrics and /health are served' }],
    ['GET', '//metrics', { status: 404, reason: 'only /metrics and /health are served' }],
    ['GET', '/METRICS', { status: 404, reason: 'only /metrics and /health are served' }],
    ['GET', '/metrics%3Ftarget=x', { status: 404, reason: 'only /metrics and /health are served' }],
    ['GET', 'http://10.0.0.1/metrics', { status: 404, reason: 'only /metrics and /health are served' }],
    ['GET', '/', { status: 404, reason: 'only /metrics and /health are served' }],
    ['GET', '/-/reload', { status: 404, reason: 'only /metrics and /health are served' }],
    ['GET', '/discover-cluster-nodes', { status: 404, reason: 'only /metrics and /health are served' }],
    ['POST', '/metrics', { status: 405, reason: 'only GET and HEAD' }],
    ['PUT', '/health', { status: 405, reason: 'only GET and HEAD' }],
  ];
  for (const [method, url, want] of cases)
    await t.test(`${method} ${url}`, () => assert.deepEqual(route(method, url), want));
});

test('route: any other request line is refused (property)', () => {
  fc.assert(
    fc.property(
      fc.constantFrom('GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS', 'get'),
      fc.string({ maxLength: 40 }),
      (method, url) => {
        const r = route(method, url);
        if ('pass' in r)
          assert.ok(
            (method === 'GET' || method === 'HEAD') && (url === '/metrics' || url === '/health'),
            `${method} ${url} passed`,
          );
      },
    ),
    { numRuns: 2000 },
  );
});

/** A stand-in exporter on loopback that records each request's method and raw URL. */
async function fakeExporter(): Promise<{ port: number; seen: string[]; close(): Promise<void> }> {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(
      `${req.method} ${req.url} ae=${req.headers['accept-encoding'] ?? ''} cookie=${req.headers['cookie'] ?? ''}`,
    );
    if (req.url === '/health') {
      res.end('ok');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4', 'x-internal': 'secret' });
    res.end('redis_up 1\n');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

async function get(
  port: number,
  path: string,
  method = 'GET',
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('a real proxy passes /metrics and /health and nothing else reaches the exporter', async () => {
  const exporter = await fakeExporter();
  const proxy = createProxyServer({ upstreamPort: exporter.port });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  const port = (proxy.address() as AddressInfo).port;
  try {
    const metrics = await get(port, '/metrics', 'GET', { 'accept-encoding': 'identity', cookie: 'a=b' });
    assert.equal(metrics.status, 200);
    assert.equal(metrics.body, 'redis_up 1\n');
    assert.equal(metrics.headers['content-type'], 'text/plain; version=0.0.4');
    assert.equal(metrics.headers['x-internal'], undefined, "the exporter's other headers stay behind");
    assert.equal((await get(port, '/health')).body, 'ok');

    for (const [path, method, status] of [
      ['/scrape?target=redis://127.0.0.1:1&check-keys=*', 'GET', 404],
      ['/metrics?check-keys=*', 'GET', 400],
      ['/metrics', 'POST', 405],
      ['/', 'GET', 404],
      ['/-/reload', 'GET', 404],
    ] as const) {
      assert.equal((await get(port, path, method)).status, status, `${method} ${path}`);
    }
    assert.deepEqual(
      exporter.seen,
      ['GET /metrics ae=identity cookie=', 'GET /health ae= cookie='],
      'only the two allowed requests, with only the allowed headers',
    );
  } finally {
    proxy.close();
    proxy.closeAllConnections();
    await exporter.close();
  }
});

test('no exporter behind it: 502, and the proxy keeps serving', async () => {
  const exporter = await fakeExporter();
  const port0 = exporter.port;
  await exporter.close();
  const proxy = createProxyServer({ upstreamPort: port0 });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  const port = (proxy.address() as AddressInfo).port;
  try {
    assert.equal((await get(port, '/health')).status, 502);
    assert.equal((await get(port, '/metrics')).status, 502);
  } finally {
    proxy.close();
    proxy.closeAllConnections();
  }
});

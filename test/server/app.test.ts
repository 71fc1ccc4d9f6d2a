// buildApp through fastify's inject (and a real listener on 127.0.61.1 for readiness and drain):
// every route, every status code, metrics and per-request logging.
// Loopback address allocation: N=61 (127.0.61.x).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance, InjectOptions } from 'fastify';
import * as hook from '../../src/hook/index.ts';
import { buildApp, createLifecycle, type AppOptions } from '../../src/server/app.ts';
import {
  capturingLogger,
  childId,
  FIXTURE_TEXT,
  observedChildIds,
  reportsInvalidSpec,
  silentLogger,
  syncRequest,
} from './helpers.ts';

const HOST = '127.0.61.1';

function app(options: Partial<AppOptions> = {}): FastifyInstance {
  return buildApp({ logger: silentLogger(), defaultMetrics: false, ...options });
}

function post(
  url: string,
  payload: unknown,
  headers: Record<string, string> = { 'content-type': 'application/json' },
): InjectOptions {
  return { method: 'POST', url, headers, payload: typeof payload === 'string' ? payload : JSON.stringify(payload) };
}

/** What the pure hook itself answers, through JSON as the wire would carry it. */
function expected(fn: 'sync' | 'finalize', body: unknown): unknown {
  const parsed = hook.parseHookRequest(body);
  assert.ok(parsed.ok, 'fixture must be a hook request');
  return JSON.parse(JSON.stringify(hook[fn](parsed.request)));
}

function customizeRequest() {
  const { controller, parent } = syncRequest();
  return { controller, parent };
}

test('POST /sync answers 200 with exactly what the hook returns', async (t) => {
  const server = app();
  t.after(() => server.close());
  const body = syncRequest();
  const res = await server.inject(post('/sync', body));
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const answer: Record<string, unknown> = res.json();
  assert.ok(Array.isArray(answer['children']) && answer['children'].length > 0);
  assert.deepEqual(answer, expected('sync', body));
  for (const key of Object.keys(answer))
    assert.ok(['status', 'children', 'resyncAfterSeconds', 'finalized'].includes(key), key);
});

test('the curl fixture also works with a charset in the content type', async (t) => {
  const server = app();
  t.after(() => server.close());
  const res = await server.inject(post('/sync', FIXTURE_TEXT, { 'content-type': 'application/json; charset=utf-8' }));
  assert.equal(res.statusCode, 200);
});

// Routing decision (documented in hook-routes.ts): /finalize always calls finalize(); /sync calls
// finalize() when the request says finalizing: true, sync() otherwise.
const routing: Array<[string, string, boolean, 'sync' | 'finalize']> = [
  ['/sync, finalizing false', '/sync', false, 'sync'],
  ['/sync, finalizing true', '/sync', true, 'finalize'],
  ['/finalize, finalizing true', '/finalize', true, 'finalize'],
  ['/finalize, finalizing false', '/finalize', false, 'finalize'],
];
for (const [name, url, finalizing, logic] of routing) {
  test(`routing: ${name} runs ${logic}`, async (t) => {
    const calls: string[] = [];
    const server = app({
      hooks: {
        sync: (r) => (calls.push('sync'), hook.sync(r)),
        finalize: (r) => (calls.push('finalize'), hook.finalize(r)),
      },
    });
    t.after(() => server.close());
    const body = { ...syncRequest(), finalizing };
    const res = await server.inject(post(url, body));
    assert.equal(res.statusCode, 200);
    assert.deepEqual(calls, [logic]);
    assert.deepEqual(res.json(), expected(logic, body));
  });
}

test('POST /customize answers 200 with the hook customize response', async (t) => {
  const server = app();
  t.after(() => server.close());
  const body = customizeRequest();
  const res = await server.inject(post('/customize', body));
  assert.equal(res.statusCode, 200);
  const parsed = hook.parseCustomizeRequest(body);
  assert.ok(parsed.ok);
  assert.deepEqual(res.json(), JSON.parse(JSON.stringify(hook.customize(parsed.request))));
  assert.deepEqual(Object.keys(res.json()), ['relatedResources']);
});

test('an invalid spec is a 200 that returns every observed child', async (t) => {
  const server = app();
  t.after(() => server.close());
  const body = syncRequest();
  const parent = body['parent'] as { spec: Record<string, unknown> };
  parent.spec['replicas'] = 'two';
  const res = await server.inject(post('/sync', body));
  assert.equal(res.statusCode, 200);
  const answer = res.json();
  assert.ok(reportsInvalidSpec(answer), 'status must report InvalidSpec');
  const returned = new Set((answer.children as unknown[]).map(childId));
  const observed = observedChildIds(body);
  assert.ok(observed.length > 0, 'the fixture has observed children');
  for (const id of observed) assert.ok(returned.has(id), `observed ${id} must be returned`);
});

// Bad input: status code, `error` code and a message that says what is wrong.
const malformed: Array<[string, InjectOptions, number, string, RegExp]> = [
  ['truncated JSON', post('/sync', FIXTURE_TEXT.slice(0, 100)), 400, 'malformed_json', /not valid JSON/],
  ['not JSON at all', post('/sync', 'hello'), 400, 'malformed_json', /not valid JSON: Unexpected token/],
  ['empty JSON body', post('/sync', ''), 400, 'malformed_json', /empty/],
  // A __proto__ key is dropped (never refused, never a prototype); the rest is judged as sent.
  [
    'a __proto__ key',
    post('/sync', '{"parent":{"metadata":{}},"__proto__":{"x":1}}'),
    400,
    'not_a_hook_request',
    /parent\.metadata\.name/,
  ],
  [
    'text/plain',
    post('/sync', FIXTURE_TEXT, { 'content-type': 'text/plain' }),
    415,
    'unsupported_media_type',
    /application\/json/,
  ],
  [
    'form encoded',
    post('/finalize', 'a=b', { 'content-type': 'application/x-www-form-urlencoded' }),
    415,
    'unsupported_media_type',
    /application\/json/,
  ],
  [
    'yaml',
    post('/customize', 'parent: {}', { 'content-type': 'application/yaml' }),
    415,
    'unsupported_media_type',
    /application\/json/,
  ],
  ['no content type', post('/sync', FIXTURE_TEXT, {}), 415, 'unsupported_media_type', /application\/json/],
  ['no body at all', { method: 'POST', url: '/sync' }, 400, 'not_a_hook_request', /request body must be a JSON object/],
  ['a JSON array', post('/sync', []), 400, 'not_a_hook_request', /request body must be a JSON object/],
  ['a JSON string', post('/sync', '"sync"'), 400, 'not_a_hook_request', /request body must be a JSON object/],
  ['null', post('/sync', 'null'), 400, 'not_a_hook_request', /request body must be a JSON object/],
  ['no parent', post('/sync', { children: {} }), 400, 'not_a_hook_request', /parent/],
  ['parent not an object', post('/finalize', { parent: 'my-redis' }), 400, 'not_a_hook_request', /parent/],
  ['parent without metadata', post('/sync', { parent: {} }), 400, 'not_a_hook_request', /metadata|name|namespace/],
  ['customize without parent', post('/customize', { controller: {} }), 400, 'not_a_hook_request', /parent/],
];
for (const [name, request, status, error, message] of malformed) {
  test(`bad input: ${name} -> ${status} ${error}`, async (t) => {
    const server = app();
    t.after(() => server.close());
    const res = await server.inject(request);
    assert.equal(res.statusCode, status);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['error', 'message']);
    assert.equal(body.error, error);
    assert.match(body.message, message);
  });
}

test('a body over the limit is a 413 naming the limit', async (t) => {
  const server = app({ bodyLimitBytes: 1024 });
  t.after(() => server.close());
  const res = await server.inject(post('/sync', FIXTURE_TEXT));
  assert.equal(res.statusCode, 413);
  assert.deepEqual(res.json(), {
    error: 'body_too_large',
    message: 'request body is larger than 1024 bytes (BODY_LIMIT_BYTES)',
  });
});

const unknownRoutes: Array<[string, string]> = [
  ['GET', '/'],
  ['GET', '/sync'],
  ['POST', '/nope'],
  ['PUT', '/sync'],
  ['DELETE', '/metrics'],
  ['POST', '/healthz'],
];
for (const [method, url] of unknownRoutes) {
  test(`unknown route ${method} ${url} -> 404 JSON`, async (t) => {
    const server = app();
    t.after(() => server.close());
    const res = await server.inject({ method: method as 'GET', url });
    assert.equal(res.statusCode, 404);
    assert.equal(res.json().error, 'not_found');
    assert.match(res.json().message, /POST \/sync/);
  });
}

test('a hook that throws is a 500 with a JSON body, and the app keeps serving', async (t) => {
  const { logger, lines } = capturingLogger();
  const server = app({
    logger,
    hooks: {
      sync: () => {
        throw new Error('boom');
      },
    },
  });
  t.after(() => server.close());
  const res = await server.inject(post('/sync', syncRequest()));
  assert.equal(res.statusCode, 500);
  assert.equal(res.json().error, 'internal_error');
  assert.match(res.json().message, /changed nothing.*boom/);
  const errorLine = lines.find((l) => l['level'] === 50 && l['err'] !== undefined);
  assert.ok(errorLine, 'the fault is logged with its error');
  assert.equal(errorLine['name'], 'my-redis');
  assert.equal((await server.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
});

test('a rejected promise from the hook is a 500 too', async (t) => {
  const server = app({ hooks: { finalize: async () => Promise.reject(new Error('later boom')) } });
  t.after(() => server.close());
  const res = await server.inject(post('/finalize', syncRequest()));
  assert.equal(res.statusCode, 500);
  assert.equal(res.json().error, 'internal_error');
});

test('a hook answer without a children list is a 500, never a 200 (which would delete every child)', async (t) => {
  const server = app({ hooks: { sync: () => ({ status: {} }) as unknown as ReturnType<typeof hook.sync> } });
  t.after(() => server.close());
  const res = await server.inject(post('/sync', syncRequest()));
  assert.equal(res.statusCode, 500);
  assert.equal(res.json().error, 'internal_error');
});

test('top-level keys Metacontroller v2 would reject never reach it', async (t) => {
  const server = app({
    hooks: {
      sync: () =>
        ({ status: { phase: 'Running' }, children: [], debug: 'x' }) as unknown as ReturnType<typeof hook.sync>,
    },
  });
  t.after(() => server.close());
  const res = await server.inject(post('/sync', syncRequest()));
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.json(), { status: { phase: 'Running' }, children: [] });
});

test('GET /healthz is 200 whenever the process answers', async (t) => {
  const server = app();
  t.after(() => server.close());
  const res = await server.inject({ method: 'GET', url: '/healthz' });
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.json(), { status: 'ok' });
});

test('GET /readyz: 503 before listening, 200 while listening, 503 once draining', async (t) => {
  const lifecycle = createLifecycle();
  const server = app({ lifecycle });
  t.after(() => server.close());
  const before = await server.inject({ method: 'GET', url: '/readyz' });
  assert.equal(before.statusCode, 503);
  assert.equal(before.json().error, 'not_ready');

  const address = await server.listen({ port: 0, host: HOST });
  const ready = await fetch(`${address}/readyz`);
  assert.equal(ready.status, 200);
  assert.deepEqual(await ready.json(), { status: 'ready' });

  lifecycle.draining = true;
  const draining = await fetch(`${address}/readyz`);
  assert.equal(draining.status, 503);
  assert.match(((await draining.json()) as { message: string }).message, /shutting down/);
});

test('close() turns readiness off, then lets an in-flight hook call finish with 200', async (t) => {
  const lifecycle = createLifecycle();
  let entered!: () => void;
  const inHook = new Promise<void>((resolve) => (entered = resolve));
  let sawDraining = false;
  const server = app({
    lifecycle,
    hooks: {
      // Stays in flight until shutdown has begun (bounded, so a regression fails, not hangs).
      sync: async (r) => {
        entered();
        for (let i = 0; i < 2000 && !lifecycle.draining; i++) await new Promise((resolve) => setTimeout(resolve, 5));
        sawDraining = lifecycle.draining;
        return hook.sync(r);
      },
    },
  });
  t.after(() => server.close());
  const address = await server.listen({ port: 0, host: HOST });
  const inFlight = fetch(`${address}/sync`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: FIXTURE_TEXT,
  });
  await inHook;
  const closed = server.close();
  const res = await inFlight;
  assert.equal(sawDraining, true, 'readiness was off while the request was still in flight');
  assert.equal(res.status, 200);
  assert.equal(
    res.headers.get('connection'),
    'close',
    'a draining server closes kept-alive connections after the answer',
  );
  assert.ok(Array.isArray(((await res.json()) as { children: unknown }).children));
  await closed;
});

test('GET /metrics: counters by route and outcome, duration histogram, process metrics', async (t) => {
  const server = app({ defaultMetrics: true });
  t.after(() => server.close());
  const invalid = syncRequest();
  (invalid['parent'] as { spec: Record<string, unknown> }).spec['replicas'] = -3;
  await server.inject(post('/sync', syncRequest()));
  await server.inject(post('/sync', syncRequest()));
  await server.inject(post('/sync', invalid));
  await server.inject(post('/sync', 'nope'));
  await server.inject(post('/finalize', syncRequest(), { 'content-type': 'text/plain' }));
  await server.inject(post('/customize', customizeRequest()));
  await server.inject({ method: 'GET', url: '/nowhere' });

  const res = await server.inject({ method: 'GET', url: '/metrics' });
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers['content-type']), /^text\/plain/);
  const text = res.body;
  const expectedLines = [
    'redis_operator_hook_requests_total{route="sync",outcome="ok"} 2',
    'redis_operator_hook_requests_total{route="sync",outcome="invalid_spec"} 1',
    'redis_operator_hook_requests_total{route="sync",outcome="bad_request"} 1',
    'redis_operator_hook_requests_total{route="sync",outcome="error"} 0',
    'redis_operator_hook_requests_total{route="finalize",outcome="bad_request"} 1',
    'redis_operator_hook_requests_total{route="customize",outcome="ok"} 1',
    'redis_operator_hook_duration_seconds_count{route="sync"} 4',
    'redis_operator_hook_duration_seconds_count{route="finalize"} 1',
    'redis_operator_hook_duration_seconds_count{route="customize"} 1',
  ];
  for (const line of expectedLines) assert.ok(text.split('\n').includes(line), `missing: ${line}`);
  assert.match(text, /^redis_operator_hook_duration_seconds_bucket\{le="0.005",route="sync"\} \d+$/m);
  assert.match(text, /^process_cpu_user_seconds_total \d/m);
  assert.match(text, /^nodejs_heap_size_used_bytes \d/m);
});

test('metrics errors are counted as outcome "error"', async (t) => {
  const server = app({
    hooks: {
      customize: () => {
        throw new Error('x');
      },
    },
  });
  t.after(() => server.close());
  await server.inject(post('/customize', customizeRequest()));
  const text = (await server.inject({ method: 'GET', url: '/metrics' })).body;
  assert.ok(text.includes('redis_operator_hook_requests_total{route="customize",outcome="error"} 1'));
});

test('each app has its own registry: two apps count independently', async (t) => {
  const a = app();
  const b = app();
  t.after(() => Promise.all([a.close(), b.close()]));
  await a.inject(post('/sync', syncRequest()));
  const textA = (await a.inject({ method: 'GET', url: '/metrics' })).body;
  const textB = (await b.inject({ method: 'GET', url: '/metrics' })).body;
  assert.ok(textA.includes('redis_operator_hook_requests_total{route="sync",outcome="ok"} 1'));
  assert.ok(textB.includes('redis_operator_hook_requests_total{route="sync",outcome="ok"} 0'));
});

test('one JSON log line per hook call, bound to the parent namespace, name and uid', async (t) => {
  const { logger, lines } = capturingLogger();
  const server = app({ logger });
  t.after(() => server.close());
  const body = syncRequest();
  const metadata = (body['parent'] as { metadata: { namespace: string; name: string; uid: string } }).metadata;
  await server.inject(post('/sync', body));
  await server.inject({ method: 'GET', url: '/healthz' });
  assert.equal(lines.length, 1, 'probes are not logged; one line per hook call');
  const line = lines[0] ?? {};
  assert.equal(line['namespace'], metadata.namespace);
  assert.equal(line['name'], metadata.name);
  assert.equal(line['uid'], metadata.uid);
  assert.equal(line['route'], 'sync');
  assert.equal(line['outcome'], 'ok');
  assert.equal(line['statusCode'], 200);
  assert.equal(typeof line['children'], 'number');
  assert.equal(typeof line['durationMs'], 'number');
});

test('a refused request is logged with the reason, at warn', async (t) => {
  const { logger, lines } = capturingLogger();
  const server = app({ logger });
  t.after(() => server.close());
  await server.inject(post('/sync', '{"parent": tru'));
  assert.equal(lines.length, 1);
  assert.equal(lines[0]?.['level'], 40);
  assert.equal(lines[0]?.['error'], 'malformed_json');
  assert.match(String(lines[0]?.['reason']), /not valid JSON/);
});

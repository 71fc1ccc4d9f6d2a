// The hook routes use the hook's wire schemas (src/hook/common/wire.ts) as their route schemas: bodies
// are judged once, by the same checker as parseHookRequest (same verdict, same message, no
// coercion), and answers are serialized byte for byte as the hook built them. fastify inject only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import * as hook from '../../src/hook/index.ts';
import { buildApp, type AppOptions } from '../../src/server/app.ts';
import { silentLogger, syncRequest } from './helpers.ts';

function app(options: Partial<AppOptions> = {}): FastifyInstance {
  return buildApp({ logger: silentLogger(), defaultMetrics: false, ...options });
}

async function post(server: FastifyInstance, url: string, body: unknown) {
  return server.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
}

function withParent(mutate: (parent: Record<string, unknown>) => void): Record<string, unknown> {
  const body = syncRequest();
  mutate(body['parent'] as Record<string, unknown>);
  return body;
}

const refused: Array<[string, Record<string, unknown>]> = [
  // fastify's default ajv would coerce these into valid values.
  ['finalizing "true"', { ...syncRequest(), finalizing: 'true' }],
  ['finalizing 1', { ...syncRequest(), finalizing: 1 }],
  ['a numeric parent name', withParent((p) => ((p['metadata'] as Record<string, unknown>)['name'] = 5))],
  ['an empty uid', withParent((p) => ((p['metadata'] as Record<string, unknown>)['uid'] = ''))],
  [
    'a child without kind',
    { ...syncRequest(), children: { 'Service.v1': { 'default/x': { apiVersion: 'v1', metadata: { name: 'x' } } } } },
  ],
  ['children as a list', { ...syncRequest(), children: [] }],
];
for (const [label, body] of refused) {
  test(`refused before the hook runs, with parseHookRequest's message: ${label}`, async (t) => {
    let calls = 0;
    const server = app({
      hooks: {
        sync: (r) => (calls++, hook.sync(r)),
        finalize: (r) => (calls++, hook.finalize(r)),
      },
    });
    t.after(() => server.close());
    const verdict = hook.parseHookRequest(body);
    assert.equal(verdict.ok, false);
    for (const url of ['/sync', '/finalize']) {
      const res = await post(server, url, body);
      assert.equal(res.statusCode, 400);
      assert.deepEqual(res.json(), {
        error: 'not_a_hook_request',
        message: `not a Metacontroller hook request: ${verdict.ok ? '' : verdict.message}`,
      });
    }
    assert.equal(calls, 0, 'the route schema refused it before the hook ran');
  });
}

test("customize: a body without a usable parent is refused with the checker's message", async (t) => {
  const server = app();
  t.after(() => server.close());
  const res = await post(server, '/customize', { controller: {}, parent: { metadata: { name: 'a' } } });
  assert.equal(res.statusCode, 400);
  assert.equal(
    res.json().message,
    'not a Metacontroller hook request: parent.metadata.namespace must be a non-empty string',
  );
});

test('an accepted body reaches the hook as sent (nothing coerced or stripped, defaults filled in)', async (t) => {
  const seen: unknown[] = [];
  const server = app({ hooks: { sync: (r) => (seen.push(structuredClone(r)), hook.sync(r)) } });
  t.after(() => server.close());
  const sent = syncRequest();
  const body = { ...sent, extra: { kept: true } };
  const res = await post(server, '/sync', body);
  assert.equal(res.statusCode, 200);
  const { controller, parent, children, related } = sent;
  assert.deepEqual(seen, [{ controller, parent, children, related, finalizing: false }]);
  const parsed = hook.parseHookRequest(body);
  assert.ok(parsed.ok);
  assert.deepEqual(seen, [parsed.request], 'what parseHookRequest would have made of it');
});

test('a valid body is checked once: by the route, not again by the hook', async (t) => {
  const server = app();
  t.after(() => server.close());
  const decorator = { object: syncRequest()['parent'] };
  for (const [url, schema, body] of [
    ['/sync', hook.HookRequestBody, syncRequest()],
    ['/finalize', hook.HookRequestBody, syncRequest()],
    ['/customize', hook.CustomizeRequest, syncRequest()],
    ['/rediscluster/sync', hook.HookRequestBody, syncRequest()],
    ['/monitoring/sync', hook.DecoratorRequestBody, decorator],
  ] as const) {
    // wireChecker hands every caller the one compiled checker of a schema: count its uses.
    const checker = hook.wireChecker(schema);
    const { is, problem } = checker;
    let checks = 0;
    Object.assign(checker, { is: (v: unknown) => (checks++, is(v)), problem: (v: unknown) => (checks++, problem(v)) });
    try {
      const res = await post(server, url, body);
      assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
    } finally {
      Object.assign(checker, { is, problem });
    }
    assert.equal(checks, 1, url);
  }
});

test('answers are serialized byte for byte as the hook built them (children keep their own key order)', async (t) => {
  const server = app();
  t.after(() => server.close());
  const invalid = withParent((p) => ((p['spec'] as Record<string, unknown>)['replicas'] = 'two'));
  for (const [url, body] of [
    ['/sync', syncRequest()],
    ['/sync', invalid],
    ['/finalize', { ...syncRequest(), finalizing: true }],
    ['/finalize', { ...invalid, finalizing: true }],
  ] as const) {
    const parsed = hook.parseHookRequest(body);
    assert.ok(parsed.ok);
    if (!parsed.ok) continue;
    const res = await post(server, url, body);
    assert.equal(res.statusCode, 200);
    assert.equal(
      res.body,
      JSON.stringify(parsed.request.finalizing ? hook.finalize(parsed.request) : hook.sync(parsed.request)),
    );
  }
  const customize = hook.parseCustomizeRequest(syncRequest());
  assert.ok(customize.ok);
  if (customize.ok)
    assert.equal(
      (await post(server, '/customize', syncRequest())).body,
      JSON.stringify(hook.customize(customize.request)),
    );
});

// POST /monitoring/sync through the real app (app.inject): the decorator's answer is exactly
// `attachments`; a bad body is a 400 naming the field; a hook that throws is a 500 (never a 200
// that would delete every attachment); each call is counted under route monitoring/sync.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { buildApp } from '../../src/server/app.ts';
import { designSpec } from '../hook/common/helpers.ts';

const object = (spec: unknown) => ({
  apiVersion: 'redis.example.com/v1',
  kind: 'Redis',
  metadata: { name: 'cache', namespace: 'shop', uid: 'u-1' },
  spec,
});

test('a decorator request gets the PodMonitor and the PrometheusRule, and only attachments', async (t) => {
  const app = buildApp({ logger: pino({ level: 'silent' }), defaultMetrics: false });
  t.after(() => app.close());
  const res = await app.inject({
    method: 'POST',
    url: '/monitoring/sync',
    payload: {
      controller: {},
      object: object(designSpec()),
      attachments: { 'PodMonitor.monitoring.coreos.com/v1': {}, 'PrometheusRule.monitoring.coreos.com/v1': {} },
      finalizing: false,
    },
  });
  assert.equal(res.statusCode, 200, res.body);
  const json = res.json() as { attachments: Array<{ kind: string }> };
  assert.deepEqual(Object.keys(json), ['attachments']);
  assert.deepEqual(
    json.attachments.map((a) => a.kind),
    ['PodMonitor', 'PrometheusRule'],
  );
  const invalid = await app.inject({
    method: 'POST',
    url: '/monitoring/sync',
    payload: { object: object({ replicas: 'many' }) },
  });
  assert.equal(invalid.statusCode, 200);
  assert.deepEqual(invalid.json(), { attachments: [] }, 'nothing observed, nothing echoed');
  const metrics = await app.inject({ method: 'GET', url: '/metrics' });
  assert.match(metrics.body, /redis_operator_hook_requests_total\{route="monitoring\/sync",outcome="ok"\} 1/);
  assert.match(metrics.body, /redis_operator_hook_requests_total\{route="monitoring\/sync",outcome="invalid_spec"\} 1/);
});

test('a body that is no decorator request is a 400 naming the field', async (t) => {
  const app = buildApp({ logger: pino({ level: 'silent' }), defaultMetrics: false });
  t.after(() => app.close());
  const res = await app.inject({
    method: 'POST',
    url: '/monitoring/sync',
    payload: { object: { metadata: { name: 'cache' } } },
  });
  assert.equal(res.statusCode, 400);
  assert.equal(res.json().error, 'not_a_hook_request');
  assert.match(res.json().message, /object\.metadata\.namespace/);
  const text = await app.inject({
    method: 'POST',
    url: '/monitoring/sync',
    headers: { 'content-type': 'text/plain' },
    payload: 'hello',
  });
  assert.equal(text.statusCode, 415);
});

test('a hook that throws is a 500, never an empty list of attachments', async (t) => {
  const app = buildApp({
    logger: pino({ level: 'silent' }),
    defaultMetrics: false,
    monitoringHook: () => {
      throw new Error('boom');
    },
  });
  t.after(() => app.close());
  const res = await app.inject({ method: 'POST', url: '/monitoring/sync', payload: { object: object(designSpec()) } });
  assert.equal(res.statusCode, 500);
  assert.equal(res.json().attachments, undefined);
  const metrics = await app.inject({ method: 'GET', url: '/metrics' });
  assert.match(metrics.body, /route="monitoring\/sync",outcome="error"\} 1/);
});

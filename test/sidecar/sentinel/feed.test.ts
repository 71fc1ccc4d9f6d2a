// From informer objects to the endpoint's view: which Redises are served (enabled, no TLS, password read), what each
// pod says, and the feed's reactions to pod events, missing or unreadable Secrets and rotated passwords.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import type { RedisObject } from '../../../src/api/schema.ts';
import { podInput, sentinelInput } from '../../../src/sidecar/sentinel/decide/inputs.ts';
import { lookup, type SentinelView } from '../../../src/sidecar/sentinel/decide/view.ts';
import { SentinelFeed } from '../../../src/sidecar/sentinel/feed.ts';

function pod(name: string, ip: string, role: string | undefined, ready = true, deleting = false): V1Pod {
  return {
    metadata: {
      name,
      labels: role === undefined ? {} : { 'redis.example.com/role': role },
      ...(deleting ? { deletionTimestamp: new Date(0) } : {}),
    },
    status: { podIP: ip, conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  };
}

test('podInput: what a pod says of itself', async (t) => {
  const cases: Array<[string, V1Pod, ReturnType<typeof podInput>]> = [
    ['master', pod('a', '10.0.0.1', 'master'), { name: 'a', ip: '10.0.0.1', ready: true, role: 'master' }],
    [
      'replica not ready',
      pod('b', '10.0.0.2', 'replica', false),
      { name: 'b', ip: '10.0.0.2', ready: false, role: 'replica' },
    ],
    ['unlabelled', pod('c', '10.0.0.3', undefined), { name: 'c', ip: '10.0.0.3', ready: true, role: undefined }],
    ['another label value', pod('c', '10.0.0.3', 'boss'), { name: 'c', ip: '10.0.0.3', ready: true, role: undefined }],
    [
      'terminating: not ready',
      pod('d', '10.0.0.4', 'master', true, true),
      { name: 'd', ip: '10.0.0.4', ready: false, role: 'master' },
    ],
    ['no IP yet', { metadata: { name: 'e' } }, { name: 'e', ip: '', ready: false, role: undefined }],
  ];
  for (const [name, p, want] of cases) await t.test(name, () => assert.deepEqual(podInput(p), want));
});

test('sentinelInput: which Redises are served', async (t) => {
  const pods = [pod('b', '10.0.0.2', 'replica'), pod('a', '10.0.0.1', 'master')];
  const on = { sentinel: { enabled: true } };
  const cases: Array<[string, Parameters<typeof sentinelInput>[2], string | null | undefined, boolean]> = [
    ['enabled', on, 'pw', true],
    ['not enabled', { sentinel: { enabled: false } }, 'pw', false],
    ['no sentinel block', {}, 'pw', false],
    ['TLS: not over a plaintext endpoint', { ...on, tls: {} }, 'pw', false],
    ['password Secret missing: not served', on, null, false],
    ['password not read yet: in the view, unserved there', on, undefined, true],
  ];
  for (const [name, spec, password, served] of cases) {
    await t.test(name, () => assert.equal(sentinelInput('ns', 'cache', spec, pods, password) !== null, served));
  }
  await t.test('pods sorted, masterName carried', () => {
    const r = sentinelInput('ns', 'cache', { sentinel: { enabled: true, masterName: 'mymaster' } }, pods, 'pw');
    assert.deepEqual([r?.masterName, r?.pods.map((p) => p.name)], ['mymaster', ['a', 'b']]);
  });
});

function redis(name: string, sentinel: Record<string, unknown>, resourceVersion = '1'): RedisObject {
  return {
    apiVersion: 'redis.example.com/v1',
    kind: 'Redis',
    metadata: { name, namespace: 'ns', resourceVersion },
    spec: { sentinel },
  };
}

function harness(secrets: Map<string, string | null | Error>) {
  let observed: Array<{ redis: RedisObject; pods: V1Pod[] }> = [];
  const views: SentinelView[] = [];
  const reads: string[] = [];
  const feed = new SentinelFeed({
    sources: { observed: () => observed },
    readSecretValue: (namespace, name, key) => {
      reads.push(`${namespace}/${name}/${key}`);
      const v = secrets.get(`${namespace}/${name}/${key}`);
      return v instanceof Error ? Promise.reject(v) : Promise.resolve(v ?? null);
    },
    server: { update: (v) => void views.push(v) },
    logger: pino({ level: 'silent' }),
    secretRefreshMs: 10_000,
  });
  return {
    feed,
    views,
    reads,
    set: (o: typeof observed) => (observed = o),
    last: () => views.at(-1)!,
  };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

test('SentinelFeed: serves from the informers once the password is read, and follows them', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const secrets = new Map<string, string | null | Error>([['ns/cache-auth/password', 'pw1']]);
  const h = harness(secrets);
  t.after(() => h.feed.stop());
  h.set([
    {
      redis: redis('cache', { enabled: true }),
      pods: [pod('m', '10.0.0.1', 'master'), pod('r', '10.0.0.2', 'replica')],
    },
  ]);
  await h.feed.start();
  assert.deepEqual(h.reads, ['ns/cache-auth/password'], 'the generated Secret, read once');
  assert.equal(lookup(h.last(), 'cache')?.master?.ip, '10.0.0.1');
  assert.equal(lookup(h.last(), 'cache')?.password, 'pw1');

  await t.test('a promotion seen by the informer is published at the next turn', async () => {
    h.set([
      {
        redis: redis('cache', { enabled: true }),
        pods: [pod('m', '10.0.0.1', 'replica'), pod('r', '10.0.0.2', 'master')],
      },
    ]);
    h.feed.changed();
    h.feed.changed();
    const before = h.views.length;
    await turn();
    assert.equal(h.views.length, before + 1, 'a burst of events makes one rebuild');
    assert.equal(lookup(h.last(), 'cache')?.master?.ip, '10.0.0.2');
    assert.equal(lookup(h.last(), 'cache')?.epoch, 1);
  });
  await t.test('a rotated password takes effect at the next refresh', async () => {
    secrets.set('ns/cache-auth/password', 'pw2');
    t.mock.timers.tick(10_000);
    await turn();
    assert.equal(lookup(h.last(), 'cache')?.password, 'pw2');
  });
  await t.test('an unreadable Secret keeps the last password', async () => {
    secrets.set('ns/cache-auth/password', new Error('apiserver down'));
    t.mock.timers.tick(10_000);
    await turn();
    h.feed.changed();
    await turn();
    assert.equal(lookup(h.last(), 'cache')?.password, 'pw2');
  });
  await t.test('a Secret found missing stops serving', async () => {
    secrets.set('ns/cache-auth/password', null);
    t.mock.timers.tick(10_000);
    await turn();
    assert.equal(lookup(h.last(), 'cache'), undefined);
  });
  await t.test('a Redis newly enabled is read at once, not at the next refresh', async () => {
    secrets.set('ns/other-auth/password', 'o');
    h.set([{ redis: redis('other', { enabled: true }), pods: [pod('o', '10.0.1.1', 'master')] }]);
    h.feed.changed();
    await turn();
    await turn();
    assert.equal(lookup(h.last(), 'other')?.master?.ip, '10.0.1.1');
  });
  await t.test('disabled or invalid: not served', async () => {
    h.set([
      { redis: redis('other', { enabled: false }, '2'), pods: [pod('o', '10.0.1.1', 'master')] },
      { redis: redis('bad', { enabled: 'yes' }), pods: [pod('b', '10.0.2.1', 'master')] },
    ]);
    h.feed.changed();
    await turn();
    assert.deepEqual(h.last().masters, []);
  });
});

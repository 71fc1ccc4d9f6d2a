// The view the Sentinel endpoint answers from, and the messages its changes publish: only a pod the sidecar
// labelled master is published, the old one stays (down) until a single new one is labelled, ambiguous names are
// served only qualified, and one failover gives one +switch-master per served name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  EMPTY_VIEW,
  buildView,
  lookup,
  type SentinelPodInput,
  type SentinelRedisInput,
  type SentinelView,
} from '../../../../src/sidecar/sentinel/decide/view.ts';
import { deliveries, viewEvents } from '../../../../src/sidecar/sentinel/decide/events.ts';
import { newSession, type Session } from '../../../../src/sidecar/sentinel/decide/session.ts';

const pod = (name: string, ip: string, role: SentinelPodInput['role'], ready = true): SentinelPodInput => ({
  name,
  ip,
  role,
  ready,
});
const redis = (pods: SentinelPodInput[], o: Partial<SentinelRedisInput> = {}): SentinelRedisInput => ({
  namespace: 'ns',
  name: 'cache',
  masterName: undefined,
  password: null,
  port: 6379,
  pods,
  ...o,
});
const steady = [pod('m-0', '10.0.0.1', 'master'), pod('r-0', '10.0.0.2', 'replica'), pod('r-1', '10.0.0.3', 'replica')];
const view = (rs: SentinelRedisInput[], prev: SentinelView = EMPTY_VIEW): SentinelView => buildView(rs, [], prev);
const masterIp = (v: SentinelView, name = 'cache'): string | undefined => lookup(v, name)?.master?.ip;

test('buildView: which address is published', async (t) => {
  const before = view([redis(steady)]);
  const cases: Array<[string, SentinelRedisInput, SentinelView, string | undefined, boolean | undefined]> = [
    ['the pod labelled master', redis(steady), EMPTY_VIEW, '10.0.0.1', true],
    ['none labelled yet: nothing', redis([pod('a', '10.0.0.9', undefined)]), EMPTY_VIEW, undefined, undefined],
    [
      'label gone mid-failover: the old one, down',
      redis([pod('r-0', '10.0.0.2', 'replica')]),
      before,
      '10.0.0.1',
      false,
    ],
    [
      'two labelled: the old one, down',
      redis([pod('m-0', '10.0.0.1', 'master'), pod('r-0', '10.0.0.2', 'master')]),
      before,
      '10.0.0.1',
      false,
    ],
    ['one new label: the new one', redis([pod('r-0', '10.0.0.2', 'master')]), before, '10.0.0.2', true],
    [
      'labelled but not ready: published down',
      redis([pod('m-0', '10.0.0.1', 'master', false)]),
      before,
      '10.0.0.1',
      false,
    ],
    ['labelled without an IP: the old one', redis([pod('r-0', '', 'master')]), before, '10.0.0.1', false],
    ['Secret not read yet: not served', redis(steady, { password: undefined }), EMPTY_VIEW, undefined, undefined],
  ];
  for (const [name, input, prev, ip, up] of cases) {
    await t.test(name, () => {
      const v = view([input], prev);
      assert.equal(masterIp(v), ip);
      assert.equal(lookup(v, 'cache')?.master?.up, up);
    });
  }
});

test('buildView: master names', async (t) => {
  const a = redis(steady, { namespace: 'a' });
  const b = redis([pod('m-0', '10.0.1.1', 'master')], { namespace: 'b' });
  const cases: Array<[string, SentinelRedisInput[], string, string | undefined]> = [
    ['default: the Redis name', [a], 'cache', '10.0.0.1'],
    ['qualified always', [a], 'a/cache', '10.0.0.1'],
    ['spec.sentinel.masterName', [redis(steady, { masterName: 'mymaster' })], 'mymaster', '10.0.0.1'],
    ['the Redis name is not an alias of a masterName', [redis(steady, { masterName: 'mymaster' })], 'cache', undefined],
    ['same name in two namespaces: bare name served by neither', [a, b], 'cache', undefined],
    ['same name in two namespaces: each qualified', [a, b], 'b/cache', '10.0.1.1'],
    ['unknown', [a], 'other', undefined],
  ];
  for (const [name, rs, asked, ip] of cases) await t.test(name, () => assert.equal(masterIp(view(rs), asked), ip));
  await t.test('the order the objects come in changes nothing', () => {
    assert.deepEqual(view([a, b]), view([b, a]));
  });
});

test('viewEvents: what each change publishes', async (t) => {
  const v0 = view([redis(steady)]);
  const down = view([redis([pod('m-0', '10.0.0.1', 'master', false), ...steady.slice(1)])], v0);
  const gone = view([redis(steady.slice(1))], down);
  const promoted = view([redis([pod('r-0', '10.0.0.2', 'master'), pod('r-1', '10.0.0.3', 'replica')])], gone);
  const replicaDown = view([redis([steady[0]!, pod('r-0', '10.0.0.2', 'replica', false), steady[2]!])], v0);
  // Each message is published once per name the Redis is served under: bare and qualified.
  const both = (...ms: string[]): string[] =>
    ['cache', 'ns/cache'].flatMap((n) => ms.map((m) => m.replaceAll('NAME', n)));
  const cases: Array<[string, SentinelView, SentinelView, string[]]> = [
    ['nothing changed', v0, v0, []],
    ['first sight of a Redis: nothing', EMPTY_VIEW, v0, []],
    [
      'master not ready',
      v0,
      down,
      both('+sdown master NAME 10.0.0.1 6379', '+odown master NAME 10.0.0.1 6379 #quorum 1/1'),
    ],
    ['master back', down, v0, both('-sdown master NAME 10.0.0.1 6379', '-odown master NAME 10.0.0.1 6379')],
    ['label gone: still the old address, nothing new', down, gone, []],
    ['promotion: the switch', gone, promoted, both('+switch-master NAME 10.0.0.1 6379 10.0.0.2 6379')],
    ['replica down', v0, replicaDown, both('+sdown slave 10.0.0.2:6379 10.0.0.2 6379 @ NAME 10.0.0.1 6379')],
    ['replica up', replicaDown, v0, both('-sdown slave 10.0.0.2:6379 10.0.0.2 6379 @ NAME 10.0.0.1 6379')],
  ];
  for (const [name, before, after, want] of cases) {
    await t.test(name, () =>
      assert.deepEqual(
        viewEvents(before, after).map((e) => `${e.channel} ${e.message}`),
        want,
      ),
    );
  }
  await t.test('the epoch counts switches', () => assert.equal(lookup(promoted, 'cache')?.epoch, 1));
});

test('viewEvents: label changes switch once per change of address and served name, never to an unlabelled pod', () => {
  const ips = ['10.0.0.1', '10.0.0.2', '10.0.0.3'];
  const step = fc.array(fc.record({ role: fc.constantFrom('master', 'replica', undefined), ready: fc.boolean() }), {
    minLength: 3,
    maxLength: 3,
  });
  fc.assert(
    fc.property(fc.array(step, { minLength: 1, maxLength: 12 }), (steps) => {
      let v = EMPTY_VIEW;
      for (const s of steps) {
        const pods = s.map((p, i) => pod(`p-${i}`, ips[i]!, p.role as SentinelPodInput['role'], p.ready));
        const next = view([redis(pods)], v);
        const switches = viewEvents(v, next).filter((e) => e.channel === '+switch-master');
        const [was, now] = [masterIp(v), masterIp(next)];
        const switched = was !== undefined && now !== undefined && was !== now;
        assert.deepEqual(
          switches.map((e) => e.message),
          switched ? ['cache', 'ns/cache'].map((n) => `${n} ${was} 6379 ${now} 6379`) : [],
        );
        const labelled = pods.filter((p) => p.role === 'master');
        if (now !== was)
          assert.deepEqual(
            labelled.map((p) => p.ip),
            [now],
          );
        v = next;
      }
    }),
  );
});

test('deliveries: subscribers hear only what they subscribed to, and only about Redises they may see', async (t) => {
  const open = view([redis(steady, { namespace: 'a' })]);
  const secret = view([redis(steady, { namespace: 'b', password: 's3cret' })]);
  const moved = (v: SentinelView): SentinelView =>
    buildView(
      [
        {
          ...redis([pod('r-0', '10.0.0.2', 'master')]),
          namespace: v.masters[0]!.namespace,
          password: v.masters[0]!.password,
        },
      ],
      [],
      v,
    );
  const s: Session = { ...newSession(1), channels: new Set(['+switch-master']) };
  const switched = (head: string, ns: string): string[] =>
    ['cache', `${ns}/cache`].map((n) => `${head} ${n} 10.0.0.1 6379 10.0.0.2 6379`);
  const cases: Array<[string, SentinelView, Session, string[]]> = [
    ['channel', open, s, switched('message +switch-master', 'a')],
    ['pattern', open, { ...newSession(1), patterns: new Set(['+sw*']) }, switched('pmessage +sw* +switch-master', 'a')],
    ['another channel', open, { ...newSession(1), channels: new Set(['+sdown']) }, []],
    ['password needed, none given', secret, s, []],
    ['wrong password', secret, { ...s, password: 'nope' }, []],
    ['right password', secret, { ...s, password: 's3cret' }, switched('message +switch-master', 'b')],
  ];
  for (const [name, before, session, want] of cases) {
    await t.test(name, () => {
      const got = deliveries(session, viewEvents(before, moved(before)));
      assert.deepEqual(
        got.map((r) => (r.t === 'array' ? r.items!.map((i) => (i.t === 'bulk' ? i.s : '?')).join(' ') : '?')),
        want,
      );
    });
  }
});

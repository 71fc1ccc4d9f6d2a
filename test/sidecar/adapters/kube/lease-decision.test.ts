// Leader election decisions (pure): who may take the Lease, when, and what gets written.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  decide,
  DEFAULT_LEADER_SETTINGS,
  earliest,
  expiresInMs,
  mayAct,
  observe,
  parseTime,
  releaseSpec,
  settingsProblems,
  type LeaderSettings,
  type LeaseState,
} from '../../../../src/sidecar/adapters/kube/lease-decision.ts';

const S: LeaderSettings = {
  leaseDurationSeconds: 3,
  renewDeadlineMs: 2000,
  retryPeriodMs: 500,
  requestTimeoutMs: 1000,
};
const T0 = Date.parse('2025-01-01T00:00:00.000Z');
const micro = (ms: number) => new Date(ms).toISOString().replace('Z', '000Z');

function lease(over: Partial<LeaseState> = {}): LeaseState {
  return {
    resourceVersion: '10',
    holderIdentity: 'other',
    leaseDurationSeconds: 3,
    acquireTime: micro(T0 - 60_000),
    renewTime: micro(T0),
    leaseTransitions: 4,
    ...over,
  };
}

test('decide: table', async (t) => {
  type Row = [
    string,
    LeaseState | null,
    number,
    { resourceVersion: string; seenAt: number } | undefined,
    string,
    string,
  ];
  const rows: Row[] = [
    ['no lease: create it', null, T0, undefined, 'create', 'LeaseAbsent'],
    ['held by self: renew', lease({ holderIdentity: 'me' }), T0 + 100, undefined, 'renew', 'HeldBySelf'],
    ['released (empty holder): acquire at once', lease({ holderIdentity: '' }), T0, undefined, 'acquire', 'Released'],
    ['released (no holder field): acquire', lease({ holderIdentity: null }), T0, undefined, 'acquire', 'Released'],
    ['other holder, fresh: wait', lease(), T0 + 1000, { resourceVersion: '10', seenAt: T0 }, 'wait', 'HeldByOther'],
    [
      'other holder, exactly at expiry: wait',
      lease(),
      T0 + 3000,
      { resourceVersion: '10', seenAt: T0 },
      'wait',
      'HeldByOther',
    ],
    [
      'other holder, expired on both clocks: take over',
      lease(),
      T0 + 3001,
      { resourceVersion: '10', seenAt: T0 },
      'acquire',
      'Expired',
    ],
    [
      'renewTime old but first seen just now (holder clock behind ours): wait',
      lease(),
      T0 + 10_000,
      { resourceVersion: '10', seenAt: T0 + 9_000 },
      'wait',
      'HeldByOther',
    ],
    [
      'seen long ago but renewTime in our future (holder clock ahead): wait',
      lease({ renewTime: micro(T0 + 5000) }),
      T0 + 4000,
      { resourceVersion: '10', seenAt: T0 },
      'wait',
      'HeldByOther',
    ],
    [
      'observation of an older version does not count',
      lease({ resourceVersion: '11' }),
      T0 + 4000,
      { resourceVersion: '10', seenAt: T0 - 10_000 },
      'wait',
      'HeldByOther',
    ],
    [
      'no renewTime: only our observation counts',
      lease({ renewTime: null }),
      T0 + 3500,
      { resourceVersion: '10', seenAt: T0 },
      'acquire',
      'Expired',
    ],
    [
      "the holder's leaseDurationSeconds counts, not ours",
      lease({ leaseDurationSeconds: 10 }),
      T0 + 5000,
      { resourceVersion: '10', seenAt: T0 },
      'wait',
      'HeldByOther',
    ],
  ];
  for (const [what, l, now, observation, action, reason] of rows) {
    await t.test(what, () => {
      const d = decide({ lease: l, identity: 'me', now, observation, settings: S });
      assert.equal(d.action, action, what);
      assert.equal(d.reason, reason, what);
    });
  }
});

test('decide: what is written', () => {
  const created = decide({ lease: null, identity: 'me', now: T0, settings: S });
  assert.deepEqual(created.action === 'create' && created.spec, {
    holderIdentity: 'me',
    leaseDurationSeconds: 3,
    acquireTime: T0,
    renewTime: T0,
    leaseTransitions: 0,
  });

  const renewed = decide({ lease: lease({ holderIdentity: 'me' }), identity: 'me', now: T0 + 500, settings: S });
  assert.ok(renewed.action === 'renew');
  assert.equal(renewed.spec.acquireTime, T0 - 60_000, 'a renewal keeps acquireTime');
  assert.equal(renewed.spec.renewTime, T0 + 500);
  assert.equal(renewed.spec.leaseTransitions, 4, 'a renewal is not a transition');

  const taken = decide({
    lease: lease(),
    identity: 'me',
    now: T0 + 4000,
    observation: { resourceVersion: '10', seenAt: T0 },
    settings: S,
  });
  assert.ok(taken.action === 'acquire');
  assert.equal(taken.previousHolder, 'other');
  assert.deepEqual(taken.spec, {
    holderIdentity: 'me',
    leaseDurationSeconds: 3,
    acquireTime: T0 + 4000,
    renewTime: T0 + 4000,
    leaseTransitions: 5,
  });

  const waiting = decide({
    lease: lease(),
    identity: 'me',
    now: T0 + 1000,
    observation: { resourceVersion: '10', seenAt: T0 },
    settings: S,
  });
  assert.ok(waiting.action === 'wait');
  assert.equal(waiting.holder, 'other');
  assert.equal(waiting.expiresInMs, 2000);
});

test('observe keeps the first sighting of a version and restarts on a new one', () => {
  const l = lease();
  const first = observe(undefined, l, 100);
  assert.deepEqual(first, { resourceVersion: '10', seenAt: 100 });
  assert.equal(observe(first, l, 200), first);
  assert.deepEqual(observe(first, { ...l, resourceVersion: '11' }, 300), { resourceVersion: '11', seenAt: 300 });
  assert.equal(observe(first, null, 400), undefined);
});

test('earliest: a sighting from the Lease informer counts only for the same version, and only when earlier', () => {
  const own = { resourceVersion: '7', seenAt: T0 + 900 };
  assert.deepEqual(earliest(own, { resourceVersion: '7', seenAt: T0 }), { resourceVersion: '7', seenAt: T0 });
  assert.equal(earliest(own, { resourceVersion: '7', seenAt: T0 + 1000 }), own, 'a later sighting changes nothing');
  assert.equal(earliest(own, { resourceVersion: '6', seenAt: T0 }), own, 'another version says nothing about this one');
  assert.equal(earliest(own, undefined), own);
  assert.equal(
    earliest(undefined, { resourceVersion: '7', seenAt: T0 }),
    undefined,
    'no read of our own: nothing to judge',
  );
  // An elector that became eligible at T0+900 for a Lease unchanged since T0 may take it at T0+3000.
  const lease: LeaseState = {
    resourceVersion: '7',
    holderIdentity: 'dead',
    leaseDurationSeconds: 3,
    renewTime: micro(T0),
  };
  assert.equal(
    decide({
      lease,
      identity: 'me',
      now: T0 + 3001,
      observation: earliest(own, { resourceVersion: '7', seenAt: T0 }),
      settings: S,
    }).action,
    'acquire',
  );
  assert.equal(decide({ lease, identity: 'me', now: T0 + 3001, observation: own, settings: S }).action, 'wait');
});

test('expiry needs both clocks: the later expiry wins', () => {
  assert.equal(expiresInMs(lease(), T0 + 1000, { resourceVersion: '10', seenAt: T0 + 500 }, S), 2500);
  assert.equal(
    expiresInMs(lease({ renewTime: micro(T0 + 800) }), T0 + 1000, { resourceVersion: '10', seenAt: T0 }, S),
    2800,
  );
  assert.equal(expiresInMs(lease(), T0 + 1000, undefined, S), 3000, 'never seen before: counts from now');
});

test('the safety invariant holds for the defaults: the leader stops before anyone may take over', () => {
  assert.deepEqual(settingsProblems(DEFAULT_LEADER_SETTINGS), []);
  const renewAt = T0;
  // Latest moment the leader may act vs earliest moment another instance may take over.
  let lastActing = renewAt;
  while (mayAct(renewAt, lastActing + 1, DEFAULT_LEADER_SETTINGS)) lastActing++;
  const l = lease({ renewTime: micro(renewAt) });
  let firstTakeover = renewAt;
  while (
    decide({
      lease: l,
      identity: 'me',
      now: firstTakeover,
      observation: { resourceVersion: '10', seenAt: renewAt },
      settings: DEFAULT_LEADER_SETTINGS,
    }).action === 'wait'
  )
    firstTakeover++;
  assert.ok(lastActing < firstTakeover);
  assert.equal(
    firstTakeover - lastActing,
    DEFAULT_LEADER_SETTINGS.leaseDurationSeconds * 1000 - DEFAULT_LEADER_SETTINGS.renewDeadlineMs + 2,
  );
});

test('settings that would break the invariant are refused', async (t) => {
  const rows: Array<[Partial<LeaderSettings>, RegExp]> = [
    [{ renewDeadlineMs: 3000 }, /less than leaseDurationSeconds/],
    [{ renewDeadlineMs: 400 }, /greater than retryPeriodMs/],
    [{ leaseDurationSeconds: 2.5 }, /whole number/],
    [{ requestTimeoutMs: 2500 }, /requestTimeoutMs/],
    [{ retryPeriodMs: 0 }, /retryPeriodMs must be > 0/],
  ];
  for (const [over, pattern] of rows)
    await t.test(JSON.stringify(over), () =>
      assert.match(settingsProblems({ ...S, ...over }).join('; '), pattern, JSON.stringify(over)),
    );
});

test('mayAct, releaseSpec and parseTime', () => {
  assert.equal(mayAct(undefined, T0, S), false);
  assert.equal(mayAct(T0, T0 + 1999, S), true);
  assert.equal(mayAct(T0, T0 + 2000, S), false);
  assert.deepEqual(releaseSpec(lease({ holderIdentity: 'me' }), T0), {
    holderIdentity: '',
    leaseDurationSeconds: 1,
    acquireTime: T0,
    renewTime: T0,
    leaseTransitions: 4,
  });
  assert.equal(parseTime('2025-01-01T00:00:00.123456Z'), T0 + 123);
  assert.equal(parseTime(new Date(T0)), T0);
  assert.equal(parseTime('garbage'), undefined);
  assert.equal(parseTime(null), undefined);
});

// The shared Secret reading (src/sidecar/core/credentials.ts): when the Secrets are read (polled,
// retried while a value is missing, soon after a refusal), one password read (a generated Secret
// made by the leader only, an unusable value refused), and the operator's password handed on once
// per change. A fake clock and a fake API.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import type { AuthSecretRef } from '../../../src/api/auth.ts';
import type { SecretOwner } from '../../../src/sidecar/adapters/kube/client.ts';
import { SecretPasswords, type SecretPasswordsOptions } from '../../../src/sidecar/core/credentials.ts';

const REF = { namespace: 'ns', name: 'cache', uid: 'u1' };
const GENERATED: AuthSecretRef = { secretName: 'cache-operator', key: 'password', generated: true };
const USERS: AuthSecretRef = { secretName: 'mine', key: 'pw', generated: false };

function setup(extra: Partial<SecretPasswordsOptions> = {}) {
  let now = 0;
  let leader = true;
  const stored = new Map<string, string>();
  const created: Array<{ name: string; owner: SecretOwner | undefined }> = [];
  const passwords: Array<[string, string | undefined]> = [];
  let reads = 0;
  let complete = true;
  const lines: Array<Record<string, unknown>> = [];
  const s: SecretPasswords = new SecretPasswords({
    ref: REF,
    kube: {
      readSecretValue: async (_ns, name) => stored.get(name) ?? null,
      ensureAuthSecret: async (_ref, secret, owner) => {
        const name = secret!.secretName;
        if (stored.has(name)) return { password: stored.get(name)!, created: false };
        stored.set(name, 'generated-pw');
        created.push({ name, owner });
        return { password: 'generated-pw', created: true };
      },
    },
    isLeader: () => leader,
    log: pino({ level: 'info' }, { write: (l: string) => lines.push(JSON.parse(l) as Record<string, unknown>) }),
    now: () => now,
    kind: 'Redis',
    generatedNote: '(it is created by the leader)',
    everyMs: () => 10_000,
    read: async () => {
      reads++;
      s.useOperator((await s.password(GENERATED)).value);
      return complete;
    },
    onOperatorPassword: (p, previous) => passwords.push([p, previous]),
    ...extra,
  });
  return {
    s,
    stored,
    created,
    passwords,
    lines,
    reads: () => reads,
    at: (ms: number) => (now = ms),
    setLeader: (v: boolean) => (leader = v),
    setComplete: (v: boolean) => (complete = v),
  };
}

const known = (s: SecretPasswords) => () => s.operator !== undefined;
/** A read started by an ensure() that did not wait for it has finished. */
const settle = () => new Promise((r) => setImmediate(r));

test('when the Secrets are read', async (t) => {
  await t.test('the first ensure waits for the read; a known password never waits again', async () => {
    const w = setup();
    assert.equal(await w.s.ensure(known(w.s)), true);
    assert.equal(w.s.operator, 'generated-pw');
    assert.equal(w.reads(), 1);
    w.at(5000);
    await w.s.ensure(known(w.s));
    assert.equal(w.reads(), 1, 'within the polling interval: cached');
    w.at(10_001);
    await w.s.ensure(known(w.s));
    assert.equal(w.reads(), 2, 'polled after everyMs');
  });
  await t.test('while a value is missing: again after a second', async () => {
    const w = setup();
    w.setComplete(false);
    await w.s.ensure(known(w.s));
    w.at(900);
    await w.s.ensure(known(w.s));
    assert.equal(w.reads(), 1);
    w.at(1001);
    await w.s.ensure(known(w.s));
    assert.equal(w.reads(), 2);
  });
  await t.test('a refusal reads again within a second; a new Secret name at once', async () => {
    const w = setup();
    await w.s.ensure(known(w.s));
    w.s.refused();
    w.at(1001);
    await w.s.ensure(known(w.s));
    assert.equal(w.reads(), 2);
    await settle();
    w.at(2002);
    w.s.invalidate();
    await w.s.ensure(known(w.s));
    assert.equal(w.reads(), 3);
  });
});

test('a generated Secret is made by the leader only, with the kind-given owner', async (t) => {
  await t.test('leader', async () => {
    const owner = { kind: 'RedisCluster', labels: { a: 'b' } };
    const w = setup({ owner, kind: 'RedisCluster' });
    assert.deepEqual(await w.s.password(GENERATED), { value: 'generated-pw', problem: null });
    assert.deepEqual(w.created, [{ name: 'cache-operator', owner }]);
    assert.ok(
      w.lines.some((l) => l['msg'] === 'created a generated secret (random password, owned by the RedisCluster)'),
    );
  });
  await t.test('standby', async () => {
    const w = setup();
    w.setLeader(false);
    const r = await w.s.password(GENERATED);
    assert.deepEqual(w.created, []);
    assert.deepEqual(r.problem, {
      text: 'secret cache-operator (key password) not found (it is created by the leader)',
      userOwned: false,
      reason: 'AuthSecretMissing',
    });
  });
});

test("the user's Secret: missing or unusable is a problem worth a Warning, never quoting the value", async (t) => {
  const cases: Array<[string, string | undefined, string | null, string | undefined]> = [
    ['missing', undefined, null, 'AuthSecretMissing'],
    ['empty', '', null, 'PasswordUnwritable'],
    ['a control character', 'pw\nx', null, 'PasswordUnwritable'],
    ['fine', 'pw', 'pw', undefined],
  ];
  for (const [name, stored, value, reason] of cases) {
    await t.test(name, async () => {
      const w = setup();
      if (stored !== undefined) w.stored.set('mine', stored);
      const r = await w.s.password(USERS);
      assert.equal(r.value, value);
      assert.equal(r.problem?.reason, reason);
      if (r.problem) {
        assert.equal(r.problem.userOwned, true);
        if (stored) assert.ok(!r.problem.text.includes(stored), 'never the value');
      }
    });
  }
});

test("the operator's password is handed on once per change, with the one before", async () => {
  const w = setup();
  w.s.useOperator(null);
  w.s.useOperator('a');
  w.s.useOperator('a');
  w.s.useOperator('b');
  assert.deepEqual(w.passwords, [
    ['a', undefined],
    ['b', 'a'],
  ]);
  assert.equal(w.s.operator, 'b');
});

test('a failed read is logged with the kind and retried after a second', async () => {
  const w = setup({
    read: async () => {
      throw new Error('boom');
    },
  });
  assert.equal(await w.s.ensure(known(w.s)), false);
  assert.ok(w.lines.some((l) => l['msg'] === 'could not read the Redis secrets'));
});

// The polling helpers: until (the one every test waits with) and pollUntil (the cluster
// harnesses' variant that tolerates a check throwing). Timers only; no network.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { until } from './until.ts';
import { pollUntil } from './cluster-views.ts';

test('until returns the first answer that is not undefined, null or false', async () => {
  let calls = 0;
  const answers = [undefined, null, false, 0, 1];
  assert.equal(await until('a count', () => answers[calls++]), 0, '0 is an answer');
  assert.equal(calls, 4);
  assert.equal(await until('an async answer', async () => 'yes'), 'yes');
  assert.equal(await until('true', () => true), true);
});

test('until fails with what it waited for, after the timeout, with the dump', async () => {
  const started = performance.now();
  await assert.rejects(
    until('the moon', () => false, 50, { everyMs: 5, dump: () => 'state: no moon' }),
    (err: Error) => {
      assert.equal(err.name, 'AssertionError');
      assert.equal(err.message, 'timed out after 50 ms waiting for the moon\nstate: no moon');
      return true;
    },
  );
  assert.ok(performance.now() - started >= 50);
  await assert.rejects(
    until('nothing', () => undefined, 0),
    { message: 'timed out after 0 ms waiting for nothing' },
  );
});

test('until does not retry a check that throws', async () => {
  let calls = 0;
  await assert.rejects(
    until('a broken check', () => {
      calls += 1;
      throw new Error('boom');
    }),
    { message: 'boom' },
  );
  assert.equal(calls, 1);
});

test('pollUntil retries a check that throws, and names the last error if it times out', async () => {
  let calls = 0;
  const v = await pollUntil(
    () => {
      calls += 1;
      if (calls < 3) throw new Error('not yet');
      return 'there';
    },
    1000,
    'a flaky check',
    () => 'dump',
  );
  assert.equal(v, 'there');
  await assert.rejects(
    pollUntil(
      () => {
        throw new Error('down');
      },
      30,
      'a dead check',
      () => 'the dump',
    ),
    {
      message: 'timed out after 30 ms waiting for a dead check\n(last check threw: down)\n\nthe dump',
    },
  );
  await assert.rejects(
    pollUntil(
      () => false,
      30,
      'a false check',
      () => 'the dump',
    ),
    { message: 'timed out after 30 ms waiting for a false check\n\nthe dump' },
  );
});

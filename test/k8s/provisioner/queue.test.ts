// WorkQueue: coalescing, never in the caller's stack, retry with back-off. No network.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkQueue } from './queue.ts';

test('keys added together are handled once, after the caller returns', async () => {
  const seen: string[] = [];
  const q = new WorkQueue(
    (k) => seen.push(k),
    () => {},
  );
  q.add('a');
  q.add('b');
  q.add('a');
  assert.deepEqual(seen, [], "not in the caller's stack");
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(seen, ['a', 'b']);
  q.stop();
});

test('a handler that throws is retried until it succeeds; stop() ends retries', async () => {
  let calls = 0;
  const errors: unknown[] = [];
  const q = new WorkQueue(
    () => {
      calls += 1;
      if (calls < 3) throw new Error(`fail ${calls}`);
    },
    (_k, e) => errors.push(e),
    1,
  );
  q.add('k');
  const end = Date.now() + 5000;
  while (calls < 3 && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
  assert.equal(calls, 3);
  assert.deepEqual(
    errors.map((e) => (e as Error).message),
    ['fail 1', 'fail 2'],
  );
  q.stop();
  q.add('k');
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(calls, 3);
});

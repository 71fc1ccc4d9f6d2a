// Pure: when a Redis's Secrets are read again (decide/secret-reads.ts): polled, since nothing
// publishes their versions any more. Table-driven.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decideSecretRead, type SecretReadState } from '../../../../src/sidecar/core/decide/secret-reads.ts';

const base: SecretReadState = { loadedAt: 50_000, attemptAt: 50_000, refused: false, everyMs: 10_000, now: 55_000 };

test('whether the Secrets are read again', async (t) => {
  const table: Array<[string, Partial<SecretReadState>, boolean]> = [
    ['read less than the interval ago: not again', {}, false],
    ['the interval passed: polled', { now: 60_001 }, true],
    ['never read: read', { loadedAt: -Infinity, attemptAt: -Infinity }, true],
    [
      'a value missing (never complete): read again a second after the last attempt',
      { loadedAt: -Infinity, attemptAt: 53_900 },
      true,
    ],
    ['a value missing, an attempt just now: wait a second', { loadedAt: -Infinity, attemptAt: 54_500 }, false],
    ['a failed read (loadedAt is old): retried a second later', { loadedAt: 30_000, attemptAt: 53_000 }, true],
    ['a node refused the password: read', { refused: true }, true],
    ['a node refused the password just after a read: wait a second', { refused: true, attemptAt: 54_900 }, false],
  ];
  for (const [name, change, read] of table) {
    await t.test(name, () => {
      const d = decideSecretRead({ ...base, ...change });
      assert.equal(d.read, read, d.reason);
      assert.notEqual(d.reason, '');
    });
  }
});

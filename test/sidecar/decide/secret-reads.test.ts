// Pure: when a Redis's Secrets are read again (decide/secret-reads.ts). Table-driven.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decideSecretRead, secretVersions, type SecretReadState } from '../../../src/sidecar/decide/secret-reads.ts';

const base: SecretReadState = {
  versions: 'a@1,b@2',
  readVersions: 'a@1,b@2',
  loadedAt: 0,
  attemptAt: 0,
  failed: false,
  refused: false,
  everyMs: 10_000,
  now: 60_000,
};

test('whether the Secrets are read again', async (t) => {
  const table: Array<[string, Partial<SecretReadState>, boolean]> = [
    ['versions unchanged: never read, however long ago the last read was', {}, false],
    ['a version changed: read', { versions: 'a@1,b@3' }, true],
    ['a version changed less than a second after the last attempt: wait', { versions: 'a@1,b@3', attemptAt: 59_500 }, false],
    ['a Secret appeared (a new entry): read', { versions: 'a@1,b@2,c@9' }, true],
    ['never read: read', { readVersions: undefined, loadedAt: -Infinity, attemptAt: -Infinity }, true],
    ['the last read failed: retried after a second', { failed: true }, true],
    ['the last read failed just now: wait', { failed: true, attemptAt: 59_800 }, false],
    ['a node refused the password: read, versions or not', { refused: true }, true],
    ['a node refused the password just after a read: wait a second', { refused: true, attemptAt: 59_900 }, false],
    ['no versions published: polled once the interval passed', { versions: undefined, loadedAt: 49_000 }, true],
    ['no versions published: not before the interval', { versions: undefined, loadedAt: 55_000 }, false],
    ['no versions, never loaded, an attempt just now: wait a second', { versions: undefined, loadedAt: -Infinity, attemptAt: 59_900 }, false],
  ];
  for (const [name, change, read] of table) {
    await t.test(name, () => {
      const d = decideSecretRead({ ...base, ...change });
      assert.equal(d.read, read, d.reason);
      assert.notEqual(d.reason, '');
    });
  }
});

test('secretVersions: one string per set of versions, in any order; undefined without status.secrets', () => {
  const a = secretVersions({
    secrets: [
      { name: 'x', resourceVersion: '2' },
      { name: 'a', resourceVersion: '10' },
    ],
  });
  assert.equal(
    a,
    secretVersions({
      secrets: [
        { name: 'a', resourceVersion: '10' },
        { name: 'x', resourceVersion: '2' },
      ],
    }),
  );
  assert.notEqual(
    a,
    secretVersions({
      secrets: [
        { name: 'a', resourceVersion: '11' },
        { name: 'x', resourceVersion: '2' },
      ],
    }),
  );
  assert.equal(secretVersions({ secrets: [] }), '');
  assert.equal(secretVersions({}), undefined);
  assert.equal(secretVersions(undefined), undefined);
});

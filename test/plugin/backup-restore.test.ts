// The plugin's backup and restore decisions: `backup` refused at once, naming the field, when the
// Redis has nowhere to store it; `restore --like` copies the other Redis's spec without what
// cannot carry over to a new Redis (its restore, hibernation, TLS Secret) and says what it left out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as ops from '../../src/plugin/ops.ts';

const S3 = { s3: { bucket: 'redis-backups', region: 'us-east-1' } };
const TARGET = { name: 'copy', namespace: 'apps' };

test('backup: refused without spec.backup.storage, naming it; storage alone is enough', async (t) => {
  const cases: Array<[string, Record<string, unknown> | undefined, boolean]> = [
    ['no spec at all', undefined, true],
    ['the example Redis: no spec.backup', { replicas: 2 }, true],
    [
      'spec.backup without storage (as a stored object never is, but read as such)',
      { backup: { schedule: '@daily' } },
      true,
    ],
    ['spec.backup.storage alone', { backup: { storage: S3 } }, false],
    ['with a schedule', { backup: { schedule: '@daily', storage: S3 } }, false],
  ];
  for (const [what, spec, refused] of cases)
    await t.test(what, () => {
      const why = ops.backupRefusal({ metadata: { name: 'my-redis' }, ...(spec !== undefined ? { spec } : {}) });
      if (!refused) return assert.equal(why, undefined);
      assert.match(String(why), /^my-redis has no spec\.backup\.storage: .*no schedule needed/);
    });
});

test('restore --like: what carries over, what is left out and said', async (t) => {
  const base = {
    version: '7.2',
    replicas: 1,
    backup: { schedule: '@daily', storage: S3 },
    config: { 'maxmemory-policy': 'allkeys-lru' },
  };
  const cases: Array<
    [string, Record<string, unknown>, string | undefined, Record<string, unknown> | string, RegExp[]]
  > = [
    ['a plain Redis: everything carries over', base, undefined, base, []],
    [
      'its restore and hibernation are left out, and said',
      { ...base, hibernate: true, restore: { backup: 'old' } },
      undefined,
      base,
      [/^spec\.restore of src /, /^spec\.hibernate: true of src .*never start/],
    ],
    ['hibernate: false is dropped without a word (the default)', { ...base, hibernate: false }, undefined, base, []],
    [
      'tls with cert-manager: the Secret name is left out, so cert-manager issues one for the new name',
      { ...base, tls: { secretName: 'src-tls', certManager: { issuerRef: { name: 'ca' } } } },
      undefined,
      { ...base, tls: { certManager: { issuerRef: { name: 'ca' } } } },
      [/^spec\.tls\.secretName src-tls of src \(its certificate names src; cert-manager issues copy-tls/],
    ],
    [
      'tls with cert-manager and no Secret name: nothing to leave out',
      { ...base, tls: { certManager: { issuerRef: { name: 'ca' } } } },
      undefined,
      { ...base, tls: { certManager: { issuerRef: { name: 'ca' } } } },
      [],
    ],
    [
      "tls with a Secret of the user's own: refused, never served in plaintext",
      { ...base, tls: { secretName: 'src-tls' } },
      undefined,
      "src's spec.tls.secretName src-tls holds a certificate for src, not for copy (it must name *.copy-headless.apps.svc): give --tls-secret with a Secret for copy",
      [],
    ],
    [
      '--tls-secret replaces it, and says so',
      { ...base, tls: { secretName: 'src-tls' } },
      'copy-tls',
      { ...base, tls: { secretName: 'copy-tls' } },
      [/^spec\.tls\.secretName src-tls of src \(replaced by --tls-secret copy-tls\)$/],
    ],
    [
      '--tls-secret without TLS on the other: the new Redis serves TLS',
      base,
      'copy-tls',
      { ...base, tls: { secretName: 'copy-tls' } },
      [],
    ],
    ['--tls-secret must be a Secret name', base, 'Copy TLS', '--tls-secret "Copy TLS": not a Secret name', []],
  ];
  for (const [what, source, tlsSecret, want, said] of cases)
    await t.test(what, () => {
      const frozen = structuredClone(source);
      const r = ops.likeSpec('src', source, TARGET, tlsSecret);
      assert.deepEqual(source, frozen, "the other Redis's spec is not changed");
      if (typeof want === 'string') return assert.deepEqual(r, { ok: false, reason: want });
      assert.ok(r.ok);
      assert.deepEqual(r.spec, want);
      assert.equal(r.leftOut.length, said.length, r.leftOut.join('\n'));
      said.forEach((re, i) => assert.match(r.leftOut[i]!, re));
    });
});

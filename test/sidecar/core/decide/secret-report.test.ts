// Pure: what the sidecar reports of a Redis's Secrets, and when it looks again
// (decide/secret-report.ts). Table-driven; the report never carries a value.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  parseSecretReport,
  passwordWritable,
  redisSecretUses,
  secretNeeds,
} from '../../../../src/api/secret-report.ts';
import { validateSpec } from '../../../../src/api/validate.ts';
import {
  decideReportLook,
  REPORT_RETRY_MS,
  reportComplete,
  reportToWrite,
  type FetchedSecret,
  type ReportLookState,
} from '../../../../src/sidecar/core/decide/secret-report.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const spec = (extra: Record<string, unknown> = {}) => {
  const v = validateSpec('cache', { replicas: 2, ...extra });
  assert.ok(v.ok, JSON.stringify(!v.ok && v.problems));
  return v.spec;
};

test('the needs: every Secret the spec names, merged by name, password keys marked', () => {
  const needs = secretNeeds(
    redisSecretUses(
      'cache',
      spec({
        tls: { secretName: 'corp-tls' },
        users: [
          { name: 'a', rules: '+ping', passwordSecret: { name: 'app', key: 'a' } },
          { name: 'b', rules: '+ping', passwordSecret: { name: 'app', key: 'b' } },
        ],
        backup: {
          schedule: '0 * * * *',
          retention: 7,
          storage: { s3: { bucket: 'redis-backups', region: 'r', credentialsSecret: { name: 'app' } } },
        },
      }),
    ),
  );
  assert.deepEqual(needs, [
    { name: 'app', keys: ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'a', 'b'], passwordKeys: ['a', 'b'] },
    { name: 'cache-auth', keys: ['password'], passwordKeys: ['password'] },
    // Monitoring is on by default, so the exporter's Secret is named.
    { name: 'cache-exporter', keys: ['password'], passwordKeys: ['password'] },
    { name: 'cache-operator', keys: ['password'], passwordKeys: ['password'] },
    { name: 'corp-tls', keys: ['ca.crt', 'tls.crt', 'tls.key'], passwordKeys: [] },
  ]);
});

test('the report: versions and the named keys present, unwritable passwords, missing Secrets; no value, no other key', async (t) => {
  const needs = [
    { name: 'auth', keys: ['password'], passwordKeys: ['password'] },
    { name: 'tls', keys: ['ca.crt', 'tls.crt', 'tls.key'], passwordKeys: [] },
  ];
  const table: Array<[string, Record<string, FetchedSecret>, string]> = [
    [
      'both found, whole',
      {
        auth: { resourceVersion: '7', data: { password: b64('pw'), other: b64('x') } },
        tls: { resourceVersion: '9', data: { 'ca.crt': 'YQ==', 'tls.crt': 'YQ==', 'tls.key': 'YQ==' } },
      },
      '[{"name":"auth","resourceVersion":"7","keys":["password"],"unwritable":[]},{"name":"tls","resourceVersion":"9","keys":["ca.crt","tls.crt","tls.key"],"unwritable":[]}]',
    ],
    [
      'a password with a newline, a TLS Secret without its key',
      {
        auth: { resourceVersion: '7', data: { password: b64('p\nw') } },
        tls: { resourceVersion: '9', data: { 'tls.crt': 'YQ==' } },
      },
      '[{"name":"auth","resourceVersion":"7","keys":["password"],"unwritable":["password"]},{"name":"tls","resourceVersion":"9","keys":["tls.crt"],"unwritable":[]}]',
    ],
    [
      'an empty password; the TLS Secret missing',
      { auth: { resourceVersion: '7', data: { password: '' } }, tls: null },
      '[{"name":"auth","resourceVersion":"7","keys":["password"],"unwritable":["password"]},{"name":"tls","missing":true}]',
    ],
    ['nothing read', {}, '[{"name":"auth","missing":true},{"name":"tls","missing":true}]'],
  ];
  for (const [name, fetched, expected] of table) {
    await t.test(name, () => {
      const map = new Map(Object.entries(fetched));
      assert.equal(reportToWrite(needs, map, undefined), expected);
      assert.equal(reportToWrite(needs, map, expected), null, 'unchanged: nothing to write');
      assert.ok(parseSecretReport(expected), 'the hook reads what the sidecar writes');
    });
  }
  assert.equal(reportComplete(needs, new Map(Object.entries(table[0]![1]))), true);
  assert.equal(reportComplete(needs, new Map(Object.entries(table[1]![1]))), false);
});

test('property: the report depends on a password only through whether it is writable (so it never carries it)', () => {
  const need = [{ name: 'auth', keys: ['password'], passwordKeys: ['password'] }];
  const reportWith = (password: string, rv: string) =>
    reportToWrite(need, new Map([['auth', { resourceVersion: rv, data: { password: b64(password) } }]]), undefined);
  fc.assert(
    fc.property(fc.string(), fc.stringMatching(/^[0-9]{1,12}$/), (password, rv) => {
      assert.equal(reportWith(password, rv), reportWith(passwordWritable(password) ? 'stand-in' : '', rv));
    }),
  );
});

test('when the leader looks again', async (t) => {
  const base: ReportLookState = {
    leader: true,
    needs: 'n',
    lookedNeeds: 'n',
    lookedAt: 0,
    complete: true,
    everyMs: 10_000,
    now: 5000,
  };
  const table: Array<[string, Partial<ReportLookState>, boolean]> = [
    ['looked recently, all found', {}, false],
    ['the interval passed', { now: 10_000 }, true],
    ['a Secret missing: sooner', { complete: false, now: REPORT_RETRY_MS }, true],
    ['a Secret missing, looked just now', { complete: false, now: REPORT_RETRY_MS - 1 }, false],
    ['the spec names other Secrets: at once', { needs: 'm' }, true],
    ['not the leader: never', { leader: false, now: 1e9, needs: 'm' }, false],
    ['no valid spec: never', { needs: undefined, now: 1e9 }, false],
  ];
  for (const [name, change, look] of table)
    await t.test(name, () => assert.equal(decideReportLook({ ...base, ...change }).look, look));
});

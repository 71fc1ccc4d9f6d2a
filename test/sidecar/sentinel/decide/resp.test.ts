// RESP2 requests in and replies out: the forms redis-server accepts, the limits a hostile client meets, and
// open-ended input (any bytes, any split) never throwing and parsing the same however it is cut.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  DEFAULT_RESP_LIMITS,
  array,
  bulk,
  bulks,
  encodeReply,
  encodeRequest,
  error,
  int,
  parseRequests,
  simple,
} from '../../../../src/sidecar/sentinel/decide/resp.ts';

const b = (s: string): Buffer => Buffer.from(s, 'utf8');

test('parseRequests: the request forms', async (t) => {
  const cases: Array<[string, string, string[][], number]> = [
    ['one multibulk', '*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n', [['PING', 'hi']], 22],
    ['two pipelined', '*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nROLE\r\n', [['PING'], ['ROLE']], 28],
    ['inline', 'PING\r\n', [['PING']], 6],
    ['inline, LF only, extra spaces', 'SENTINEL  masters \n', [['SENTINEL', 'masters']], 19],
    ['empty inline line skipped', '\r\nPING\r\n', [['PING']], 8],
    ['partial header waits', '*2\r\n$4\r\nPI', [], 0],
    ['partial bulk waits', '*1\r\n$4\r\nPING', [], 0],
    ['complete then partial', 'PING\r\n*1\r\n$4', [['PING']], 6],
    ['empty bulk', '*2\r\n$4\r\nAUTH\r\n$0\r\n\r\n', [['AUTH', '']], 20],
    ['multibyte bulk counted in bytes', '*1\r\n$2\r\n\u00e9\r\n', [['\u00e9']], 12],
    ['zero-length multibulk skipped', '*0\r\nPING\r\n', [['PING']], 10],
  ];
  for (const [name, input, commands, consumed] of cases) {
    await t.test(name, () => assert.deepEqual(parseRequests(b(input)), { ok: true, commands, consumed }));
  }
});

test('parseRequests: protocol errors and limits', async (t) => {
  const big = DEFAULT_RESP_LIMITS.maxArgBytes + 1;
  const cases: Array<[string, string, RegExp, string[][]]> = [
    ['bad multibulk length', '*x\r\n', /invalid multibulk length/, []],
    ['too many arguments', `*${DEFAULT_RESP_LIMITS.maxArgs + 1}\r\n`, /invalid multibulk length/, []],
    ['oversized bulk refused at its header', `*1\r\n$${big}\r\n`, /invalid bulk length/, []],
    ['negative bulk', '*1\r\n$-1\r\n', /invalid bulk length/, []],
    ['not a bulk', '*1\r\n:1\r\n', /expected '\$'/, []],
    ['bulk without CRLF', '*1\r\n$2\r\nabcd\r\n', /not followed by CRLF/, []],
    ['endless inline', 'x'.repeat(DEFAULT_RESP_LIMITS.maxInlineBytes + 3), /too big inline/, []],
    ['endless header', `*1${'1'.repeat(40)}`, /invalid multibulk length/, []],
    ['commands before the error are kept', 'PING\r\n*x\r\n', /invalid multibulk/, [['PING']]],
  ];
  for (const [name, input, want, commands] of cases) {
    await t.test(name, () => {
      const r = parseRequests(b(input));
      assert.equal(r.ok, false);
      assert.ok(!r.ok && want.test(r.error), JSON.stringify(r));
      assert.deepEqual(r.commands, commands);
    });
  }
});

test('encodeReply: every reply type', async (t) => {
  const cases: Array<[string, ReturnType<typeof simple>, string]> = [
    ['simple', simple('OK'), '+OK\r\n'],
    ['simple cannot forge a second line', simple('a\r\n+b'), '+a +b\r\n'],
    ['error', error('ERR x'), '-ERR x\r\n'],
    ['int', int(42), ':42\r\n'],
    ['bulk in bytes', bulk('\u00e9'), '$2\r\n\u00e9\r\n'],
    ['null bulk', bulk(null), '$-1\r\n'],
    ['null array', array(null), '*-1\r\n'],
    ['nested', array([bulks(['a']), int(1)]), '*2\r\n*1\r\n$1\r\na\r\n:1\r\n'],
  ];
  for (const [name, reply, want] of cases) await t.test(name, () => assert.equal(encodeReply(reply), want));
});

const arg = fc.string({ unit: 'binary', maxLength: 40 });
const requests = fc.array(fc.array(arg, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 5 });

test('parseRequests: what a client encodes comes back whole, however the bytes are split', () => {
  fc.assert(
    fc.property(requests, fc.array(fc.nat(), { maxLength: 6 }), (reqs, cuts) => {
      const bytes = b(reqs.map(encodeRequest).join(''));
      const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((x, y) => x - y);
      const got: string[][] = [];
      // Fed chunk by chunk, keeping the unconsumed rest, as the adapter does.
      let pending = Buffer.alloc(0);
      let start = 0;
      for (const end of [...points, bytes.length]) {
        pending = Buffer.concat([pending, bytes.subarray(start, end)]);
        start = end;
        const r = parseRequests(pending);
        assert.ok(r.ok);
        got.push(...r.commands);
        pending = pending.subarray(r.consumed);
      }
      assert.equal(pending.length, 0);
      assert.deepEqual(got, reqs);
    }),
  );
});

test('parseRequests: any bytes never throw, and never return more than they were given', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
      const r = parseRequests(bytes);
      if (r.ok) assert.ok(r.consumed >= 0 && r.consumed <= bytes.length);
      for (const c of r.commands) assert.ok(c.length > 0 && c.length <= DEFAULT_RESP_LIMITS.maxArgs);
    }),
  );
});

/** Bytes made of RESP's own tokens, so that near-valid requests (the interesting ones) are common. */
const respish = fc
  .array(fc.constantFrom('*', '$', '\r\n', '\n', '0', '1', '2', '4', '-1', 'PING', ' ', 'x', '\u00e9'), {
    maxLength: 40,
  })
  .map((parts) => b(parts.join('')));

function feed(bytes: Buffer, points: number[]): { commands: string[][]; failed: boolean } {
  const commands: string[][] = [];
  let pending = Buffer.alloc(0);
  let start = 0;
  for (const end of [...points, bytes.length]) {
    pending = Buffer.concat([pending, bytes.subarray(start, end)]);
    start = end;
    const r = parseRequests(pending);
    commands.push(...r.commands);
    if (!r.ok) return { commands, failed: true };
    pending = pending.subarray(r.consumed);
  }
  return { commands, failed: false };
}

test('parseRequests: near-valid input parses the same whole or cut anywhere (up to the first error)', () => {
  fc.assert(
    fc.property(respish, fc.array(fc.nat(), { maxLength: 6 }), (bytes, cuts) => {
      const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((x, y) => x - y);
      const whole = feed(bytes, []);
      const cut = feed(bytes, points);
      assert.deepEqual(cut.commands, whole.commands);
      assert.equal(cut.failed, whole.failed);
    }),
    { numRuns: 2000 },
  );
});

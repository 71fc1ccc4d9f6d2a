// Every command of the Sentinel endpoint, as a table: request -> reply (as the wire carries it) and the session after.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MAX_SUBSCRIPTIONS, handle, type SentinelContext } from '../../../../src/sidecar/sentinel/decide/commands.ts';
import { globMatch } from '../../../../src/sidecar/sentinel/decide/glob.ts';
import { encodeReply } from '../../../../src/sidecar/sentinel/decide/resp.ts';
import { newSession, type Session } from '../../../../src/sidecar/sentinel/decide/session.ts';
import { EMPTY_VIEW, buildView, type SentinelPodInput } from '../../../../src/sidecar/sentinel/decide/view.ts';

const pod = (name: string, ip: string, role: SentinelPodInput['role'], ready = true): SentinelPodInput => ({
  name,
  ip,
  role,
  ready,
});
const view = buildView(
  [
    {
      namespace: 'ns',
      name: 'cache',
      masterName: 'mymaster',
      password: null,
      port: 6379,
      pods: [
        pod('m-0', '10.0.0.1', 'master'),
        pod('r-0', '10.0.0.2', 'replica'),
        pod('r-1', '10.0.0.3', 'replica', false),
      ],
    },
    {
      namespace: 'ns',
      name: 'vault',
      masterName: undefined,
      password: 's3cret',
      port: 6379,
      pods: [pod('v-0', '10.0.1.1', 'master')],
    },
    { namespace: 'ns', name: 'new', masterName: undefined, password: null, port: 6379, pods: [] },
  ],
  [{ ip: '10.1.0.2', port: 26379, runid: 'b'.repeat(40) }],
  EMPTY_VIEW,
);
const ctx: SentinelContext = { view, myid: 'a'.repeat(40) };
const fresh = newSession(7);
const authed: Session = { ...fresh, password: 's3cret' };
const subscribed: Session = { ...fresh, channels: new Set(['+switch-master']) };

/** The wire form of the replies, with CRLF as `|` so the tables read on one line. */
function wire(session: Session, ...argv: string[]): string {
  return handle(ctx, session, argv).replies.map(encodeReply).join('').replaceAll('\r\n', '|');
}
const bulkArray = (xs: string[]): string => `*${xs.length}|${xs.map((x) => `$${Buffer.byteLength(x)}|${x}|`).join('')}`;

test('commands: the replies', async (t) => {
  const cases: Array<[string, Session, string[], string | RegExp]> = [
    ['PING', fresh, ['PING'], '+PONG|'],
    ['PING msg', fresh, ['ping', 'hi'], '$2|hi|'],
    ['PING subscribed', subscribed, ['PING'], '*2|$4|pong|$0||'],
    ['PING arity', fresh, ['PING', 'a', 'b'], /^-ERR wrong number of arguments for 'ping'/],
    ['AUTH right', fresh, ['AUTH', 's3cret'], '+OK|'],
    ['AUTH default user', fresh, ['AUTH', 'default', 's3cret'], '+OK|'],
    ['AUTH other user', fresh, ['AUTH', 'admin', 's3cret'], /^-WRONGPASS/],
    ['AUTH wrong', fresh, ['AUTH', 'nope'], /^-WRONGPASS/],
    ['AUTH arity', fresh, ['AUTH'], /^-ERR wrong number/],
    // The fields and order of a real Sentinel's HELLO: no `role` (oracle.test.ts compares with one).
    ['HELLO', fresh, ['HELLO'], /^\*12\|\$6\|server\|\$5\|redis\|.*\$4\|mode\|\$8\|sentinel\|\$7\|modules\|\*0\|$/],
    ['HELLO 2', fresh, ['HELLO', '2'], /proto\|:2\|\$2\|id\|:7\|/],
    ['HELLO 3', fresh, ['HELLO', '3'], '-NOPROTO unsupported protocol version|'],
    ['HELLO x', fresh, ['HELLO', 'x'], /^-ERR Protocol version/],
    ['HELLO AUTH wrong', fresh, ['HELLO', '2', 'AUTH', 'default', 'nope'], /^-WRONGPASS/],
    ['HELLO bad option', fresh, ['HELLO', '2', 'FOO'], /^-ERR Syntax error/],
    ['CLIENT SETNAME', fresh, ['CLIENT', 'SETNAME', 'app'], '+OK|'],
    ['CLIENT SETNAME space', fresh, ['CLIENT', 'SETNAME', 'a b'], /^-ERR Client names/],
    ['CLIENT GETNAME unset', fresh, ['CLIENT', 'GETNAME'], '$-1|'],
    ['CLIENT ID', fresh, ['CLIENT', 'ID'], ':7|'],
    ['CLIENT KILL', fresh, ['CLIENT', 'KILL', 'x'], /^-ERR unknown subcommand/],
    [
      'INFO',
      fresh,
      ['INFO'],
      /^\$\d+\|# Server\|redis_version:7\.2\.4\|redis_mode:sentinel\|.*loading:0\|.*sentinel_masters:1\|.*master0:name=mymaster,status=ok,address=10\.0\.0\.1:6379,slaves=2,sentinels=2\|/,
    ],
    [
      'INFO after AUTH: the protected one too',
      authed,
      ['INFO', 'sentinel'],
      /sentinel_masters:2\|.*master1:name=vault,status=ok,address=10\.0\.1\.1:6379/,
    ],
    ['INFO one section', fresh, ['INFO', 'persistence'], '$26|# Persistence|loading:0||'],
    ['INFO unknown section', fresh, ['INFO', 'keyspace'], '$0||'],
    ['ROLE without password', fresh, ['ROLE'], `*2|$8|sentinel|${bulkArray(['mymaster'])}`],
    ['ROLE with password', authed, ['ROLE'], `*2|$8|sentinel|${bulkArray(['mymaster', 'vault'])}`],
    [
      'get-master-addr-by-name',
      fresh,
      ['SENTINEL', 'get-master-addr-by-name', 'mymaster'],
      bulkArray(['10.0.0.1', '6379']),
    ],
    [
      'get-master-addr qualified',
      fresh,
      ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', 'ns/mymaster'],
      bulkArray(['10.0.0.1', '6379']),
    ],
    ['get-master-addr unknown', fresh, ['SENTINEL', 'get-master-addr-by-name', 'nope'], '*-1|'],
    ['get-master-addr no master yet', fresh, ['SENTINEL', 'get-master-addr-by-name', 'new'], '*-1|'],
    [
      'get-master-addr needs AUTH',
      fresh,
      ['SENTINEL', 'get-master-addr-by-name', 'vault'],
      '-NOAUTH Authentication required.|',
    ],
    [
      'get-master-addr after AUTH',
      authed,
      ['SENTINEL', 'get-master-addr-by-name', 'vault'],
      bulkArray(['10.0.1.1', '6379']),
    ],
    ['get-master-addr arity', fresh, ['SENTINEL', 'get-master-addr-by-name'], /^-ERR wrong number/],
    [
      'masters: visible only, each name',
      fresh,
      ['SENTINEL', 'masters'],
      /^\*2\|\*40\|\$4\|name\|\$8\|mymaster\|.*\*40\|\$4\|name\|\$11\|ns\/mymaster\|/,
    ],
    [
      'master',
      fresh,
      ['SENTINEL', 'master', 'mymaster'],
      /\$5\|flags\|\$6\|master\|.*\$10\|num-slaves\|\$1\|2\|.*\$19\|num-other-sentinels\|\$1\|1\|/,
    ],
    ['master unknown', fresh, ['SENTINEL', 'master', 'nope'], '-ERR No such master with that name|'],
    [
      'replicas',
      fresh,
      ['SENTINEL', 'replicas', 'mymaster'],
      /^\*2\|\*42\|\$4\|name\|\$13\|10\.0\.0\.2:6379\|.*\$5\|flags\|\$12\|slave,s_down\|/,
    ],
    ['slaves = replicas', fresh, ['SENTINEL', 'slaves', 'mymaster'], wire(fresh, 'SENTINEL', 'replicas', 'mymaster')],
    [
      'sentinels',
      fresh,
      ['SENTINEL', 'sentinels', 'mymaster'],
      /^\*1\|\*28\|\$4\|name\|\$40\|b{40}\|\$2\|ip\|\$8\|10\.1\.0\.2\|\$4\|port\|\$5\|26379\|/,
    ],
    ['ckquorum', fresh, ['SENTINEL', 'ckquorum', 'mymaster'], /^\+OK 2 usable Sentinels/],
    ['ckquorum unknown', fresh, ['SENTINEL', 'ckquorum', 'nope'], /^-ERR No such master/],
    ['myid', fresh, ['SENTINEL', 'myid'], `$40|${'a'.repeat(40)}|`],
    [
      'is-master-down-by-addr refused',
      fresh,
      ['SENTINEL', 'is-master-down-by-addr', '10.0.0.1', '6379', '1', '*'],
      /^-ERR SENTINEL IS-MASTER-DOWN-BY-ADDR is refused: .*operator decides failovers/,
    ],
    [
      'failover refused, names the annotation',
      fresh,
      ['SENTINEL', 'failover', 'mymaster'],
      /^-ERR SENTINEL FAILOVER is refused: .*redis\.example\.com\/switchover/,
    ],
    ['set refused', fresh, ['SENTINEL', 'set', 'mymaster', 'quorum', '2'], /^-ERR SENTINEL SET is refused/],
    ['remove refused', fresh, ['SENTINEL', 'remove', 'mymaster'], /^-ERR SENTINEL REMOVE is refused/],
    [
      'monitor refused',
      fresh,
      ['SENTINEL', 'monitor', 'x', '10.0.0.9', '6379', '2'],
      /^-ERR SENTINEL MONITOR is refused/,
    ],
    ['reset refused', fresh, ['SENTINEL', 'reset', '*'], /^-ERR SENTINEL RESET is refused/],
    ['SENTINEL CONFIG SET refused', fresh, ['SENTINEL', 'config', 'set', 'x', 'y'], /^-ERR SENTINEL CONFIG is refused/],
    ['CONFIG SET refused', fresh, ['CONFIG', 'SET', 'requirepass', 'x'], /^-ERR CONFIG is refused/],
    ['unknown subcommand', fresh, ['SENTINEL', 'constructor'], /^-ERR Unknown sentinel subcommand 'constructor'/],
    ['unknown command', fresh, ['GET', 'k'], /^-ERR unknown command 'GET', with args beginning with: 'k'/],
    [
      'SUBSCRIBE',
      fresh,
      ['SUBSCRIBE', '+switch-master', '+sdown'],
      '*3|$9|subscribe|$14|+switch-master|:1|*3|$9|subscribe|$6|+sdown|:2|',
    ],
    ['PSUBSCRIBE', subscribed, ['PSUBSCRIBE', '*'], '*3|$10|psubscribe|$1|*|:2|'],
    ['subscribed: other commands refused', subscribed, ['SENTINEL', 'masters'], /^-ERR Can't execute 'sentinel': only/],
    ['UNSUBSCRIBE all', subscribed, ['UNSUBSCRIBE'], '*3|$11|unsubscribe|$14|+switch-master|:0|'],
    ['UNSUBSCRIBE none', fresh, ['UNSUBSCRIBE'], '*3|$11|unsubscribe|$-1|:0|'],
    ['PUNSUBSCRIBE named', fresh, ['PUNSUBSCRIBE', 'x'], '*3|$12|punsubscribe|$1|x|:0|'],
    ['QUIT', fresh, ['QUIT'], '+OK|'],
    ['RESET', authed, ['RESET'], '+RESET|'],
  ];
  for (const [name, session, argv, want] of cases) {
    await t.test(name, () => {
      const got = wire(session, ...argv);
      if (typeof want === 'string') assert.equal(got, want);
      else assert.match(got, want);
      assert.doesNotMatch(got, /s3cret/, 'a reply never carries a password');
    });
  }
});

test('commands: what they do to the session', async (t) => {
  const after = (session: Session, ...argv: string[]) => handle(ctx, session, argv);
  await t.test('AUTH keeps the password for later commands', () =>
    assert.equal(after(fresh, 'AUTH', 's3cret').session.password, 's3cret'),
  );
  await t.test('a wrong AUTH keeps the old password', () =>
    assert.equal(after(authed, 'AUTH', 'nope').session.password, 's3cret'),
  );
  await t.test('HELLO 2 AUTH SETNAME', () => {
    const s = after(fresh, 'HELLO', '2', 'AUTH', 'default', 's3cret', 'SETNAME', 'app').session;
    assert.deepEqual([s.password, s.name], ['s3cret', 'app']);
  });
  await t.test('SETNAME then GETNAME', () =>
    assert.equal(wire(after(fresh, 'CLIENT', 'SETNAME', 'app').session, 'CLIENT', 'GETNAME'), '$3|app|'),
  );
  await t.test('QUIT closes', () => assert.equal(after(fresh, 'QUIT').close, true));
  await t.test('RESET forgets everything', () => {
    const s = after({ ...authed, name: 'x', channels: new Set(['a']) }, 'RESET').session;
    assert.deepEqual([s.password, s.name, s.channels.size, s.patterns.size], [null, null, 0, 0]);
  });
  await t.test('subscriptions are bounded', () => {
    const many = Array.from({ length: MAX_SUBSCRIPTIONS + 2 }, (_, i) => `c${i}`);
    const out = after(fresh, 'SUBSCRIBE', ...many);
    assert.equal(out.session.channels.size, MAX_SUBSCRIPTIONS);
    assert.equal(out.replies.filter((r) => r.t === 'error').length, 2);
  });
  await t.test('a rotated password takes effect on open sessions', () => {
    const rotated = buildView(
      [
        {
          namespace: 'ns',
          name: 'vault',
          masterName: undefined,
          password: 'new',
          port: 6379,
          pods: [pod('v-0', '10.0.1.1', 'master')],
        },
      ],
      [],
      EMPTY_VIEW,
    );
    const r = handle({ ...ctx, view: rotated }, authed, ['SENTINEL', 'get-master-addr-by-name', 'vault']);
    assert.equal(encodeReply(r.replies[0]!), '-NOAUTH Authentication required.\r\n');
  });
});

test('globMatch: the pattern forms', async (t) => {
  const cases: Array<[string, string, boolean]> = [
    ['*', '+switch-master', true],
    ['+s*', '+sdown', true],
    ['+s*', '-sdown', false],
    ['?sdown', '-sdown', true],
    ['[+-]sdown', '-sdown', true],
    ['[^+]sdown', '+sdown', false],
    ['[a-c]x', 'bx', true],
    ['\\*', '*', true],
    ['\\*', 'a', false],
    ['*a*a*a*a*a*a*a*b', 'a'.repeat(60), false],
  ];
  for (const [p, s, want] of cases) await t.test(`${p} ~ ${s.slice(0, 20)}`, () => assert.equal(globMatch(p, s), want));
});

test('globMatch: agrees with a regular expression on patterns of literals, ? and *', () => {
  const text = fc.string({ unit: fc.constantFrom('a', 'b', '+', '-'), maxLength: 12 });
  const pattern = fc.string({ unit: fc.constantFrom('a', 'b', '+', '-', '?', '*'), maxLength: 8 });
  fc.assert(
    fc.property(pattern, text, (p, s) => {
      const re = new RegExp(`^${p.replace(/[+-]/g, '\\$&').replaceAll('?', '.').replaceAll('*', '.*')}$`, 's');
      assert.equal(globMatch(p, s), re.test(s));
    }),
  );
});

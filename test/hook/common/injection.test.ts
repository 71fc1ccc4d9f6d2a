// The injection corpus: hostile spec.config keys and values, other strings that reach a file, a
// script or a command (images, Secret keys, users' names and rules) and hostile passwords, each
// run through the real sync hook of a Redis (the fixture request) and of a RedisCluster, and, when
// the hook accepts it, through a real redis-server started from the generated ConfigMap and the
// generated container script (pod-runner.ts). Every input ends one of three ways:
// - refused by validation: Ready=False/InvalidSpec naming the field, the children as last applied;
// - Redis serves with authentication on: no command without AUTH, `default` refuses a wrong or an
//   empty password and takes the right one, no user without a password exists;
// - the container stops before serving (the start script's refusal of an unwritable password, or
//   Redis refusing a value at start);
// and no secret appears in the hook's reply, the script's output or redis-server's log.
// Loopback octet: 127.0.233.x, one address per pod started.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { passwordWritable } from '../../../src/api/text.ts';
import { setUserArgs, passwordHash } from '../../../src/api/users.ts';
import { sync, type KubeObject } from '../../../src/hook/index.ts';
import { UNWRITABLE_PASSWORD_EXIT } from '../../../src/hook/common/password-check.ts';
import { condition, designSpec, fixtureRequest, get, type Json } from './helpers.ts';
import { articleSpec, redisCluster, sync as redisClusterSync } from '../rediscluster/helpers.ts';
import { podParts, redisCli, startPod, type Pod } from './pod-runner.ts';

type Kind = 'Redis' | 'RedisCluster';
const KINDS: readonly Kind[] = ['Redis', 'RedisCluster'];
/** Around every password: if either shows up in any output, some of the password leaked. */
const LEFT = 'Qz9Left';
const RIGHT = 'Qz9Right';
const OPERATOR_PASSWORD = 'Qz9Op-operator-password';
const EXPORTER_PASSWORD = `${LEFT}-exporter-${RIGHT}`;
let host = 0;
const nextIp = () => `127.0.233.${++host}`;

/**
 * The hook's answer for `spec`: a Redis through the fixture request (an auth Secret holding `password` sent along), a
 * RedisCluster fresh.
 */
function hook(
  kind: Kind,
  spec: Json,
  password = 'fixture',
  name?: string,
): { children: KubeObject[]; status: Json; reply: string } {
  if (kind === 'RedisCluster') {
    const answer = redisClusterSync({ parent: redisCluster(spec, name !== undefined ? { name } : {}) });
    return { children: answer.children, status: answer.status as Json, reply: JSON.stringify(answer) };
  }
  const answer = sync(
    fixtureRequest((body) => {
      (body['parent'] as Json)['spec'] = spec;
      if (name !== undefined) ((body['parent'] as Json)['metadata'] as Json)['name'] = name;
      // The hooks ask for no Secret; one sent anyway (an older customize answer Metacontroller
      // still holds) must not reach the reply either.
      const related = body['related'] as Json;
      related['Secret.v1'] = {
        'default/my-redis-auth': {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'my-redis-auth', namespace: 'default' },
          data: { password: Buffer.from(password).toString('base64') },
        },
      };
    }),
  );
  return { children: answer.children, status: answer.status as Json, reply: JSON.stringify(answer) };
}

const base = (kind: Kind): Json => (kind === 'Redis' ? designSpec() : articleSpec());

/** Refused by the hook: SpecValid False naming `field`, and (Redis) the children as last applied. */
function assertRefused(kind: Kind, answer: ReturnType<typeof hook>, field: string): void {
  const valid = condition(answer.status, 'SpecValid');
  assert.equal(valid?.['reason'], 'InvalidSpec');
  assert.ok(
    String(valid?.['message']).includes(`${field}: `),
    `names ${field}: ${String(valid?.['message']).slice(0, 300)}`,
  );
  if (kind === 'Redis') {
    // The existing mechanism: the observed children come back as last applied, start script included.
    const observed = Object.values(fixtureRequest().children['StatefulSet.apps/v1'] ?? {});
    assert.deepEqual(redisCommand(answer.children), redisCommand(observed));
  }
}

const refused = (answer: ReturnType<typeof hook>) => condition(answer.status, 'SpecValid')?.['status'] === 'False';

/**
 * The corpus' verdict on one input: refused naming `field`, or else run on a real redis-server,
 * which must serve with authentication on or stop, printing no secret. The operator's design
 * refuses every hostile input of the corpus, which is asserted last: on a hook that lets one
 * through, what Redis does with it is what fails first.
 */
async function judge(kind: Kind, spec: Json, field: string, name?: string): Promise<void> {
  const password = `${LEFT}-judge-${RIGHT}`;
  const answer = hook(kind, spec, password, name);
  assertNoSecret("the hook's reply", answer.reply, password);
  if (!refused(answer)) await runThrough(kind, spec, password, name);
  assert.ok(refused(answer), `${kind} accepted ${JSON.stringify(spec)}`);
  assertRefused(kind, answer, field);
}

function redisCommand(children: readonly KubeObject[]): unknown {
  const set = children.find((c) => c.kind === 'StatefulSet' && c.metadata.name === 'my-redis-master');
  return (get(set, 'spec', 'template', 'spec', 'containers') as Json[] | undefined)?.find(
    (c) => c['name'] === 'redis',
  )?.['command'];
}

/** What every started pod must show: no secret anywhere it printed. */
function assertNoSecret(where: string, text: string, password: string): void {
  for (const marker of [LEFT, RIGHT, OPERATOR_PASSWORD])
    assert.ok(!text.includes(marker), `${where} shows part of a password`);
  if (password.length >= 4) assert.ok(!text.includes(password), `${where} shows the password`);
}

async function assertAuthOn(
  pod: Pod,
  password: string,
  expectedUsers = ['default', 'redis-exporter', 'redis-operator'],
): Promise<void> {
  assert.match(await redisCli(pod.ip, undefined, 'ping'), /NOAUTH/, 'no command without AUTH');
  assert.match(
    await redisCli(pod.ip, undefined, 'auth', 'default', ''),
    /WRONGPASS/,
    '`default` refuses an empty password',
  );
  assert.match(
    await redisCli(pod.ip, undefined, 'auth', 'default', `${password}x`),
    /WRONGPASS/,
    '`default` refuses a wrong password',
  );
  assert.match(await redisCli(pod.ip, password, 'ping'), /PONG/, 'the right password works');
  const users = (await redisCli(pod.ip, OPERATOR_PASSWORD, '--user', 'redis-operator', 'acl', 'list'))
    .trim()
    .split('\n');
  assert.deepEqual(
    users.map((u) => u.split(' ')[1]),
    expectedUsers,
    'only the users the start script (and the sidecar) make',
  );
  for (const u of users)
    assert.ok(!/\bnopass\b/.test(u) && /#[0-9a-f]{64}/.test(u), `a user without a password: ${u.split(' ')[1]}`);
}

/** Runs `spec` of `kind` with `password` to its end; returns how it ended. */
async function runThrough(kind: Kind, spec: Json, password: string, name?: string): Promise<'serving' | 'exited'> {
  const answer = hook(kind, spec, password, name);
  assertNoSecret("the hook's reply", answer.reply, password);
  assertNoSecret("the hook's reply", answer.reply, Buffer.from(password).toString('base64'));
  assert.ok(!refused(answer), JSON.stringify(condition(answer.status, 'SpecValid')));
  const pod = await startPod(answer.children, nextIp(), {
    REDIS_PASSWORD: password,
    OPERATOR_PASSWORD,
    EXPORTER_PASSWORD,
  });
  try {
    if (pod.outcome === 'serving') await assertAuthOn(pod, password);
  } finally {
    assertNoSecret("the container's output (script and redis-server)", await pod.stop(), password);
  }
  return pod.outcome;
}

const HOSTILE_CONFIG: Array<[string, Record<string, string>, string]> = [
  ['a user without a password', { user: 'default on nopass ~* +@all' }, 'spec.config.user'],
  ['another user with every right', { user: 'intruder on nopass ~* &* +@all' }, 'spec.config.user'],
  ['a module', { loadmodule: '/tmp/evil.so' }, 'spec.config.loadmodule'],
  ['DEBUG for clients', { 'enable-debug-command': 'yes' }, 'spec.config.enable-debug-command'],
  ['protected configs', { 'enable-protected-configs': 'yes' }, 'spec.config.enable-protected-configs'],
  ['MODULE LOAD for clients', { 'enable-module-command': 'yes' }, 'spec.config.enable-module-command'],
  ['AUTH renamed away', { 'rename-command': 'AUTH ""' }, 'spec.config.rename-command'],
  ['another file included', { include: '/etc/passwd' }, 'spec.config.include'],
  ['an empty requirepass', { requirepass: '""' }, 'spec.config.requirepass'],
  ['an ACL file', { aclfile: '/data/users.acl' }, 'spec.config.aclfile'],
  ['the data directory moved', { dir: '/' }, 'spec.config.dir'],
  ['a new line with a user', { hz: '10\nuser default on nopass' }, 'spec.config.hz'],
  ['a NUL that glues the password line on', { hz: '10\u0000' }, 'spec.config.hz'],
  ['a carriage return', { hz: '10\ruser default on nopass' }, 'spec.config.hz'],
  [
    'a quote that opens an argument',
    { 'maxmemory-policy': 'noeviction" user x on nopass "' },
    'spec.config.maxmemory-policy',
  ],
  ['an escape in quotes', { 'notify-keyspace-events': '"\\x0auser"' }, 'spec.config.notify-keyspace-events'],
  ['a key with a new line', { 'hz\nuser default on nopass': '10' }, 'spec.config.hz<U+000A>user default on nopass'],
  ['an upper-case key', { 'MAXMEMORY-POLICY': 'allkeys-lru' }, 'spec.config.MAXMEMORY-POLICY'],
];

const HOSTILE_FIELDS: Array<[string, Json, string]> = [
  ['an image with a new line', { image: 'redis:7.2\nevil' }, 'spec.image'],
  ['an image with arguments', { image: 'redis:7.2 --loadmodule /x.so' }, 'spec.image'],
  ['a Secret key with a NUL', { auth: { secretName: 'my-auth', key: 'pass\u0000word' } }, 'spec.auth.key'],
  ['a Secret name with a path', { auth: { secretName: '../other' } }, 'spec.auth.secretName'],
  ['an exporter image with a tab', { monitoring: { exporter: { image: 'x\ty' } } }, 'spec.monitoring.exporter.image'],
];

const HOSTILE_USERS: Array<[string, Json, string]> = [
  ['rules without a password', { name: 'app', rules: 'nopass +@all' }, 'spec.users[0].rules'],
  ['rules setting a password', { name: 'app', rules: '>known +@all' }, 'spec.users[0].rules'],
  ['rules with a NUL', { name: 'app', rules: '+@read\u0000 nopass' }, 'spec.users.0.rules'],
  ['rules with a new line', { name: 'app', rules: '+@read\nnopass' }, 'spec.users.0.rules'],
  ['the default user', { name: 'default', rules: '+@all' }, 'spec.users[0].name'],
  ['a name with a space', { name: 'a b', rules: '+@all' }, 'spec.users.0.name'],
];

test('hostile spec.config keys and values: refused naming the field (or else Redis must keep authentication on), for a Redis and a RedisCluster', async (t) => {
  for (const kind of KINDS)
    for (const [name, config, field] of HOSTILE_CONFIG)
      await t.test(`${kind}: ${name}`, () => judge(kind, { ...base(kind), config }, field));
});

test('hostile images, Secret references and users: refused naming the field (or else Redis must keep authentication on)', async (t) => {
  for (const kind of KINDS)
    for (const [name, fields, field] of HOSTILE_FIELDS)
      await t.test(`${kind}: ${name}`, () => judge(kind, { ...base(kind), ...fields }, field));
  for (const [name, user, field] of HOSTILE_USERS)
    await t.test(`Redis: ${name}`, () =>
      judge('Redis', { ...designSpec(), users: [{ ...user, passwordSecret: { name: 'app-secret' } }] }, field),
    );
});

// The API server admits DNS subdomains only, but the hook answers whatever it is asked.
const HOSTILE_NAMES: Array<[string, string]> = [
  ['a new line and a directive', 'x\nuser default on nopass'],
  ['a NUL', 'x\u0000'],
  ['a dot (no Service can carry it)', 'my.redis'],
  ['upper case', 'MyRedis'],
];

test('hostile names: refused naming metadata.name (or else Redis must keep authentication on)', async (t) => {
  for (const kind of KINDS)
    for (const [label, name] of HOSTILE_NAMES)
      await t.test(`${kind}: ${label}`, () => judge(kind, base(kind), 'metadata.name', name));
});

test('accepted config: Redis starts from the generated ConfigMap and script with authentication on, nothing secret printed', async (t) => {
  const config = {
    'maxmemory-policy': 'allkeys-lru',
    hz: '"20"',
    'io-threads': '2',
    'client-output-buffer-limit': 'pubsub 64mb 16mb 90',
    'notify-keyspace-events': 'KEA',
    'latency-tracking-info-percentiles': '50 99 99.9',
  };
  for (const kind of KINDS) {
    await t.test(kind, async () => {
      const extra = kind === 'RedisCluster' ? { 'cluster-allow-reads-when-down': 'yes' } : {};
      assert.equal(
        await runThrough(kind, { ...base(kind), config: { ...config, ...extra } }, `${LEFT}-config-${RIGHT}`),
        'serving',
      );
    });
  }
});

test('a value Redis itself refuses: the container stops before serving, and Redis prints no secret', async () => {
  assert.equal(
    await runThrough(
      'Redis',
      { ...designSpec(), config: { hz: 'fast', 'maxmemory-policy': 'noeviction' } },
      `${LEFT}-bad-value-${RIGHT}`,
    ),
    'exited',
  );
});

test("an accepted user's rules, applied as the sidecar applies them, leave no way in without its password", async () => {
  const password = `${LEFT}-users-${RIGHT}`;
  const rules = 'allkeys allchannels +@all resetkeys ~app:* %R~other:*';
  const answer = hook(
    'Redis',
    { ...designSpec(), users: [{ name: 'app', rules, passwordSecret: { name: 'app-secret' } }] },
    password,
  );
  assert.notEqual(condition(answer.status, 'SpecValid')?.['status'], 'False');
  const pod = await startPod(answer.children, nextIp(), {
    REDIS_PASSWORD: password,
    OPERATOR_PASSWORD,
    EXPORTER_PASSWORD,
  });
  try {
    assert.equal(pod.outcome, 'serving');
    const appPassword = `${LEFT}-app-${RIGHT}`;
    const set = await redisCli(
      pod.ip,
      OPERATOR_PASSWORD,
      '--user',
      'redis-operator',
      'acl',
      'setuser',
      'app',
      ...setUserArgs(rules, [passwordHash(appPassword)]),
    );
    assert.match(set, /OK/);
    assert.match(await redisCli(pod.ip, undefined, 'auth', 'app', ''), /WRONGPASS/);
    assert.match(await redisCli(pod.ip, appPassword, '--user', 'app', 'ping'), /PONG/);
    await assertAuthOn(pod, password, ['app', 'default', 'redis-exporter', 'redis-operator']);
  } finally {
    assertNoSecret("the container's output", await pod.stop(), password);
  }
});

/** Passwords a Secret may hold: the writable ones must work as written, the others stop the container, unprinted. */
const PASSWORDS: Array<[string, string]> = [
  ['a space', 'a b'],
  ['a double quote', 'a"b'],
  ['a backslash', 'a\\b'],
  ['a hash', '#a'],
  ['a single quote', "a'b"],
  ['shell', '$(id) `id` ${HOME}'],
  ['a closing quote and a directive', '" user intruder on nopass ~* +@all "'],
  ['an escaped quote and a directive', '\\" user intruder on nopass \\"'],
  ['escapes Redis would decode', '\\x41\\n\\t'],
  ['non-ASCII', 'ü€😀'],
  ['a new line and a directive', '\nuser default on nopass'],
  ['a carriage return', 'a\rb'],
  ['a tab', 'a\tb'],
  ['an escape sequence', '\u001b[31m'],
  ['DEL', 'a\u007f'],
  ['a trailing new line', 'ab\n'],
];

test('passwords: a writable one works as written; any other stops the container naming the env var and Secret, never the value', async (t) => {
  for (const kind of KINDS) {
    for (const [name, core] of PASSWORDS) {
      await t.test(`${kind}: ${name}`, async () => {
        const password = `${LEFT}${core}${RIGHT}`;
        const outcome = await runThrough(kind, base(kind), password);
        assert.equal(outcome, passwordWritable(password) ? 'serving' : 'exited');
      });
    }
    await t.test(`${kind}: empty, and the operator's with a new line`, async () => {
      for (const [env, secrets] of [
        ['REDIS_PASSWORD', { REDIS_PASSWORD: '', OPERATOR_PASSWORD }],
        ['OPERATOR_PASSWORD', { REDIS_PASSWORD: `${LEFT}${RIGHT}`, OPERATOR_PASSWORD: `${OPERATOR_PASSWORD}\n` }],
      ] as const) {
        const answer = hook(kind, base(kind));
        const pod = await startPod(answer.children, nextIp(), secrets);
        const output = await pod.stop();
        assert.equal(pod.outcome, 'exited');
        assert.equal(pod.exitCode, UNWRITABLE_PASSWORD_EXIT);
        const source = ((podParts(answer.children).container['env'] as Json[]).find(
          (e) => e['name'] === `${env}_SOURCE`,
        ) ?? {})['value'];
        assert.match(String(source), /^Secret [a-z0-9-]+, key password$/);
        assert.ok(output.includes(`${env} (from ${String(source)}) cannot be given to Redis`), output);
        assertNoSecret('the script', output, secrets.REDIS_PASSWORD);
      }
    });
  }
});

test('any password (fast-check): served with exactly that password iff writable, never printed', async () => {
  // An environment string ends at a NUL, so no pod can be given one: left out.
  const core = fc
    .oneof(fc.string({ unit: 'binary-ascii', maxLength: 8 }), fc.string({ unit: 'binary', maxLength: 6 }))
    .filter((s) => !s.includes('\u0000'));
  await fc.assert(
    fc.asyncProperty(core, fc.constantFrom(...KINDS), async (c, kind) => {
      const password = `${LEFT}${c}${RIGHT}`;
      assert.equal(await runThrough(kind, base(kind), password), passwordWritable(password) ? 'serving' : 'exited');
    }),
    { numRuns: 12, seed: 28 },
  );
});

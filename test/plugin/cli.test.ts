// `kubectl redis cli`: which pod, kubectl's argv, and the script the pod's shell runs. The script
// is run here as the pod runs it (`sh -c SCRIPT redis-cli ARGS...` with the pod's env) against
// real redis-server processes on 127.0.197.x, plaintext and TLS, with the operator's user: any
// argument arrives at Redis as given, and no password is on a command line (what `ps` shows).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { chooseNode, cliPodSelector, cliScript, kubectlExecArgs, type CliPod } from '../../src/plugin/cli.ts';
import { redisCli } from '../../src/hook/common/pod-template.ts';
import { addr, startRedis, TEST_OPERATOR_PASSWORD, type RedisServer } from '../support/redis-server.ts';
import { issue, makeCa } from '../support/tls-certs.ts';
import { until } from '../support/until.ts';

const OCTET = 197;

const pod = (name: string, o: { role?: string; ready?: boolean; tls?: boolean; shard?: number } = {}): CliPod => ({
  metadata: {
    name,
    labels: {
      'app.kubernetes.io/name': o.shard === undefined ? 'redis' : 'redis-cluster',
      ...(o.role ? { 'redis.example.com/role': o.role } : {}),
      ...(o.shard !== undefined ? { 'redis.example.com/shard': String(o.shard) } : {}),
    },
  },
  spec: {
    containers: [
      { name: 'sidecar' },
      { name: 'redis', volumeMounts: [{ mountPath: '/data' }, ...(o.tls ? [{ mountPath: '/tls' }] : [])] },
    ],
  },
  status: { conditions: [{ type: 'Ready', status: o.ready === false ? 'False' : 'True' }] },
});

test('chooseNode: the master by its role label, or the pod asked for', async (t) => {
  const redis = [
    pod('r-master-0', { role: 'replica' }),
    pod('r-replica-0', { role: 'master', tls: true }),
    pod('r-replica-1', { role: 'replica' }),
  ];
  const cluster = [
    pod('c-shard-1-0', { role: 'master', shard: 1 }),
    pod('c-shard-0-0', { role: 'replica', shard: 0 }),
    pod('c-shard-0-1', { role: 'master', shard: 0, ready: false }),
    pod('c-shard-2-0', { role: 'master', shard: 2 }),
  ];
  const rows: Array<[string, CliPod[], string | undefined, ReturnType<typeof chooseNode>]> = [
    [
      'the pod labelled master, TLS from its mount',
      redis,
      undefined,
      { ok: true, node: { pod: 'r-replica-0', tls: true, cluster: false } },
    ],
    ['--pod a replica', redis, 'r-replica-1', { ok: true, node: { pod: 'r-replica-1', tls: false, cluster: false } }],
    [
      '--pod not one of its pods',
      redis,
      'other-0',
      { ok: false, exit: 1, reason: 'other-0 is not a pod of "r" (its pods: r-master-0, r-replica-0, r-replica-1)' },
    ],
    [
      'no pods',
      [],
      undefined,
      {
        ok: false,
        exit: 3,
        reason: 'no pod of a Redis or RedisCluster "r" in namespace "apps" (no such name, or hibernated)',
      },
    ],
    [
      'nobody labelled master',
      [pod('r-master-0'), pod('r-replica-0')],
      undefined,
      {
        ok: false,
        exit: 1,
        reason:
          'no pod of "r" is labelled master yet (a bootstrap or failover under way): wait, or give --pod (one of r-master-0, r-replica-0)',
      },
    ],
    [
      'two labelled master',
      [pod('r-replica-0', { role: 'master' }), pod('r-master-0', { role: 'master' })],
      undefined,
      { ok: false, exit: 1, reason: 'r-master-0 and r-replica-0 are both labelled master: give --pod' },
    ],
    [
      'a cluster: the Ready master of the lowest shard, with -c',
      cluster,
      undefined,
      { ok: true, node: { pod: 'c-shard-1-0', tls: false, cluster: true } },
    ],
    [
      'a Redis and a RedisCluster of one name',
      [pod('r-master-0', { role: 'master' }), pod('r-shard-0-0', { role: 'master', shard: 0 })],
      undefined,
      {
        ok: false,
        exit: 1,
        reason: 'both a Redis and a RedisCluster are named "r": give --pod (one of r-master-0, r-shard-0-0)',
      },
    ],
  ];
  for (const [name, pods, wanted, want] of rows)
    await t.test(name, () => assert.deepEqual(chooseNode('r', 'apps', pods, wanted), want));
  await t.test("the selector names the Redis' and the cluster's pods, never backup pods", () =>
    assert.equal(
      cliPodSelector('r'),
      'app.kubernetes.io/instance=r,app.kubernetes.io/managed-by=redis-operator,app.kubernetes.io/name in (redis,redis-cluster)',
    ),
  );
});

test("cliScript connects as the probes do, then hands redis-cli the caller's arguments", async (t) => {
  for (const tls of [false, true])
    await t.test(`tls ${tls}`, () =>
      assert.equal(
        cliScript({ tls, cluster: false }),
        `${redisCli(tls).replace('REDISCLI_AUTH="$OPERATOR_PASSWORD" redis-cli', 'export REDISCLI_AUTH="$OPERATOR_PASSWORD"; exec redis-cli')} "$@"`,
      ),
    );
  await t.test('a cluster node: -c', () =>
    assert.match(cliScript({ tls: false, cluster: true }), /exec redis-cli -c --user redis-operator /),
  );
});

test("kubectlExecArgs: kubectl's flags are fixed, the caller's arguments are passed last and unchanged", async (t) => {
  const node = { pod: 'my-redis-master-0', tls: true, cluster: false };
  await t.test('a terminal: -it; otherwise -i; context and kubeconfig in one element each', () => {
    const base = { namespace: 'apps', args: ['get', 'k'] };
    assert.deepEqual(kubectlExecArgs(node, { ...base, tty: true }).slice(0, 2), ['exec', '-it']);
    assert.deepEqual(kubectlExecArgs(node, { ...base, tty: false, context: '-x', kubeconfig: '/k c' }), [
      'exec',
      '-i',
      '--namespace=apps',
      '--context=-x',
      '--kubeconfig=/k c',
      '--container=redis',
      'my-redis-master-0',
      '--',
      'sh',
      '-c',
      cliScript(node),
      'redis-cli',
      'get',
      'k',
    ]);
  });
  await t.test('any arguments: the argv ends with exactly them, and nothing before depends on them', () =>
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'grapheme' })), fc.boolean(), (args, tty) => {
        const argv = kubectlExecArgs(node, { namespace: 'apps', tty, args });
        assert.deepEqual(argv.slice(argv.length - args.length), args);
        assert.deepEqual(
          argv.slice(0, argv.length - args.length),
          kubectlExecArgs(node, { namespace: 'apps', tty, args: [] }),
        );
      }),
    ),
  );
});

/** Runs what kubectl exec runs in the pod (the argv after `--`), with the pod's env, as a subprocess of this test. */
function inPod(
  server: RedisServer,
  argv: string[],
): { pid: number; done: Promise<{ code: number | null; stdout: string; stderr: string }> } {
  const child = spawn(argv[0]!, argv.slice(1), {
    env: { PATH: process.env['PATH'] ?? '', POD_IP: server.ip, OPERATOR_PASSWORD: TEST_OPERATOR_PASSWORD },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  return {
    pid: child.pid!,
    done: new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr }))),
  };
}

const podArgv = (tls: boolean, args: string[]) => {
  const argv = kubectlExecArgs({ pod: 'p', tls, cluster: false }, { namespace: 'apps', tty: false, args });
  return argv.slice(argv.indexOf('--') + 1);
};

test(
  'the script on real redis-server: plaintext and TLS, as the operator user, arguments as given, no password in any argv',
  { timeout: 120_000 },
  async (t) => {
    const ca = makeCa();
    const servers = {
      plaintext: await startRedis(t, { ip: addr(OCTET, 1), minReplicasToWrite: 0 }),
      tls: await startRedis(t, {
        ip: addr(OCTET, 2),
        minReplicasToWrite: 0,
        tls: issue(ca, { ips: [addr(OCTET, 2)] }),
      }),
    };
    for (const [kind, server] of Object.entries(servers)) {
      const tls = kind === 'tls';
      // The pod's CA file is /tls/ca.crt; here it is the server's own directory, given as the
      // caller may give any flag: after the script's, so it wins.
      const extra = tls ? ['--cacert', path.join(server.tlsDir, 'ca.crt')] : [];
      const cli = async (...args: string[]) => {
        const r = await inPod(server, podArgv(tls, [...extra, ...args])).done;
        assert.equal(r.code, 0, r.stderr);
        return r.stdout;
      };
      await t.test(`${kind}: ACL WHOAMI is the operator's user; a key set reads back`, async () => {
        assert.equal(await cli('ACL', 'WHOAMI'), 'redis-operator\n');
        assert.equal(await cli('REPLICAOF', 'NO', 'ONE'), 'OK\n');
        assert.equal(await cli('SET', 'k', 'v'), 'OK\n');
        assert.equal(await cli('GET', 'k'), 'v\n');
      });
      await t.test(`${kind}: any key and value arrive unchanged (quotes, $, backticks, ;, newlines, flags)`, () =>
        fc.assert(
          fc.asyncProperty(
            fc.oneof(
              fc.string({ unit: 'grapheme', maxLength: 20 }),
              fc.constantFrom(
                '',
                ' ',
                '"',
                "'",
                '\\',
                '$OPERATOR_PASSWORD',
                '$(id)',
                '`id`',
                '; echo x',
                'a\nb',
                '*',
                '--tls',
                '-h',
                '"$@"',
              ),
            ),
            fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }),
            async (value, key) => {
              fc.pre(!value.includes('\0') && !key.includes('\0'));
              assert.equal(await cli('SET', key, value), 'OK\n');
              assert.equal(await cli('STRLEN', key), `${Buffer.byteLength(value)}\n`);
              assert.equal(await cli('GET', key), `${value}\n`);
            },
          ),
          { numRuns: tls ? 15 : 40 },
        ),
      );
    }

    await t.test(
      "ps while a command runs: redis-cli's argv has no password; the password is only in its environment",
      async () => {
        const { pid, done } = inPod(
          servers.tls,
          podArgv(true, ['--cacert', path.join(servers.tls.tlsDir, 'ca.crt'), 'BLPOP', 'no-such-list', '2']),
        );
        const read = (what: string) => readFileSync(`/proc/${pid}/${what}`, 'utf8').split('\0');
        // sh execs redis-cli: the same pid, once its argv is redis-cli's.
        const argv = await until('the shell replaced by redis-cli', () => {
          try {
            const a = read('cmdline');
            return a[0] === 'redis-cli' ? a : undefined;
          } catch {
            return undefined;
          }
        });
        assert.deepEqual(argv.slice(0, 9), [
          'redis-cli',
          '--tls',
          '--cacert',
          '/tls/ca.crt',
          '--user',
          'redis-operator',
          '-h',
          servers.tls.ip,
          '-p',
        ]);
        assert.ok(!argv.join(' ').includes(TEST_OPERATOR_PASSWORD));
        assert.ok(read('environ').includes(`REDISCLI_AUTH=${TEST_OPERATOR_PASSWORD}`));
        assert.equal((await done).stdout, '\n', 'BLPOP timed out: it ran, authenticated');
      },
    );
  },
);

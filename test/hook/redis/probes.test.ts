// The rendered redis.conf and the probe scripts against real redis-server processes: a node
// that starts is a read-only replica of nowhere and not Ready; REPLICAOF NO ONE makes it Ready
// but fenced (no writes) until a replica is linked; a linked replica is Ready.
// Loopback address allocation: N=62 (127.0.62.x), port 6379 like a pod IP.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateSpec } from '../../../src/api/validate.ts';
import { CONFIG_KEY, CONFIG_MOUNT } from '../../../src/api/labels.ts';
import { livenessScript } from '../../../src/hook/common/pod-template.ts';
import {
  LIVENESS_SCRIPT,
  READINESS_SCRIPT,
  readinessScript,
  REDIS_START_SCRIPT,
} from '../../../src/hook/redis/children/statefulset.ts';
import { issue, makeCa, writeTlsDir } from '../../support/tls-certs.ts';
import { renderRedisConf } from '../../../src/hook/redis/redis-conf.ts';
import { until } from '../../support/until.ts';
import { designSpec, type Json } from '../common/helpers.ts';

const PASSWORD = 'probe-test-password';
const OPERATOR_PASSWORD = 'probe-test-operator-password';
const dirs: string[] = [];
const processes: ChildProcess[] = [];
after(() => {
  for (const p of processes) p.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function confFor(overrides: Json = {}): string {
  const verdict = validateSpec('my-redis', { ...designSpec(), ...overrides });
  if (!verdict.ok) throw new Error(JSON.stringify(verdict.problems));
  return renderRedisConf('default', 'my-redis', verdict.spec);
}

function run(file: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...env }, timeout: 10_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, out: `${stdout}${stderr}` });
      },
    );
  });
}

function cli(ip: string, command: string, ...rest: string[]) {
  return cliAs(PASSWORD, ip, command, ...rest);
}

function cliAs(password: string, ip: string, ...args: string[]) {
  return run('redis-cli', ['-h', ip, '-p', '6379', ...args], { REDISCLI_AUTH: password });
}

/** The probe as the kubelet runs it: sh -c with the container's env (fixed when the container started). */
function probe(script: string, ip: string, operatorPassword = OPERATOR_PASSWORD) {
  return run('sh', ['-c', script], { POD_IP: ip, REDIS_PASSWORD: PASSWORD, OPERATOR_PASSWORD: operatorPassword });
}

/**
 * Starts redis-server with the pod's own command (REDIS_START_SCRIPT), the pod IP as bind address and a temp data dir.
 */
async function startNode(
  ip: string,
  conf: string,
  password = PASSWORD,
  operatorPassword = OPERATOR_PASSWORD,
): Promise<ChildProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'redis-hook-probe-'));
  dirs.push(dir);
  // `dir` is applied (chdir) while the file is read, so /data must be swapped for the temp dir here;
  // `bind` for the pod IP (the command's stdin `-` must stay its last argument).
  writeFileSync(join(dir, 'redis.conf'), conf.replace(/^dir .*$/m, `dir ${dir}`).replace(/^bind .*$/m, `bind ${ip}`));
  const child = spawn('sh', ['-c', REDIS_START_SCRIPT.replace(`${CONFIG_MOUNT}/${CONFIG_KEY}`, '"$DIR/redis.conf"')], {
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      DIR: dir,
      POD_IP: ip,
      REDIS_PASSWORD: password,
      OPERATOR_PASSWORD: operatorPassword,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  processes.push(child);
  await until(`redis-server on ${ip}`, async () => (await cliAs(password, ip, 'ping')).out.includes('PONG'), 10_000, {
    everyMs: 50,
  });
  return child;
}

const variants: Array<[string, Json]> = [
  ['the design', {}],
  ['cache only, no replicas', { replicas: 0, persistence: { enableRdb: false, enableAof: false } }],
  [
    'hourly snapshots with user directives',
    {
      persistence: { enableRdb: true, rdbSchedule: '@hourly', enableAof: false, size: '1Gi' },
      config: { 'maxmemory-policy': 'allkeys-lru', 'tcp-keepalive': '60' },
    },
  ],
];
for (const [label, overrides] of variants) {
  test(`redis-server 7 accepts the rendered redis.conf: ${label}`, async () => {
    const node = await startNode('127.0.62.9', confFor(overrides));
    const role = await cli('127.0.62.9', 'role');
    assert.match(role.out, /slave/);
    node.kill('SIGKILL');
    await new Promise((resolve) => node.once('exit', resolve));
  });
}

test('a started node is a fenced, read-only replica of nowhere and is not Ready until the sidecar acts', async () => {
  const masterIp = '127.0.62.1';
  const replicaIp = '127.0.62.2';
  await startNode(masterIp, confFor());
  await startNode(replicaIp, confFor());

  assert.equal((await probe(LIVENESS_SCRIPT, masterIp)).code, 0, 'alive');
  assert.notEqual((await probe(READINESS_SCRIPT, masterIp)).code, 0, 'a fresh node is not Ready');
  assert.match((await cli(masterIp, 'set', 'k', 'v')).out, /READONLY/);

  // The sidecar promotes: Ready, yet fenced until a replica acknowledges.
  assert.match((await cli(masterIp, 'replicaof', 'no', 'one')).out, /OK/);
  assert.equal((await probe(READINESS_SCRIPT, masterIp)).code, 0, 'a master is Ready');
  assert.match((await cli(masterIp, 'set', 'k', 'v')).out, /NOREPLICAS/);

  assert.notEqual((await probe(READINESS_SCRIPT, replicaIp)).code, 0);
  await cli(replicaIp, 'replicaof', masterIp, '6379');
  await until('replica link up', async () => (await probe(READINESS_SCRIPT, replicaIp)).code === 0, 10_000, {
    everyMs: 50,
  });
  await until(
    'writes accepted with one replica linked',
    async () => (await cli(masterIp, 'set', 'k', 'v')).out.includes('OK'),
    10_000,
    { everyMs: 50 },
  );
  await until('write replicated', async () => (await cli(replicaIp, 'get', 'k')).out.trim() === 'v', 10_000, {
    everyMs: 50,
  });
});

test('the passwords reach redis-server on stdin: never on its command line, and any characters survive', async () => {
  const odd = 'p"a\\ss w$(x)';
  const oddOperator = 'o"p\\ w$(y) ~*';
  const node = await startNode('127.0.62.40', confFor(), odd, oddOperator);
  const cmdline = readFileSync(`/proc/${node.pid}/cmdline`, 'utf8').split('\0').join(' ');
  assert.match(cmdline, /redis-server/, 'the container process is redis-server itself (exec)');
  assert.ok(!cmdline.includes('p"a') && !cmdline.includes('o"p'), `the command line shows no password: ${cmdline}`);
  assert.match((await cliAs(odd, '127.0.62.40', 'ping')).out, /PONG/);
  assert.match((await cliAs('wrong', '127.0.62.40', 'ping')).out, /WRONGPASS|NOAUTH/);
  // The operator's own user: its password as given, and the replication link authenticates as it.
  assert.match((await cliAs(oddOperator, '127.0.62.40', '--user', 'redis-operator', 'ping')).out, /PONG/);
  const link = (await cliAs(odd, '127.0.62.40', 'config', 'get', 'master*')).out.trim().split('\n');
  assert.deepEqual(Object.fromEntries([0, 2].map((i) => [link[i], link[i + 1]])), {
    masterauth: oddOperator,
    masteruser: 'redis-operator',
  });
  assert.equal((await probe(LIVENESS_SCRIPT, '127.0.62.40', oddOperator)).code, 0, 'the probes log in as the operator');
});

test("the probes never use the clients' password: changing it on a running node fails no probe", async () => {
  const ip = '127.0.62.41';
  await startNode(ip, confFor());
  assert.match((await cliAs(PASSWORD, ip, 'replicaof', 'no', 'one')).out, /OK/);
  assert.equal((await probe(READINESS_SCRIPT, ip)).code, 0);
  // What a rotation does at the end of its grace period: only the new password is left.
  assert.match((await cliAs(PASSWORD, ip, 'acl', 'setuser', 'default', 'resetpass', '>new-client-password')).out, /OK/);
  assert.match((await cliAs(PASSWORD, ip, 'ping')).out, /WRONGPASS/, 'the old password is refused');
  assert.equal(
    (await probe(READINESS_SCRIPT, ip)).code,
    0,
    'readiness still passes (its env still holds the old client password)',
  );
  assert.equal((await probe(LIVENESS_SCRIPT, ip)).code, 0, 'liveness still passes');
  assert.notEqual(
    (await probe(READINESS_SCRIPT, ip, 'wrong-password')).code,
    0,
    'a probe that cannot authenticate is not Ready',
  );
});

test('spec.tls: the rendered redis.conf serves TLS only; the probes speak TLS and verify the chain', async () => {
  const ip = '127.0.62.50';
  const ca = makeCa();
  const tlsDir = mkdtempSync(join(tmpdir(), 'redis-hook-tls-'));
  dirs.push(tlsDir, ca.dir);
  writeTlsDir(tlsDir, issue(ca, { dnsNames: ['*.my-redis-headless.default.svc'] }));
  const conf = confFor({ tls: { secretName: 'my-redis-tls' } });
  assert.match(conf, /^port 0$/m, 'the plaintext port is closed');
  assert.match(conf, /^tls-port 6379$/m);
  assert.match(conf, /^tls-replication yes$/m);
  const local = (text: string) => text.replaceAll('/tls/', `${tlsDir}/`);
  const dir = mkdtempSync(join(tmpdir(), 'redis-hook-probe-'));
  dirs.push(dir);
  writeFileSync(
    join(dir, 'redis.conf'),
    local(conf)
      .replace(/^dir .*$/m, `dir ${dir}`)
      .replace(/^bind .*$/m, `bind ${ip}`),
  );
  const child = spawn('sh', ['-c', REDIS_START_SCRIPT.replace(`${CONFIG_MOUNT}/${CONFIG_KEY}`, '"$DIR/redis.conf"')], {
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      DIR: dir,
      POD_IP: ip,
      REDIS_PASSWORD: PASSWORD,
      OPERATOR_PASSWORD,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  processes.push(child);
  const tlsCli = (...args: string[]) =>
    run('redis-cli', ['--tls', '--cacert', `${tlsDir}/ca.crt`, '-h', ip, '-p', '6379', ...args], {
      REDISCLI_AUTH: PASSWORD,
    });
  await until('redis-server with TLS', async () => (await tlsCli('ping')).out.includes('PONG'), 10_000, {
    everyMs: 50,
  });
  assert.doesNotMatch((await cli(ip, 'ping')).out, /PONG/, 'plaintext gets no answer');
  assert.equal((await probe(local(livenessScript(true)), ip)).code, 0, 'liveness over TLS');
  assert.notEqual((await probe(local(readinessScript(true)), ip)).code, 0, 'not Ready before the sidecar acts');
  await tlsCli('replicaof', 'no', 'one');
  assert.equal((await probe(local(readinessScript(true)), ip)).code, 0, 'readiness over TLS');
  // A CA that did not sign the node's certificate: the probe does not trust it.
  const other = makeCa('another CA');
  dirs.push(other.dir);
  assert.notEqual(
    (await probe(livenessScript(true).replaceAll('/tls/ca.crt', other.certFile), ip)).code,
    0,
    'an untrusted chain fails the probe',
  );
});

test('liveness fails when nothing answers', async () => {
  assert.notEqual((await probe(LIVENESS_SCRIPT, '127.0.62.30')).code, 0);
  assert.notEqual((await probe(READINESS_SCRIPT, '127.0.62.30')).code, 0);
});

// The real redis_exporter (test/monitoring/tools.ts: Debian's 1.45.0, the default image's release)
// as the hook configures it, against a real redis-server started by the pod's own start script:
// the exporter's own ACL user is enough for the metrics the alerts use, it reads no key and no
// config, and the metrics proxy in front lets no /scrape reach another Redis.
// Loopback address allocation: N=152 (127.0.152.x): .1 is the pod (Redis 6379, exporter 9122,
// proxy 9121), .2 another Redis a caller would like scraped.
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { CONFIG_KEY, CONFIG_MOUNT, EXPORTER_LOCAL_PORT, EXPORTER_PORT } from '../../src/api/labels.ts';
import { validateSpec } from '../../src/api/validate.ts';
import { REDIS_START_SCRIPT } from '../../src/hook/redis/children/statefulset.ts';
import { renderRedisConf } from '../../src/hook/redis/redis-conf.ts';
import { createProxyServer } from '../../src/metrics-proxy/proxy.ts';
import { designSpec, desiredFor, find, get, type Json } from '../hook/common/helpers.ts';
import { until } from '../support/until.ts';
import { monitoringTool } from './tools.ts';

const POD = '127.0.152.1';
const OTHER = '127.0.152.2';
const PASSWORD = 'clients-password';
const OPERATOR_PASSWORD = 'operator-password';
// Every character the start script must carry through redis.conf's quoting.
const EXPORTER_PASSWORD = 'exp "quoted" back\\slash $HOME `x`';

const dirs: string[] = [];
const children: ChildProcess[] = [];
after(() => {
  for (const c of children) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

let exporterBin: string | undefined;
let missing = '';
try {
  exporterBin = monitoringTool('redisExporter');
} catch (err) {
  missing = err instanceof Error ? err.message : String(err);
}

function cli(ip: string, user: string, password: string, ...args: string[]): Promise<string> {
  return new Promise((resolve) => {
    execFile(
      'redis-cli',
      ['-h', ip, '-p', '6379', '--user', user, '--no-auth-warning', ...args],
      { env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', REDISCLI_AUTH: password }, timeout: 10_000 },
      (_e, stdout, stderr) => resolve(`${stdout}${stderr}`.trim()),
    );
  });
}
const op = (ip: string, ...args: string[]) => cli(ip, 'redis-operator', OPERATOR_PASSWORD, ...args);

/** A Redis pod's redis-server: the rendered redis.conf, started by REDIS_START_SCRIPT with the pod's env. */
async function startNode(ip: string, env: Record<string, string>): Promise<void> {
  const verdict = validateSpec('my-redis', designSpec());
  if (!verdict.ok) throw new Error(JSON.stringify(verdict.problems));
  const dir = mkdtempSync(join(tmpdir(), 'exporter-acl-'));
  dirs.push(dir);
  const conf = renderRedisConf('default', 'my-redis', verdict.spec)
    .replace(/^dir .*$/m, `dir ${dir}`)
    .replace(/^bind .*$/m, `bind ${ip}`);
  writeFileSync(join(dir, 'redis.conf'), conf);
  const child = spawn('sh', ['-c', REDIS_START_SCRIPT.replace(`${CONFIG_MOUNT}/${CONFIG_KEY}`, '"$DIR/redis.conf"')], {
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      DIR: dir,
      POD_IP: ip,
      REDIS_PASSWORD: PASSWORD,
      OPERATOR_PASSWORD,
      ...env,
    },
    stdio: ['ignore', 'ignore', 'ignore'],
  });
  children.push(child);
  await until(`redis-server on ${ip}`, async () => (await op(ip, 'ping')) === 'PONG', 10_000, { everyMs: 50 });
}

/**
 * The exporter container's env as the hook renders it, pointed at this test's addresses, with the Secret's value filled
 * in.
 */
function exporterEnv(): Record<string, string> {
  const containers = get(
    find(desiredFor(), 'StatefulSet', 'my-redis-master'),
    'spec',
    'template',
    'spec',
    'containers',
  ) as Json[];
  const exporter = containers.find((c) => c['name'] === 'exporter')!;
  const env: Record<string, string> = {};
  for (const e of exporter['env'] as Json[]) {
    const name = e['name'] as string;
    if (typeof e['value'] === 'string') env[name] = e['value'];
    else if (get(e, 'valueFrom', 'secretKeyRef', 'name') === 'my-redis-exporter') env[name] = EXPORTER_PASSWORD;
    else throw new Error(`unexpected env ${JSON.stringify(e)}`);
  }
  env['REDIS_ADDR'] = env['REDIS_ADDR']!.replace('127.0.0.1', POD);
  env['REDIS_EXPORTER_WEB_LISTEN_ADDRESS'] = env['REDIS_EXPORTER_WEB_LISTEN_ADDRESS']!.replace('127.0.0.1', POD);
  return env;
}

async function fetchText(url: string): Promise<{ status: number; text: string }> {
  const r = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  return { status: r.status, text: await r.text() };
}

const sample = (text: string, name: string) =>
  text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
const connectionsTo = async (ip: string) =>
  Number(/total_connections_received:(\d+)/.exec(await op(ip, 'info', 'stats'))?.[1]);

test(
  'the real exporter, as its own ACL user behind the proxy: metrics yes, keys, config and other Redis no',
  { skip: exporterBin === undefined && `redis_exporter not found: ${missing}` },
  async (t) => {
    await startNode(POD, { EXPORTER_PASSWORD });
    await startNode(OTHER, { EXPORTER_PASSWORD });
    // A master with a key, so there is something to leak.
    assert.equal(await op(POD, 'replicaof', 'no', 'one'), 'OK');
    assert.equal(await op(POD, 'config', 'set', 'min-replicas-to-write', '0'), 'OK');
    assert.equal(await op(POD, 'set', 'secret-key', 'secret-value'), 'OK');
    assert.equal(await op(POD, 'acl', 'log', 'reset'), 'OK');

    const exporter = spawn(exporterBin!, [], {
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...exporterEnv() },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(exporter);
    let log = '';
    exporter.stderr!.on('data', (c: Buffer) => (log = (log + c.toString()).slice(-8192)));
    const proxy = createProxyServer({ upstreamHost: POD, upstreamPort: EXPORTER_LOCAL_PORT });
    await new Promise<void>((r) => proxy.listen(EXPORTER_PORT, POD, r));
    t.after(() => {
      proxy.close();
      proxy.closeAllConnections();
    });
    const front = `http://${POD}:${EXPORTER_PORT}`;
    await until(
      'the exporter answers through the proxy',
      async () => (await fetchText(`${front}/health`)).status === 200,
      10_000,
      { everyMs: 100 },
    );

    await t.test('the scrape works: up, clients, memory, replication', async () => {
      const { status, text } = await fetchText(`${front}/metrics`);
      assert.equal(status, 200);
      assert.equal(sample(text, 'redis_up'), 'redis_up 1', log);
      for (const name of [
        'redis_connected_clients',
        'redis_memory_used_bytes',
        'redis_memory_max_bytes',
        'redis_connected_slaves',
        'redis_instance_info',
        'redis_db_keys',
        'redis_slowlog_length',
      ]) {
        assert.ok(sample(text, name), `${name} is exported`);
      }
      assert.match(sample(text, 'redis_instance_info')!, /role="master"/);
      assert.equal(sample(text, 'redis_exporter_last_scrape_error'), 'redis_exporter_last_scrape_error{err=""} 0');
      assert.doesNotMatch(text, /secret-key|secret-value/, 'no key name or value in the metrics');
    });

    await t.test(
      'the only refusal the exporter meets is SLOWLOG GET (slow commands carry key values); no CONFIG attempt',
      async () => {
        const entries = (await op(POD, 'acl', 'log')).split('\n');
        const objects = new Set(entries.flatMap((l, i) => (entries[i - 1] === 'object' ? [l] : [])));
        assert.deepEqual([...objects], ['slowlog|get']);
      },
    );

    await t.test(
      '/scrape of another Redis through the proxy is refused, and that Redis sees no connection',
      async () => {
        const before = await connectionsTo(OTHER);
        for (const path of [
          `/scrape?target=redis://${OTHER}:6379`,
          `/scrape?target=${OTHER}:6379&check-keys=*`,
          '/metrics?check-keys=*',
        ]) {
          const r = await fetchText(`${front}${path}`);
          assert.ok(r.status >= 400, `${path}: ${r.status}`);
          assert.doesNotMatch(r.text, /redis_up|secret/);
        }
        // Our own two INFO calls count as one connection each.
        assert.equal(await connectionsTo(OTHER), before + 1);
      },
    );

    await t.test(
      'the exporter itself (1.45) does serve /scrape of any address: why it listens on the pod loopback only',
      async () => {
        const before = await connectionsTo(OTHER);
        const r = await fetchText(`http://${POD}:${EXPORTER_LOCAL_PORT}/scrape?target=redis://${OTHER}:6379`);
        assert.equal(r.status, 200);
        assert.ok((await connectionsTo(OTHER)) > before + 1, 'the exporter connected to the other Redis');
      },
    );

    await t.test("the exporter's user reads no key, no config, runs nothing that writes", async () => {
      const as = (...args: string[]) => cli(POD, 'redis-exporter', EXPORTER_PASSWORD, ...args);
      assert.equal(await as('ping'), 'PONG', 'its password (with quotes, backslash and $) survived the start script');
      for (const args of [
        ['get', 'secret-key'],
        ['config', 'get', 'masterauth'],
        ['keys', '*'],
        ['scan', '0'],
        ['slowlog', 'get'],
        ['client', 'list'],
        ['set', 'a', 'b'],
        ['acl', 'list'],
        ['subscribe', 'x'],
      ]) {
        assert.match(await as(...args), /NOPERM/, args.join(' '));
      }
    });
  },
);

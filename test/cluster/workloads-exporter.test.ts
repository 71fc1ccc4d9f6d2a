// The exporter container the hook adds to every Redis pod, as the workloads stand-in runs it: the
// host's real redis_exporter (exporter-image.ts) beside the real redis-server, logged in as the
// operator's ACL user, serving /metrics with `redis_up 1` on the pod's own address (every pod
// shares this netns, so 127.0.0.1 and :9121 are rewritten to the pod IP), and its httpGet
// liveness probe on the named port restarting it alone when it hangs. Without the exporter binary
// it fails with the command that fetches it (test/monitoring/tools.ts), as monitoring tests do.
// Network: pods on 127.0.88.2+ (ports 6379 and 9121); nothing outside 127.0.0.0/8.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { parseHookRequest, sync } from '../../src/hook/index.ts';
import { ObjectStore, type StoredObject } from '../support/kube-api/index.ts';
import { until } from '../support/until.ts';
import { installValidation } from './validation.ts';
import { exporterBinary } from './workloads/exporter-image.ts';
import { redisProcessesOnSubnet, startWorkloads } from './workloads/index.ts';

const SUBNET = 88;
const NS = 'wl-exporter';
const PASSWORD = 'exporter-test-password';
const WAIT_MS = 30_000;
type Json = Record<string, unknown>;

function cli(ip: string, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'redis-cli',
      ['-h', ip, '-p', '6379', ...args],
      { env: { REDISCLI_AUTH: PASSWORD, PATH: process.env['PATH'] ?? '' }, timeout: 5000 },
      (err, out, stderr) => (err ? reject(new Error(`${err.message} ${stderr}`)) : resolve(out.trim())),
    );
  });
}

/** The exporter's answer at <ip>:9121 (undefined while it cannot be reached). */
async function scrape(ip: string, route = '/metrics'): Promise<string | undefined> {
  try {
    const res = await fetch(`http://${ip}:9121${route}`, { signal: AbortSignal.timeout(5000) });
    return res.ok ? await res.text() : undefined;
  } catch {
    return undefined;
  }
}

const statuses = (p: StoredObject | undefined) => ((p?.['status'] as Json | undefined)?.['containerStatuses'] ?? []) as Json[];
const containerOf = (p: StoredObject | undefined, name: string) => statuses(p).find((c) => c['name'] === name);
const running = (cs: Json | undefined) => cs !== undefined && 'running' in ((cs['state'] as Json | undefined) ?? {});

test('the exporter beside each Redis pod: real redis_exporter, redis_up 1 as the operator user on its own pod IP, liveness restarts it alone', async (t) => {
  // As every monitoring test: without the binary this fails, naming what to run (never skips).
  const bin = exporterBinary();
  assert.equal(typeof bin, 'string', typeof bin === 'object' ? bin.error : '');
  const store = new ObjectStore();
  installValidation(store);
  const dataRoot = mkdtempSync(path.join(os.tmpdir(), `workloads-${SUBNET}-`));
  const logger = process.env['WORKLOADS_LOG'] ? pino({ level: process.env['WORKLOADS_LOG'] }, pino.destination(2)) : undefined;
  const wl = startWorkloads({ store, subnet: SUBNET, dataRoot, timeScale: 0.1, ...(logger ? { logger } : {}) });
  const pids: number[] = [];
  t.after(async () => {
    await wl.stop();
    assert.deepEqual(redisProcessesOnSubnet(SUBNET), [], 'stop() left redis-server processes behind');
    for (const pid of pids) assert.throws(() => process.kill(pid, 0), /ESRCH/, `exporter pid ${pid} left behind`);
    rmSync(dataRoot, { recursive: true, force: true });
  });

  store.create('secrets', { metadata: { name: 'my-redis-auth', namespace: NS }, stringData: { password: PASSWORD } });
  store.create('secrets', { metadata: { name: 'my-redis-operator', namespace: NS }, stringData: { password: `${PASSWORD}-operator` } });
  const parsed = parseHookRequest({
    parent: {
      apiVersion: 'redis.example.com/v1',
      kind: 'Redis',
      metadata: { name: 'my-redis', namespace: NS, uid: randomUUID(), generation: 1 },
      spec: { version: '7.2', replicas: 1 },
    },
    children: {},
    related: {},
  });
  if (!parsed.ok) throw new Error(parsed.message);
  for (const child of sync(parsed.request).children) {
    if (child.kind === 'StatefulSet') {
      const containers = ((child as unknown as { spec: { template: { spec: { containers: Json[] } } } }).spec.template.spec.containers ?? []) as Json[];
      const exporter = containers.find((c) => c['name'] === 'exporter');
      assert.ok(exporter, 'the hook adds the exporter container (spec.monitoring is on by default)');
      assert.equal(exporter['command'], undefined, "no command: the image's entrypoint runs");
      // Quicker than the hook's 5 s x 6 so a hang shows within seconds; the probe itself is the hook's.
      Object.assign(exporter['livenessProbe'] as Json, { timeoutSeconds: 1, failureThreshold: 2 });
    }
    store.create(child.kind, child as Json);
  }

  const pod = (name: string) => store.get('pods', NS, name);
  const ipOf = (name: string) =>
    until(
      `${name}: both containers running`,
      () => {
        const p = pod(name);
        return running(containerOf(p, 'redis')) && running(containerOf(p, 'exporter')) ? String((p!['status'] as Json)['podIP']) : undefined;
      },
      WAIT_MS,
      { dump: () => JSON.stringify(statuses(pod(name))) },
    );
  const redisUp = (ip: string) => until(`redis_up 1 at ${ip}:9121`, async () => /^redis_up 1$/m.test((await scrape(ip)) ?? ''), WAIT_MS, { everyMs: 200 });

  const ips = { master: await ipOf('my-redis-master-0'), replica: await ipOf('my-redis-replica-0') };
  assert.notEqual(ips.master, ips.replica);
  for (const [role, ip] of Object.entries(ips)) {
    assert.match(ip, new RegExp(`^127\\.0\\.${SUBNET}\\.\\d+$`));
    await redisUp(ip);
    // Each exporter reports its own pod's Redis (the same run_id), logged in with the operator
    // user's password only (the default user's is not in its env).
    const runId = /^run_id:(\w+)/m.exec(await cli(ip, 'INFO', 'server'))?.[1];
    assert.ok(runId);
    assert.match((await scrape(ip)) ?? '', new RegExp(`^redis_instance_info\\{.*run_id="${runId}".*\\} 1$`, 'm'), role);
    assert.equal(await scrape(ip, '/health'), 'ok');
    const exporter = containerOf(pod(`my-redis-${role}-0`), 'exporter')!;
    assert.equal(exporter['imageID'], 'standin://redis_exporter@oliver006/redis_exporter:v1.45.0');
    assert.equal(exporter['ready'], true, 'no readiness probe: ready once running');
    assert.equal(exporter['restartCount'], 0);
  }
  for (const p of wl.processes()) if (p.container === 'exporter') pids.push(p.pid);
  assert.equal(pids.length, 2);
  assert.match(wl.podLog(NS, 'my-redis-master-0', 'exporter'), new RegExp(`Providing metrics at ${ips.master.replace(/\./g, '\\.')}:9121/metrics`));

  // A hung exporter fails its httpGet liveness probe (named port `metrics`) and is restarted in
  // place; the Redis container beside it is left alone.
  assert.ok(wl.killPodProcess(NS, 'my-redis-master-0', 'SIGSTOP', 'exporter'));
  await until(
    'the exporter restarted after failing its liveness probe',
    () => {
      const e = containerOf(pod('my-redis-master-0'), 'exporter');
      return e?.['restartCount'] === 1 && running(e);
    },
    WAIT_MS,
    { everyMs: 100, dump: () => JSON.stringify(statuses(pod('my-redis-master-0'))) },
  );
  const after = pod('my-redis-master-0');
  assert.equal(String((after!['status'] as Json)['podIP']), ips.master, 'same pod, same IP');
  assert.equal(containerOf(after, 'redis')!['restartCount'], 0, 'redis was not restarted');
  await redisUp(ips.master);
  for (const p of wl.processes()) if (p.container === 'exporter' && !pids.includes(p.pid)) pids.push(p.pid);
});

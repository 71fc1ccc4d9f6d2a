// The sidecar entry point as a process (src/sidecar/main.ts run by the Node 24 binary), against a
// REAL kube-apiserver (test/k8s/api-server.ts) through a KUBECONFIG file for a ServiceAccount of
// the operator's namespace (the operator's RBAC applies; the Lease lives there) that reaches it
// through the fault proxy: probes and metrics answer, the Lease is taken and given back on
// SIGTERM (exit 0), a bad environment exits 1 naming every problem.
// Network: etcd, kube-apiserver, the fault proxy and the metrics server on 127.0.0.1; no Redis.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import net from 'node:net';
import { Redis } from 'ioredis';
import { startApiServer, type ApiServer } from '../k8s/api-server.ts';
import { OPERATOR_NAMESPACE } from '../k8s/operator.ts';
import { until } from '../support/until.ts';

const MAIN = fileURLToPath(new URL('../../src/sidecar/main.ts', import.meta.url));
/** How long the sidecar process may take to start, take the Lease and answer. */
const WAIT_MS = 15_000;

/** A kubeconfig file (JSON is YAML) for ServiceAccount `name`: the proxy's URL, the CA inline, a bound token. */
async function kubeconfigFile(api: ApiServer, name: string, dir: string): Promise<string> {
  const file = path.join(dir, 'config');
  writeFileSync(file, (await api.kubeConfig(name)).exportConfig(), { mode: 0o600 });
  return file;
}

interface Run {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function run(env: Record<string, string>): Run {
  // Only what the sidecar needs: nothing from the test runner's own environment leaks in.
  const child = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, stdout: () => out, stderr: () => err, exit };
}

/** A port free on 127.0.0.1 now (the sidecar reads a fixed SENTINEL_PORT: 0 means off). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

test('main: probes and metrics from start-up, takes the Lease, SIGTERM releases it and exits 0', async (t) => {
  const api = await startApiServer();
  const sentinelPort = await freePort();
  t.after(() => api.close());
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sidecar-main-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const r = run({
    KUBECONFIG: await kubeconfigFile(api, 'sidecar-main', dir),
    POD_NAME: 'sidecar-main',
    // The Lease goes in the pod's namespace: the operator's, the only one its Lease role covers.
    POD_NAMESPACE: OPERATOR_NAMESPACE,
    METRICS_PORT: '0',
    METRICS_HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    SENTINEL_PORT: String(sentinelPort),
    SENTINEL_HOST: '127.0.0.1',
  });
  t.after(() => {
    if (r.child.exitCode === null) r.child.kill('SIGKILL');
  });
  const port = await until(
    'the listening line',
    () => {
      const line = r
        .stdout()
        .split('\n')
        .find((l) => l.includes('metrics and probes listening'));
      return line ? (JSON.parse(line) as { port: number }).port : null;
    },
    WAIT_MS,
  );
  const base = `http://127.0.0.1:${port}`;
  assert.equal((await fetch(`${base}/healthz`)).status, 200);
  await until('ready', async () => (await fetch(`${base}/readyz`)).status === 200, WAIT_MS);
  const lease = await until(
    'the lease held by the sidecar',
    () => {
      const l = api.store.get('leases', OPERATOR_NAMESPACE, 'redis-operator-sidecar') as
        { spec?: { holderIdentity?: string } } | undefined;
      return l?.spec?.holderIdentity === 'sidecar-main' && l;
    },
    WAIT_MS,
  );
  assert.ok(lease);
  const metrics = await until(
    'leader gauge',
    async () => {
      const text = await (await fetch(`${base}/metrics`)).text();
      return /^redis_operator_leader 1$/m.test(text) && text;
    },
    WAIT_MS,
  );
  assert.match(metrics, /# TYPE redis_operator_failovers_total counter/);
  assert.match(metrics, /process_cpu_seconds_total/);
  assert.equal((await fetch(`${base}/nope`)).status, 404);
  // Ready means the Sentinel endpoint listens too; no Redis asks for it, so it serves none.
  const sentinel = new Redis({ host: '127.0.0.1', port: sentinelPort, lazyConnect: true, maxRetriesPerRequest: 0 });
  t.after(() => sentinel.disconnect());
  await sentinel.connect();
  assert.equal(await sentinel.ping(), 'PONG');
  assert.deepEqual(await sentinel.call('SENTINEL', 'masters'), []);
  sentinel.disconnect();
  // Every stdout line is one JSON object (pino), none pretty-printed: stdout is not a TTY.
  for (const line of r.stdout().split('\n').filter(Boolean)) assert.doesNotThrow(() => JSON.parse(line), line);
  // It watches Redis resources and pods in all namespaces.
  assert.ok(
    api.requests.some((q) => q.client === 'sidecar-main' && q.path === '/apis/redis.example.com/v1/redises' && q.watch),
  );
  assert.ok(api.requests.some((q) => q.client === 'sidecar-main' && q.path === '/api/v1/pods' && q.watch));

  r.child.kill('SIGTERM');
  const { code } = await r.exit;
  assert.equal(code, 0, r.stderr());
  await until(
    'the lease handed back',
    () => {
      const l = api.store.get('leases', OPERATOR_NAMESPACE, 'redis-operator-sidecar') as {
        spec?: { holderIdentity?: string };
      };
      return (l.spec?.holderIdentity ?? '') === '';
    },
    WAIT_MS,
  );
  assert.match(r.stdout(), /released the lease/);
  assert.match(r.stdout(), /"msg":"stopped"/);
  assert.deepEqual(
    api.requests.filter((q) => q.status === 403).map((q) => `${q.method} ${q.path}`),
    [],
    'manifests/rbac.yaml allows every call the sidecar made',
  );
});

test('main: a bad environment exits 1 and names every problem; so does an unreadable KUBECONFIG', async () => {
  const bad = run({
    POD_NAMESPACE: 'Bad_NS',
    METRICS_PORT: '70000',
    LEASE_RENEW_DEADLINE_MS: '5000',
    LOG_LEVEL: 'loud',
    WATCH_NAMESPACES: 'a,,b',
  });
  const { code } = await bad.exit;
  assert.equal(code, 1);
  const err = bad.stderr();
  assert.match(err, /invalid configuration, not starting/);
  assert.match(err, /POD_NAME is required/);
  assert.match(err, /POD_NAMESPACE="Bad_NS" is invalid/);
  assert.match(err, /METRICS_PORT="70000" is invalid: must be a whole number from 0 to 65535/);
  assert.match(err, /LOG_LEVEL="loud" is invalid/);
  assert.match(err, /renewDeadlineMs must be less than leaseDurationSeconds \* 1000/);
  assert.doesNotMatch(err, /WATCH_NAMESPACES/, 'empty items in the list are ignored');

  const noConfig = run({
    POD_NAME: 'x',
    POD_NAMESPACE: 'operator',
    KUBECONFIG: '/nonexistent/kubeconfig',
    METRICS_PORT: '0',
    METRICS_HOST: '127.0.0.1',
  });
  const second = await noConfig.exit;
  assert.equal(second.code, 1);
  assert.match(noConfig.stderr(), /cannot load the Kubernetes configuration/);
});

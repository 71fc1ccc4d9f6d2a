// The Prometheus harness against the real Prometheus 2.42 and promtool: a scrape of a tiny HTTP
// server on loopback, an alert that fires when its metric is 1 and resolves when it is 0, a reload
// (accepted and refused), and promtool's checks of the files the harness wrote. Loopback 127.0.150.x
// only. Every wait polls against a deadline; no sleep decides anything. Without the tools the
// tests fail with the command that fetches them (monitoringTools() throws), never skip.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { until } from '../support/until.ts';
import { promtool, startPrometheus, type Prometheus } from './prometheus.ts';
import { monitoringTools } from './tools.ts';

const IP = '127.0.150.1';
const WAIT_MS = 60_000;
const EVERY = { everyMs: 200 };

const RULES = `groups:
  - name: demo
    rules:
      - alert: DemoFlagUp
        expr: demo_flag == 1
        labels:
          severity: test
        annotations:
          summary: the demo flag is up
`;

async function metricsServer(): Promise<{ server: Server; port: number; set(v: number): void }> {
  let value = 0;
  const server = createServer((req, res) => {
    if (req.url !== '/metrics') return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
    res.end(`# HELP demo_flag A flag the test flips.\n# TYPE demo_flag gauge\ndemo_flag ${value}\n`);
  });
  await new Promise<void>((resolve) => server.listen(0, IP, resolve));
  return { server, port: (server.address() as AddressInfo).port, set: (v) => (value = v) };
}

function config(targetPort: number): object {
  return {
    global: { scrape_interval: '1s', evaluation_interval: '1s' },
    scrape_configs: [{ job_name: 'demo', static_configs: [{ targets: [`${IP}:${targetPort}`] }] }],
  };
}

test('the tools resolve, at the pinned versions', () => {
  const tools = monitoringTools();
  assert.match(tools.versions.prometheus, /^2\.42\.0/);
  assert.match(tools.versions.redisExporter, /^1\.45\.0/);
});

test('a non-loopback listen address is refused before anything starts', async () => {
  await assert.rejects(
    startPrometheus({ config: {}, listen: '0.0.0.0:9090' }),
    /refusing listen address 0\.0\.0\.0:9090/,
  );
  await assert.rejects(startPrometheus({ config: {}, listen: `${IP}:0` }), /refusing listen address/);
});

test('a real Prometheus scrapes a loopback server; the alert fires at 1, resolves at 0; reloads apply or are refused', async (t) => {
  const target = await metricsServer();
  t.after(() => new Promise<void>((r) => target.server.close(() => r())));
  const prom: Prometheus = await startPrometheus({
    config: config(target.port),
    ruleFiles: { 'demo.yml': RULES },
    listen: IP,
  });
  t.after(() => prom.stop());
  const dump = () => prom.logTail(20).join('\n');

  // promtool accepts what the harness wrote (the config names rules/* itself).
  const checked = await promtool(['check', 'config', path.join(prom.dir, 'prometheus.yml')]);
  assert.equal(checked.code, 0, checked.stdout + checked.stderr);
  assert.match(checked.stdout, /1 rules found/);
  const rules = await promtool(['check', 'rules', path.join(prom.dir, 'rules/demo.yml')]);
  assert.equal(rules.code, 0, rules.stdout + rules.stderr);

  const targets = await until(
    'the demo target up',
    async () => (await prom.targets()).activeTargets.find((x) => x.health === 'up'),
    WAIT_MS,
    {
      ...EVERY,
      dump,
    },
  );
  assert.equal(targets.labels['job'], 'demo');
  await until(
    'demo_flag == 0 scraped',
    async () => {
      const r = await prom.query('demo_flag');
      return r.resultType === 'vector' && r.samples.length === 1 && r.samples[0]!.value === 0;
    },
    WAIT_MS,
    { ...EVERY, dump },
  );
  assert.deepEqual(await prom.alerts(), []);
  assert.deepEqual(await prom.query('1 + 1'), { resultType: 'scalar', value: 2 });

  target.set(1);
  const firing = await until(
    'DemoFlagUp firing',
    async () => (await prom.alerts()).find((a) => a.labels['alertname'] === 'DemoFlagUp' && a.state === 'firing'),
    WAIT_MS,
    {
      ...EVERY,
      dump,
    },
  );
  assert.equal(firing.labels['severity'], 'test');
  assert.equal(firing.annotations['summary'], 'the demo flag is up');

  target.set(0);
  await until('DemoFlagUp resolved', async () => (await prom.alerts()).length === 0, WAIT_MS, { ...EVERY, dump });
  const rule = (await prom.rules()).flatMap((g) => g.rules).find((r) => r.name === 'DemoFlagUp');
  assert.equal(rule?.state, 'inactive');

  // A reload with a further rule file: both groups are loaded.
  await prom.reload(undefined, {
    'demo.yml': RULES,
    'recorded.yml':
      'groups:\n  - name: recorded\n    rules:\n      - record: demo:flag:x2\n        expr: demo_flag * 2\n',
  });
  await until(
    'the recorded group loaded',
    async () => (await prom.rules()).some((g) => g.name === 'recorded'),
    WAIT_MS,
    EVERY,
  );
  await until(
    'demo:flag:x2 evaluated',
    async () => {
      const r = await prom.query('demo:flag:x2');
      return r.resultType === 'vector' && r.samples.length === 1;
    },
    WAIT_MS,
    { ...EVERY, dump },
  );

  // A config Prometheus refuses: the reload rejects with its reason, and the old config stays.
  await assert.rejects(prom.reload('global: {scrape_interval: nonsense}\n'), /refused the reload: 500.*nonsense/s);
  assert.ok((await prom.targets()).activeTargets.some((x) => x.labels['job'] === 'demo'));
});

test('promtool refuses a broken config and a broken rule file', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'promtool-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(path.join(dir, 'bad.yml'), 'global: {scrape_interval: nonsense}\n');
  writeFileSync(
    path.join(dir, 'bad-rules.yml'),
    'groups:\n  - name: bad\n    rules:\n      - alert: Broken\n        expr: sum(\n',
  );
  const config = await promtool(['check', 'config', path.join(dir, 'bad.yml')]);
  assert.equal(config.code, 1, config.stdout + config.stderr);
  assert.match(config.stderr, /nonsense/);
  const rules = await promtool(['check', 'rules', path.join(dir, 'bad-rules.yml')]);
  assert.equal(rules.code, 1, rules.stdout + rules.stderr);
  assert.match(rules.stdout + rules.stderr, /parse error/);
});

// The live alert scenario on a running real cluster (test/system/cluster.ts): the monitoring
// component installed with the real kubectl (its objects validated by the Prometheus Operator's
// real CRDs), a Redis whose PodMonitor and PrometheusRule the real Metacontroller's
// DecoratorController attached, and a real Prometheus on the host scraping the real
// redis_exporter container in every pod (pods discovered from the real API server: pod-sd.ts
// stands in for the Kubernetes discovery Debian's build lacks) and the operator's pods (its
// sidecars' and hooks' ports by pod IP, honor_labels as the operator's PodMonitor sets it),
// evaluating exactly the rules the cluster holds.
// Then the master crashes, twice in a row (the second restart waits out the kubelet's 10 s
// back-off, a crash loop): RedisFrequentFailovers and RedisInstanceDown must fire and resolve,
// and nothing else may fire. Used by test/system/monitoring.test.ts and npm run check:monitoring.
// Invariants: only loopback and the cluster's own ranges; everything started here is stopped.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { REPO_ROOT } from '../k8s/operator.ts';
import type { SystemCluster } from '../system/cluster.ts';
import { withFileSd, writeFileSd, type Pod } from './pod-sd.ts';
import { startPrometheus, type Prometheus } from './prometheus.ts';
import { podMonitorScrapeConfigs, ruleFiles, type PodMonitor, type PrometheusRule } from './scrape-config.ts';

type Json = Record<string, any>;
export const LIVE_NS = 'default';
export const LIVE_NAME = 'my-redis';
/** What the crash loop must make fire, and nothing else. */
export const EXPECTED_ALERTS = ['RedisFrequentFailovers', 'RedisInstanceDown'] as const;

export interface LiveReport {
  fired: string[];
  /** Fired but not expected (must be empty). */
  unexpected: string[];
  /** Expected but never fired (must be empty). */
  missing: string[];
  /** Every alert inactive again at the end. */
  resolved: boolean;
  /** Dashboard panels none of whose queries returned anything on the live series (must be empty). */
  emptyPanels: string[];
  timings: Record<string, number>;
}

/** The design's Redis with alert durations a test can wait for: the same rules, shorter `for`s. */
export function liveRedis(): Json {
  const example = parse(readFileSync(path.join(REPO_ROOT, 'manifests/examples/redis.yaml'), 'utf8')) as Json;
  example['spec']['monitoring'] = {
    prometheus: { scrapeInterval: '1s' },
    alerts: [
      { name: 'InstanceDown', duration: '3s' },
      { name: 'NoMaster', duration: '5s' },
      { name: 'MultipleMasters', duration: '2s' },
      { name: 'NotRunning', duration: '15s' },
      { name: 'FrequentFailovers', threshold: 0, duration: '20s' },
    ],
  };
  return example;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(250);
  }
}

/** The component rendered by the real kubectl kustomize and applied with strict validation. */
async function installComponent(lc: SystemCluster, dir: string): Promise<void> {
  cpSync(path.join(REPO_ROOT, 'manifests/components/monitoring'), path.join(dir, 'monitoring'), { recursive: true });
  writeFileSync(path.join(dir, 'kustomization.yaml'), 'components: [monitoring]\n');
  const rendered = await lc.kubectl(['kustomize', dir]);
  await lc.kubectl(['apply', '--validate=strict', '-f', '-'], rendered);
}

/** Each dashboard panel's queries as Grafana would send them for "all" namespaces and Redis. */
export function dashboardQueries(): Array<{ panel: string; exprs: string[] }> {
  const dash = JSON.parse(
    readFileSync(path.join(REPO_ROOT, 'manifests/components/monitoring/grafana-dashboard.json'), 'utf8'),
  ) as Json;
  return (dash['panels'] as Json[]).map((p) => ({
    panel: String(p['title']),
    exprs: (p['targets'] as Json[]).map((t) =>
      String(t['expr']).replaceAll('$namespace', '.*').replaceAll('$redis', '.*').replaceAll('$__rate_interval', '1m'),
    ),
  }));
}

/** One object through the real kubectl, or undefined while it does not exist. */
async function getObject(
  lc: SystemCluster,
  resource: string,
  namespace: string,
  name: string,
): Promise<Json | undefined> {
  const out = await lc.kubectl(['get', resource, name, '-n', namespace, '--ignore-not-found', '-o', 'json']);
  return out.trim() ? (JSON.parse(out) as Json) : undefined;
}

export async function runLiveScenario(lc: SystemCluster, log: (line: string) => void): Promise<LiveReport> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'live-alerts-'));
  const timings: Record<string, number> = {};
  const t0 = Date.now();
  let prom: Prometheus | undefined;
  let refresh: NodeJS.Timeout | undefined;
  try {
    await installComponent(lc, path.join(dir, 'kustomize'));
    await lc.kubectl(['apply', '-f', '-'], JSON.stringify(liveRedis()));
    const ours = () => lc.pods(LIVE_NAME, LIVE_NS);
    const roles = () => ours().map((p) => p.metadata.labels?.['redis.example.com/role']);
    await waitFor(
      'three pods, one labelled master',
      () => roles().length === 3 && roles().filter((r) => r === 'master').length === 1,
      120_000,
    );
    const pm = await waitFor(
      'the PodMonitor the decorator attached',
      () => getObject(lc, 'podmonitors.monitoring.coreos.com', LIVE_NS, LIVE_NAME),
      60_000,
    );
    const redisRule = await waitFor(
      'the PrometheusRule the decorator attached',
      () => getObject(lc, 'prometheusrules.monitoring.coreos.com', LIVE_NS, LIVE_NAME),
      60_000,
    );
    const operatorRule = await waitFor(
      'the operator PrometheusRule',
      () => getObject(lc, 'prometheusrules.monitoring.coreos.com', 'redis-operator', 'redis-operator'),
      30_000,
    );
    timings['attached_ms'] = Date.now() - t0;

    const pmConfigs = podMonitorScrapeConfigs(pm as unknown as PodMonitor);
    const operatorIps = lc
      .sidecarNames()
      .map((n) => String((lc.get('pods', n, 'redis-operator')?.['status'] as Json | undefined)?.['podIP'] ?? ''));
    const promDir = path.join(dir, 'prometheus');
    mkdirSync(promDir, { recursive: true });
    const writeTargets = () => writeFileSd(promDir, pmConfigs, ours() as unknown as Pod[]);
    writeTargets();
    refresh = setInterval(writeTargets, 500);
    prom = await startPrometheus({
      dir: promDir,
      listen: '127.0.0.1',
      config: {
        global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
        scrape_configs: [
          ...withFileSd(pmConfigs),
          {
            job_name: 'redis-operator-sidecar',
            honor_labels: true,
            static_configs: [{ targets: operatorIps.map((ip) => `${ip}:9121`) }],
          },
          {
            job_name: 'redis-operator-hook',
            honor_labels: true,
            static_configs: [{ targets: operatorIps.map((ip) => `${ip}:8080`) }],
          },
        ],
      },
      ruleFiles: ruleFiles([redisRule, operatorRule] as unknown as PrometheusRule[]),
    });
    const p = prom;
    const fired = new Map<string, number>();
    const firing = async () => {
      const names = (await p.alerts()).filter((a) => a.state === 'firing').map((a) => a.labels['alertname']!);
      for (const n of names) if (!fired.has(n)) fired.set(n, Date.now());
      return names;
    };
    const watch = setInterval(() => void firing().catch(() => undefined), 250);
    try {
      // Steady state: every exporter answers with its Redis, the sidecars are scraped, nothing fires.
      await waitFor(
        'three exporters reporting redis_up 1 and the sidecars scraped',
        async () => {
          const up = await p.query(`redis_up{namespace="${LIVE_NS}",redis="${LIVE_NAME}"} == 1`);
          const leader = await p.query('max(redis_operator_leader) == 1');
          return (
            up.resultType === 'vector' &&
            up.samples.length === 3 &&
            leader.resultType === 'vector' &&
            leader.samples.length === 1
          );
        },
        60_000,
      );
      await sleep(5_000);
      const early = await firing();
      if (early.length > 0) throw new Error(`alerts firing before any fault: ${early.join(', ')}`);
      fired.clear();
      timings['steady_ms'] = Date.now() - t0;

      const master = ours().find((x) => x.metadata.labels?.['redis.example.com/role'] === 'master')!.metadata.name;
      const restarts = () =>
        (
          ((ours().find((x) => x.metadata.name === master)?.['status'] as Json | undefined)?.['containerStatuses'] ??
            []) as Json[]
        ).find((c) => c['name'] === 'redis')?.['restartCount'] ?? 0;
      const before = restarts();
      const fault = Date.now();
      log(`SIGKILL ${master}'s redis-server`);
      await lc.killPodProcess(LIVE_NS, master, 'SIGKILL', 'redis');
      await waitFor(
        'another pod labelled master',
        () =>
          ours().some((x) => x.metadata.name !== master && x.metadata.labels?.['redis.example.com/role'] === 'master'),
        30_000,
      );
      timings['failover_ms'] = Date.now() - fault;
      await waitFor(`${master} restarted`, () => restarts() > before, 30_000);
      log(`SIGKILL ${master}'s redis-server again: the next restart waits out the 10 s back-off`);
      await lc.killPodProcess(LIVE_NS, master, 'SIGKILL', 'redis');
      await waitFor(
        `${EXPECTED_ALERTS.join(' and ')} firing`,
        () => EXPECTED_ALERTS.every((a) => fired.has(a)),
        60_000,
      ).catch(() => undefined);
      for (const a of EXPECTED_ALERTS) if (fired.has(a)) timings[`${a}_fired_ms`] = fired.get(a)! - fault;
      const resolved = await waitFor('every alert resolved', async () => (await firing()).length === 0, 90_000).then(
        () => true,
        () => false,
      );
      timings['resolved_ms'] = Date.now() - fault;
      const emptyPanels: string[] = [];
      // A panel shows something when any of its queries does (switchovers stay empty without one).
      for (const q of dashboardQueries()) {
        let shown = false;
        for (const expr of q.exprs) {
          const r = await p.query(expr);
          if (r.resultType !== 'vector' || r.samples.length > 0) shown = true;
        }
        if (!shown) emptyPanels.push(q.panel);
      }
      const names = [...fired.keys()].sort();
      return {
        fired: names,
        unexpected: names.filter((n) => !(EXPECTED_ALERTS as readonly string[]).includes(n)),
        missing: EXPECTED_ALERTS.filter((a) => !fired.has(a)),
        resolved,
        emptyPanels,
        timings,
      };
    } finally {
      clearInterval(watch);
    }
  } finally {
    if (refresh) clearInterval(refresh);
    await prom?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

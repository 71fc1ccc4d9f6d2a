// The pod-discovery stand-in's labels, and the whole translation on a real Prometheus: the scrape
// config prometheus-operator would generate for a PodMonitor like the hook's, its relabelings
// run by Prometheus 2.42 over the targets of hand-built pods whose "pod IPs" are loopback
// addresses (127.0.151.x) with exporter-like HTTP servers: the selected pods' metrics ports are
// scraped with the operator's target labels, the others dropped, the metric relabeling applied.
// Every wait polls against a deadline.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { until } from '../support/until.ts';
import { startPrometheus } from './prometheus.ts';
import { podTargetGroups, withFileSd, writeFileSd, type Pod } from './pod-sd.ts';
import { podMonitorScrapeConfigs, type PodMonitor } from './scrape-config.ts';

const ip = (host: number) => `127.0.151.${host}`;
const WAIT_MS = 60_000;

const MONITOR: PodMonitor = {
  metadata: { name: 'my-redis', namespace: 'team-a' },
  spec: {
    selector: { matchLabels: { 'app.kubernetes.io/name': 'redis', 'app.kubernetes.io/instance': 'my-redis' } },
    namespaceSelector: { matchNames: ['team-a'] },
    podMetricsEndpoints: [
      {
        port: 'metrics',
        path: '/metrics',
        relabelings: [
          {
            sourceLabels: ['__meta_kubernetes_pod_label_redis_example_com_role'],
            targetLabel: 'role',
            action: 'replace',
          },
        ],
        metricRelabelings: [{ sourceLabels: ['__name__'], regex: 'go_.*', action: 'drop' }],
      },
    ],
  },
};

function pod(o: {
  name: string;
  namespace?: string;
  host: number;
  metricsPort: number;
  instance?: string;
  role?: string;
  phase?: string;
}): Pod {
  return {
    metadata: {
      name: o.name,
      namespace: o.namespace ?? 'team-a',
      uid: `uid-${o.name}`,
      labels: {
        'app.kubernetes.io/name': 'redis',
        'app.kubernetes.io/instance': o.instance ?? 'my-redis',
        ...(o.role ? { 'redis.example.com/role': o.role } : {}),
      },
      ownerReferences: [{ kind: 'StatefulSet', name: o.instance ?? 'my-redis', controller: true }],
    },
    spec: {
      nodeName: 'node-1',
      containers: [
        { name: 'redis', image: 'redis:7', ports: [{ name: 'redis', containerPort: 6379, protocol: 'TCP' }] },
        {
          name: 'exporter',
          image: 'oliver006/redis_exporter:v1.45.0',
          ports: [{ name: 'metrics', containerPort: o.metricsPort }],
        },
      ],
      initContainers: [{ name: 'init' }],
    },
    status: {
      phase: o.phase ?? 'Running',
      podIP: ip(o.host),
      hostIP: '10.0.0.1',
      conditions: [{ type: 'Ready', status: 'True' }],
    },
  };
}

test("the pod role's targets: one per container port, one per portless container, none without an IP", () => {
  const p = pod({ name: 'my-redis-0', host: 1, metricsPort: 9121, role: 'master' });
  const groups = podTargetGroups([p, { ...p, status: { phase: 'Pending' } }]);
  assert.deepEqual(
    groups.map((g) => g.targets[0]),
    ['127.0.151.1:6379', '127.0.151.1:9121', '127.0.151.1'],
  );
  const metrics = groups[1]!.labels;
  assert.equal(metrics['__meta_kubernetes_pod_container_port_name'], 'metrics');
  assert.equal(metrics['__meta_kubernetes_pod_container_port_protocol'], 'TCP');
  assert.equal(metrics['__meta_kubernetes_pod_container_init'], 'false');
  assert.equal(metrics['__meta_kubernetes_pod_label_redis_example_com_role'], 'master');
  assert.equal(metrics['__meta_kubernetes_pod_labelpresent_redis_example_com_role'], 'true');
  assert.equal(metrics['__meta_kubernetes_pod_controller_kind'], 'StatefulSet');
  assert.equal(metrics['__meta_kubernetes_pod_ready'], 'true');
  assert.equal(groups[2]!.labels['__meta_kubernetes_pod_container_init'], 'true');
  assert.equal(groups[2]!.labels['__meta_kubernetes_pod_container_port_name'], undefined);
});

test("a real Prometheus runs the operator's scrape config: selected pods scraped with its labels, others dropped", async (t) => {
  const servers: Server[] = [];
  t.after(() => Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r())))));
  const exporter = async (host: number, up: number): Promise<number> => {
    const server = createServer((_req, res) => res.end(`redis_up ${up}\ngo_goroutines 7\n`));
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, ip(host), r));
    return (server.address() as AddressInfo).port;
  };
  const pods = [
    pod({ name: 'my-redis-0', host: 1, metricsPort: await exporter(1, 1), role: 'master' }),
    pod({ name: 'my-redis-1', host: 2, metricsPort: await exporter(2, 0), role: 'replica' }),
    pod({ name: 'other-0', host: 3, metricsPort: await exporter(3, 1), instance: 'other' }),
    pod({ name: 'my-redis-0', namespace: 'team-b', host: 4, metricsPort: await exporter(4, 1) }),
    pod({ name: 'my-redis-2', host: 5, metricsPort: await exporter(5, 1), phase: 'Succeeded' }),
  ];
  const configs = podMonitorScrapeConfigs(MONITOR);
  const prom = await startPrometheus({
    config: { global: { scrape_interval: '1s', evaluation_interval: '1s' }, scrape_configs: withFileSd(configs) },
    listen: ip(100),
  });
  t.after(() => prom.stop());
  writeFileSd(prom.dir, configs, pods);
  const dump = () => prom.logTail(20).join('\n');

  const active = await until(
    'both selected pods scraped',
    async () => {
      const targets = (await prom.targets()).activeTargets.filter((x) => x.health === 'up');
      return targets.length === 2 && targets;
    },
    WAIT_MS,
    { everyMs: 200, dump },
  );
  const byPod = Object.fromEntries(active.map((x) => [x.labels['pod'], x]));
  assert.deepEqual(byPod['my-redis-0']!.labels, {
    container: 'exporter',
    endpoint: 'metrics',
    instance: `${ip(1)}:${pods[0]!.spec.containers[1]!.ports![0]!.containerPort}`,
    job: 'team-a/my-redis',
    namespace: 'team-a',
    pod: 'my-redis-0',
    role: 'master',
  });
  assert.equal(byPod['my-redis-1']!.labels['role'], 'replica');
  assert.equal(byPod['my-redis-0']!.scrapePool, 'podMonitor/team-a/my-redis/0');
  // Discovered and dropped: the redis port and the portless init container of the selected pods,
  // all three targets of other-0 (selector) and of the Succeeded pod; team-b is never discovered.
  const dropped: Record<string, number> = {};
  for (const d of (await prom.targets()).droppedTargets) {
    const key = `${d.discoveredLabels['__meta_kubernetes_namespace']}/${d.discoveredLabels['__meta_kubernetes_pod_name']}`;
    dropped[key] = (dropped[key] ?? 0) + 1;
  }
  assert.deepEqual(dropped, {
    'team-a/my-redis-0': 2,
    'team-a/my-redis-1': 2,
    'team-a/other-0': 3,
    'team-a/my-redis-2': 3,
  });

  const series = await until(
    'redis_up from both pods',
    async () => {
      const r = await prom.query('redis_up');
      return r.resultType === 'vector' && r.samples.length === 2 && r.samples;
    },
    WAIT_MS,
    { everyMs: 200, dump },
  );
  assert.deepEqual(Object.fromEntries(series.map((s) => [s.labels['role'], s.value])), { master: 1, replica: 0 });
  // metricRelabelings dropped go_*; up{} is Prometheus's own and stays.
  assert.deepEqual(await prom.query('go_goroutines'), { resultType: 'vector', samples: [] });
  const up = await prom.query('up{job="team-a/my-redis"}');
  assert.equal(up.resultType === 'vector' && up.samples.length, 2);
});

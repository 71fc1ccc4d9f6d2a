// The demo's walk-through on the in-process stand-in (test/cluster: an API server, Metacontroller,
// StatefulSets and a kubelet running each pod as a real redis-server on 127.0.<subnet>.x), with
// the REAL hook service (`node src/server/main.ts`) and two REAL sidecars (`node
// src/sidecar/main.ts`, one Lease). What runs where the real cluster cannot (demo.ts says why),
// or with DEMO_CLUSTER=stand-in. It prints kubectl-like tables from the stand-in's own objects.
import { performance } from 'node:perf_hooks';
import { ROLE_LABEL } from '../src/api/labels.ts';
import { exampleManifest, startCluster } from '../test/cluster/index.ts';
import { eventTable, isPodReady, loadPrinterColumns, podStatus, podTable, redisTable } from '../test/cluster/kubectl.ts';
import { ensureMonitoringTools } from '../test/monitoring/tools.ts';
import { standInView, type SystemCluster as Cluster } from '../test/system/cluster.ts';
import { bold, dim, say, sayRecovered, sleep, track } from './ui.ts';

const NAME = 'my-redis';
const NS = 'default';
const RUNNING = 'my-redis 7.2 Ready 2 Running';

function tables(c: Cluster): void {
  say(`$ kubectl get redis`);
  say(redisTable(c.list('redises', { namespace: NS }), loadPrinterColumns()));
  say();
  say(`$ kubectl get pods -o wide -L ${ROLE_LABEL}`);
  say(podTable(c.pods(NAME)));
  const ep = c.masterEndpoint(NAME);
  say(dim(`  (the my-redis-master Service routes to ${ep ? `${ep.pod} at ${ep.ip}` : 'nothing right now'})`));
}

/** One line per pod: what changes during a failover. */
function podLine(c: Cluster, name: string): string {
  const p = c.get('pods', name, NS);
  if (!p) return 'gone';
  const ip = (p['status'] as { podIP?: string } | undefined)?.podIP ?? '<none>';
  const role = p.metadata.labels?.[ROLE_LABEL] ?? '-';
  const link = p.metadata.annotations?.['redis.example.com/link'] ?? '-';
  return `${podStatus(p)} ${isPodReady(p) ? 'ready' : 'not-ready'} ip=${ip} role=${role} link=${link}`;
}

interface Snapshot {
  lines: Map<string, string>;
  events: number;
}

function snapshot(c: Cluster): Snapshot {
  const lines = new Map<string, string>();
  for (const p of c.pods(NAME)) lines.set(`pod ${p.metadata.name}`, podLine(c, p.metadata.name));
  const ep = c.masterEndpoint(NAME);
  lines.set('service my-redis-master', ep ? `-> ${ep.pod} (${ep.ip})` : '-> no endpoint');
  lines.set('redis my-redis', c.redisRow(NAME) ?? 'gone');
  return { lines, events: c.events({ name: NAME }).length };
}

/** Prints what changed since `prev`, stamped with ms since t0. */
function printChanges(c: Cluster, prev: Snapshot, next: Snapshot, t0: number): void {
  const stamp = `+${String(Math.round(performance.now() - t0)).padStart(5)} ms`;
  for (const [key, value] of next.lines) {
    if (prev.lines.get(key) !== value) say(`${stamp}  ${key.padEnd(28)} ${value}`);
  }
  for (const key of prev.lines.keys()) if (!next.lines.has(key)) say(`${stamp}  ${key.padEnd(28)} gone`);
  for (const e of c.events({ name: NAME }).slice(prev.events)) say(`${stamp}  ${`event ${e.reason}`.padEnd(28)} ${e.message} ${dim(`(${e.source})`)}`);
}

/** The walk-through; resolves with the failover time (ms). The caller stops the cluster (ui.ts cleanup). */
export async function runStandIn(subnet: number): Promise<number> {
  const t = performance.now();
  say(bold('redis-operator demo: a local cluster stand-in with the real hook and the real sidecars'));
  say(dim(`pods run as real redis-server processes on 127.0.${subnet}.x; nothing leaves this machine`));
  say();
  // Every pod runs redis_exporter beside Redis; the pods get Debian's build of it (fetched once).
  await ensureMonitoringTools((line) => say(dim(line)));
  const c = await track(
    startCluster({ subnet, hook: 'process', keepData: process.env['DEMO_KEEP'] === '1' }).then(standInView),
    'sidecars, hook, every redis-server, temporary files',
  );
  say(`started in ${Math.round(performance.now() - t)} ms: sidecars ${c.sidecarNames().join(' and ')} (leader: ${c.leader()})`);
  say();

  say(bold("1. Apply the design's Redis"));
  say('$ kubectl apply -f manifests/examples/redis.yaml');
  const applyAt = performance.now();
  await c.apply(exampleManifest());
  say('redis.redis.example.com/my-redis created');
  await c.waitFor(
    () => c.redisRow(NAME) === RUNNING && c.pods(NAME).every(isPodReady) && c.pods(NAME).length === 3,
    60_000,
    `${RUNNING} with three Ready pods`,
  );
  say(dim(`(Running with three Ready pods ${Math.round(performance.now() - applyAt)} ms after the apply)`));
  say();
  tables(c);
  say();

  // A few writes through the master Service, to show they survive.
  const master = c.masterEndpoint(NAME)!;
  const client = c.redis(master.ip, NAME);
  client.on('error', () => {});
  await client.connect();
  for (let i = 1; i <= 100; i++) await client.set(`demo:${i}`, String(i));
  const acked = Number(await client.call('WAIT', '2', '5000'));
  client.disconnect();
  say(`wrote demo:1..demo:100 through the master Service (${master.ip}); WAIT says ${acked} replicas have them`);
  say();

  say(bold(`2. Delete the master pod and watch the failover`));
  say(`$ kubectl delete pod ${master.pod}`);
  let prev = snapshot(c);
  const t0 = performance.now();
  await c.deletePod(master.pod);
  say(`pod "${master.pod}" deleted`);
  let failoverMs: number | undefined;
  let rejoinedMs: number | undefined;
  const deadline = t0 + 60_000;
  while (performance.now() < deadline) {
    await sleep(20);
    const next = snapshot(c);
    printChanges(c, prev, next, t0);
    prev = next;
    const ep = c.masterEndpoint(NAME);
    if (failoverMs === undefined && ep && ep.pod !== master.pod) failoverMs = performance.now() - t0;
    const back = c.get('pods', master.pod, NS);
    if (
      failoverMs !== undefined &&
      back &&
      !back.metadata.deletionTimestamp &&
      isPodReady(back) &&
      back.metadata.labels?.[ROLE_LABEL] === 'replica' &&
      back.metadata.annotations?.['redis.example.com/link'] === 'up'
    ) {
      rejoinedMs = performance.now() - t0;
      break;
    }
  }
  if (failoverMs === undefined || rejoinedMs === undefined) throw new Error(`the failover did not complete within 60 s\n${c.dump()}`);
  await c.waitFor(() => c.redisRow(NAME) === RUNNING, 30_000, RUNNING);
  say();
  say(
    `new master Ready behind the my-redis-master Service ${Math.round(failoverMs)} ms after the delete; ${master.pod} back as a replica after ${Math.round(rejoinedMs)} ms`,
  );
  say();

  say(bold('3. After the failover'));
  tables(c);
  say();
  const now = c.masterEndpoint(NAME)!;
  const backIp = (c.get('pods', master.pod, NS)!['status'] as { podIP: string }).podIP;
  const back = c.redis(backIp, NAME);
  back.on('error', () => {});
  await back.connect();
  await sayRecovered(back, master.pod, backIp, now.pod);
  say();
  say('$ kubectl get events --field-selector involvedObject.name=my-redis');
  say(
    eventTable(
      c
        .list('events', { namespace: NS })
        .filter((e) => (e['involvedObject'] as { name?: string } | undefined)?.name === NAME)
        .sort((a, b) => Number(a.metadata.resourceVersion) - Number(b.metadata.resourceVersion)),
    ),
  );
  say();
  return failoverMs;
}

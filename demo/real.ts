// The demo's walk-through on a REAL cluster on this machine (test/k8s/real-cluster.ts): the control
// plane built from source, 3 real nodes (containerd + runc, kubelet, kube-proxy), CoreDNS, the real
// Metacontroller, and `kubectl apply -k manifests/` verbatim, so the operator runs as its
// Deployment from the image built from this repository. Commands, tables and Events are the real
// kubectl's; the failover as it unfolds comes from watches (follow.ts). The host routes to every
// pod's address, so the demo's writes go straight to the master pod, with the password of the
// Secret the operator made.
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { LINK_ANNOTATION, REDIS_PORT, ROLE_LABEL } from '../src/api/labels.ts';
import { isPodReady } from '../test/support/kubectl-tables.ts';
import { cacheRoot, ensureBinaries, isBuilt } from '../test/k8s/build.ts';
import { buildCoredns, isCorednsBuilt } from '../test/k8s/coredns-build.ts';
import { ensureImages, imagesCacheDir } from '../test/k8s/images.ts';
import { buildNodeParts, nodePartsDir } from '../test/k8s/node-build.ts';
import { REPO_ROOT } from '../test/k8s/operator.ts';
import { DEFAULT_IMAGES, startRealCluster, type RealCluster } from '../test/k8s/real-cluster.ts';
import { follow, type Follower, type View } from './follow.ts';
import { bold, building, dim, say, sayRecovered, track } from './ui.ts';

const NAME = 'my-redis';
const NS = 'default';
/** The `kubectl get redis` row once it runs: a master pod named, both replicas ready. */
const RUNNING = /^my-redis 7\.2 my-redis-\S+ 2\/2 Running$/;

/** What a start would build first (each is cached once built; a checker that throws counts as not built). */
function toBuild(): string[] {
  const built = (check: () => boolean) => {
    try {
      return check();
    } catch {
      return false;
    }
  };
  const archives = built(() => existsSync(path.join(imagesCacheDir(), 'archives')))
    ? readdirSync(path.join(imagesCacheDir(), 'archives'))
    : [];
  const imaged = (name: string) => archives.some((f) => f.startsWith(`${name}-`) && f.endsWith('.tar'));
  return [
    ...(built(() => isBuilt()) ? [] : ['Kubernetes and etcd']),
    ...(built(isCorednsBuilt) ? [] : ['CoreDNS']),
    ...(built(() => existsSync(nodePartsDir())) ? [] : ['containerd and the CNI plugins']),
    ...(['pause', ...DEFAULT_IMAGES].every(imaged) ? [] : ['the images']),
  ];
}

const ready = (v: View) =>
  RUNNING.test(v.row) && v.pods.length === 3 && v.pods.every(isPodReady) && v.master.length === 1;

function redisAt(ip: string, password: string): Redis {
  const r = new Redis({
    host: ip,
    port: REDIS_PORT,
    password,
    lazyConnect: true,
    connectTimeout: 5000,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
  });
  r.on('error', () => {});
  return r;
}

/** The walk-through; resolves with the failover time (ms). The caller stops the cluster (ui.ts cleanup). */
export async function runReal(subnet: number): Promise<number> {
  const t = performance.now();
  const secs = (from: number) => ((performance.now() - from) / 1000).toFixed(1);
  say(
    bold(
      'redis-operator demo: a real Kubernetes cluster on this machine, the operator installed with kubectl apply -k manifests/',
    ),
  );
  say(
    dim(
      `3 real nodes (containerd, runc, kubelet, kube-proxy), pods on 198.18.${subnet}.x, the real Metacontroller; nothing leaves this machine`,
    ),
  );
  say();
  const missing = toBuild();
  if (missing.length > 0)
    say(
      `building ${missing.join(', ')} first: a cold build of everything (npm run cluster:build) takes about 10 minutes on 2 cores (583 s measured); it is cached in ${cacheRoot()}; progress every 20 s`,
    );
  const progress = (line: string) => say(dim(`  ${secs(t).padStart(6)} s  ${line}`));
  // Before the start, so that an interrupt during a build of minutes has no cluster to wait for.
  await building(async () => {
    await ensureBinaries(progress);
    await buildCoredns(progress);
    await buildNodeParts(progress);
    // The start says it again: once is enough when nothing was built.
    await ensureImages((line) => (/all cached$/.test(line) ? undefined : progress(line)), ['pause', ...DEFAULT_IMAGES]);
  });
  if (process.env['DEMO_KEEP'] === '1') process.env['KEEP_CLUSTER_DATA'] = '1';
  const rc = await track(
    startRealCluster({ subnet, nodes: 3, onProgress: progress }),
    `3 nodes and every container, Metacontroller, the control plane, CoreDNS, the bridge rok${subnet}${process.env['DEMO_KEEP'] === '1' ? '' : ', temporary files'}`,
  );
  const image = (
    await rc.kubectl([
      'get',
      'deployment',
      'redis-operator',
      '-n',
      'redis-operator',
      '-o',
      'jsonpath={.spec.template.spec.containers[0].image}',
    ])
  ).trim();
  say(
    `cluster up in ${secs(t)} s: Kubernetes ${rc.version}, ${rc.nodes.length} nodes on ${rc.runtime}, the operator's Deployment running ${image}`,
  );
  if (process.env['DEMO_KEEP'] === '1')
    say(dim(`(logs and data stay in ${rc.dataRoot}; KUBECONFIG=${rc.kubeconfig} while it runs)`));
  say();
  // Watching from before the apply: the pods' way up is printed too.
  const follower = await follow(rc.kubeconfig, NS, NAME);
  try {
    return await walkThrough(rc, follower);
  } finally {
    follower.stop();
  }
}

/** Apply, write, delete the master pod, look again; resolves with the failover time (ms). */
async function walkThrough(rc: RealCluster, follower: Follower): Promise<number> {
  const show = async (args: string[]) => {
    say(`$ kubectl ${args.join(' ')}`);
    say((await rc.kubectl(args)).trimEnd());
  };
  const tables = async (v: View) => {
    await show(['get', 'redis']);
    say();
    await show(['get', 'pods', '-o', 'wide', '-L', ROLE_LABEL]);
    say(
      dim(
        `  (the ${NAME}-master Service routes to ${v.master.map((e) => `${e.pod} at ${e.ip}`).join(', ') || 'nothing right now'})`,
      ),
    );
  };

  say(bold("1. Apply the design's Redis"));
  say('$ kubectl apply -f manifests/examples/redis.yaml');
  const applyAt = performance.now();
  // Dimmed: how the pods come up is detail here; the failover below is the point.
  follower.phase(applyAt, dim);
  say((await rc.kubectl(['apply', '-f', path.join(REPO_ROOT, 'manifests/examples/redis.yaml')])).trimEnd());
  follower.release();
  const note = setTimeout(() => {
    if (follower.view().pods.length === 0)
      say(
        dim(
          '  (no pods yet: Metacontroller looks for new APIs every 20 s, as upstream deploys it, and may not have seen the Redis CRD of manifests/ yet)',
        ),
      );
  }, 5000);
  let v = await follower.until(ready, 180_000, 'my-redis 7.2 <master pod> 2/2 Running with three Ready pods');
  clearTimeout(note);
  say(dim(`(Running with three Ready pods ${Math.round(performance.now() - applyAt)} ms after the apply)`));
  say();
  await tables(v);
  say();

  // A few writes to the master, to show they survive.
  const password = Buffer.from(
    await rc.kubectl(['get', 'secret', `${NAME}-auth`, '-o', 'jsonpath={.data.password}']),
    'base64',
  ).toString('utf8');
  const old = v.master[0]!;
  const client = redisAt(old.ip, password);
  await client.connect();
  for (let i = 1; i <= 100; i++) await client.set(`demo:${i}`, String(i));
  const acked = Number(await client.call('WAIT', '2', '5000'));
  client.disconnect();
  say(
    `wrote demo:1..demo:100 to the master behind the ${NAME}-master Service (${old.pod} at ${old.ip}); WAIT says ${acked} replicas have them`,
  );
  say();

  say(bold('2. Delete the master pod and watch the failover'));
  say(`$ kubectl delete pod ${old.pod} --wait=false`);
  const t0 = performance.now();
  follower.phase(t0);
  let failoverMs: number | undefined;
  let rejoinedMs: number | undefined;
  const done = follower.until(
    (x) => {
      if (failoverMs === undefined && x.master.length === 1 && x.master[0]!.uid !== old.uid)
        failoverMs = performance.now() - t0;
      const back = x.pods.find((p) => p.metadata.name === old.pod);
      const m = back?.metadata;
      if (failoverMs !== undefined && back && m && m.uid !== old.uid && !m.deletionTimestamp && isPodReady(back))
        if (m.labels?.[ROLE_LABEL] === 'replica' && m.annotations?.[LINK_ANNOTATION] === 'up')
          rejoinedMs ??= performance.now() - t0;
      return rejoinedMs !== undefined && ready(x);
    },
    120_000,
    `a new master behind ${NAME}-master and ${old.pod} back as a linked replica`,
  );
  say((await rc.kubectl(['delete', 'pod', old.pod, '--wait=false'])).trimEnd());
  follower.release();
  v = await done;
  say();
  say(
    `new master Ready behind the ${NAME}-master Service ${Math.round(failoverMs!)} ms after the delete; ${old.pod} back as a replica after ${Math.round(rejoinedMs!)} ms`,
  );
  say();

  say(bold('3. After the failover'));
  await tables(v);
  say();
  const now = v.master[0]!;
  const backIp = v.pods.find((p) => p.metadata.name === old.pod)?.status?.podIP ?? '';
  const back = redisAt(backIp, password);
  await back.connect();
  await sayRecovered(back, old.pod, backIp, now.pod);
  say();
  await show([
    'get',
    'events',
    '--field-selector',
    `involvedObject.name=${NAME}`,
    '--sort-by=.metadata.creationTimestamp',
  ]);
  say();
  return failoverMs!;
}

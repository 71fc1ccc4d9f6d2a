// What the RedisCluster fault run (rediscluster-faults.test.ts) reads and does to a running
// cluster: the Redis-level invariants every node must agree on, which node masters each shard,
// and the faults themselves, each made as a user or a failure would make it.
// Invariants: every check asks every live pod's node itself (as the operator's Redis user), so a
// label or a record that lags cannot hide a broken cluster; a partition is made only of DROP
// rules in the two pods' network namespaces (cutLink), each removed by restore() after the hold
// or at the test's end; a frozen sidecar is always SIGKILLed and restarted before the fault ends.
import type { TestContext } from 'node:test';
import { ROLE_LABEL, ROLE_MASTER } from '../../src/api/labels.ts';
import { parseClusterNodes } from '../../src/sidecar/rediscluster/decide/cluster-nodes.ts';
import type { Fault } from '../support/fault-schedule.ts';
import { slotProblems } from '../support/fault-schedule.ts';
import type { SystemCluster } from './cluster.ts';
import { admin, labelledMaster, livePods, shardPods, statusOf, type Json } from './rediscluster-support.ts';
import { NS, sleep } from './support.ts';

/** Shard index of a pod named <name>-shard-<i>-<ordinal>. */
const shardOfPod = (name: string, pod: string) => Number(new RegExp(`^${name}-shard-(\\d+)-\\d+$`).exec(pod)?.[1]);

interface NodeAnswer {
  pod: string;
  nodes: string;
  info: string;
}

async function askEveryNode(c: SystemCluster, name: string): Promise<{ answers: NodeAnswer[]; silent: string[] }> {
  const answers: NodeAnswer[] = [];
  const silent: string[] = [];
  await Promise.all(
    livePods(c, name).map(async (p) => {
      const ip = p.status?.podIP;
      if (!ip) return silent.push(`${p.metadata.name} (no address)`);
      const r = admin(c, name, ip);
      try {
        const [nodes, info] = await Promise.all([r.call('CLUSTER', 'NODES'), r.call('CLUSTER', 'INFO')]);
        answers.push({ pod: p.metadata.name, nodes: String(nodes), info: String(info) });
      } catch (err) {
        silent.push(`${p.metadata.name} (${(err as Error).message})`);
      } finally {
        r.disconnect();
      }
    }),
  );
  answers.sort((a, b) => a.pod.localeCompare(b.pod));
  return { answers, silent };
}

/**
 * What breaks the cluster as its nodes answer now: a node that does not answer, cluster_state other
 * than ok on any node, a slot with no master or two, views that disagree, a slot left open, a
 * shard with two masters serving slots, a master that is not the pod labelled master.
 */
export async function clusterProblems(c: SystemCluster, name: string): Promise<string[]> {
  const { answers, silent } = await askEveryNode(c, name);
  const problems = silent.map((s) => `${s} did not answer`);
  for (const a of answers) {
    const state = /cluster_state:(\w+)/.exec(a.info)?.[1];
    if (state !== 'ok') problems.push(`${a.pod}: cluster_state:${state ?? '?'}`);
  }
  problems.push(...slotProblems(new Map(answers.map((a) => [a.pod, a.nodes]))));
  // One master per shard: a shard split between two masters passes the slot check (each slot has
  // one), and the master is the pod labelled so (what Services and users are shown).
  const serving = new Map<number, string[]>();
  for (const a of answers) {
    const self = parseClusterNodes(a.nodes).find((n) => n.myself);
    if (self?.role === 'master' && self.slots.length > 0)
      serving.set(shardOfPod(name, a.pod), [...(serving.get(shardOfPod(name, a.pod)) ?? []), a.pod]);
  }
  for (const [shard, pods] of serving) {
    const labelled = labelledMaster(c, name, shard)?.metadata.name;
    if (pods.length !== 1) problems.push(`shard ${shard} served by ${pods.length} masters: ${pods.join(', ')}`);
    else if (pods[0] !== labelled)
      problems.push(`shard ${shard}: ${pods[0]} masters it, ${labelled ?? 'no pod'} is labelled`);
  }
  return problems;
}

/** Each shard's master as its own node says (role master with slots): shard -> `<pod> <node id>`. */
export async function shardMasters(c: SystemCluster, name: string): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  for (const a of (await askEveryNode(c, name)).answers) {
    const self = parseClusterNodes(a.nodes).find((n) => n.myself);
    if (self?.role === 'master' && self.slots.length > 0) out.set(shardOfPod(name, a.pod), `${a.pod} ${self.id}`);
  }
  return out;
}

export interface Injected {
  /** Shards whose master may change because of this fault ('any': a rollout moves them all). */
  mayFailOver: ReadonlySet<number> | 'any';
  /** What happened, for the diagnostics. */
  note: string;
  /** The pod whose redis-server went down, whose restart hold the diagnostics then report. */
  victim?: string;
}

/** What the victim's start script said about its restart hold (RESTART_HOLD_SCRIPT), for the diagnostics. */
export function holdOutcome(c: SystemCluster, pod: string): string {
  const lines = c
    .podLog(NS, pod)
    .split('\n')
    .filter((l) => /served slots as a master when it stopped|serving its slots|no peer showed/.test(l));
  return lines.at(-1) ?? 'no restart hold';
}

const podName = (p: { metadata: { name: string } } | undefined, what: string): string => {
  if (!p) throw new Error(`no ${what}`);
  return p.metadata.name;
};

/** Makes one fault happen, and undoes what must be undone (a cut, a frozen sidecar) after its hold. */
export async function injectFault(
  t: TestContext,
  c: SystemCluster,
  name: string,
  f: Fault,
  index: number,
): Promise<Injected> {
  switch (f.kind) {
    case 'master-kill': {
      const victim = podName(labelledMaster(c, name, f.shard), `labelled master in shard ${f.shard}`);
      if (!(await c.killPodProcess(NS, victim, 'SIGKILL'))) throw new Error(`${victim}'s redis is not running`);
      return { mayFailOver: new Set([f.shard]), note: `${victim} SIGKILLed`, victim };
    }
    case 'pod-delete': {
      const master = labelledMaster(c, name, f.shard);
      const replicas = shardPods(c, name, f.shard)
        .filter((p) => p.metadata.labels?.[ROLE_LABEL] !== ROLE_MASTER)
        .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
      const victim =
        f.target === 'master'
          ? podName(master, `labelled master in shard ${f.shard}`)
          : podName(replicas[f.replica % Math.max(1, replicas.length)], `replica in shard ${f.shard}`);
      await c.deletePod(victim, NS);
      return {
        mayFailOver: new Set(f.target === 'master' ? [f.shard] : []),
        note: `${victim} deleted`,
        ...(f.target === 'master' ? { victim } : {}),
      };
    }
    case 'partition': {
      const master = labelledMaster(c, name, f.shard);
      const masterIp = master?.status?.podIP;
      if (!master || !masterIp) throw new Error(`no labelled master with an address in shard ${f.shard}`);
      const replicas = shardPods(c, name, f.shard).filter(
        (p) => p.metadata.name !== master.metadata.name && p.status?.podIP,
      );
      const cuts = [];
      for (const r of replicas) cuts.push(await c.cutLink(t, masterIp, r.status!.podIP!));
      await sleep(f.holdMs);
      // Whether the cut was felt: each replica's own view of its master after the hold.
      const seen: string[] = [];
      for (const r of replicas) {
        const conn = admin(c, name, r.status!.podIP!);
        try {
          const line = String(await conn.call('CLUSTER', 'NODES'))
            .split('\n')
            .find((l) => l.includes(`${masterIp}:`));
          seen.push(`${r.metadata.name} sees ${/fail\??/.exec(line ?? '')?.[0] ?? 'no failure'}`);
        } catch (err) {
          seen.push(`${r.metadata.name}: ${(err as Error).message}`);
        } finally {
          conn.disconnect();
        }
      }
      for (const cut of cuts) await cut.restore();
      return {
        mayFailOver: new Set(),
        note: `${master.metadata.name} cut from ${replicas.length} replicas (${seen.join(', ')})`,
      };
    }
    case 'sidecar-kill': {
      const acting = c.leader(name, NS);
      if (!acting) throw new Error(`no sidecar holds ${name}'s shard Lease`);
      await c.killSidecar(acting);
      await sleep(f.holdMs);
      const takenOver = c.leader(name, NS);
      await c.restartSidecar(acting);
      return {
        mayFailOver: new Set(),
        note: `${acting} frozen; Lease held by ${takenOver ?? 'nobody'} after the hold`,
      };
    }
    case 'scale-up':
    case 'scale-down': {
      const to = f.kind === 'scale-up' ? 4 : 3;
      await c.scale(name, to, NS, 'rediscluster');
      return { mayFailOver: new Set([3]), note: `spec.master.replicas ${to}` };
    }
    case 'rollout': {
      const revisions = (shards: number) =>
        Array.from({ length: shards }, (_, s) =>
          String((c.get('statefulsets', `${name}-shard-${s}`, NS)?.['status'] as Json | undefined)?.['updateRevision']),
        );
      const was = revisions(f.shards);
      await c.apply({
        apiVersion: 'redis.example.com/v1',
        kind: 'RedisCluster',
        metadata: { name, namespace: NS },
        spec: { config: { maxclients: String(5000 + index) } },
      });
      await c.waitFor(
        () => revisions(f.shards).every((r, i) => r !== was[i]),
        60_000,
        'every shard StatefulSet on a new template revision',
      );
      return { mayFailOver: 'any', note: `maxclients ${5000 + index}` };
    }
  }
}

/**
 * Every pod runs its StatefulSet's current template (its controller-revision-hash is the set's
 * updateRevision) and the Updated condition is True. The pods are read too: right after a template
 * change the status may still carry the True of before, until the hook has seen the new revision.
 */
export const updated = (c: SystemCluster, name: string) => {
  const pods = livePods(c, name);
  const current = pods.every((p) => {
    const set = /^(.*)-\d+$/.exec(p.metadata.name)?.[1] ?? '';
    const revision = (c.get('statefulsets', set, NS)?.['status'] as Json | undefined)?.['updateRevision'];
    return revision !== undefined && p.metadata.labels?.['controller-revision-hash'] === revision;
  });
  return (
    pods.length > 0 &&
    current &&
    ((statusOf(c, name)['conditions'] ?? []) as Json[]).some((x) => x['type'] === 'Updated' && x['status'] === 'True')
  );
};

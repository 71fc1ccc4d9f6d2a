// Puts a system test's real cluster back as it was installed, so the next scenario of the same lane
// can run on it instead of starting a cluster of its own (about 25 s each, more on a loaded box).
// What a scenario may leave, and how it goes:
// - API fault rules: cleared; a sidecar frozen by killSidecar: restarted by the kubelet;
// - the operator's Deployment scaled or edited: the install applied again and rolled out;
// - every Redis, RedisCluster and RedisBackup, in any namespace: deleted first, while the operator
//   still answers Metacontroller's finalize hook;
// - namespaces, CRDs, StorageClasses and cluster RBAC it created: deleted; every object it made in
//   `default` (pods, claims, Secrets, Jobs...): deleted; `default`'s Events: deleted last.
// Invariants: only what the baseline (taken when the cluster was first up) does not name is
// deleted, never a system or operator object; reset resolves only once the cluster is back (no
// extra namespace, pod, claim or volume; every sidecar ready, every shard Lease held), and throws
// otherwise: the caller then stops the cluster rather than lend it again.
import type { SystemCluster } from '../system/cluster.ts';
import { until } from '../support/until.ts';
import { OPERATOR_NAMESPACE } from './operator.ts';
import type { RealCluster } from './real-cluster.ts';

/**
 * Cluster-scoped kinds a scenario may create (persistent volumes go with their claims: the provisioner reclaims them).
 */
const CLUSTER_KINDS = 'namespaces,customresourcedefinitions,storageclasses,clusterroles,clusterrolebindings';
/** Kinds a scenario may create in `default`; controllers first, so that none recreates what follows. */
const DEFAULT_KINDS =
  'cronjobs,jobs,statefulsets,deployments,pods,persistentvolumeclaims,services,configmaps,secrets,serviceaccounts,roles,rolebindings,networkpolicies,poddisruptionbudgets';
const CUSTOM = ['redisclusters', 'redisbackups', 'redises'];
const BOUND_MS = 180_000;

export interface Baseline {
  cluster: Set<string>;
  inDefault: Set<string>;
  volumes: Set<string>;
  operatorGeneration: string;
}

const names = async (rc: RealCluster, args: string[]) =>
  (await rc.kubectl(['get', ...args, '-o', 'name'])).split('\n').filter((l) => l.trim() !== '');

const operatorGeneration = (rc: RealCluster) =>
  rc.kubectl([
    'get',
    'deployment',
    'redis-operator',
    '-n',
    OPERATOR_NAMESPACE,
    '-o',
    'jsonpath={.metadata.generation}',
  ]);

export async function takeBaseline(rc: RealCluster): Promise<Baseline> {
  return {
    cluster: new Set(await names(rc, [CLUSTER_KINDS])),
    inDefault: new Set(await names(rc, [DEFAULT_KINDS, '-n', 'default'])),
    volumes: new Set(await names(rc, ['persistentvolumes'])),
    operatorGeneration: await operatorGeneration(rc),
  };
}

/**
 * What is left over, one line per kind of leftover; empty once the cluster is as the baseline says.
 * Read live from the API (not the test's cache), so a reset never trusts a lagging watch.
 */
async function leftovers(rc: RealCluster, b: Baseline): Promise<string[]> {
  const extra = (now: string[], base: Set<string>) => now.filter((n) => !base.has(n));
  const out = [
    ...extra(await names(rc, [CLUSTER_KINDS]), b.cluster),
    ...extra(await names(rc, [DEFAULT_KINDS, '-n', 'default']), b.inDefault).map((n) => `default ${n}`),
    ...extra(await names(rc, ['persistentvolumes']), b.volumes),
  ];
  for (const kind of CUSTOM) out.push(...(await names(rc, [kind, '-A'])));
  return out;
}

/**
 * Polls `check` (each poll runs kubectl) with the tests' until() until it returns no line;
 * resolves with what it waited on first, or fails naming what is still there.
 */
async function emptied(what: string, check: () => Promise<string[]>): Promise<string> {
  let first = '';
  let left: string[] = [];
  await until(
    `cluster reset: ${what}`,
    async () => {
      left = await check();
      first ||= left.slice(0, 3).join(', ');
      return left.length === 0;
    },
    BOUND_MS,
    { everyMs: 500, dump: () => `still: ${left.slice(0, 10).join(', ')}` },
  );
  return first;
}

/** Resets the cluster; resolves with how long each step took (`custom 1.2 s, objects 3.4 s, ...`). */
export async function resetCluster(
  view: SystemCluster,
  rc: RealCluster,
  b: Baseline,
  frozen: ReadonlySet<string>,
): Promise<string> {
  const steps: string[] = [];
  let t = Date.now();
  const step = (name: string, waitedOn = '') => {
    steps.push(`${name} ${((Date.now() - t) / 1000).toFixed(1)} s${waitedOn ? ` (waited on ${waitedOn})` : ''}`);
    t = Date.now();
  };
  view.faults.clear();
  for (const name of [...frozen]) await view.restartSidecar(name);
  if ((await operatorGeneration(rc)) !== b.operatorGeneration) await rc.reinstallOperator();
  step('operator');
  // The custom resources first, while the operator answers: each carries Metacontroller's
  // finalizer, released once the finalize hook says the Redis is gone; deleting their children
  // before could race a last sync that recreates them.
  await rc.kubectl(['delete', CUSTOM.join(','), '--all', '-A', '--wait=false']);
  step(
    'custom resources',
    await emptied('every Redis, RedisCluster and RedisBackup gone', async () =>
      (await Promise.all(CUSTOM.map((k) => names(rc, [k, '-A'])))).flat(),
    ),
  );
  const cluster = (await names(rc, [CLUSTER_KINDS])).filter((n) => !b.cluster.has(n));
  if (cluster.length > 0) await rc.kubectl(['delete', '--wait=false', '--ignore-not-found', ...cluster]);
  // A second of grace: these pods' data goes with them, nothing is to be saved on the way out.
  const inDefault = (await names(rc, [DEFAULT_KINDS, '-n', 'default'])).filter((n) => !b.inDefault.has(n));
  if (inDefault.length > 0)
    await rc.kubectl([
      'delete',
      '-n',
      'default',
      '--wait=false',
      '--ignore-not-found',
      '--grace-period=1',
      ...inDefault,
    ]);
  step('objects', await emptied('nothing a scenario made left', () => leftovers(rc, b)));
  // One deletecollection: `kubectl delete events --all` deletes them one request each, and a
  // scenario leaves thousands (30 s on a loaded box).
  await rc.kubectl(['delete', '--raw', '/api/v1/namespaces/default/events']);
  step('events');
  const sidecars = await emptied('every sidecar ready and every shard Lease held', async () => {
    const pods = view.sidecarNames();
    const out =
      pods.length === 0
        ? ['no operator pod']
        : view.leaseHolders().flatMap((h, i) => (h === '' ? [`shard ${i} without holder`] : []));
    for (const p of pods) if (!(await view.sidecarReady(p))) out.push(`${p} not ready`);
    return out;
  });
  step('sidecars', sidecars);
  return steps.join(', ');
}

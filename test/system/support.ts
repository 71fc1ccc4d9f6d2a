// Shared pieces of the system tests (test/system/*.test.ts): boot the local cluster with the design's Redis, an
// application that writes through the master Service with SET + WAIT 1 and records every acknowledged key, a watch that
// sees every pod write and records any moment two pods carried the master label, and checks on the data each node
// holds. Invariants: only loopback and the cluster's own 198.18.N/198.19.N ranges are contacted; every cluster, writer
// and watch is torn down by the test context, also when the test fails; bounds are waitFor deadlines (the figures
// measured are reported with t.diagnostic, never asserted).
import type { TestContext } from 'node:test';
import { performance } from 'node:perf_hooks';
import { ROLE_LABEL, ROLE_MASTER } from '../../src/api/labels.ts';
import { readFileSync } from 'node:fs';
import { missing, type SystemCluster as Cluster, type SystemClusterOptions as ClusterOptions } from './cluster.ts';
import { borrowCluster, giveBack } from './lane.ts';
import { isPodReady } from '../support/kubectl-tables.ts';
import type { StoredObject } from '../support/kube-client/objects.ts';
import { missingKeysOn, replicasCaughtUp } from '../support/redis-keys.ts';
import { AckedWriter } from '../support/acked-writer.ts';

/** manifests/examples/redis.yaml as a user applies it. */
export function exampleManifest(): string {
  return readFileSync(new URL('../../manifests/examples/redis.yaml', import.meta.url), 'utf8');
}

export const NAME = 'my-redis';
export const NS = 'default';
export const RUNNING_ROW = 'my-redis 7.2 Ready 2 Running';
export const DESIGN_PODS = ['my-redis-master-0', 'my-redis-replica-0', 'my-redis-replica-1'];

/**
 * The deadlines (ms) the scenarios wait within, at the kubelet's timeScale 1: a few times what was
 * measured on a 2-CPU machine (see the report and docs), so a loaded CI box does not flap.
 */
export const BOUND = {
  /** apply -> `my-redis 7.2 Ready 2 Running` (measured ~3.7 s). */
  running: 30_000,
  /** apply -> every pod Ready and linked (measured ~5 s). */
  allReady: 40_000,
  /** master pod deleted -> a new master Ready behind the master Service. */
  failover: 20_000,
  /** a recreated pod -> Ready replica of the current master. */
  rejoin: 40_000,
} as const;

/** The finalizer Metacontroller puts on a parent of our CompositeController. */
export const METACONTROLLER_FINALIZER = 'metacontroller.io/compositecontroller-redis-operator';

/**
 * What Metacontroller has written for a Redis, as the API shows it: the Redis' resourceVersion
 * (only Metacontroller writes it: the sidecars' RBAC is read-only there) and, per child, its
 * generation (StatefulSet, PDB: bumped by spec writes only, not by the controllers' status
 * writes) or resourceVersion (Service, ConfigMap: nothing else writes them). Two equal
 * snapshots mean no status and no child write in between, whichever Metacontroller runs.
 */
export function writeSnapshot(c: Cluster, name: string, namespace = NS): Record<string, string> {
  const out: Record<string, string> = { redis: c.get('redises', name, namespace)?.metadata.resourceVersion ?? 'gone' };
  for (const kind of ['statefulsets', 'services', 'configmaps', 'poddisruptionbudgets']) {
    for (const o of c.list(kind, { namespace, labelSelector: `app.kubernetes.io/instance=${name}` })) {
      const gen = o.metadata.generation;
      out[`${kind}/${o.metadata.name}`] =
        typeof gen === 'number' && gen > 0 ? `gen ${gen}` : `rv ${o.metadata.resourceVersion}`;
    }
  }
  return out;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export type Pod = StoredObject & { status?: { podIP?: string; phase?: string } };

/**
 * A real cluster (the lane's, reset, or a new one: lane.ts), given back after the test, pass or fail; undefined (the
 * test skipped, saying why) where it cannot run here.
 */
export async function boot(t: TestContext, options: ClusterOptions): Promise<Cluster | undefined> {
  const why = missing(options.images);
  if (why) {
    t.skip(why);
    return undefined;
  }
  const cluster = await borrowCluster(options, (line) => t.diagnostic(line));
  t.after(() => giveBack(cluster));
  return cluster;
}

/** Applies manifests/examples/redis.yaml verbatim and waits for the Running row and three Ready, linked pods. */
export async function applyDesign(
  t: Pick<TestContext, 'diagnostic'>,
  c: Cluster,
): Promise<{ runningMs: number; readyMs: number }> {
  const t0 = performance.now();
  await c.apply(exampleManifest());
  await c.waitFor(() => c.redisRow(NAME) === RUNNING_ROW, BOUND.running, `the row "${RUNNING_ROW}"`);
  const runningMs = performance.now() - t0;
  await c.waitFor(() => allLinked(c, 3), BOUND.allReady, 'three Ready pods, one master, replicas linked');
  // What a user waits for: the Services route as labelled. On a real cluster the EndpointSlice
  // controller follows labels and readiness a moment after the pods change.
  await c.waitFor(
    () => servicesRouted(c),
    BOUND.allReady,
    'the master Service routing to the master, the replicas Service to every replica',
  );
  const readyMs = performance.now() - t0;
  t.diagnostic(
    `apply -> "${RUNNING_ROW}" ${Math.round(runningMs)} ms; -> all three pods Ready and linked ${Math.round(readyMs)} ms`,
  );
  return { runningMs, readyMs };
}

/**
 * `count` pods, all Ready and not terminating, exactly one labelled master, every other labelled replica with link up.
 */
export function allLinked(c: Cluster, count: number): boolean {
  const pods = c.pods(NAME).filter((p) => !p.metadata.deletionTimestamp);
  if (pods.length !== count || !pods.every(isPodReady)) return false;
  const roles = pods.map((p) => p.metadata.labels?.[ROLE_LABEL]);
  if (roles.filter((r) => r === ROLE_MASTER).length !== 1) return false;
  return pods.every(
    (p) =>
      p.metadata.labels?.[ROLE_LABEL] === ROLE_MASTER ||
      (p.metadata.labels?.[ROLE_LABEL] === 'replica' && p.metadata.annotations?.['redis.example.com/link'] === 'up'),
  );
}

/** The master Service routes to the one pod labelled master, the replicas Service to every pod labelled replica. */
export function servicesRouted(c: Cluster): boolean {
  const pods = c.pods(NAME).filter((p) => !p.metadata.deletionTimestamp);
  const master = pods.filter((p) => p.metadata.labels?.[ROLE_LABEL] === ROLE_MASTER).map((p) => p.metadata.name);
  const replicas = pods
    .filter((p) => p.metadata.labels?.[ROLE_LABEL] === 'replica')
    .map((p) => p.metadata.name)
    .sort();
  const routed = [...c.serviceEndpoints(NS, `${NAME}-replicas`)].sort();
  return master.length === 1 && c.masterEndpoint(NAME)?.pod === master[0] && routed.join(' ') === replicas.join(' ');
}

/**
 * Waits (BOUND.failover) for a pod other than `oldPod` behind Redis `name`'s master Service; resolves with its
 * endpoint.
 */
export function newMasterEndpoint(c: Cluster, oldPod: string, what: string, name = NAME) {
  return c.waitFor(
    () => {
      const ep = c.masterEndpoint(name);
      return ep && ep.pod !== oldPod ? ep : undefined;
    },
    BOUND.failover,
    what,
  );
}

export function podIp(c: Cluster, name: string): string | undefined {
  const p = c.get('pods', name, NS) as Pod | undefined;
  return p && !p.metadata.deletionTimestamp ? p.status?.podIP : undefined;
}

/** One command on a fresh connection to a pod address of my-redis. */
export function call(c: Cluster, ip: string, ...args: string[]): Promise<unknown> {
  return callAs(c, NAME, ip, ...args);
}

/** One command on a fresh connection to a pod address of the Redis `name` (its password). */
export async function callAs(c: Cluster, name: string, ip: string, ...args: string[]): Promise<unknown> {
  const client = c.redis(ip, name);
  client.on('error', () => {});
  try {
    await client.connect();
    return await client.call(args[0]!, ...args.slice(1));
  } finally {
    client.disconnect();
  }
}

/** INFO replication of the node at ip as a field map. */
export async function replication(c: Cluster, ip: string): Promise<Record<string, string>> {
  const text = String(await call(c, ip, 'INFO', 'replication'));
  const out: Record<string, string> = {};
  for (const line of text.split('\r\n')) {
    const i = line.indexOf(':');
    if (i > 0) out[line.slice(0, i)] = line.slice(i + 1);
  }
  return out;
}

/** Waits until the master at ip has `replicas` online replicas that acknowledged all it has (replicasCaughtUp). */
export async function settle(c: Cluster, ip: string, replicas: number, timeoutMs = 10_000, name = NAME): Promise<void> {
  const client = c.redis(ip, name);
  client.on('error', () => {});
  try {
    await client.connect();
    await replicasCaughtUp(client, replicas, timeoutMs, ip);
  } finally {
    client.disconnect();
  }
}

/** Keys among `keys` whose value on the node at ip is missing or wrong (values equal their keys). */
export async function missingKeys(c: Cluster, ip: string, keys: readonly string[]): Promise<string[]> {
  const client = c.redis(ip, NAME);
  client.on('error', () => {});
  await client.connect();
  try {
    return await missingKeysOn(client, keys);
  } finally {
    client.disconnect();
  }
}

/** After `writer` stopped: every acknowledged key is on every pod of the Redis (replicas caught up first). */
export async function assertNothingLost(t: TestContext, c: Cluster, writer: Writer, pods: number): Promise<void> {
  const master = await c.waitFor(() => c.masterEndpoint(NAME), BOUND.failover, 'a master behind the master Service');
  await c.waitFor(() => allLinked(c, pods), BOUND.rejoin, `${pods} Ready, linked pods`);
  await settle(c, master.ip, pods - 1);
  const keys = writer.acked.map((a) => a.key);
  // Only the pods that stay: one scaled away may still be listed while it terminates (its server
  // already gone), which is no loss.
  for (const pod of c.pods(NAME).filter((p) => !p.metadata.deletionTimestamp)) {
    const ip = podIp(c, pod.metadata.name)!;
    const missing = await missingKeys(c, ip, keys);
    if (missing.length > 0) {
      // What each node said of its replication at that moment, for whoever reads the failure.
      const views: string[] = [];
      for (const p of c.pods(NAME)) {
        const at = podIp(c, p.metadata.name);
        const r = at ? await replication(c, at).catch((e: Error) => ({ error: e.message })) : {};
        const pick = [
          'role',
          'master_host',
          'master_link_status',
          'master_sync_in_progress',
          'master_replid',
          'master_repl_offset',
          'slave_repl_offset',
          'connected_slaves',
          'error',
        ];
        views.push(
          `${p.metadata.name}: ${pick
            .filter((k) => k in r)
            .map((k) => `${k}=${(r as Record<string, string>)[k]}`)
            .join(' ')}`,
        );
      }
      throw new Error(
        `${missing.length} of ${keys.length} acknowledged keys missing on ${pod.metadata.name} (${ip}), e.g. ${missing.slice(0, 5).join(', ')}\n${views.join('\n')}\n${c.dump()}`,
      );
    }
  }
  t.diagnostic(
    `${keys.length} acknowledged writes, all present on ${pods} pods; ${writer.failures} writes not acknowledged (not counted)`,
  );
}

/**
 * An application writing through the master Service: `SET k k` then `WAIT 1 500` against the pod
 * the <name>-master Service routes to at that moment; `via` is that pod's name.
 */
export class Writer extends AckedWriter {
  constructor(c: Cluster, prefix = 'w') {
    super({
      target: () => {
        const ep = c.masterEndpoint(NAME);
        return ep ? { ip: ep.ip, via: ep.pod } : null;
      },
      connect: (ip) => {
        const client = c.redis(ip, NAME);
        client.on('error', () => {});
        return client;
      },
      prefix: `${prefix}:`,
      followEveryMs: 10,
    });
  }
}

/** Every pod write of the Redis in store order; records each moment two pods carried the master label. */
export class MasterWatch {
  readonly violations: string[] = [];
  maxSeen = 0;
  /** Every change of who is labelled master, with the time. */
  readonly history: Array<{ at: number; masters: string[] }> = [];
  /** Pods deleted (gone from the API) while labelled master. */
  readonly deletedWhileMaster: string[] = [];
  readonly #roles = new Map<string, string | undefined>();
  readonly #handle: { stop(): void };

  constructor(t: TestContext, c: Cluster) {
    for (const p of c.pods(NAME)) this.#roles.set(p.metadata.name, p.metadata.labels?.[ROLE_LABEL]);
    this.#handle = c.watch('pods', { namespace: NS, labelSelector: `app.kubernetes.io/instance=${NAME}` }, (ev) => {
      const p = ev.object as Pod;
      const name = p.metadata?.name;
      if (!name) return;
      const before = this.masters();
      if (ev.type === 'DELETED') {
        if (this.#roles.get(name) === ROLE_MASTER) this.deletedWhileMaster.push(name);
        this.#roles.delete(name);
      } else {
        this.#roles.set(name, p.metadata.labels?.[ROLE_LABEL]);
      }
      const masters = this.masters();
      this.maxSeen = Math.max(this.maxSeen, masters.length);
      if (masters.length > 1) this.violations.push(`rv ${p.metadata.resourceVersion}: ${masters.join(', ')}`);
      if (masters.join() !== before.join()) this.history.push({ at: performance.now(), masters });
    });
    t.after(() => this.#handle.stop());
  }

  masters(): string[] {
    return [...this.#roles]
      .filter(([, r]) => r === ROLE_MASTER)
      .map(([n]) => n)
      .sort();
  }

  stop(): void {
    this.#handle.stop();
  }
}

/** Names of the Redis' pods (not terminating), sorted. */
export function podNames(c: Cluster): string[] {
  return c
    .pods(NAME)
    .filter((p) => !p.metadata.deletionTimestamp)
    .map((p) => p.metadata.name)
    .sort();
}

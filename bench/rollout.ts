// Rollout benchmark (a benchmark, not a test): `npm run bench:rollout` (day-2 operations' "Measure it").
// Network: subnet 58 (pods 198.18.58.x, Services 198.19.58.x).
//
// The design's three-node Redis (manifests/examples/redis.yaml) on a real cluster here
// (test/system/cluster.ts: a real node, the operator's Deployment from its image), under an
// application doing SET then WAIT 1 through the master Service and recording every acknowledged
// write (test/system/support.ts Writer). The
// flow is test/system/day2.test.ts's, timed instead of asserted:
// 1. baseline: steady traffic, no rollout; the longest gap between two acknowledged writes over
//    a window as long as the rollout, right before it (the same-run yardstick docs/benchmarks.md
//    asks for: what the writer, the machine and the control plane cost with nothing happening);
// 2. rollout: spec.image redis:7.2 -> redis:7.2.6, the same engine under its full tag (a pod-template
//    change with an image the nodes have; no 7.4 is built here; the StatefulSets are OnDelete, the
//    sidecar replaces replicas one at a time, switches over, replaces the old master last), timed
//    until every original pod has a new uid, all are Ready and linked and Updated=True;
// 3. ten switchovers on demand (`redis.example.com/switchover=any@N`), each timed from the patch
//    until the record says Done and the master Service routes to the new master.
// Write pauses are the longest gap between consecutive acknowledged writes over a phase, closed by
// the first write acknowledged after it (a pause still open when the phase ends counts in full).
// Prints `name=value` lines on stdout (notes on `# ` lines), the five issue figures last;
// progress goes to stderr. Env: BASELINE_S (steady traffic before the rollout, default 30: a
// rollout takes ~7 s here, and a shorter window is said on a `# ` line), SWITCHOVERS (10).
// Cleanup: the cluster (control plane, pods, sidecars, network) is stopped on every exit path,
// SIGINT/SIGTERM included.
import type { TestContext } from 'node:test';
import { performance } from 'node:perf_hooks';
import { SWITCHOVER_ANNOTATION, SWITCHOVER_STATUS_ANNOTATION } from '../src/api/labels.ts';
import { median } from '../test/sidecar/redis/manager/harness.ts';
import type { SystemCluster } from '../test/system/cluster.ts';
import { benchOnSystemCluster, cleanups, log, note } from './system-main.ts';
import {
  allLinked,
  applyDesign,
  BOUND,
  MasterWatch,
  missingKeys,
  NAME,
  NS,
  podIp,
  servicesRouted,
  settle,
  sleep,
  Writer,
  type Pod,
} from '../test/system/support.ts';

const SUBNET = 58;
const BASELINE_S = Number(process.env['BASELINE_S'] ?? 30);
const SWITCHOVERS = Number(process.env['SWITCHOVERS'] ?? 10);
const ROLLOUT_BOUND_MS = 300_000;
type Json = Record<string, unknown>;

// The system helpers take a test context for their cleanups (t.after) and reports (t.diagnostic):
// here they run in main's finally and go to `# ` lines.
const ctx = { after: (fn: () => unknown) => void cleanups.push(fn), diagnostic: note } as unknown as TestContext;

const patchRedis = (c: SystemCluster, body: { spec?: Json; annotations?: Record<string, string> }) =>
  c.apply({
    apiVersion: 'redis.example.com/v1',
    kind: 'Redis',
    metadata: { name: NAME, namespace: NS, ...(body.annotations ? { annotations: body.annotations } : {}) },
    ...(body.spec ? { spec: body.spec } : {}),
  });
const updated = (c: SystemCluster) =>
  (((c.get('redises', NAME, NS)?.['status'] as Json | undefined)?.['conditions'] ?? []) as Json[]).find(
    (x) => x['type'] === 'Updated',
  )?.['status'] === 'True';
const uids = (c: SystemCluster) => Object.fromEntries(c.pods(NAME).map((p) => [p.metadata.name, p.metadata.uid]));
const switchoverRecord = (c: SystemCluster) =>
  c.get('redises', NAME, NS)?.metadata.annotations?.[SWITCHOVER_STATUS_ANNOTATION];
const ms = (x: number) => Math.round(x);

/** The longest gap between consecutive acknowledged writes that overlaps [from, to]. */
function longestGap(writer: Writer, from: number, to: number): number {
  let worst = 0;
  const acked = writer.acked;
  for (let i = 1; i < acked.length; i++)
    if (acked[i]!.at > from && acked[i - 1]!.at < to) worst = Math.max(worst, acked[i]!.at - acked[i - 1]!.at);
  return worst;
}

/** The first write acknowledged after `t`: it closes any pause still open at `t`. */
const firstAckAfter = (c: SystemCluster, writer: Writer, t: number) =>
  c.waitFor(() => writer.ackedAfter(t), BOUND.failover, 'a write acknowledged after the phase').then((a) => a.at);

/**
 * Every pod event of the Redis from now on: per pod name, how many times it was deleted (DELETED
 * events) and which uids it had. A pod counts as replaced max(deletions, new uids) times, so
 * neither a missed DELETED (a relist) nor a missed intermediate uid hides a restart.
 */
function watchReplacements(c: SystemCluster) {
  const first = uids(c);
  const seen = new Map<string, Set<string>>(Object.entries(first).map(([n, u]) => [n, new Set([u])]));
  const deletions = new Map<string, number>();
  const handle = c.watch('pods', { namespace: NS, labelSelector: `app.kubernetes.io/instance=${NAME}` }, (ev) => {
    const p = ev.object as Pod;
    const name = p.metadata?.name;
    if (!name) return;
    if (ev.type === 'DELETED') deletions.set(name, (deletions.get(name) ?? 0) + 1);
    else if (p.metadata.uid) seen.set(name, (seen.get(name) ?? new Set()).add(p.metadata.uid));
  });
  cleanups.push(() => handle.stop());
  const times = (name: string) => Math.max(deletions.get(name) ?? 0, (seen.get(name)?.size ?? 1) - 1);
  return {
    first,
    stop: () => handle.stop(),
    times,
    total: () => [...seen.keys()].reduce((n, name) => n + times(name), 0),
  };
}

/** Acknowledged keys missing per pod, once every replica caught up with the master (WAIT 2). */
async function lostPerPod(
  c: SystemCluster,
  keys: readonly string[],
): Promise<{ master: string; missing: Record<string, number> }> {
  await c.waitFor(
    () => allLinked(c, 3) && servicesRouted(c),
    BOUND.rejoin,
    'three Ready, linked pods behind the Services',
  );
  const master = c.masterEndpoint(NAME)!;
  await settle(c, master.ip, 2);
  const missing: Record<string, number> = {};
  for (const p of c.pods(NAME))
    missing[p.metadata.name] = (await missingKeys(c, podIp(c, p.metadata.name)!, keys)).length;
  return { master: master.pod, missing };
}

interface Switchover {
  request: string;
  from: string;
  to: string;
  pauseMs: number;
  doneMs: number;
}

/** One switchover on demand to the best replica; null when the sidecar refused it (the record says why). */
async function switchover(c: SystemCluster, writer: Writer, request: string): Promise<Switchover | null> {
  // Each starts from a settled set: a refusal for lag or a missing link would measure the previous one.
  await c.waitFor(() => allLinked(c, 3) && servicesRouted(c), BOUND.rejoin, 'three linked pods behind the Services');
  const from = c.masterEndpoint(NAME)!.pod;
  const t0 = performance.now();
  await patchRedis(c, { annotations: { [SWITCHOVER_ANNOTATION]: request } });
  const record = await c.waitFor(
    () => {
      const r = switchoverRecord(c);
      return r?.startsWith(`${request}: `) && !r.startsWith(`${request}: Running`) ? r : undefined;
    },
    BOUND.failover,
    `the outcome of ${request} recorded`,
  );
  if (!record.startsWith(`${request}: Done`)) {
    note(`switchover ${request} from ${from}: ${record}`);
    return null;
  }
  const to = await c.waitFor(
    () => {
      const labelled = c.masterLabelled(NAME);
      return (
        labelled.length === 1 &&
        labelled[0] !== from &&
        c.masterEndpoint(NAME)?.pod === labelled[0] &&
        servicesRouted(c) &&
        labelled[0]
      );
    },
    BOUND.failover,
    `${request}: the master Service routing to the new master`,
  );
  const t1 = performance.now();
  const pauseMs = longestGap(writer, t0, await firstAckAfter(c, writer, t1));
  log(
    `switchover ${request}: ${from} -> ${to}: Done and routed after ${ms(t1 - t0)} ms, longest write pause ${ms(pauseMs)} ms`,
  );
  return { request, from, to, pauseMs, doneMs: t1 - t0 };
}

async function run(c: SystemCluster): Promise<string[]> {
  await applyDesign(ctx, c);
  const masters = new MasterWatch(ctx, c);
  const writer = new Writer(c, 'bench').start();
  cleanups.push(() => writer.stop());
  await c.waitFor(
    () => writer.acked.length >= 200 && allLinked(c, 3) && servicesRouted(c),
    BOUND.allReady,
    '200 acknowledged writes',
  );
  const steadyFrom = writer.acked[0]!.at;

  // 1. Steady traffic: the baseline window is cut from its end once the rollout's length is known.
  log(`steady traffic for ${BASELINE_S} s (the baseline)`);
  await sleep(BASELINE_S * 1000);

  // 2. The rollout.
  const replaced = watchReplacements(c);
  const firstMaster = c.masterEndpoint(NAME)!.pod;
  const deletedBefore = masters.deletedWhileMaster.length;
  log(`rollout redis:7.2 -> redis:7.2.6, master ${firstMaster}`);
  const t0 = performance.now();
  await patchRedis(c, { spec: { image: 'redis:7.2.6' } });
  await c.waitFor(
    () => {
      const now = uids(c);
      return (
        Object.keys(replaced.first).every((n) => now[n] !== undefined && now[n] !== replaced.first[n]) &&
        allLinked(c, 3) &&
        updated(c)
      );
    },
    ROLLOUT_BOUND_MS,
    'every pod replaced, Ready and linked, and Updated=True',
  );
  const t1 = performance.now();
  replaced.stop();
  const rolloutPause = longestGap(writer, t0, await firstAckAfter(c, writer, t1));
  const rolloutKeys = writer.acked.map((a) => a.key);
  const lost = await lostPerPod(c, rolloutKeys);
  log(`rollout done after ${ms(t1 - t0)} ms; master ${firstMaster} -> ${lost.master}`);
  note(
    `rollout: ${rolloutKeys.length} acknowledged writes checked; missing per pod: ${JSON.stringify(lost.missing)} (master now ${lost.master})`,
  );

  // The baseline: as long as the rollout, ending at the version patch (shorter if BASELINE_S was).
  const windowMs = Math.min(t1 - t0, t0 - steadyFrom);
  if (windowMs < t1 - t0)
    note(`baseline window ${ms(windowMs)} ms is shorter than the rollout (${ms(t1 - t0)} ms): raise BASELINE_S`);
  const baselineGap = longestGap(writer, t0 - windowMs, t0);

  // 3. Switchovers on demand, each a distinct request (an equal one is ignored by design).
  const done: Switchover[] = [];
  let refused = 0;
  for (let n = 1; done.length < SWITCHOVERS && n <= SWITCHOVERS * 2; n++) {
    const s = await switchover(c, writer, `any@${n}`);
    if (s) done.push(s);
    else refused++;
  }
  if (done.length === 0) throw new Error('every switchover was refused');
  const pauses = done.map((s) => s.pauseMs);
  note(
    `switchovers: ${done.map((s) => `${s.from}->${s.to} ${ms(s.pauseMs)}/${ms(s.doneMs)}`).join(', ')} (write pause / to Done+routed, ms)`,
  );

  // Everything acknowledged over the whole run, checked on every pod once the writer stopped.
  await writer.stop();
  const all = await lostPerPod(
    c,
    writer.acked.map((a) => a.key),
  );
  note(
    `whole run: ${writer.acked.length} acknowledged writes, ${writer.failures} not acknowledged; missing per pod: ${JSON.stringify(all.missing)}`,
  );
  if (masters.violations.length > 0) note(`two pods labelled master at once: ${masters.violations.join('; ')}`);

  return [
    `baseline_window_s=${(windowMs / 1000).toFixed(1)}`,
    `baseline_write_gap_ms_max=${ms(baselineGap)}`,
    `rollout_pause_vs_baseline=${(rolloutPause / baselineGap).toFixed(2)}`,
    `rollout_pods_replaced=${replaced.total()}`,
    `rollout_deleted_while_master=${masters.deletedWhileMaster.length - deletedBefore}`,
    `switchovers_done=${done.length}`,
    `switchovers_refused=${refused}`,
    `switchover_pause_ms_max=${ms(Math.max(...pauses))}`,
    `acked_writes_total=${writer.acked.length}`,
    `acked_lost_total=${all.missing[all.master]}`,
    `split_brain_moments=${masters.violations.length}`,
    `rollout_s=${((t1 - t0) / 1000).toFixed(1)}`,
    `rollout_write_pause_ms_max=${ms(rolloutPause)}`,
    `rollout_acked_lost=${lost.missing[lost.master]}`,
    `rollout_master_restarts=${replaced.times(firstMaster)}`,
    `switchover_pause_ms_p50=${ms(median(pauses))}`,
  ];
}

benchOnSystemCluster(SUBNET, run);

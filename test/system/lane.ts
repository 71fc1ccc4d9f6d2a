// One real cluster lent from scenario to scenario within a lane. `npm test` runs the cluster
// tests in two lanes (test/lanes.ts), each one process (`--test-isolation=none`) with
// REDIS_OPERATOR_TEST_LANE set. A scenario borrows the cluster the previous one gave back when
// both asked for the same kind (nodes, images, install), reset as installed
// (test/k8s/system-reset.ts); otherwise that one is stopped and a new one started.
// Run on its own (`node --test test/system/x.test.ts`: a file per process, no lane), a
// scenario's cluster is started for it and stopped when it ends, as before.
// Invariants: a lane holds at most one cluster (an idle one costs CPU the running one needs); a
// cluster whose reset failed is stopped, never lent again; the last one stops in a root `after`
// hook, once every test of the lane has run. (Not in a --test-global-setup teardown: with
// isolation none that runs only once the event loop is empty, which a running cluster never is.)
import { after } from 'node:test';
import { performance } from 'node:perf_hooks';
import { LANE_ENV } from '../lanes.ts';
import { startSystemCluster, type SystemCluster, type SystemClusterOptions } from './cluster.ts';

interface Lane {
  idle?: { kind: string; cluster: SystemCluster };
  kinds: WeakMap<SystemCluster, string>;
}

const current: Lane | undefined = process.env[LANE_ENV] === '1' ? { kinds: new WeakMap() } : undefined;
const lane = (): Lane | undefined => current;
if (current)
  after(async () => {
    const idle = current.idle;
    current.idle = undefined;
    if (idle) await idle.cluster.stop();
  });

/** What makes two clusters interchangeable: everything but their subnet and how they report. */
function kindOf(o: SystemClusterOptions): string {
  const { subnet: _s, onProgress: _p, waitForSidecars: _w, ...rest } = o;
  return JSON.stringify({ nodes: 1, ...rest, images: [...(rest.images ?? [])].sort() });
}

/** A cluster for one scenario: the lane's, reset, when it is of this kind; otherwise a new one. */
export async function borrowCluster(
  options: SystemClusterOptions,
  log: (line: string) => void = () => undefined,
): Promise<SystemCluster> {
  const l = lane();
  const kind = kindOf(options);
  const idle = l?.idle;
  if (l && idle) {
    l.idle = undefined;
    if (idle.kind === kind) {
      const t0 = performance.now();
      try {
        const steps = await idle.cluster.reset();
        log(
          `the lane's cluster reset for this scenario in ${((performance.now() - t0) / 1000).toFixed(1)} s (${steps})`,
        );
        l.kinds.set(idle.cluster, kind);
        return idle.cluster;
      } catch (err) {
        log(`the lane's cluster could not be reset, a new one starts: ${(err as Error).message.split('\n')[0]}`);
      }
    }
    await idle.cluster.stop();
  }
  const t0 = performance.now();
  const cluster = await startSystemCluster(options);
  log(
    `real cluster up (${options.nodes ?? 1} node(s), the operator rolled out) in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  l?.kinds.set(cluster, kind);
  return cluster;
}

/** Hands the cluster back to the lane for the next scenario, or stops it when there is no lane. */
export async function giveBack(cluster: SystemCluster): Promise<void> {
  const l = lane();
  const kind = l?.kinds.get(cluster);
  if (!l || kind === undefined) return cluster.stop();
  if (l.idle) await l.idle.cluster.stop();
  l.idle = { kind, cluster };
}

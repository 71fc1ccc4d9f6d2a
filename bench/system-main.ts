// The frame of the benchmarks that run on a whole cluster (bench:rollout, bench:reshard): start a
// real cluster here (test/k8s/real-cluster.ts; where it cannot run, exit 1 saying why), run, print the `name=value`
// lines on stdout, and stop everything on every exit path, SIGINT/SIGTERM included, so Ctrl-C
// leaves no control plane, pods or bridge behind. Progress goes to stderr, notes to `# ` lines.
import { performance } from 'node:perf_hooks';
import { missing, startSystemCluster, type SystemCluster } from '../test/system/cluster.ts';

export const log = (msg: string) => process.stderr.write(`${msg}\n`);
export const note = (msg: string) => process.stdout.write(`# ${msg}\n`);

/** Run after the benchmark, last added first, before the cluster stops. */
export const cleanups: Array<() => unknown> = [];

/**
 * `images`: the image recipes (test/k8s/images.ts) the bench's pods run beyond the default install's, as a
 * system test names them: a recipe not asked for is not on the node, and its pods wait in ImagePullBackOff.
 */
export function benchOnSystemCluster(
  subnet: number,
  run: (c: SystemCluster) => Promise<string[]>,
  options: { images?: string[] } = {},
): void {
  const main = async () => {
    const started = performance.now();
    const why = missing(options.images);
    if (why) throw new Error(`a real cluster cannot run here: ${why}`);
    note(`cluster: a real cluster here (1 node), subnet ${subnet}`);
    const c = await startSystemCluster({ subnet, ...(options.images ? { images: options.images } : {}) });
    let stopping: Promise<void> | undefined;
    const teardown = () =>
      (stopping ??= (async () => {
        for (const fn of cleanups.reverse())
          await Promise.resolve()
            .then(fn)
            .catch(() => undefined);
        await c.stop();
      })());
    for (const sig of ['SIGINT', 'SIGTERM'] as const)
      process.once(sig, () => void teardown().finally(() => process.exit(130)));
    try {
      const lines = await run(c);
      note(`took ${Math.round((performance.now() - started) / 1000)} s`);
      process.stdout.write(`${lines.join('\n')}\n`);
    } catch (err) {
      log(c.dump());
      throw err;
    } finally {
      await teardown();
    }
  };
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      log(`bench failed: ${err instanceof Error ? err.stack : String(err)}`);
      process.exit(1);
    },
  );
}

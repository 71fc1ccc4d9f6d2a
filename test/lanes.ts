// The cluster phase of `npm test`: the test files that run real clusters (test/k8s, test/system,
// test/e2e), split into lanes that run side by side, each lane ONE process
// (`--test-isolation=none`, REDIS_OPERATOR_TEST_LANE=1: test/system/lane.ts), so that its system
// scenarios borrow one cluster, reset between them, instead of each starting its own.
//   node test/lanes.ts                      # every cluster test, two lanes
//   LANES=1 node test/lanes.ts test/system/apply.test.ts test/system/scale.test.ts
// Files go to lanes longest first, each to the lane with the least expected time (the seconds
// below, measured here on two cores with two lanes; a file not listed counts as NEW_FILE_S).
// Within a lane, files that start clusters of their own run first and the scenarios that share
// the default cluster last, so that an idle cluster of the lane never runs beside another.
// Invariants: every lane's output is printed, each line prefixed with its lane; the exit code is
// non-zero when any lane failed; SIGINT/SIGTERM reach every lane (their teardown stops clusters).
import { spawn } from 'node:child_process';
import { globSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const PATTERNS = ['test/k8s/**/*.test.ts', 'test/system/*.test.ts', 'test/e2e/*.test.ts'];
const NEW_FILE_S = 120;
/** Set in each lane's process: test/system/lane.ts then lends one cluster from scenario to scenario. */
export const LANE_ENV = 'REDIS_OPERATOR_TEST_LANE';

/**
 * Seconds each file took in a lane (two lanes, two cores, measured with the CI run of the whole
 * phase; a shared scenario's figure includes its reset), its place in the lane (files that start
 * clusters of their own (0) run first, then scenarios that borrow a cluster of a kind no other file
 * asks for (1), then those sharing the default cluster (2)), and a group: the files of one group go
 * to the same lane, so that their clusters never run side by side (two clusters of three nodes at
 * once starved each other on two cores: probes timed out, Leases lapsed).
 */
const EXPECTED: Record<string, { s: number; order?: 1 | 2; group?: string }> = {
  'test/e2e/local.test.ts': { s: 207, group: 'three nodes' },
  'test/system/rediscluster.test.ts': { s: 404, order: 1, group: 'three nodes' },
  'test/system/rediscluster-day2.test.ts': { s: 180, order: 1, group: 'three nodes' },
  'test/system/rediscluster-faults.test.ts': { s: 200, order: 1, group: 'three nodes' },
  'test/system/rediscluster-backup.test.ts': { s: 150, order: 1, group: 'three nodes' },
  'test/system/monitoring.test.ts': { s: 65, order: 1 },
  'test/system/helm.test.ts': { s: 62, order: 1 },
  'test/k8s/real-cluster.test.ts': { s: 37 },
  'test/k8s/cluster-dns.test.ts': { s: 24 },
  'test/k8s/metacontroller-real.test.ts': { s: 14 },
  'test/k8s/rbac.test.ts': { s: 35 },
  'test/k8s/images.test.ts': { s: 7 },
  'test/k8s/node-build.test.ts': { s: 1 },
  'test/k8s/real-node-config.test.ts': { s: 1 },
  'test/system/apply.test.ts': { s: 28, order: 2 },
  'test/system/backup.test.ts': { s: 72, order: 2 },
  'test/system/day2.test.ts': { s: 65, order: 2 },
  'test/system/delete.test.ts': { s: 35, order: 2 },
  'test/system/engine-move.test.ts': { s: 45, order: 2 },
  'test/system/docs.test.ts': { s: 35, order: 2 },
  'test/system/failover.test.ts': { s: 20, order: 2 },
  'test/system/full-restart.test.ts': { s: 24, order: 2 },
  'test/system/invalid-spec.test.ts': { s: 22, order: 2 },
  'test/system/names.test.ts': { s: 20, order: 2 },
  'test/system/leader-crash.test.ts': { s: 48, order: 2 },
  'test/system/plugin-ops.test.ts': { s: 100, order: 2 },
  'test/system/plugin.test.ts': { s: 60, order: 2 },
  'test/system/scale.test.ts': { s: 44, order: 2 },
  'test/system/shards.test.ts': { s: 48, order: 2 },
  'test/system/tls.test.ts': { s: 54, order: 2 },
  'test/system/volume-expansion.test.ts': { s: 50, order: 2 },
};

/**
 * Groups (and lone files) longest first onto the least loaded lane; then, per lane, in the order of EXPECTED's `order`.
 */
export function assignLanes(files: string[], lanes: number): string[][] {
  const cost = (f: string) => EXPECTED[f]?.s ?? NEW_FILE_S;
  const units = new Map<string, string[]>();
  for (const f of files) {
    const key = EXPECTED[f]?.group ?? f;
    units.set(key, [...(units.get(key) ?? []), f]);
  }
  const unitCost = (u: string[]) => u.reduce((sum, f) => sum + cost(f), 0);
  const out = Array.from({ length: lanes }, () => ({ files: [] as string[], s: 0 }));
  for (const unit of [...units.values()].sort((a, b) => unitCost(b) - unitCost(a) || a[0]!.localeCompare(b[0]!))) {
    const lane = out.reduce((min, l) => (l.s < min.s ? l : min));
    lane.files.push(...unit);
    lane.s += unitCost(unit);
  }
  const order = (f: string) => EXPECTED[f]?.order ?? 0;
  return out.map((l) => l.files.sort((a, b) => order(a) - order(b) || a.localeCompare(b))).filter((l) => l.length > 0);
}

/**
 * The lane's entry file: its test files imported one after another. `node --test` with several
 * files and `--test-isolation=none` imports them side by side, so their tests would run in the
 * order their module graphs finish loading, not in the lane's.
 */
function laneEntry(index: number, files: string[]): string {
  const dir = path.join(ROOT, '.tmp', 'lanes');
  mkdirSync(dir, { recursive: true });
  const entry = path.join(dir, `lane-${index + 1}.ts`);
  const imports = files.map((f) => `await import(${JSON.stringify(pathToFileURL(path.resolve(ROOT, f)).href)});`);
  writeFileSync(
    entry,
    [`// Written by test/lanes.ts: lane ${index + 1}, its files in order.`, ...imports, ''].join('\n'),
  );
  return entry;
}

function runLane(index: number, files: string[]): Promise<number> {
  const tag = `[lane ${index + 1}] `;
  // --test-force-exit: the lane's cluster stops in a root `after` hook (lane.ts), which it waits
  // for; without it the run would end only once the event loop is empty.
  const args = [
    '--test',
    '--test-isolation=none',
    '--test-force-exit',
    '--test-timeout=1200000',
    '--test-reporter=spec',
    laneEntry(index, files),
  ];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, [LANE_ENV]: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const prefix = (stream: NodeJS.ReadableStream, out: NodeJS.WriteStream) => {
    let rest = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop() ?? '';
      for (const l of lines) out.write(`${tag}${l}\n`);
    });
    stream.on('end', () => rest && out.write(`${tag}${rest}\n`));
  };
  prefix(child.stdout, process.stdout);
  prefix(child.stderr, process.stderr);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => child.kill(sig));
  const t0 = Date.now();
  return new Promise((resolve) =>
    child.once('close', (code, signal) => {
      console.log(
        `${tag}done in ${Math.round((Date.now() - t0) / 1000)} s: ${code === 0 ? 'passed' : `FAILED (${signal ?? `exit ${code}`})`}`,
      );
      resolve(code ?? 1);
    }),
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const named = process.argv.slice(2);
  const files = named.length > 0 ? named : PATTERNS.flatMap((p) => globSync(p, { cwd: ROOT })).sort();
  const lanes = assignLanes(files, Number(process.env['LANES'] ?? 2));
  lanes.forEach((l, i) =>
    console.log(`[lane ${i + 1}] ${l.length} files: ${l.map((f) => path.basename(f, '.test.ts')).join(', ')}`),
  );
  const codes = await Promise.all(lanes.map((l, i) => runLane(i, l)));
  process.exitCode = codes.some((c) => c !== 0) ? 1 : 0;
}

// System test: a running Redis (the design's: a master and two replicas, Redis 7.2.6) moved in
// place to Valkey 8.0.1 and back, each way an ordered rollout under SET + WAIT 1 traffic: replicas
// one at a time, then a planned switchover onto a replica already running the new engine, the old
// master's pod last. Every acknowledged write is read back on every pod after each way; status.nodes
// says what each pod runs; the move's Events and the Updated condition tell it. The move is what a
// user types: spec.engine and spec.version (the hook picks the images valkey/valkey:8.0 and
// redis:7.2, test images of test/k8s/images). Figures are t.diagnostic, never asserted.
// Network: 198.18.97.x.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { performance } from 'node:perf_hooks';
import {
  allLinked,
  applyDesign,
  assertNothingLost,
  boot,
  BOUND,
  MasterWatch,
  NAME,
  NS,
  servicesRouted,
  Writer,
} from './support.ts';

const SUBNET = 97;
type Cluster = NonNullable<Awaited<ReturnType<typeof boot>>>;
type Json = Record<string, unknown>;

const status = (c: Cluster) => (c.get('redises', NAME, NS)?.['status'] ?? {}) as Json;
const nodes = (c: Cluster) => (status(c)['nodes'] ?? []) as Array<{ pod: string; engine: string; version: string }>;
const uids = (c: Cluster) => Object.fromEntries(c.pods(NAME).map((p) => [p.metadata.name, p.metadata.uid]));
/** What the user sets for each way; `image` below only names the way in figures. */
const SPEC_OF: Record<string, Json> = {
  valkey: { engine: 'valkey', version: '8.0' },
  redis: { engine: 'redis', version: '7.2' },
};
const engineOf = (c: Cluster, pod: string) => nodes(c).find((n) => n.pod === pod);

/**
 * Sets spec.engine and spec.version and waits until every pod was replaced, answers with `engine version` and the
 * rollout is done.
 */
async function move(
  t: TestContext,
  c: Cluster,
  masters: MasterWatch,
  writer: Writer,
  image: string,
  engine: string,
  version: string,
): Promise<void> {
  await c.waitFor(() => allLinked(c, 3) && servicesRouted(c), BOUND.rejoin, 'three linked pods');
  const before = uids(c);
  const firstMaster = c.masterEndpoint(NAME)!.pod;
  const deletedBefore = masters.deletedWhileMaster.length;
  const eventsBefore = new Set(c.events({ name: NAME }).map((e) => `${e.reason}|${e.message}`));
  const fresh = (reason: string) =>
    c.events({ name: NAME, reason }).filter((e) => !eventsBefore.has(`${e.reason}|${e.message}`));
  const reasons: string[] = [];
  const watch = setInterval(() => {
    const u = ((status(c)['conditions'] ?? []) as Json[]).find((x) => x['type'] === 'Updated');
    if (u && u['status'] === 'False' && !reasons.includes(String(u['reason']))) reasons.push(String(u['reason']));
  }, 50);
  try {
    await moveAndCheck(t, c, masters, writer, image, engine, version, {
      before,
      firstMaster,
      deletedBefore,
      fresh,
      reasons,
    });
  } finally {
    clearInterval(watch);
  }
}

async function moveAndCheck(
  t: TestContext,
  c: Cluster,
  masters: MasterWatch,
  writer: Writer,
  image: string,
  engine: string,
  version: string,
  o: {
    before: Record<string, string | undefined>;
    firstMaster: string;
    deletedBefore: number;
    fresh: (reason: string) => Array<{ message: string }>;
    reasons: string[];
  },
): Promise<void> {
  const { before, firstMaster, deletedBefore, fresh, reasons } = o;
  const ackedBefore = writer.acked.length;
  const t0 = performance.now();
  await c.apply({
    apiVersion: 'redis.example.com/v1',
    kind: 'Redis',
    metadata: { name: NAME, namespace: NS },
    spec: SPEC_OF[engine],
  });
  await c.waitFor(
    () => {
      const now = uids(c);
      const u = ((status(c)['conditions'] ?? []) as Json[]).find((x) => x['type'] === 'Updated');
      return (
        Object.keys(before).every((n) => now[n] !== undefined && now[n] !== before[n]) &&
        allLinked(c, 3) &&
        u?.['status'] === 'True' &&
        Object.keys(before).every((n) => engineOf(c, n)?.engine === engine)
      );
    },
    240_000,
    `every pod replaced, linked, answering as ${engine}, and Updated=True`,
  );
  const t1 = performance.now();
  await c.waitFor(() => servicesRouted(c), BOUND.rejoin, 'the Services routing as labelled');
  const times = writer.acked.map((a) => a.at).filter((x) => x >= t0 && x <= t1);
  let pause = 0;
  for (let i = 1; i < times.length; i++) pause = Math.max(pause, times[i]! - times[i - 1]!);
  t.diagnostic(
    `engine move to ${image}: ${Math.round(t1 - t0)} ms; ${writer.acked.length - ackedBefore} writes acknowledged during it; longest write pause ${Math.round(pause)} ms; master ${firstMaster} -> ${c.masterEndpoint(NAME)?.pod}; Updated reasons seen: ${reasons.join(', ')}`,
  );

  assert.deepEqual(
    nodes(c),
    Object.keys(before)
      .sort()
      .map((pod) => ({ pod, engine, version })),
    `status.nodes: every pod runs ${engine} ${version}`,
  );
  assert.ok(reasons.includes('EngineMove'), `Updated said EngineMove while it ran (seen: ${reasons.join(', ')})`);
  assert.deepEqual(masters.deletedWhileMaster.slice(deletedBefore), [], 'no pod was deleted while labelled master');
  assert.deepEqual(masters.violations, [], 'never two pods labelled master');
  const newMaster = c.masterEndpoint(NAME)!.pod;
  assert.ok(
    c
      .events({ name: NAME, reason: 'Switchover' })
      .some((e) => e.message.includes(`from ${firstMaster} to ${newMaster}`)),
    'the master was moved by a planned switchover',
  );
  await c.waitFor(
    () =>
      fresh('EngineMoveStarted').length === 1 &&
      fresh('EngineMovePod').length >= 3 &&
      fresh('EngineMoveMaster').length >= 1 &&
      fresh('EngineMoveCompleted').length === 1,
    15_000,
    'the move told: started, each pod, the master, done',
  );
  const onto = fresh('EngineMoveMaster').map((e) => e.message);
  assert.ok(
    onto.some((m) => m === `the master moved onto ${newMaster}, which runs ${engine} ${version}`),
    `the master moved onto a pod running ${engine} (${onto.join('; ')})`,
  );
  assert.match(fresh('EngineMoveCompleted')[0]!.message, new RegExp(`every pod \\(3\\) runs ${engine} ${version}`));
  await assertNothingLost(t, c, writer, 3);
}

test(
  'engine move: a running Redis 7.2 moved to Valkey 8.0 in place and back, nothing acknowledged lost',
  { timeout: 900_000 },
  async (t) => {
    // The default install's nodes have the Valkey image too: this borrows the lane's cluster.
    const c = await boot(t, { subnet: SUBNET });
    if (!c) return;
    await applyDesign(t, c);
    const masters = new MasterWatch(t, c);
    const writer = new Writer(c).start();
    t.after(() => writer.stop());
    await c.waitFor(() => writer.acked.length >= 200, 10_000, '200 acknowledged writes');
    await c.waitFor(
      () => nodes(c).length === 3 && nodes(c).every((n) => n.engine === 'redis' && n.version === '7.2.6'),
      30_000,
      'status.nodes: three pods on redis 7.2.6',
    );

    await t.test('redis:7.2 -> valkey/valkey:8.0', () =>
      move(t, c, masters, writer, 'valkey/valkey:8.0', 'valkey', '8.0.1'),
    );
    await t.test('and back: valkey/valkey:8.0 -> redis:7.2', () =>
      move(t, c, masters, writer, 'redis:7.2', 'redis', '7.2.6'),
    );
    await writer.stop();
    t.diagnostic(`${writer.acked.length} writes acknowledged in all; ${writer.failures} not acknowledged`);
  },
);

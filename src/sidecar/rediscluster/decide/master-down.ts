// Whether a shard's master is gone now, on evidence that the sidecar losing contact cannot
// produce, so its best replica can take over at once instead of after cluster-node-timeout. Pure:
// durations come in the observations (silentForMs, refusedForMs), clocks in the nodes' answers.
// Invariants:
// - Only a master no pod answered as this round, whose own pod (the one whose record names it) is
//   known, is ever judged: a master that answers us is alive, whatever else is said.
// - Crashed: its process is gone. Its port has refused our connections for crashConfirmMs
//   (nothing listens: a paused process still completes the TCP handshake, an unreachable one
//   times out), or the API says its redis container is not running; and every answering replica
//   of it reports its link down (they saw the connection close). One replica still linked vetoes.
// - Hung: it accepts nothing but answers nothing (a stopped or stuck process). Our probe this
//   round went unanswered (not refused) for the whole command timeout; at least HUNG_WITNESSES
//   other answering nodes, a master (a voter) among them, have waited HUNG_PING_MS or more for its
//   pong on the cluster bus (or flag it fail?/fail); and every other view that heard from it since
//   agrees: no node got a pong from it after we lost it or after another's ping to it went
//   unanswered (that one hears it: the others only lost their path to it; no failover). A view
//   that has not pinged it since says nothing either way: Redis pings each node at least every
//   half cluster-node-timeout, and waiting for all of them would cost just that. The bus times
//   are read against each viewer's own clock (TIME in the same probe), never against ours.
// - Nothing here promotes: failover.ts keeps its guards (one forced election per
//   failoverTimeout, never while the master's pod loads, never onto an empty or syncing replica)
//   and adds one for this path: a majority of the masters must answer, or the election cannot win.
import { label } from './shard-master.ts';
import type { Topology } from './topology.ts';
import type { ClusterNode, PodObservation } from './types.ts';

/**
 * A bus ping unanswered this long is a witness: a live node answers a PING in well under a
 * millisecond on its event loop; the cluster itself waits cluster-node-timeout for fail?.
 */
export const HUNG_PING_MS = 200;
/** Views that must bear witness (besides our own probe): two, so no single broken path suffices. */
export const HUNG_WITNESSES = 2;
/** A pong this much later than the silence it would contradict is no artefact of when each side looked. */
const HEARD_SLACK_MS = 50;

export type MasterDown =
  { down: true; how: 'crashed' | 'hung'; evidence: string[] } | { down: false; reason: string | null };

const NOT_DOWN: MasterDown = { down: false, reason: null };

/** The pod whose cluster-node record names `id` (not necessarily answering as it). */
export function podOf(t: Topology, id: string): PodObservation | null {
  return t.pods.find((p) => p.record?.id === id) ?? null;
}

export function masterDown(t: Topology, node: ClusterNode, crashConfirmMs: number): MasterDown {
  if (node.pod !== null) return NOT_DOWN;
  const own = podOf(t, node.id);
  if (!own || own.probe?.ok !== false) return NOT_DOWN;
  const kind = own.probe.kind;
  const refusedMs = own.refusedForMs ?? null;
  const refused = kind === 'refused' && refusedMs !== null && refusedMs >= crashConfirmMs;
  if (refused || own.redisGone === true) return crashed(t, node, own, refused ? refusedMs : null);
  // silentForMs is only set for silence (manager/silences.ts): an error reply is an answer.
  if (kind === 'refused') return NOT_DOWN;
  return hung(t, node, own);
}

function crashed(t: Topology, node: ClusterNode, own: PodObservation, refusedMs: number | null): MasterDown {
  const replicas = [...t.nodes.values()].filter((n) => n.info?.role === 'replica' && n.masterId === node.id);
  if (replicas.length === 0) return NOT_DOWN;
  const linked = replicas.filter((r) => r.info!.linkUp).map((r) => r.pod!.name);
  if (linked.length > 0) {
    return {
      down: false,
      reason: `${label(node)} does not answer but ${linked.join(', ')} still replicate${linked.length === 1 ? 's' : ''} from it: no failover`,
    };
  }
  const why =
    refusedMs !== null
      ? `its pod ${own.name} has refused connections for ${Math.round(refusedMs)} ms (no Redis process listens)`
      : `the API says the redis container of its pod ${own.name} is not running`;
  return {
    down: true,
    how: 'crashed',
    evidence: [why, `every replica of it (${replicas.map((r) => r.pod!.name).join(', ')}) reports the link down`],
  };
}

function hung(t: Topology, node: ClusterNode, own: PodObservation): MasterDown {
  const silentMs = own.silentForMs ?? null;
  if (silentMs === null) return NOT_DOWN;
  const agree: string[] = [];
  const others: Array<{ name: string; heardAgo: number }> = [];
  let longest = 0;
  let masterAgrees = false;
  for (const [viewer, view] of t.views) {
    const line = view.get(node.id);
    const peer = t.nodes.get(viewer);
    const clock = peer?.info?.clockMs;
    if (viewer === node.id || !line || !peer?.pod || clock === undefined) continue;
    const waiting = (line.pingSent ?? 0) > 0 ? clock - line.pingSent! : 0;
    const heardAgo = (line.pongRecv ?? 0) > 0 ? clock - line.pongRecv! : Infinity;
    if (line.fail || line.pfail || waiting >= HUNG_PING_MS) {
      agree.push(peer.pod.name);
      longest = Math.max(longest, waiting);
      if (peer.info!.role === 'master') masterAgrees = true;
    } else others.push({ name: peer.pod.name, heardAgo });
  }
  // Heard after we lost it, or after a witness's ping went unanswered: alive for that one.
  const since = Math.max(silentMs, longest);
  const hearing = others.filter((o) => o.heardAgo + HEARD_SLACK_MS < since).map((o) => o.name);
  if (hearing.length > 0) {
    return {
      down: false,
      reason: `${label(node)} does not answer the sidecar but ${hearing.join(', ')} heard it since: the sidecar lost contact, the master did not fail; no failover`,
    };
  }
  if (agree.length < HUNG_WITNESSES || !masterAgrees) return NOT_DOWN;
  return {
    down: true,
    how: 'hung',
    evidence: [
      `its pod ${own.name} did not answer our probe (${own.probe?.ok === false ? own.probe.kind : 'silent'}, not refused)`,
      `${agree.length} other nodes (${agree.join(', ')}) have waited >= ${HUNG_PING_MS} ms for its pong on the cluster bus, and none heard it since`,
    ],
  };
}

/** The masters serving slots, and how many of them answer us as masters not flagged failing. */
export function mastersAnswering(
  t: Topology,
  counts: ReadonlyMap<string, number>,
): { total: number; answering: number } {
  let total = 0;
  let answering = 0;
  for (const [id, n] of counts) {
    if (n === 0) continue;
    total++;
    const m = t.nodes.get(id);
    if (m?.pod && !m.pod.deleting && m.info?.role === 'master' && !m.fail) answering++;
  }
  return { total, answering };
}

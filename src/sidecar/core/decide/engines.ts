// The engines the nodes run, for either kind: which pods get their engine annotation written
// (api/node-engine.ts, read by the hook for status.nodes), and what a move between engines tells
// as Events. Pure.
// Invariants:
// - A pod is written only when its node answered and its annotation (ours, or the informer's
//   when we wrote none) says something else: one write per pod incarnation at rest.
// - A move is told once: started when some answering pod runs another engine than the target;
//   each pod once, when its node first answers with the target (those already on it when the
//   move is first seen, at once); each master running the target once; completed when every pod
//   the spec asks for exists and answers with the target (a pod being replaced is not listed).
//   State lost with leadership starts over from what the pods answer (a new leader tells the
//   move again from its start: Kubernetes counts a repeated Event).
import { engineMoveProgress, formatEngine, type EngineOfPod, type NodeEngine } from '../../../api/node-engine.ts';
import { compareCodeUnits } from '../../../api/order.ts';

export interface EnginePod {
  name: string;
  uid: string;
  /** The engine annotation as this instance last wrote it, else as the informer shows it. */
  published: string | undefined;
  /** What its node answered this round; null: it did not (yet). */
  engine: NodeEngine | null;
}

export interface EngineWrite {
  pod: string;
  uid: string;
  value: string;
}

export function engineWrites(pods: readonly EnginePod[]): EngineWrite[] {
  const out: EngineWrite[] = [];
  for (const p of pods) {
    if (p.engine === null) continue;
    const value = formatEngine(p.engine);
    if (value !== p.published) out.push({ pod: p.name, uid: p.uid, value });
  }
  return out;
}

/** A pod as a move reads it, with whether it is a master now (a RedisCluster has one per shard). */
export interface MovePod extends EngineOfPod {
  master: boolean;
}

export interface MoveState {
  from: string;
  /** Pods told (or found at the start) running the target. */
  arrived: string[];
  /** Master pods told (or found at the start) running the target. */
  masters: string[];
}

export type EngineMoveReason = 'EngineMoveStarted' | 'EngineMovePod' | 'EngineMoveMaster' | 'EngineMoveCompleted';

export interface EngineMoveEvent {
  type: 'Normal';
  reason: EngineMoveReason;
  message: string;
  /** The pod an EngineMovePod or EngineMoveMaster is about. */
  pod?: string;
}

const runs = (p: MovePod, target: string) => p.engine !== null && p.engine.engine === target;

/** What the move tells now, and the state for the next round. `target`: api/node-engine.ts targetEngine. */
export function decideEngineMove(
  state: MoveState | null,
  pods: readonly MovePod[],
  target: string | null,
  /** The pods the spec asks for: a pod being replaced is missing from `pods` and the move is not done. */
  expected = pods.length,
): { state: MoveState | null; events: EngineMoveEvent[] } {
  if (target === null) return { state, events: [] };
  const move = engineMoveProgress(target, pods);
  const sorted = [...pods].sort((a, b) => compareCodeUnits(a.pod, b.pod));
  const onTarget = sorted.filter((p) => runs(p, target));
  const events: EngineMoveEvent[] = [];
  if (state === null) {
    if (move === null) return { state: null, events: [] };
    events.push({
      type: 'Normal',
      reason: 'EngineMoveStarted',
      message: `moving ${pods.length} pods from ${move.from} to ${target} (${onTarget.length} run it already): replicas one at a time, then a switchover onto a replica running ${target}, the old master last`,
    });
    // The pods already on the target are told too: without spec.engine the move is only seen
    // once the first replaced pod answers, and that pod is part of it.
    state = { from: move.from, arrived: [], masters: [] };
  }
  const arrived = new Set(state.arrived);
  for (const p of onTarget) {
    if (arrived.has(p.pod)) continue;
    arrived.add(p.pod);
    events.push({
      type: 'Normal',
      reason: 'EngineMovePod',
      pod: p.pod,
      message: `${p.pod} runs ${formatEngine(p.engine!)} (${onTarget.length} of ${pods.length} pods)`,
    });
  }
  const told = new Set(state.masters);
  for (const p of onTarget) {
    if (!p.master || told.has(p.pod)) continue;
    told.add(p.pod);
    events.push({
      type: 'Normal',
      reason: 'EngineMoveMaster',
      pod: p.pod,
      message: `the master moved onto ${p.pod}, which runs ${formatEngine(p.engine!)}`,
    });
  }
  // Pods still restarting keep a started move open: it is done when every pod answers with the target.
  if (move === null && onTarget.length === pods.length && pods.length >= expected) {
    const version = onTarget[0]?.engine ? formatEngine(onTarget[0].engine) : target;
    events.push({
      type: 'Normal',
      reason: 'EngineMoveCompleted',
      message: `every pod (${pods.length}) runs ${version}: the move from ${state.from} is done`,
    });
    return { state: null, events };
  }
  return {
    state: {
      from: state.from,
      arrived: [...arrived].sort(compareCodeUnits),
      masters: [...told].sort(compareCodeUnits),
    },
    events,
  };
}

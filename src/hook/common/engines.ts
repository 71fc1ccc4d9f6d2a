// What the hook shows of the engines the pods run, for either kind: status.nodes (from the engine
// annotation the sidecar writes on each pod once its node answered) and the Updated condition
// during a move between engines. Pure.
// Invariants: status.nodes lists only pods whose annotation reads, sorted by pod name (a pod just
// replaced has none until its node answers); a move is told as Updated=False reason EngineMove
// while the rollout is under way and some pod still answers with another engine than the target,
// except that a rollout stuck on a pod keeps its RolloutWaiting reason (where it stops matters
// more), its message then saying the move too.
import { engineMoveProgress, readEngine, targetEngine, type EngineOfPod } from '../../api/node-engine.ts';
import type { RolloutVerdict } from './rollout.ts';
import { compare } from './util.ts';

export interface NodeStatus {
  pod: string;
  engine: string;
  version: string;
}

/** status.nodes: each pod's engine and version as its annotation says, sorted by pod. */
export function nodesStatus(pods: ReadonlyArray<{ name: string; engine?: string | undefined }>): NodeStatus[] {
  const out: NodeStatus[] = [];
  for (const p of pods) {
    const e = readEngine(p.engine);
    if (e) out.push({ pod: p.name, engine: e.engine, version: e.version });
  }
  return out.sort((a, b) => compare(a.pod, b.pod));
}

/** The engine of each pod (by its annotation) and whether it runs the current template. */
export function enginesOfPods(
  pods: ReadonlyArray<{ name: string; engine?: string | undefined }>,
  updatedPods: readonly string[],
): EngineOfPod[] {
  const updated = new Set(updatedPods);
  return pods.map((p) => ({ pod: p.name, engine: readEngine(p.engine), updated: updated.has(p.name) }));
}

/** The rollout's verdict, told as a move between engines when it is one. */
export function withEngineMove(
  verdict: RolloutVerdict,
  specEngine: unknown,
  pods: readonly EngineOfPod[],
): RolloutVerdict {
  if (verdict.ok) return verdict;
  const move = engineMoveProgress(targetEngine(specEngine, pods), pods);
  if (move === null) return verdict;
  const head = `moving from ${move.from} to ${move.to}: ${move.arrived.length} of ${move.total} pods run it`;
  if (verdict.reason === 'RolloutWaiting') return { ...verdict, message: `${head}; ${verdict.message}` };
  return { ok: false, reason: 'EngineMove', message: `${head}; ${verdict.message}` };
}

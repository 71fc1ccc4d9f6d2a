// The engine rules that need what runs, for every kind: the CRD judges a change of spec.engine or
// spec.version against the old spec (CEL), the hook against what it last applied, since a CRD may
// be installed without the rules or the old spec never have been rolled out. What runs is read
// from the labels of the StatefulSets' pod templates and of the pods (a pod not replaced yet still
// runs the release before), each as engine and version (common/statefulset.ts podTemplateLabels).
// Invariants: pure; a refused change makes the verdict invalid, so every child stays as last
// applied; a template or pod without the engine label runs redis (made before engines existed);
// one without a version label says nothing.
import { ENGINE_LABEL, VERSION_LABEL } from '../../api/labels.ts';
import { transitionProblems, type Engine, type Running } from '../../api/engine.ts';
import type { SpecProblem } from '../../api/validate-fields.ts';
import type { KubeObject } from './types.ts';
import { at, compare, stringMap } from './util.ts';

/** What labels say runs; nothing without a version label (only a version no label can hold lacks one). */
function runningOfLabels(labels: Record<string, string>): Running[] {
  const version = labels[VERSION_LABEL];
  return version === undefined ? [] : [{ engine: labels[ENGINE_LABEL] === 'valkey' ? 'valkey' : 'redis', version }];
}

/**
 * Each distinct engine and version the StatefulSets' pod templates and the pods say they run,
 * sorted by engine, then version.
 */
export function runningOf(statefulSets: readonly KubeObject[], pods: readonly KubeObject[]): Running[] {
  const all = [
    ...statefulSets.flatMap((s) => runningOfLabels(stringMap(at(s, 'spec', 'template', 'metadata', 'labels')))),
    ...pods.flatMap((p) => runningOfLabels(stringMap(p.metadata.labels))),
  ];
  const seen = new Map<string, Running>();
  for (const r of all) seen.set(`${r.engine}\u0000${r.version}`, r);
  return [...seen.entries()].sort(([a], [b]) => compare(a, b)).map(([, r]) => r);
}

type Verdict<S> = { ok: true; spec: S } | { ok: false; problems: SpecProblem[] };

/**
 * The verdict with the transition rules applied: a valid spec whose engine or version may not
 * replace one of those running becomes invalid, with one problem per refused move.
 */
export function withTransitions<S extends { engine: Engine; version: string }>(
  verdict: Verdict<S>,
  running: readonly Running[],
): Verdict<S> {
  if (!verdict.ok) return verdict;
  const problems = running.flatMap((from) => transitionProblems(from, verdict.spec));
  return problems.length > 0 ? { ok: false, problems } : verdict;
}

// Dynamic config: spec.config directives Redis takes at runtime (src/api/config-directives.ts)
// are kept right on every node with CONFIG SET, so changing them restarts nothing, and a new or
// restarted pod gets them as it joins even if its redis.conf is older than the spec. Pure.
// Invariants:
// - One `config` step per pod that answers now, is not loading and is not being deleted (master
//   and replicas alike), holding only the directives whose normalised value differs; a node whose
//   values match gets no step, so a healthy round stays an empty plan.
// - A directive the node does not report (an older Redis without it, or CONFIG GET refused) is
//   left alone: setting it could only fail, every round.
// - A value Redis refuses makes a normal failing step (non-critical): the failure policy backs it
//   off and tells it once; the other steps of the round go on.
import { normaliseDirective } from '../../../api/config-directives.ts';
import { compareCodeUnits } from '../../../api/order.ts';
import { currentFacts, endpointOf } from './observe.ts';
import type { DecideInput, Step } from './types.ts';

export interface ConfigChange {
  name: string;
  /** What the node reports now (CONFIG GET). */
  have: string;
  /** What it should report (the spec's value or Redis' default, normalised). */
  want: string;
}

/** The directives of `desired` whose value on the node differs, by name. */
export function runtimeConfigChanges(
  desired: Readonly<Record<string, string>>,
  reported: Readonly<Record<string, string>>,
): ConfigChange[] {
  const changes: ConfigChange[] = [];
  for (const name of Object.keys(desired).sort(compareCodeUnits)) {
    const have = reported[name];
    const want = desired[name];
    if (have === undefined || want === undefined) continue;
    if (normaliseDirective(name, have) !== normaliseDirective(name, want)) changes.push({ name, have, want });
  }
  return changes;
}

const shown = (v: string) => (v === '' ? '""' : v);

/** One CONFIG SET step per node whose runtime-managed directives differ from the spec. */
export function planRuntimeConfig(input: DecideInput): Step[] {
  const steps: Step[] = [];
  for (const pod of input.pods) {
    if (pod.deleting || !pod.ip) continue;
    const facts = currentFacts(pod, input.now, input.config);
    if (!facts || facts.loading) continue;
    const changes = runtimeConfigChanges(input.spec.runtimeConfig, facts.runtimeConfig);
    if (changes.length === 0) continue;
    steps.push({
      kind: 'config',
      pod: pod.name,
      endpoint: endpointOf(pod.ip),
      settings: Object.fromEntries(changes.map((c) => [c.name, normaliseDirective(c.name, c.want)])),
      critical: false,
      reason: `${pod.name}: ${changes.map((c) => `${c.name} ${shown(c.have)} -> ${shown(c.want)}`).join(', ')} (spec.config, or Redis' default where unset; applied at runtime, no restart)`,
    });
  }
  return steps;
}

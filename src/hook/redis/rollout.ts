// What a rolling update looks like from the observed objects: which pods run their StatefulSet's
// current template (status.updateRevision) and which are stale, and the Updated condition's
// verdict. Pure. Invariants: a pod counts as updated only when its controller-revision-hash equals
// the update revision of the StatefulSet it belongs to AND that StatefulSet's controller has seen
// the latest spec (observedGeneration), so a template change is never reported as done before the
// controller has looked at it; a pod that is not Ready (updated or not) is named, because the
// sidecar replaces no other pod until it is: that is where a stuck rollout stops.
import {
  COMPONENT_LABEL,
  COMPONENT_MASTER_SET,
  COMPONENT_REPLICA_SET,
  REVISION_LABEL,
  childNames,
} from '../../api/labels.ts';
import { findObject } from '../common/observed.ts';
import { enginesOfPods, withEngineMove } from '../common/engines.ts';
import { rolloutVerdict } from '../common/rollout.ts';
import type { PodView } from './status.ts';
import type { KubeObject } from '../common/types.ts';
import { at, int, str, stringMap } from '../common/util.ts';

export interface RolloutView {
  updatedPods: string[];
  stalePods: string[];
  ok: boolean;
  reason: string;
  message: string;
}

interface SetRevision {
  /** status.updateRevision, when the controller has processed the current generation. */
  revision: string | undefined;
  /** The controller has not processed the current spec, or the set is missing (a volume expansion recreates it). */
  pending: boolean;
}

function setRevision(set: KubeObject | undefined): SetRevision {
  if (set === undefined) return { revision: undefined, pending: true };
  const generation = int(set.metadata.generation);
  const observed = int(at(set, 'status', 'observedGeneration'));
  const pending = generation !== undefined && observed !== generation;
  return { revision: pending ? undefined : str(at(set, 'status', 'updateRevision')), pending };
}

export function rolloutView(
  name: string,
  namespace: string,
  observed: readonly KubeObject[],
  pods: readonly KubeObject[],
  views: readonly PodView[],
  /** spec.engine as the spec says it (absent: not said). */
  specEngine?: unknown,
): RolloutView {
  const names = childNames(name);
  const sets = {
    [COMPONENT_MASTER_SET]: setRevision(findObject(observed, 'apps/v1', 'StatefulSet', namespace, names.masterSet)),
    [COMPONENT_REPLICA_SET]: setRevision(findObject(observed, 'apps/v1', 'StatefulSet', namespace, names.replicaSet)),
  } as Record<string, SetRevision>;
  const byName = new Map(pods.map((p) => [p.metadata.name, p]));
  const updatedPods: string[] = [];
  const stalePods: string[] = [];
  const podComponents = new Set<string>();
  for (const view of views) {
    const labels = stringMap(byName.get(view.name)?.metadata.labels);
    const component = labels[COMPONENT_LABEL] ?? '';
    podComponents.add(component);
    const set = sets[component];
    const current = set?.revision !== undefined && labels[REVISION_LABEL] === set.revision;
    (current ? updatedPods : stalePods).push(view.name);
  }
  // Only sets that have pods: a new Redis has no StatefulSet yet, and no pod either.
  const pendingSets = Object.entries(sets)
    .filter(([component, s]) => s.pending && podComponents.has(component))
    .map(([component]) => (component === COMPONENT_MASTER_SET ? names.masterSet : names.replicaSet));
  const verdict = rolloutVerdict({
    updated: updatedPods,
    stale: stalePods,
    total: views.length,
    pending:
      pendingSets.length > 0
        ? `StatefulSet ${pendingSets.join(', ')} has a spec its controller has not processed yet, or is being recreated`
        : '',
    notReady: views.filter((v) => !v.terminating && !v.ready).map((v) => v.name),
    leaving: views.filter((v) => v.terminating).map((v) => v.name),
    order: 'replicas one at a time, then a switchover, the old master last',
  });
  return { updatedPods, stalePods, ...withEngineMove(verdict, specEngine, enginesOfPods(views, updatedPods)) };
}

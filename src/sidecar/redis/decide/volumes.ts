// Volume expansion, decided: what growing spec.persistence.size asks of the claims and of the
// two StatefulSets, from what was observed. Pure: no I/O, no clock; the runner
// (manager/volumes.ts) reads the objects, applies the actions in order and tells the user.
// Invariants:
// - Never shrinks: a claim or a claim template at or above the desired size is left alone.
// - A claim is grown only when its StorageClass says allowVolumeExpansion: true (the API server's
//   admission refuses it otherwise); a claim that cannot grow is refused with a reason naming the
//   StorageClass, never patched.
// - A StatefulSet is replaced (deleted with its pods orphaned, recreated by Metacontroller from
//   the hook's fresh claim templates) only when its template is smaller than desired, every
//   existing claim of that set already requests the desired size, nothing was refused, and both
//   sets are there and none is being deleted: so a new pod never gets a smaller volume than the
//   others, and at most one set is without a controller at any moment.
import { childNames, DATA_VOLUME } from '../../../api/labels.ts';
import { compareCodeUnits } from '../../../api/order.ts';
import { parseQuantity } from '../../../api/quantity.ts';

/** A PersistentVolumeClaim of this Redis, as the runner observed it. */
export interface ClaimView {
  name: string;
  uid: string;
  /** spec.resources.requests.storage. */
  requested: string | undefined;
  /** status.capacity.storage (what the volume has now). */
  capacity: string | undefined;
  /** spec.storageClassName; undefined or '' = no class. */
  storageClassName: string | undefined;
  /** status.phase: only a Bound claim's request may change. */
  phase: string | undefined;
  deleting: boolean;
  /** Types of the status conditions that are True (Resizing, FileSystemResizePending, ...). */
  conditions: string[];
  /** The resize-refused annotation the sidecar wrote earlier, if any. */
  refusedAnnotation: string | undefined;
}

/** One of the two StatefulSets, as observed. */
export interface SetView {
  name: string;
  uid: string;
  /** Storage requested by its `data` claim template; undefined when it has none. */
  templateSize: string | undefined;
  deleting: boolean;
}

export interface VolumeInput {
  /** The Redis' name. */
  name: string;
  /** RDB or AOF on: the sets have data claim templates. Off: nothing to do. */
  persistence: boolean;
  /** spec.persistence.size. */
  desiredSize: string;
  claims: ClaimView[];
  /** allowVolumeExpansion by StorageClass name (unset counts as false); a class not here is unknown. */
  storageClasses: ReadonlyMap<string, boolean>;
  /** The StatefulSets that exist (0, 1 or 2). */
  sets: SetView[];
}

export type VolumeAction =
  | { kind: 'expand-claim'; claim: string; uid: string; from: string; size: string; reason: string }
  /** `told`: the claim already carries this very reason (an earlier leader wrote it and told the user). */
  | { kind: 'refuse'; claim: string; uid: string; reason: string; told: boolean }
  /** The claim carries a resize-refused annotation and now requests the desired size. */
  | { kind: 'clear-refusal'; claim: string; uid: string; reason: string }
  | { kind: 'recreate-statefulset'; name: string; uid: string; size: string; reason: string };

export interface VolumePlan {
  actions: VolumeAction[];
  /** Claims that request the desired size but whose volume is not there yet (for the log). */
  waiting: string[];
}

const NOTHING: VolumePlan = { actions: [], waiting: [] };

/** Which of the two sets a claim belongs to (`data-<set>-<ordinal>`), or undefined. */
export function setOfClaim(redisName: string, claim: string): string | undefined {
  const names = childNames(redisName);
  for (const set of [names.masterSet, names.replicaSet]) {
    const prefix = `${DATA_VOLUME}-${set}-`;
    if (claim.startsWith(prefix) && /^[0-9]+$/.test(claim.slice(prefix.length))) return set;
  }
  return undefined;
}

/** Why a claim's class cannot grow it, or undefined when it can. */
export function expansionRefusal(
  claim: ClaimView,
  classes: ReadonlyMap<string, boolean>,
  size: string,
): string | undefined {
  const cls = claim.storageClassName;
  const grow = `${claim.name} cannot grow from ${claim.requested ?? '?'} to ${size}`;
  if (cls === undefined || cls === '')
    return `${grow}: it has no StorageClass, so nothing can expand it (allowVolumeExpansion is false)`;
  const allowed = classes.get(cls);
  if (allowed === undefined) return `${grow}: its StorageClass ${cls} does not exist, so allowVolumeExpansion is false`;
  if (!allowed) return `${grow}: StorageClass ${cls} does not allow volume expansion (allowVolumeExpansion is false)`;
  return undefined;
}

function waitingReason(claim: ClaimView, size: string): string {
  const conditions = claim.conditions.filter(
    (c) => c === 'Resizing' || c === 'FileSystemResizePending' || c.endsWith('ResizeError'),
  );
  const note = conditions.length > 0 ? ` (${conditions.join(', ')})` : '';
  return `${claim.name}: requests ${size}, has ${claim.capacity ?? 'no capacity yet'}${note}`;
}

/** The actions, in order: claims (by name) first, then at most one StatefulSet. */
export function planVolumes(input: VolumeInput): VolumePlan {
  if (!input.persistence) return NOTHING;
  const want = parseQuantity(input.desiredSize);
  if (want === undefined) return NOTHING;
  const size = input.desiredSize;
  const claims = input.claims
    .filter((c) => !c.deleting && setOfClaim(input.name, c.name) !== undefined)
    .sort((a, b) => compareCodeUnits(a.name, b.name));

  const actions: VolumeAction[] = [];
  const waiting: string[] = [];
  /** Sets with a claim that does not request the desired size yet. */
  const behind = new Set<string>();
  let refused = false;
  for (const claim of claims) {
    const set = setOfClaim(input.name, claim.name) as string;
    const requested = parseQuantity(claim.requested);
    if (requested !== undefined && requested >= want) {
      const capacity = parseQuantity(claim.capacity);
      if (capacity === undefined || capacity < want) waiting.push(waitingReason(claim, size));
      if (claim.refusedAnnotation !== undefined) {
        actions.push({
          kind: 'clear-refusal',
          claim: claim.name,
          uid: claim.uid,
          reason: `${claim.name} requests ${claim.requested ?? size} now`,
        });
      }
      continue;
    }
    behind.add(set);
    const refusal = expansionRefusal(claim, input.storageClasses, size);
    if (refusal !== undefined) {
      refused = true;
      actions.push({
        kind: 'refuse',
        claim: claim.name,
        uid: claim.uid,
        reason: refusal,
        told: claim.refusedAnnotation === refusal,
      });
      continue;
    }
    if (claim.phase !== 'Bound') {
      // The API server lets only a bound claim's request change; it is grown once bound.
      waiting.push(`${claim.name}: ${claim.phase ?? 'not'} bound, grown to ${size} once bound`);
      continue;
    }
    actions.push({
      kind: 'expand-claim',
      claim: claim.name,
      uid: claim.uid,
      from: claim.requested ?? '?',
      size,
      reason: `${claim.name} requests ${claim.requested ?? 'nothing'}, spec.persistence.size is ${size}, and StorageClass ${claim.storageClassName} allows volume expansion`,
    });
  }

  const recreate = refused ? undefined : setToRecreate(input, want, behind);
  if (recreate) actions.push(recreate);
  return { actions, waiting };
}

/** The first set (master, then replica) whose claim template is smaller than desired, when it may be replaced now. */
function setToRecreate(input: VolumeInput, want: number, behind: ReadonlySet<string>): VolumeAction | undefined {
  const names = childNames(input.name);
  const master = input.sets.find((s) => s.name === names.masterSet);
  const replica = input.sets.find((s) => s.name === names.replicaSet);
  // One set at a time, and only with both present: a set just deleted is recreated by
  // Metacontroller before the other one goes.
  if (!master || !replica || master.deleting || replica.deleting) return undefined;
  for (const set of [master, replica]) {
    const template = parseQuantity(set.templateSize);
    // No data template (persistence was off at creation) or an unreadable one: not ours to fix.
    if (template === undefined || template >= want || behind.has(set.name)) continue;
    return {
      kind: 'recreate-statefulset',
      name: set.name,
      uid: set.uid,
      size: input.desiredSize,
      reason: `${set.name} creates claims of ${set.templateSize} and every claim of it requests ${input.desiredSize}: its volumeClaimTemplates are immutable, so it is replaced (pods orphaned, kept running) by one with ${input.desiredSize}`,
    };
  }
  return undefined;
}

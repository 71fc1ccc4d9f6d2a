// The hook's side of the names rule (api/name-conflict.ts): the customize rule that shows each
// parent the other kind's parents whose children could share names with its own, and the verdict
// read from them. Invariants: pure; only parents of the other kind in the parent's namespace
// count (a rule by names is namespaced, and the hook filters again); the verdict depends on the
// parents' names, kinds, creation times and uids alone, never on their specs or status.
import { GROUP } from '../../api/labels.ts';
import {
  nameConflictOf,
  rivalNames,
  type NameConflict,
  type ParentFacts,
  type ParentKind,
} from '../../api/name-conflict.ts';
import { REDIS_CLUSTER_KIND, REDIS_CLUSTER_PLURAL } from '../../api/rediscluster-names.ts';
import type { CustomizeResponse, KubeObject } from './types.ts';
import { ofKind } from './observed.ts';

const API_VERSION = `${GROUP}/v1`;
const other = (kind: ParentKind): ParentKind => (kind === 'Redis' ? REDIS_CLUSTER_KIND : 'Redis');
const PLURAL: Record<ParentKind, string> = { Redis: 'redises', [REDIS_CLUSTER_KIND]: REDIS_CLUSTER_PLURAL };

/** The customize rule: the other kind's parents, by name, that could take this parent's children's names. */
export function rivalRule(kind: ParentKind, name: string, namespace: string): CustomizeResponse['relatedResources'] {
  const rival = other(kind);
  return [{ apiVersion: API_VERSION, resource: PLURAL[rival], namespace, names: rivalNames(kind, name) }];
}

function factsOf(kind: ParentKind, o: Pick<KubeObject, 'metadata'>): ParentFacts {
  const { creationTimestamp, uid } = o.metadata;
  return {
    kind,
    name: o.metadata.name,
    creationTimestamp: typeof creationTimestamp === 'string' ? creationTimestamp : undefined,
    uid: typeof uid === 'string' && uid !== '' ? uid : undefined,
  };
}

/** Why this parent is refused its names, from the related parents of the other kind; undefined: it keeps them. */
export function nameConflictIn(
  kind: ParentKind,
  parent: Pick<KubeObject, 'metadata'>,
  related: readonly KubeObject[],
): NameConflict | undefined {
  const namespace = parent.metadata.namespace ?? '';
  const rival = other(kind);
  const rivals = ofKind(related, API_VERSION, rival, namespace).map((o) => factsOf(rival, o));
  return nameConflictOf(factsOf(kind, parent), rivals);
}

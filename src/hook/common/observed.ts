// Reading Metacontroller's children/related maps. Invariants: maps are read by iterating values
// (hook v1 keys are bare names, v2 keys are namespace/name), results come back in a canonical
// order whatever the map order was, and objects from another namespace are ignored.
import type { MemberMeta } from '../../api/membership.ts';
import type { HookRequest, KubeObject, ObjectMap } from './types.ts';
import { compare, isRecord, stringMap } from './util.ts';

/** apiVersion/kind/namespace/name: a total order over distinct objects. */
export function identityOf(object: KubeObject): string {
  return `${object.apiVersion}\u0000${object.kind}\u0000${object.metadata.namespace ?? ''}\u0000${object.metadata.name}`;
}

/** Every object of a map, in canonical order. */
export function objectsOf(map: ObjectMap): KubeObject[] {
  const out: KubeObject[] = [];
  for (const group of Object.values(map)) {
    if (!isRecord(group)) continue;
    for (const object of Object.values(group)) out.push(object);
  }
  return out.sort((a, b) => compare(identityOf(a), identityOf(b)));
}

/** True when `object` lives in `namespace` (an object without a namespace is taken as the parent's). */
export function inNamespace(object: KubeObject, namespace: string): boolean {
  const ns = object.metadata.namespace;
  return ns === undefined || ns === '' || ns === namespace;
}

/** What api/membership.ts reads of a related object, its namespace as inNamespace takes it. */
export function memberMeta(object: KubeObject, namespace: string): MemberMeta {
  return {
    namespace: inNamespace(object, namespace) ? namespace : object.metadata.namespace,
    labels: stringMap(object.metadata.labels),
  };
}

export function ofKind(
  objects: readonly KubeObject[],
  apiVersion: string,
  kind: string,
  namespace: string,
): KubeObject[] {
  return objects.filter((o) => o.apiVersion === apiVersion && o.kind === kind && inNamespace(o, namespace));
}

export function findObject(
  objects: readonly KubeObject[],
  apiVersion: string,
  kind: string,
  namespace: string,
  name: string,
): KubeObject | undefined {
  return ofKind(objects, apiVersion, kind, namespace).find((o) => o.metadata.name === name);
}

/** Whether the related map has an entry for a kind at all (i.e. the customize hook asked for it). */
export function mapHasKind(map: ObjectMap, kind: string): boolean {
  return Object.keys(map).some((key) => key.split('.')[0] === kind);
}

/** Where Metacontroller's default apply strategy keeps what the hook last returned for a child. */
export const LAST_APPLIED_ANNOTATION = 'metacontroller.k8s.io/last-applied-configuration';

const SERVER_METADATA = [
  'resourceVersion',
  'uid',
  'creationTimestamp',
  'generation',
  'managedFields',
  'selfLink',
  'ownerReferences',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
] as const;

/**
 * The child as the hook last asked for it, for echoing on an invalid spec. Returning the observed
 * object itself would change nothing in the cluster but would nest the previous last-applied
 * annotation inside the next one: every sync writes a longer annotation, which triggers another
 * sync, until the 256 KiB annotation limit makes every apply fail. What
 * was last applied is exactly what makes Metacontroller's three-way merge a no-op. Without the
 * annotation (server-side apply, or a child made by hand), the observed object minus status and
 * server-set metadata is the closest thing.
 */
export function lastAppliedOf(child: KubeObject): KubeObject {
  const raw = child.metadata.annotations?.[LAST_APPLIED_ANNOTATION];
  if (typeof raw === 'string') {
    try {
      const parsed: unknown = JSON.parse(raw);
      if (
        isRecord(parsed) &&
        parsed['apiVersion'] === child.apiVersion &&
        parsed['kind'] === child.kind &&
        isRecord(parsed['metadata']) &&
        parsed['metadata']['name'] === child.metadata.name
      ) {
        const meta = parsed['metadata'];
        const namespace = meta['namespace'] ?? child.metadata.namespace;
        return {
          ...(parsed as KubeObject),
          metadata: {
            ...(meta as unknown as KubeObject['metadata']),
            ...(namespace !== undefined ? { namespace: namespace as string } : {}),
          },
        };
      }
    } catch {
      // A corrupt annotation is not ours to trust; fall through to the observed object.
    }
  }
  const { status: _status, ...rest } = child;
  const metadata: Record<string, unknown> = { ...child.metadata };
  for (const key of SERVER_METADATA) delete metadata[key];
  const annotations = { ...(child.metadata.annotations ?? {}) };
  delete annotations[LAST_APPLIED_ANNOTATION];
  if (Object.keys(annotations).length > 0) metadata['annotations'] = annotations;
  else delete metadata['annotations'];
  return { ...rest, metadata: metadata as unknown as KubeObject['metadata'] } as KubeObject;
}

/** A filter: the objects carrying every one of `labels`. */
export const labelled = (labels: Record<string, string>) => (o: KubeObject) =>
  Object.entries(labels).every(([k, v]) => o.metadata.labels?.[k] === v);

/** What every kind's state reads first from a sync request: the parent's identity and the maps, in canonical order. */
export interface ParentObjects {
  name: string;
  /** The parent's namespace ('' when the request has none). */
  namespace: string;
  /** The parent's uid, undefined when missing or empty: children are selected by `controller-uid`. */
  uid: string | undefined;
  /** Observed children, canonical order. */
  observed: KubeObject[];
  related: KubeObject[];
}

export function parentObjectsOf(request: HookRequest): ParentObjects {
  const { name, namespace, uid } = request.parent.metadata;
  return {
    name,
    namespace: namespace ?? '',
    uid: typeof uid === 'string' && uid !== '' ? uid : undefined,
    observed: objectsOf(request.children),
    related: objectsOf(request.related),
  };
}

// Reading Metacontroller's children/related maps. Invariants: maps are read by iterating values
// (hook v1 keys are bare names, v2 keys are namespace/name), results come back in a canonical
// order whatever the map order was, and objects from another namespace are ignored.
import type { KubeObject, ObjectMap } from './types.ts';
import { compare, isRecord } from './util.ts';

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

export function ofKind(objects: readonly KubeObject[], apiVersion: string, kind: string, namespace: string): KubeObject[] {
  return objects.filter((o) => o.apiVersion === apiVersion && o.kind === kind && inNamespace(o, namespace));
}

export function findObject(objects: readonly KubeObject[], apiVersion: string, kind: string, namespace: string, name: string): KubeObject | undefined {
  return ofKind(objects, apiVersion, kind, namespace).find((o) => o.metadata.name === name);
}

/** Whether the related map has an entry for a kind at all (i.e. the customize hook asked for it). */
export function mapHasKind(map: ObjectMap, kind: string): boolean {
  return Object.keys(map).some((key) => key.split('.')[0] === kind);
}

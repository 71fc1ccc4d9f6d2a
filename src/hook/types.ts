// The wire types of Metacontroller's CompositeController hooks (v1 and v2), as the hook sees
// them after parseHookRequest / parseCustomizeRequest. Invariant: these describe the JSON on the
// wire exactly; a HookResponse has no top-level key other than the four below (v2 rejects others).
import type { ObjectMeta, RedisObject, RedisStatus } from '../api/schema.ts';

/** Any Kubernetes object: parseHookRequest guarantees apiVersion, kind and metadata.name are strings. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

/**
 * Metacontroller's children/related map: outer key `Kind.version` or `Kind.group/version`, inner
 * key the bare name (hook v1) or `namespace/name` (hook v2). Read it by iterating values only.
 */
export type ObjectMap = Record<string, Record<string, KubeObject>>;

export interface HookRequest {
  controller?: unknown;
  parent: RedisObject;
  children: ObjectMap;
  related: ObjectMap;
  /** true only on the finalize hook (the parent is being deleted). */
  finalizing: boolean;
}

export interface HookResponse {
  /** Replaces the parent's whole status. Never carries observedGeneration. */
  status: RedisStatus;
  /** The complete desired set: every observed child missing here is deleted by Metacontroller. */
  children: KubeObject[];
  resyncAfterSeconds?: number;
  /** Present only in finalize responses; true only when the request had finalizing: true. */
  finalized?: boolean;
}

export interface CustomizeRequest {
  controller?: unknown;
  parent: RedisObject;
}

/** Metacontroller's ResourceRule: `names` and `labelSelector` are never combined. */
export interface RelatedResourceRule {
  apiVersion: string;
  resource: string;
  namespace?: string;
  names?: string[];
  labelSelector?: { matchLabels: Record<string, string> };
}

export interface CustomizeResponse {
  relatedResources: RelatedResourceRule[];
}

export type ParseResult<T> = { ok: true; request: T } | { ok: false; message: string };

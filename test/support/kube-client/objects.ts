// What a Kubernetes API server answers, as the test client sees it: objects as JSON (any kind; the
// fields tests read typed, the rest kept), and failures as metav1.Status, thrown as KubeApiError.
// Invariant: a KubeApiError always carries a Status with the HTTP code and, when the server gave
// one, its reason (NotFound, AlreadyExists, Conflict, Invalid, ...), so callers branch on those
// exactly as they would on a cluster's answer.

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMetaLike {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  [key: string]: unknown;
}

/** Any Kubernetes object as JSON. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMetaLike;
  [key: string]: unknown;
}

/** An object as the API server returns it: metadata filled. */
export interface StoredObject extends KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMetaLike & { name: string; uid: string; resourceVersion: string; creationTimestamp: string };
}

/** A dotted path into an object (`metadata.name`, `spec.nodeName`); undefined where it leads nowhere. */
export function getPath(obj: unknown, path: string): unknown {
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

export interface StatusCause {
  reason: string;
  message: string;
  field?: string;
}

export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, unknown>;
  status: 'Failure' | 'Success';
  message?: string;
  reason?: string;
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    uid?: string;
    causes?: StatusCause[];
    retryAfterSeconds?: number;
  };
  code: number;
}

export class KubeApiError extends Error {
  readonly status: Status;
  constructor(status: Status) {
    super(status.message ?? status.reason ?? `HTTP ${status.code}`);
    this.name = 'KubeApiError';
    this.status = status;
  }
  get code(): number {
    return this.status.code;
  }
  get reason(): string | undefined {
    return this.status.reason;
  }
}

/** A failure the server answered without a Status body (a proxy's 502, a bare 404 text). */
export function failure(code: number, reason: string, message: string): KubeApiError {
  return new KubeApiError({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
}

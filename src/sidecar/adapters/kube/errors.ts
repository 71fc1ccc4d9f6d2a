// What went wrong with an API call, classified once so callers branch on a status code or a
// reason instead of parsing client-node's ApiException themselves.
// Invariant: classification never throws, whatever the error (network failure, timeout, a body
// that is not JSON).
import { ApiException } from '@kubernetes/client-node';

export interface KubeFailure {
  /** HTTP status, or undefined for a network error / timeout. */
  code: number | undefined;
  /** The Status reason (NotFound, Conflict, AlreadyExists, ...), when the server sent one. */
  reason: string | undefined;
  message: string;
}

/** What went wrong with a client-node call, from its ApiException (whose body is the Status as text). */
export function kubeFailure(err: unknown): KubeFailure {
  if (err instanceof ApiException) {
    let body: unknown = err.body;
    if (typeof body === 'string') {
      try {
        body = JSON.parse(body);
      } catch {
        // not JSON: keep the text
      }
    }
    const status = typeof body === 'object' && body !== null ? (body as { reason?: string; message?: string }) : {};
    return {
      code: err.code,
      reason: status.reason,
      message: status.message ?? (typeof body === 'string' ? body : `HTTP ${err.code}`),
    };
  }
  const e = err as { name?: string; message?: string };
  const timeout = e?.name === 'TimeoutError' || e?.name === 'AbortError';
  return { code: undefined, reason: timeout ? 'Timeout' : undefined, message: e?.message ?? String(err) };
}

export const isNotFound = (err: unknown) => kubeFailure(err).code === 404;
export const isConflict = (err: unknown) => kubeFailure(err).code === 409;
/**
 * A write carrying metadata.uid as a precondition met another incarnation of the object (deleted
 * and recreated under the same name): kube-apiserver answers 422, metadata.uid is immutable.
 */
export const isReplaced = (err: unknown) => {
  const f = kubeFailure(err);
  return f.code === 422 && /metadata\.uid/.test(f.message);
};

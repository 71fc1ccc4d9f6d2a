// What every call the sidecar makes carries: a timeout, the right patch content type, and the
// context (API client, timeout, logger) the call modules share.
// Invariants:
// - Every request is bounded by a timeout (client-node has none by default), so a hung API
//   server never stalls a caller forever.
// - Patches carry an explicit patch content type: client-node 2.x defaults to
//   application/json-patch+json, which a real server refuses for a merge-style body.
import {
  Observable,
  PatchStrategy,
  setHeaderOptions,
  type ConfigurationOptions,
  type CoreV1Api,
  type ObservableMiddleware,
  type RequestContext,
  type ResponseContext,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';

export const DEFAULT_REQUEST_TIMEOUT_MS = 5000;

/** The Redis a write is about (the owner of a Secret, the subject of an Event). */
export interface RedisRef {
  namespace: string;
  name: string;
  uid?: string;
}

/** What the core/v1 call modules (pods, events, secrets) need from the client. */
export interface CoreCalls {
  core: CoreV1Api;
  timeoutMs: number;
  logger: Logger;
}

function passThrough<T>(value: T): Observable<T> {
  return new Observable(Promise.resolve(value));
}

/** ConfigurationOptions that abort a call after `ms` (client-node has no default timeout). */
export function timeoutOptions(ms: number): ConfigurationOptions<ObservableMiddleware> {
  const middleware: ObservableMiddleware = {
    pre: (ctx: RequestContext) => {
      ctx.setSignal(AbortSignal.timeout(ms));
      return passThrough(ctx);
    },
    post: (rsp: ResponseContext) => passThrough(rsp),
  };
  return { middleware: [middleware], middlewareMergeStrategy: 'append' };
}

/** A JSON merge patch with the right content type, bounded by `ms`. */
export function mergePatchOptions(ms: number): ConfigurationOptions<ObservableMiddleware> {
  return setHeaderOptions('Content-Type', PatchStrategy.MergePatch, timeoutOptions(ms));
}

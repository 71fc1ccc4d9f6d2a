// Hook request bodies as the hook reads them. The server's routes check a body once, against the
// wire schema (wire.ts) with the compiled checker (wire-check.ts), and hand the typed body to
// hookRequestOf / customizeRequestOf, which check nothing. parseHookRequest / parseCustomizeRequest
// are the same two steps for callers that hold unchecked JSON (tests, fixtures, tools): the same
// checker, so the same verdict and message. Enough for sync, finalize and customize never to
// throw, nothing about the spec (an invalid spec is a 200 with InvalidSpec, not a parse failure).
// Invariants: an accepted body's parent, children and related are returned as they came (not
// copied), with a missing or null map read as `{}` and a missing finalizing as false; a rejected
// body gets one message naming the offending field.
import { wireChecker } from './wire-check.ts';
import { CustomizeRequest, HookRequestBody, type HookRequest } from './wire.ts';
import type { ParseResult } from './types.ts';

const hookRequestBody = wireChecker(HookRequestBody);
const customizeRequest = wireChecker(CustomizeRequest);

/** The request the hook works on, from a body already checked against HookRequestBody. */
export function hookRequestOf(body: HookRequestBody): HookRequest {
  return {
    ...(body.controller !== undefined ? { controller: body.controller } : {}),
    parent: body.parent,
    children: body.children ?? {},
    related: body.related ?? {},
    finalizing: body.finalizing ?? false,
  };
}

/** The customize request, from a body already checked against CustomizeRequest: its other keys dropped. */
export function customizeRequestOf(body: CustomizeRequest): CustomizeRequest {
  return {
    ...(body.controller !== undefined ? { controller: body.controller } : {}),
    parent: body.parent,
  };
}

export function parseHookRequest(body: unknown): ParseResult<HookRequest> {
  if (hookRequestBody.is(body)) return { ok: true, request: hookRequestOf(body) };
  return { ok: false, message: hookRequestBody.problem(body)?.message ?? 'not a hook request' };
}

export function parseCustomizeRequest(body: unknown): ParseResult<CustomizeRequest> {
  if (customizeRequest.is(body)) return { ok: true, request: customizeRequestOf(body) };
  return { ok: false, message: customizeRequest.problem(body)?.message ?? 'not a customize request' };
}

// Hook request bodies checked against the wire schemas (wire.ts): enough for sync, finalize and
// customize never to throw, nothing about the spec (an invalid spec is a 200 with InvalidSpec,
// not a parse failure). Invariants: an accepted body's parent, children and related are returned
// as they came (not copied), with a missing or null map read as `{}` and a missing finalizing as
// false; a rejected body gets one message naming the offending field.
import { wireChecker } from './wire-check.ts';
import { CustomizeRequest, HookRequestBody, type HookRequest } from './wire.ts';
import type { ParseResult } from './types.ts';

const hookRequestBody = wireChecker(HookRequestBody);
const customizeRequest = wireChecker(CustomizeRequest);

export function parseHookRequest(body: unknown): ParseResult<HookRequest> {
  if (!hookRequestBody.is(body)) return { ok: false, message: hookRequestBody.problem(body)?.message ?? 'not a hook request' };
  return {
    ok: true,
    request: {
      ...(body.controller !== undefined ? { controller: body.controller } : {}),
      parent: body.parent,
      children: body.children ?? {},
      related: body.related ?? {},
      finalizing: body.finalizing ?? false,
    },
  };
}

export function parseCustomizeRequest(body: unknown): ParseResult<CustomizeRequest> {
  if (!customizeRequest.is(body)) return { ok: false, message: customizeRequest.problem(body)?.message ?? 'not a customize request' };
  return {
    ok: true,
    request: {
      ...(body.controller !== undefined ? { controller: body.controller } : {}),
      parent: body.parent,
    },
  };
}

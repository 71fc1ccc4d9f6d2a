// How the hook service answers what it cannot serve: every error is a JSON body
// `{error, message}` with a stable snake_case `error` code. Invariants: a client mistake is a
// 4xx that says what to fix; anything else is a 500, which Metacontroller treats as "change
// nothing, retry later" - never a 200, which would apply a partial children list.
import type { FastifyBaseLogger, FastifyReply } from 'fastify';

export interface ErrorBody {
  error: string;
  message: string;
}

export interface ErrorAnswer {
  statusCode: number;
  body: ErrorBody;
  /** True when the fault is ours (5xx): worth an error log with the stack. */
  ours: boolean;
}

/** JSON Schema of ErrorBody, for the routes' response schemas. */
export const errorBodySchema = {
  type: 'object',
  required: ['error', 'message'],
  additionalProperties: false,
  properties: { error: { type: 'string' }, message: { type: 'string' } },
} as const;

/** Marks the JSON parser's error so the classifier keeps its message (which names the position). */
export class MalformedJsonError extends Error {
  readonly statusCode = 400;
  readonly code = 'MALFORMED_JSON';
}

/** Only the fields of a thrown value the classifier looks at. */
interface ErrorLike {
  code?: unknown;
  statusCode?: unknown;
  message?: unknown;
  validation?: unknown;
}

function fields(error: unknown): ErrorLike {
  return typeof error === 'object' && error !== null ? (error as ErrorLike) : {};
}

function answer(statusCode: number, error: string, message: string): ErrorAnswer {
  return { statusCode, body: { error, message }, ours: statusCode >= 500 };
}

/** Maps anything a route, a parser or the serializer threw to the answer the client gets. */
export function classifyError(error: unknown, bodyLimitBytes: number): ErrorAnswer {
  const { code, statusCode, message, validation } = fields(error);
  const text = typeof message === 'string' && message !== '' ? message : String(error);
  if (validation !== undefined) {
    return answer(400, 'not_a_hook_request', `not a Metacontroller hook request: ${text}`);
  }
  switch (code) {
    case 'MALFORMED_JSON':
      return answer(400, 'malformed_json', text);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return answer(400, 'malformed_json', 'request body is empty; expected a JSON object');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return answer(400, 'malformed_json', 'request body is not valid JSON');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return answer(413, 'body_too_large', `request body is larger than ${bodyLimitBytes} bytes (BODY_LIMIT_BYTES)`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return answer(415, 'unsupported_media_type', 'content type not supported; send the body as application/json');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return answer(400, 'bad_request', 'request body size did not match Content-Length');
  }
  // Any other client error fastify detected (bad URL, bad header...) keeps its status.
  if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500) {
    return answer(statusCode, 'bad_request', text);
  }
  return answer(500, 'internal_error', `the hook failed and changed nothing; Metacontroller will retry: ${text}`);
}

export function notFoundBody(method: string, url: string): ErrorBody {
  const shown = url.length > 200 ? `${url.slice(0, 200)}...` : url;
  return {
    error: 'not_found',
    message: `no route ${method} ${shown}; this service answers POST /sync, /finalize, /customize and GET /healthz, /readyz, /metrics`,
  };
}

/** Sends the answer; a fault of ours is logged with its stack (a client's mistake is not). */
export function sendError(reply: FastifyReply, log: FastifyBaseLogger, verdict: ErrorAnswer, cause: unknown): void {
  if (verdict.ours)
    log.error({ err: cause }, 'request failed; answered 500 so Metacontroller retries and changes nothing');
  reply.code(verdict.statusCode).send(verdict.body);
}

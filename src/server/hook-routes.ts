// POST /sync, /finalize, /customize: the HTTP face of the pure hook in src/hook.
// Invariants:
// - The route schemas are the hook's wire schemas (src/hook/wire.ts), nothing written here.
// - A body is checked by the hook's own wire checker, the one parseHookRequest runs, not by
//   fastify's ajv (which coerces: `"finalizing": "true"` would pass as true, `"name": 5` as "5").
//   So a body gets the same verdict and the same message naming the field either way, and is
//   never rewritten before the hook sees it. A refused body is a 400 not_a_hook_request.
// - A 200 carries what the hook returned, through a response schema that REQUIRES `status` and
//   `children` (a hook answer without a children list fails serialization and becomes a 500,
//   not a 200 that would delete every child) and drops any top-level key Metacontroller v2
//   would reject.
// - Only application/json bodies are parsed here (this plugin's own parser set); anything else
//   is a 415 before the hook runs.
// - Routing to finalize follows the request, not only the path: Metacontroller calls the
//   finalize hook's URL with `finalizing: true`, and calls the SYNC URL with `finalizing: true`
//   when the controller has no finalize hook; so /sync with `finalizing: true` calls finalize()
//   (plain sync logic could never report `finalized`, leaving the parent stuck in deletion).
//   /finalize always calls finalize(), which answers a request without `finalizing: true`
//   with sync logic, so `finalized: true` can never be sent outside a deletion.
// - Every line logged about a request that named a parent carries its namespace, name and uid.
import type { TSchema } from '@sinclair/typebox';
import type { FastifyPluginCallback, FastifyReply, FastifyRequest, FastifySchemaValidationError } from 'fastify';
import {
  CustomizeRequest,
  CustomizeResponse,
  HookRequestBody,
  HookResponse,
  wireChecker,
  type HookRequest,
  type ParseResult,
  type RedisBackupResponse,
} from '../hook/index.ts';
import { MalformedJsonError, classifyError, errorBodySchema, sendError, type ErrorBody } from './errors.ts';
import { outcomeOf, type HookMetrics, type HookRoute, type Outcome } from './metrics.ts';

type MaybePromise<T> = T | Promise<T>;

/** The hook module's API as the server uses it; injectable so tests can make it fail or stall. */
export interface HookFunctions {
  parseHookRequest(body: unknown): ParseResult<HookRequest>;
  sync(request: HookRequest): MaybePromise<HookResponse | RedisBackupResponse>;
  finalize(request: HookRequest): MaybePromise<HookResponse | RedisBackupResponse>;
  parseCustomizeRequest(body: unknown): ParseResult<CustomizeRequest>;
  customize(request: CustomizeRequest): MaybePromise<CustomizeResponse>;
}

export interface HookRoutesOptions {
  hooks: HookFunctions;
  /** '' for the Redis controller's routes, 'redisbackup/' for the RedisBackup controller's (registered with that prefix): the metrics' route label. */
  routePrefix?: '' | 'redisbackup/';
  metrics: HookMetrics;
  bodyLimitBytes: number;
}

/** What the handler learnt, for the one summary line and the metrics written on response. */
interface Served {
  logic?: 'sync' | 'finalize' | 'customize';
  invalidSpec?: boolean;
  children?: number;
  /** Why the request was refused, so the summary line says what the client must fix. */
  refused?: ErrorBody;
}

function schemaFor(body: TSchema, ok: TSchema) {
  return { body, response: { 200: ok, '4xx': errorBodySchema, '5xx': errorBodySchema } };
}

/** fastify's validator contract, over the hook's wire checker (see the header). */
function wireValidator({ schema }: { schema: unknown }) {
  const checker = wireChecker(schema as TSchema);
  return (data: unknown) => {
    // fastify hands a missing body over as null, which the checker refuses as not an object.
    const problem = checker.problem(data);
    if (problem === undefined) return true;
    const error: FastifySchemaValidationError = { keyword: 'wire', instancePath: problem.pointer, schemaPath: '', params: {}, message: problem.message };
    return { error: [error] };
  };
}

/** The refusal's text is the checker's message, which names the field itself (no `body/...` prefix). */
function formatRefusal(errors: FastifySchemaValidationError[]): Error {
  return new Error(errors.map((e) => e.message ?? 'is not a hook request').join('; '));
}

/** The hook reports an invalid spec as condition Ready=False with reason InvalidSpec. */
export function reportsInvalidSpec(response: unknown): boolean {
  const conditions = (response as { status?: { conditions?: unknown } } | undefined)?.status?.conditions;
  return Array.isArray(conditions) && conditions.some((c) => (c as { reason?: unknown } | null)?.reason === 'InvalidSpec');
}

function identify(request: FastifyRequest, reply: FastifyReply, parent: HookRequest['parent']): void {
  const { metadata } = parent;
  const log = request.log.child({ namespace: metadata.namespace, name: metadata.name, uid: metadata.uid });
  request.log = log;
  reply.log = log;
}

const LEVEL: Record<Outcome, 'info' | 'warn' | 'error'> = { ok: 'info', invalid_spec: 'warn', bad_request: 'warn', error: 'error' };

export const hookRoutes: FastifyPluginCallback<HookRoutesOptions> = (app, { hooks, metrics, bodyLimitBytes, routePrefix }, done) => {
  const served = new WeakMap<FastifyRequest, Served>();

  function rejectRequest(request: FastifyRequest, reply: FastifyReply, message: string) {
    const body: ErrorBody = { error: 'not_a_hook_request', message: `not a Metacontroller hook request: ${message}` };
    served.set(request, { refused: body });
    return reply.code(400).send(body);
  }

  app.setValidatorCompiler(wireValidator);
  app.setSchemaErrorFormatter(formatRefusal);

  app.setErrorHandler((error, request, reply) => {
    const verdict = classifyError(error, bodyLimitBytes);
    served.set(request, { ...served.get(request), refused: verdict.body });
    sendError(reply, request.log, verdict, error);
  });

  // Own parser set for this plugin only: JSON and nothing else (fastify also accepts text/plain
  // by default). Parsing is fastify's own prototype-poisoning-safe parser; on failure the body is
  // parsed again only to name the position in the error message.
  app.removeAllContentTypeParsers();
  const secureParse = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, raw, doneParsing) => {
    const body = raw.toString(); // parseAs 'string' hands over a string; toString narrows the type
    secureParse(request, body, (error: Error | null, value?: unknown) => {
      if (error === null) return doneParsing(null, value);
      if ((error as { code?: string }).code !== 'FST_ERR_CTP_INVALID_JSON_BODY') return doneParsing(error, undefined);
      let message = 'request body contains a forbidden "__proto__" or "constructor.prototype" key';
      try {
        JSON.parse(body);
      } catch (syntax) {
        message = `request body is not valid JSON: ${(syntax as Error).message}`;
      }
      doneParsing(new MalformedJsonError(message), undefined);
    });
  });

  function onResponseFor(local: 'sync' | 'finalize' | 'customize') {
    const route: HookRoute = `${routePrefix ?? ''}${local}`;
    return (request: FastifyRequest, reply: FastifyReply, doneHook: () => void) => {
      const result = served.get(request);
      const outcome = outcomeOf(reply.statusCode, result?.invalidSpec ?? false);
      const seconds = reply.elapsedTime / 1000;
      metrics.observe(route, outcome, seconds);
      request.log[LEVEL[outcome]](
        {
          route,
          logic: result?.logic,
          outcome,
          statusCode: reply.statusCode,
          children: result?.children,
          error: result?.refused?.error,
          reason: result?.refused?.message,
          durationMs: Math.round(reply.elapsedTime * 1000) / 1000,
        },
        'hook request answered',
      );
      doneHook();
    };
  }

  for (const route of ['sync', 'finalize'] as const) {
    app.post(`/${route}`, { schema: schemaFor(HookRequestBody, HookResponse), onResponse: onResponseFor(route) }, async (request, reply) => {
      const parsed = hooks.parseHookRequest(request.body);
      if (!parsed.ok) return rejectRequest(request, reply, parsed.message);
      identify(request, reply, parsed.request.parent);
      const logic = route === 'finalize' || parsed.request.finalizing ? 'finalize' : 'sync';
      const state: Served = { logic };
      served.set(request, state);
      const response = await (logic === 'finalize' ? hooks.finalize(parsed.request) : hooks.sync(parsed.request));
      state.invalidSpec = reportsInvalidSpec(response);
      state.children = Array.isArray(response?.children) ? response.children.length : undefined;
      return response;
    });
  }

  app.post('/customize', { schema: schemaFor(CustomizeRequest, CustomizeResponse), onResponse: onResponseFor('customize') }, async (request, reply) => {
    const parsed = hooks.parseCustomizeRequest(request.body);
    if (!parsed.ok) return rejectRequest(request, reply, parsed.message);
    identify(request, reply, parsed.request.parent);
    served.set(request, { logic: 'customize' });
    return hooks.customize(parsed.request);
  });

  done();
};

// What every hook route plugin sets up in its own fastify scope (hook-routes.ts for the
// CompositeControllers, monitoring-routes.ts for the monitoring DecoratorController): bodies
// checked once, by the hook's own compiled wire checker as the routes' validator (typed for the
// handlers by wire-types.ts), JSON-only parsing that drops prototype keys, answers
// written without recursion (json-text.ts) at any depth, errors as `{error, message}`, and
// one summary line plus the metrics per answered request. Invariants are the ones
// hook-routes.ts states: a body is never coerced or rewritten before the hook sees it (prototype
// keys aside), a refused body is a 400 not_a_hook_request naming the field, and every line about
// a request that named a parent carries its namespace, name and uid.
import type { TSchema } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchemaValidationError } from 'fastify';
import { wireChecker, type Parent } from '../hook/index.ts';
import { MalformedJsonError, classifyError, errorBodySchema, sendError, type ErrorBody } from './errors.ts';
import { schemaSerializer } from './json-text.ts';
import { outcomeOf, type HookMetrics, type HookRoute, type Outcome } from './metrics.ts';

/** What the handler learnt, for the one summary line and the metrics written on response. */
export interface Served {
  logic?: 'sync' | 'finalize' | 'customize';
  invalidSpec?: boolean;
  /** Children (or attachments) answered. */
  children?: number;
  /** Why the request was refused, so the summary line says what the client must fix. */
  refused?: ErrorBody;
}

export function schemaFor<B extends TSchema, R extends TSchema>(body: B, ok: R) {
  return { body, response: { 200: ok, '4xx': errorBodySchema, '5xx': errorBodySchema } };
}

/**
 * fastify's validator contract, over the hook's wire checker: the one check a body gets. The
 * checker is compiled once per schema (wireChecker caches it) and shared with the hook's parse
 * functions, which the routes do not call. A valid body is passed on untouched.
 */
function wireValidator({ schema }: { schema: unknown }) {
  const checker = wireChecker(schema as TSchema);
  return (data: unknown) => {
    // fastify hands a missing body over as null, which the checker refuses as not an object.
    const problem = checker.problem(data);
    if (problem === undefined) return true;
    const error: FastifySchemaValidationError = {
      keyword: 'wire',
      instancePath: problem.pointer,
      schemaPath: '',
      params: {},
      message: problem.message,
    };
    return { error: [error] };
  };
}

/** The refusal's text is the checker's message, which names the field itself (no `body/...` prefix). */
function formatRefusal(errors: FastifySchemaValidationError[]): Error {
  return new Error(errors.map((e) => e.message ?? 'is not a hook request').join('; '));
}

/** Every later log line of this request names the parent. */
export function identify(request: FastifyRequest, reply: FastifyReply, parent: Parent): void {
  const { metadata } = parent;
  const log = request.log.child({ namespace: metadata.namespace, name: metadata.name, uid: metadata.uid });
  request.log = log;
  reply.log = log;
}

const LEVEL: Record<Outcome, 'info' | 'warn' | 'error'> = {
  ok: 'info',
  invalid_spec: 'warn',
  bad_request: 'warn',
  error: 'error',
};

export interface HookScope {
  served: WeakMap<FastifyRequest, Served>;
  /** The onResponse hook of a route: metrics and the one summary line. */
  onResponse(route: HookRoute): (request: FastifyRequest, reply: FastifyReply, done: () => void) => void;
}

export function hookScope(app: FastifyInstance, options: { metrics: HookMetrics; bodyLimitBytes: number }): HookScope {
  const { metrics, bodyLimitBytes } = options;
  const served = new WeakMap<FastifyRequest, Served>();

  app.setValidatorCompiler(wireValidator);
  // Answers echo observed objects, which may nest deeper than a recursive serializer survives.
  app.setSerializerCompiler(({ schema }) => schemaSerializer(schema));
  app.setSchemaErrorFormatter(formatRefusal);
  app.setErrorHandler((error, request, reply) => {
    const verdict = classifyError(error, bodyLimitBytes);
    served.set(request, { ...served.get(request), refused: verdict.body });
    sendError(reply, request.log, verdict, error);
  });

  // Own parser set for this scope only: JSON and nothing else (fastify also accepts text/plain
  // by default). Parsing is fastify's own prototype-poisoning-safe parser, told to DROP a
  // `__proto__` key, and a `constructor` key holding a `prototype`, wherever they are: they are
  // valid in a Secret's or ConfigMap's data (and the API server stores whatever a field that keeps
  // unknown fields holds), so refusing them would fail every sync of that parent for ever. Dropped,
  // no object the hook builds can have its prototype replaced. On failure the body is parsed
  // again only to name the position in the error message.
  app.removeAllContentTypeParsers();
  const secureParse = app.getDefaultJsonParser('remove', 'remove');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, raw, doneParsing) => {
    const body = raw.toString(); // parseAs 'string' hands over a string; toString narrows the type
    // The default JSON parser is callback-style: it answers through the callback and returns nothing;
    // its type also admits the promise-returning form, hence the void.
    void secureParse(request, body, (error: Error | null, value?: unknown) => {
      if (error === null) return doneParsing(null, value);
      if ((error as { code?: string }).code !== 'FST_ERR_CTP_INVALID_JSON_BODY') return doneParsing(error, undefined);
      let message = 'request body is not valid JSON';
      try {
        JSON.parse(body);
      } catch (syntax) {
        message = `request body is not valid JSON: ${(syntax as Error).message}`;
      }
      doneParsing(new MalformedJsonError(message), undefined);
    });
  });

  return {
    served,
    onResponse(route) {
      return (request, reply, doneHook) => {
        const result = served.get(request);
        const outcome = outcomeOf(reply.statusCode, result?.invalidSpec ?? false);
        metrics.observe(route, outcome, reply.elapsedTime / 1000);
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
    },
  };
}

// POST /sync, /finalize, /customize: the HTTP face of the pure hook in src/hook.
// Invariants:
// - The route schemas are the hook's wire schemas (src/hook/common/wire.ts), nothing written here.
// - A body is checked once, as the route's validator, by the hook's own compiled wire checker
//   (the one parseHookRequest runs), not by fastify's ajv (which coerces: `"finalizing": "true"`
//   would pass as true, `"name": 5` as "5"). So a body gets the same verdict and the same message
//   naming the field either way, and is never rewritten before the hook sees it, but for the
//   prototype keys the parser drops (hook-scope.ts). A refused body is a 400 not_a_hook_request
//   and the hook never runs. The handler gets the body typed by its schema (wire-types.ts) and
//   only fills in the defaults (hookRequestOf), checking nothing again.
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
import type { FastifyPluginCallback } from 'fastify';
import {
  CustomizeRequest,
  CustomizeResponse,
  customizeRequestOf,
  HookRequestBody,
  hookRequestOf,
  HookResponse,
  type HookRequest,
  type RedisBackupResponse,
  type RedisClusterResponse,
} from '../hook/index.ts';
import { hookScope, identify, schemaFor, type Served } from './hook-scope.ts';
import type { HookMetrics, HookRoute } from './metrics.ts';
import type { WireTypes } from './wire-types.ts';

type MaybePromise<T> = T | Promise<T>;

/**
 * The hook module's API as the server uses it, on requests the route has checked; injectable so
 * tests can make it fail or stall.
 */
export interface HookFunctions {
  sync(request: HookRequest): MaybePromise<HookResponse | RedisBackupResponse | RedisClusterResponse>;
  finalize(request: HookRequest): MaybePromise<HookResponse | RedisBackupResponse | RedisClusterResponse>;
  customize(request: CustomizeRequest): MaybePromise<CustomizeResponse>;
}

export interface HookRoutesOptions {
  hooks: HookFunctions;
  /**
   * '' for the Redis controller's routes, 'redisbackup/' for the RedisBackup controller's and
   * 'rediscluster/' for the RedisCluster controller's (each registered with that prefix): the metrics' route label.
   */
  routePrefix?: '' | 'redisbackup/' | 'rediscluster/';
  metrics: HookMetrics;
  bodyLimitBytes: number;
}

/** The hook reports an invalid spec as condition Ready=False with reason InvalidSpec. */
export function reportsInvalidSpec(response: unknown): boolean {
  const conditions = (response as { status?: { conditions?: unknown } } | undefined)?.status?.conditions;
  return (
    Array.isArray(conditions) && conditions.some((c) => (c as { reason?: unknown } | null)?.reason === 'InvalidSpec')
  );
}

export const hookRoutes: FastifyPluginCallback<HookRoutesOptions> = (plain, options, done) => {
  const { hooks, metrics, bodyLimitBytes, routePrefix } = options;
  const scope = hookScope(plain, { metrics, bodyLimitBytes });
  const app = plain.withTypeProvider<WireTypes>();
  const route = (local: 'sync' | 'finalize' | 'customize'): HookRoute => `${routePrefix ?? ''}${local}`;

  for (const local of ['sync', 'finalize'] as const) {
    app.post(
      `/${local}`,
      { schema: schemaFor(HookRequestBody, HookResponse), onResponse: scope.onResponse(route(local)) },
      async (request, reply) => {
        const hookRequest = hookRequestOf(request.body);
        identify(request, reply, hookRequest.parent);
        const logic = local === 'finalize' || hookRequest.finalizing ? 'finalize' : 'sync';
        const state: Served = { logic };
        scope.served.set(request, state);
        const response = await (logic === 'finalize' ? hooks.finalize(hookRequest) : hooks.sync(hookRequest));
        state.invalidSpec = reportsInvalidSpec(response);
        state.children = Array.isArray(response?.children) ? response.children.length : undefined;
        return response;
      },
    );
  }

  app.post(
    '/customize',
    { schema: schemaFor(CustomizeRequest, CustomizeResponse), onResponse: scope.onResponse(route('customize')) },
    async (request, reply) => {
      const customizeRequest = customizeRequestOf(request.body);
      identify(request, reply, customizeRequest.parent);
      scope.served.set(request, { logic: 'customize' });
      return hooks.customize(customizeRequest);
    },
  );

  done();
};

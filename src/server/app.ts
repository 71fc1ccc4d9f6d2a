// The hook service as a fastify instance, without listening: main.ts listens, tests inject.
// Invariants: every answer is JSON; every error is `{error, message}` (errors.ts); each
// instance has its own metrics registry; the logger is injected so tests can silence or
// capture it. Plugins are encapsulated: the hook routes' strict JSON-only parser and their
// hooks do not leak to the probes or /metrics.
import { fastify, LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import * as hook from '../hook/index.ts';
import { DEFAULT_BODY_LIMIT_BYTES } from './config.ts';
import { classifyError, notFoundBody, sendError } from './errors.ts';
import { hookRoutes, type HookFunctions } from './hook-routes.ts';
import { createHookMetrics, metricsRoute } from './metrics.ts';
import { monitoringRoutes } from './monitoring-routes.ts';
import { createLifecycle, probeRoutes, type Lifecycle } from './probes.ts';

export type { HookFunctions } from './hook-routes.ts';
export { createLifecycle, type Lifecycle } from './probes.ts';

export interface AppOptions {
  /** A pino logger (createLogger in logger.ts, or pino({ level: 'silent' }) in tests). */
  logger: FastifyBaseLogger;
  /** Largest request body accepted; larger ones get 413. Default 4 MiB. */
  bodyLimitBytes?: number;
  /** Flipped by main.ts when shutdown begins, so /readyz answers 503. */
  lifecycle?: Lifecycle;
  /** Replace some hook functions (tests: make them throw or stall). Default: src/hook. */
  hooks?: Partial<HookFunctions>;
  /** The same for the RedisCluster controller's routes (/rediscluster/*). */
  clusterHooks?: Partial<HookFunctions>;
  /** Replace the monitoring decorator's hook (tests). Default: src/hook's syncMonitoring. */
  monitoringHook?: typeof hook.syncMonitoring;
  /** Node process metrics on /metrics (default true). */
  defaultMetrics?: boolean;
  /** What the pure hooks are configured with (the operator image for backup and restore pods). */
  hookOptions?: hook.HookOptions;
}

function realHooks(options: hook.HookOptions): HookFunctions {
  return {
    sync: (r) => hook.sync(r, options),
    finalize: (r) => hook.finalize(r, options),
    customize: hook.customize,
  };
}

/** The RedisBackup controller's hooks: it has no finalize hook (its Job is garbage-collected with it). */
function redisBackupHooks(options: hook.HookOptions): HookFunctions {
  return {
    sync: (r) => hook.syncRedisBackup(r, options),
    finalize: (r) => ({ ...hook.syncRedisBackup(r, options), ...(r.finalizing ? { finalized: true } : {}) }),
    customize: hook.customizeRedisBackup,
  };
}

/** The RedisCluster controller's hooks: sync, finalize (its volume policy, as for Redis) and customize. */
function redisClusterHooks(options: hook.HookOptions): HookFunctions {
  return {
    sync: (r) => hook.syncRedisCluster(r, options),
    finalize: (r) => hook.finalizeRedisCluster(r, options),
    customize: hook.customizeRedisCluster,
  };
}

export function buildApp(options: AppOptions): FastifyInstance {
  const bodyLimitBytes = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  const lifecycle = options.lifecycle ?? createLifecycle();
  const metrics = createHookMetrics({ defaultMetrics: options.defaultMetrics ?? true });

  const app = fastify({
    loggerInstance: options.logger,
    bodyLimit: bodyLimitBytes,
    // The hook routes log one summary line per call, bound to the parent; fastify's two
    // generic lines per request would only add noise at every resync.
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
    // Metacontroller gives up on a hook call after its webhook timeout (10 s by default); a
    // request still arriving after 30 s is a stuck or hostile client holding a socket.
    requestTimeout: 30_000,
  });

  // Shutdown via app.close() alone also stops readiness first.
  app.addHook('preClose', (done) => {
    lifecycle.draining = true;
    done();
  });
  // close() only reaps connections idle at that moment; a keep-alive connection whose request
  // was in flight would otherwise idle on for keepAliveTimeout (72 s) and stall shutdown.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (lifecycle.draining) reply.header('connection', 'close');
    done(null, payload);
  });

  app.setErrorHandler((error, request, reply) => {
    sendError(reply, request.log, classifyError(error, bodyLimitBytes), error);
  });
  app.setNotFoundHandler((request, reply) => reply.code(404).send(notFoundBody(request.method, request.url)));

  app.register(probeRoutes, { lifecycle });
  app.register(metricsRoute, { metrics });
  const hookOptions = options.hookOptions ?? hook.DEFAULT_HOOK_OPTIONS;
  app.register(hookRoutes, { hooks: { ...realHooks(hookOptions), ...options.hooks }, metrics, bodyLimitBytes });
  app.register(hookRoutes, {
    prefix: '/redisbackup',
    routePrefix: 'redisbackup/',
    hooks: redisBackupHooks(hookOptions),
    metrics,
    bodyLimitBytes,
  });
  app.register(hookRoutes, {
    prefix: '/rediscluster',
    routePrefix: 'rediscluster/',
    hooks: { ...redisClusterHooks(hookOptions), ...options.clusterHooks },
    metrics,
    bodyLimitBytes,
  });
  app.register(monitoringRoutes, {
    prefix: '/monitoring',
    hookOptions,
    metrics,
    bodyLimitBytes,
    ...(options.monitoringHook ? { sync: options.monitoringHook } : {}),
  });
  return app;
}

// Prometheus metrics of ONE app instance: each buildApp gets its own prom-client Registry (never
// the global default), so tests and benches can build several apps in one process without
// "metric already registered" collisions, and /metrics shows exactly what that app served.
import type { FastifyPluginCallback } from 'fastify';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * The Redis controller's routes, the RedisBackup controller's (under /redisbackup), the RedisCluster controller's
 * (under /rediscluster), the monitoring decorator's (under /monitoring).
 */
export const HOOK_ROUTES = [
  'sync',
  'finalize',
  'customize',
  'redisbackup/sync',
  'redisbackup/finalize',
  'redisbackup/customize',
  'rediscluster/sync',
  'rediscluster/finalize',
  'rediscluster/customize',
  'monitoring/sync',
] as const;
export type HookRoute = (typeof HOOK_ROUTES)[number];

/**
 * ok: 200 with the desired state; invalid_spec: 200 echoing the observed children because the
 * spec is invalid; bad_request: a 4xx; error: a 5xx (our fault, Metacontroller retries).
 */
export type Outcome = 'ok' | 'invalid_spec' | 'bad_request' | 'error';

export interface HookMetrics {
  registry: Registry;
  observe(route: HookRoute, outcome: Outcome, seconds: number): void;
}

// The hook answers in well under a millisecond; Metacontroller gives up after its webhook
// timeout (10 s by default), so the buckets span both ends.
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export function createHookMetrics(options: { defaultMetrics: boolean }): HookMetrics {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: 'redis_operator_hook_requests_total',
    help: 'Hook requests answered, by route and outcome (ok, invalid_spec, bad_request, error).',
    labelNames: ['route', 'outcome'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'redis_operator_hook_duration_seconds',
    help: 'Time from receiving a hook request to sending the answer, by route.',
    labelNames: ['route'] as const,
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  // Zero series for every route/outcome so rate() and alerts work before the first error.
  for (const route of HOOK_ROUTES) {
    for (const outcome of ['ok', 'invalid_spec', 'bad_request', 'error'] as const) requests.inc({ route, outcome }, 0);
  }
  return {
    registry,
    observe(route, outcome, seconds) {
      requests.inc({ route, outcome });
      duration.observe({ route }, seconds);
    },
  };
}

/** Maps an HTTP status of a hook route to its outcome label. */
export function outcomeOf(statusCode: number, invalidSpec: boolean): Outcome {
  if (statusCode >= 500) return 'error';
  if (statusCode >= 400) return 'bad_request';
  return invalidSpec ? 'invalid_spec' : 'ok';
}

export const metricsRoute: FastifyPluginCallback<{ metrics: HookMetrics }> = (app, { metrics }, done) => {
  app.get('/metrics', async (_request, reply) => {
    const text = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).send(text);
  });
  done();
};

// Kubernetes probes. Liveness says only "the process answers HTTP" (restarting a pure hook never
// fixes anything else). Readiness says "send me hook calls": true once the server listens and
// false from the moment shutdown begins, so the Service stops routing to a draining pod.
import type { FastifyPluginCallback } from 'fastify';
import { errorBodySchema } from './errors.ts';

/** Shared with main.ts, which flips `draining` before closing the server. */
export interface Lifecycle {
  draining: boolean;
}

export function createLifecycle(): Lifecycle {
  return { draining: false };
}

export type Readiness = { ready: true } | { ready: false; reason: string };

export function readiness(listening: boolean, lifecycle: Lifecycle): Readiness {
  if (lifecycle.draining) return { ready: false, reason: 'shutting down: finishing in-flight requests' };
  if (!listening) return { ready: false, reason: 'not listening yet' };
  return { ready: true };
}

const okSchema = {
  type: 'object',
  required: ['status'],
  additionalProperties: false,
  properties: { status: { type: 'string' } },
} as const;

export const probeRoutes: FastifyPluginCallback<{ lifecycle: Lifecycle }> = (app, { lifecycle }, done) => {
  app.get('/healthz', { schema: { response: { 200: okSchema } } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { response: { 200: okSchema, 503: errorBodySchema } } }, async (_request, reply) => {
    const verdict = readiness(app.server.listening, lifecycle);
    if (verdict.ready) return { status: 'ready' };
    return reply.code(503).send({ error: 'not_ready', message: verdict.reason });
  });
  done();
};

// POST /monitoring/sync: the monitoring DecoratorController's hook (manifests/components/
// monitoring), the HTTP face of src/hook/common/monitoring.ts. The same scope as the
// CompositeControllers' routes (hook-scope.ts: bodies wire-checked once, JSON only, one summary line
// and the metrics per request, route label monitoring/sync). Invariant: a 200 carries exactly
// `attachments` (and never status, labels or annotations), through a response schema that
// requires them: an answer without the list fails serialization and becomes a 500, never a 200
// that would delete every attachment.
import type { FastifyPluginCallback } from 'fastify';
import {
  decoratorRequestOf,
  DecoratorRequestBody,
  DecoratorResponse,
  syncMonitoring,
  type HookOptions,
} from '../hook/index.ts';
import { hookScope, identify, schemaFor, type Served } from './hook-scope.ts';
import type { HookMetrics } from './metrics.ts';
import type { WireTypes } from './wire-types.ts';

export interface MonitoringRoutesOptions {
  hookOptions: HookOptions;
  metrics: HookMetrics;
  bodyLimitBytes: number;
  /** Replace the hook (tests: make it throw). Default: syncMonitoring. */
  sync?: typeof syncMonitoring;
}

export const monitoringRoutes: FastifyPluginCallback<MonitoringRoutesOptions> = (plain, options, done) => {
  const { hookOptions, metrics, bodyLimitBytes, sync } = options;
  const scope = hookScope(plain, { metrics, bodyLimitBytes });
  const app = plain.withTypeProvider<WireTypes>();
  const hook = sync ?? syncMonitoring;
  app.post(
    '/sync',
    { schema: schemaFor(DecoratorRequestBody, DecoratorResponse), onResponse: scope.onResponse('monitoring/sync') },
    async (request, reply) => {
      const decoratorRequest = decoratorRequestOf(request.body);
      identify(request, reply, decoratorRequest.object);
      const state: Served = { logic: 'sync' };
      scope.served.set(request, state);
      const verdict = hook(decoratorRequest, hookOptions);
      state.invalidSpec = verdict.invalidSpec;
      state.children = verdict.response.attachments.length;
      return verdict.response;
    },
  );
  done();
};

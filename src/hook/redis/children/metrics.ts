// A Redis's metrics: whether its pods run the exporter (common/exporter.ts builds the containers),
// and the headless <name>-metrics Service in front of them. Invariant: neither exists while
// spec.monitoring or its exporter is off.
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IService } from 'kubernetes-models/v1/Service';
import { childNames, podSelectorLabels } from '../../../api/labels.ts';
import type { Child } from '../../common/child.ts';
import { metricsContainers, metricsService } from '../../common/exporter.ts';
import type { HookContext } from '../context.ts';
import { childMetadata } from './meta.ts';

export function exporterEnabled(ctx: HookContext): boolean {
  return ctx.spec.monitoring.enabled && ctx.spec.monitoring.exporter.enabled;
}

/** The exporter and its proxy, or none when the exporter is off. */
export function exporterContainers(ctx: HookContext, uid: number): IContainer[] {
  return exporterEnabled(ctx)
    ? metricsContainers(ctx.name, ctx.spec.monitoring.exporter, ctx.spec.tls !== undefined, uid, ctx.operatorImage)
    : [];
}

/** The headless <name>-metrics Service (common/exporter.ts's metricsService) over this Redis's pods. */
export function desiredMetricsService(ctx: HookContext): Child<IService> | undefined {
  if (!exporterEnabled(ctx)) return undefined;
  return metricsService(
    childMetadata(ctx, childNames(ctx.name).metricsService, 'metrics'),
    podSelectorLabels(ctx.name),
  );
}

// Labels and metadata shared by every child of a Redis: common/child.ts's childLabelsOf with the
// `redis` app name (controller-uid, the app.kubernetes.io labels, never the role label).
// ownerReferences are left to Metacontroller. Metadata is name, namespace, labels, in that order,
// and nothing else.
import { APP_NAME } from '../../../api/labels.ts';
import type { HookContext } from '../context.ts';
import { childLabelsOf, type ChildMetadata } from '../../common/child.ts';

export function childLabels(ctx: HookContext, component: string): Record<string, string> {
  return childLabelsOf(APP_NAME, ctx, component);
}

export function childMetadata(ctx: HookContext, name: string, component: string): ChildMetadata {
  return { name, namespace: ctx.namespace, labels: childLabels(ctx, component) };
}

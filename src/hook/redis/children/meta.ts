// Labels and metadata shared by every child. Invariants: every child carries `controller-uid`
// (Metacontroller's generated selector; a child that does not match fails the whole sync) and
// the app.kubernetes.io labels; ownerReferences are left to Metacontroller; the role label is
// never produced here (the sidecar alone writes it). Metadata is name, namespace, labels, in
// that order, and nothing else.
import {
  APP_NAME,
  COMPONENT_LABEL,
  CONTROLLER_UID_LABEL,
  INSTANCE_LABEL,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  NAME_LABEL,
  PART_OF_LABEL,
  VERSION_LABEL,
} from '../../../api/labels.ts';
import type { HookContext } from '../context.ts';
import { versionLabelValue, type ChildMetadata } from '../../common/child.ts';

export function childLabels(ctx: HookContext, component: string): Record<string, string> {
  const labels: Record<string, string> = {};
  if (ctx.uid !== undefined) labels[CONTROLLER_UID_LABEL] = ctx.uid;
  labels[NAME_LABEL] = APP_NAME;
  labels[INSTANCE_LABEL] = ctx.name;
  labels[COMPONENT_LABEL] = component;
  labels[MANAGED_BY_LABEL] = MANAGED_BY;
  labels[PART_OF_LABEL] = APP_NAME;
  const version = versionLabelValue(ctx.spec.version);
  if (version !== undefined) labels[VERSION_LABEL] = version;
  return labels;
}

export function childMetadata(ctx: HookContext, name: string, component: string): ChildMetadata {
  return { name, namespace: ctx.namespace, labels: childLabels(ctx, component) };
}

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
import type { HookContext } from '../../common/options.ts';
import type { ChildMetadata } from '../../common/child.ts';

const LABEL_VALUE = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/**
 * spec.version as a label value: the schema allows versions a label cannot hold (over 63
 * characters, or ending in '.'), so it is cut to 63 and trailing punctuation dropped; the label
 * is left out when nothing valid remains.
 */
export function versionLabelValue(version: string): string | undefined {
  const cut = version.slice(0, 63).replace(/[^A-Za-z0-9]+$/, '');
  return LABEL_VALUE.test(cut) ? cut : undefined;
}

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

// The types the children are built with: Kubernetes' own, from kubernetes-models, so a misspelled
// or mistyped field of a StatefulSet, Service, ConfigMap, PodDisruptionBudget or NetworkPolicy fails to compile.
// Why kubernetes-models and not @kubernetes/client-node's models: its interfaces describe the JSON
// itself (timestamps are strings, quantities and IntOrString are `number | string`, apiVersion
// and kind are required literals), where client-node's describe the input of its own serializer
// (Date objects, string-only quantities, every field optional); and src/hook may not import
// client-node at all (eslint.architecture.js: it is the I/O client). The imports are type-only,
// erased at run time, so a devDependency is enough: the image typechecks in a stage that has it.
// Invariants: a built child is plain JSON; asKubeObject changes its static type only. Shared by
// every kind, like versionLabelValue (the version label of every kind's children and pods).
import type { IStatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import type { ICronJob } from 'kubernetes-models/batch/v1/CronJob';
import type { IJob } from 'kubernetes-models/batch/v1/Job';
import type { INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import type { IPodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import type { IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import type { IService } from 'kubernetes-models/v1/Service';
import {
  COMPONENT_LABEL,
  CONTROLLER_UID_LABEL,
  INSTANCE_LABEL,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  NAME_LABEL,
  PART_OF_LABEL,
  VERSION_LABEL,
} from '../../api/labels.ts';
import type { KubeObject } from './types.ts';

/**
 * cert-manager's Certificate (cert-manager.io/v1), as far as a child uses it. cert-manager is not
 * a dependency of the operator: its type is declared here, not imported.
 */
export interface Certificate {
  apiVersion: 'cert-manager.io/v1';
  kind: 'Certificate';
  metadata: ChildMetadata;
  spec: {
    secretName: string;
    issuerRef: { name: string; kind: string; group: string };
    commonName: string;
    dnsNames: string[];
    usages: string[];
    privateKey: { algorithm: 'ECDSA'; size: 256; rotationPolicy: 'Always' };
  };
}

type KubernetesObjectMeta = NonNullable<IConfigMap['metadata']>;

/** The metadata every child carries, all of it set (each kind's metadata builder). */
export type ChildMetadata = Required<Pick<KubernetesObjectMeta, 'name' | 'namespace' | 'labels'>>;

/** Kubernetes' type of a kind, with the metadata every child of ours has. */
export type Child<T extends { metadata?: KubernetesObjectMeta }> = T & { metadata: ChildMetadata };

export type DesiredChild =
  | Child<IConfigMap>
  | Child<IService>
  | Child<IStatefulSet>
  | Child<IPodDisruptionBudget>
  | Child<INetworkPolicy>
  | Child<ICronJob>
  | Child<IJob>
  | Certificate;

/** The same properties as a type literal, which (unlike an interface) may meet an index signature. */
type Literal<T> = { [K in keyof T]: T[K] };

/**
 * A built child as the wire sees it. Kubernetes' interfaces have no index signature, the wire's
 * KubeObject has one for the fields it does not name; the JSON is the same object.
 */
export function asKubeObject(child: DesiredChild): KubeObject {
  return child as Literal<DesiredChild>;
}

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

/** What every kind's child labels are made of: the parent's identity and its spec.version. */
export interface LabelledParent {
  name: string;
  /** The parent's uid: children are selected by `controller-uid`. */
  uid: string | undefined;
  spec: { version: string };
}

/**
 * The labels every kind's children carry, in this order: `controller-uid` (Metacontroller's
 * generated selector; a child without it fails the whole sync), the app.kubernetes.io labels with
 * `appName` as name and part-of, and the version label when spec.version makes one. Never the
 * role label (the sidecar alone writes it).
 */
export function childLabelsOf(appName: string, parent: LabelledParent, component: string): Record<string, string> {
  const labels: Record<string, string> = {};
  if (parent.uid !== undefined) labels[CONTROLLER_UID_LABEL] = parent.uid;
  labels[NAME_LABEL] = appName;
  labels[INSTANCE_LABEL] = parent.name;
  labels[COMPONENT_LABEL] = component;
  labels[MANAGED_BY_LABEL] = MANAGED_BY;
  labels[PART_OF_LABEL] = appName;
  const version = versionLabelValue(parent.spec.version);
  if (version !== undefined) labels[VERSION_LABEL] = version;
  return labels;
}

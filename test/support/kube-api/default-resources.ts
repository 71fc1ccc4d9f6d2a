// The kinds the stand-in serves by default, one entry each, with the per-kind rules the real
// server applies that we depend on: core/v1 and events.k8s.io/v1 Event validation, Lease fields,
// Secret stringData folded into base64 data. StorageClasses are served plainly (the sidecar reads
// allowVolumeExpansion); no resize admission is modelled.
// Invariant: an entry is all a kind needs; routing, discovery, storage, watch, selectors and
// subresources are derived from it, so adding a kind is adding an entry here.
import { GROUP, KIND, PLURAL, SHORT_NAMES, SINGULAR, VERSION } from '../../../src/api/labels.ts';
import type { StatusCause } from './errors.ts';
import { defineResource, getPath, type KubeObject, type ResourceDef, type ValidationContext } from './resource-def.ts';

const CORE_EVENT_FIELDS = [
  'involvedObject.kind',
  'involvedObject.namespace',
  'involvedObject.name',
  'involvedObject.uid',
  'involvedObject.apiVersion',
  'involvedObject.resourceVersion',
  'involvedObject.fieldPath',
  'reason',
  'reportingComponent',
  'type',
];

const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

function required(obj: KubeObject, path: string): StatusCause[] {
  const v = getPath(obj, path);
  return v === undefined || v === null || v === '' ? [{ reason: 'FieldValueRequired', field: path, message: 'Required value' }] : [];
}

/** core/v1 Event validation as the real server does it (legacyValidateEvent, request version v1). */
function validateCoreEvent({ object }: ValidationContext): StatusCause[] {
  const causes: StatusCause[] = [];
  const ns = object.metadata.namespace ?? '';
  const involvedNs = (getPath(object, 'involvedObject.namespace') as string | undefined) ?? '';
  if (!object['eventTime']) {
    if (involvedNs === '' ? ns !== '' && ns !== 'default' : ns !== involvedNs) {
      causes.push({
        reason: 'FieldValueInvalid',
        field: 'involvedObject.namespace',
        message: `Invalid value: "${involvedNs}": does not match event.namespace`,
      });
    }
    return causes;
  }
  if (involvedNs === '' && ns !== 'default' && ns !== 'kube-system') {
    causes.push({ reason: 'FieldValueInvalid', field: 'involvedObject.namespace', message: `Invalid value: "${involvedNs}": does not match event.namespace` });
  }
  if (involvedNs !== '' && ns !== involvedNs) {
    causes.push({ reason: 'FieldValueInvalid', field: 'involvedObject.namespace', message: `Invalid value: "${involvedNs}": does not match event.namespace` });
  }
  causes.push(...required(object, 'reportingComponent').map((c) => ({ ...c, field: 'reportingComponent' })));
  const rc = object['reportingComponent'];
  if (typeof rc === 'string' && rc !== '' && !isQualified(rc)) {
    causes.push({ reason: 'FieldValueInvalid', field: 'reportingComponent', message: `Invalid value: "${rc}": must be a qualified name` });
  }
  causes.push(...required(object, 'reportingInstance'), ...required(object, 'action'), ...required(object, 'reason'));
  return causes;
}

/** events.k8s.io/v1 Event validation (ValidateEventCreate): the new-style fields are all required. */
function validateEventsV1({ object, operation }: ValidationContext): StatusCause[] {
  if (operation !== 'CREATE') return [];
  const causes = [
    ...required(object, 'eventTime'),
    ...required(object, 'reportingController'),
    ...required(object, 'reportingInstance'),
    ...required(object, 'action'),
    ...required(object, 'reason'),
  ];
  const type = object['type'];
  if (type !== undefined && type !== 'Normal' && type !== 'Warning') {
    causes.push({ reason: 'FieldValueNotSupported', field: 'type', message: `Unsupported value: "${String(type)}": supported values: "Normal", "Warning"` });
  }
  return causes;
}

function isQualified(name: string): boolean {
  const slash = name.lastIndexOf('/');
  const local = slash >= 0 ? name.slice(slash + 1) : name;
  return local.length > 0 && local.length <= 63 && QUALIFIED_NAME.test(local);
}

function validateLease({ object }: ValidationContext): StatusCause[] {
  const causes: StatusCause[] = [];
  const duration = getPath(object, 'spec.leaseDurationSeconds');
  if (duration !== undefined && (typeof duration !== 'number' || !Number.isInteger(duration) || duration <= 0)) {
    causes.push({
      reason: 'FieldValueInvalid',
      field: 'spec.leaseDurationSeconds',
      message: `Invalid value: ${JSON.stringify(duration)}: must be greater than 0`,
    });
  }
  const transitions = getPath(object, 'spec.leaseTransitions');
  if (transitions !== undefined && (typeof transitions !== 'number' || !Number.isInteger(transitions) || transitions < 0)) {
    causes.push({
      reason: 'FieldValueInvalid',
      field: 'spec.leaseTransitions',
      message: `Invalid value: ${JSON.stringify(transitions)}: must be greater than or equal to 0`,
    });
  }
  return causes;
}

/** Secrets: stringData is write-only and merged into data (base64); data must be valid base64. */
function normalizeSecret(obj: KubeObject): string | undefined {
  const data = (obj['data'] ?? {}) as Record<string, unknown>;
  if (typeof data !== 'object' || Array.isArray(data)) return 'Secret.data must be a map of strings';
  for (const [k, v] of Object.entries(data)) {
    if (typeof v !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(v) || v.length % 4 !== 0) {
      return `Secret in version "v1" cannot be handled as a Secret: illegal base64 data in data["${k}"]`;
    }
  }
  const stringData = obj['stringData'];
  if (stringData !== undefined) {
    if (typeof stringData !== 'object' || stringData === null) return 'Secret.stringData must be a map of strings';
    for (const [k, v] of Object.entries(stringData as Record<string, unknown>)) {
      if (typeof v !== 'string') return `Secret in version "v1" cannot be handled as a Secret: stringData["${k}"] must be a string`;
      data[k] = Buffer.from(v, 'utf8').toString('base64');
    }
    delete obj['stringData'];
    obj['data'] = data;
  }
  if (obj['type'] === undefined) obj['type'] = 'Opaque';
  return undefined;
}

export const DEFAULT_RESOURCES: ResourceDef[] = [
  defineResource({
    group: '',
    version: 'v1',
    resource: 'namespaces',
    kind: 'Namespace',
    namespaced: false,
    shortNames: ['ns'],
    nameRule: 'dns1123Label',
    statusSubresource: true,
    fieldSelectors: ['status.phase'],
  }),
  defineResource({
    group: '',
    version: 'v1',
    resource: 'pods',
    kind: 'Pod',
    namespaced: true,
    shortNames: ['po'],
    statusSubresource: true,
    fieldSelectors: [
      'spec.nodeName',
      'spec.restartPolicy',
      'spec.schedulerName',
      'spec.serviceAccountName',
      'status.phase',
      'status.podIP',
      'status.nominatedNodeName',
    ],
    deleteReturnsObject: true,
    prepareForCreate: (obj) => {
      obj['status'] = { phase: 'Pending' };
    },
  }),
  defineResource({ group: '', version: 'v1', resource: 'secrets', kind: 'Secret', namespaced: true, fieldSelectors: ['type'], normalize: normalizeSecret }),
  defineResource({ group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true, shortNames: ['cm'] }),
  defineResource({
    group: '',
    version: 'v1',
    resource: 'services',
    kind: 'Service',
    namespaced: true,
    shortNames: ['svc'],
    statusSubresource: true,
    nameRule: 'dns1035Label',
    deleteReturnsObject: true,
  }),
  defineResource({
    group: '',
    version: 'v1',
    resource: 'persistentvolumeclaims',
    kind: 'PersistentVolumeClaim',
    namespaced: true,
    shortNames: ['pvc'],
    statusSubresource: true,
    deleteReturnsObject: true,
  }),
  defineResource({
    group: '',
    version: 'v1',
    resource: 'events',
    kind: 'Event',
    namespaced: true,
    shortNames: ['ev'],
    fieldSelectors: CORE_EVENT_FIELDS,
    microTimeFields: ['eventTime', 'series.lastObservedTime'],
    validate: validateCoreEvent,
  }),
  defineResource({
    group: 'events.k8s.io',
    version: 'v1',
    resource: 'events',
    kind: 'Event',
    namespaced: true,
    shortNames: ['ev'],
    fieldSelectors: ['regarding.kind', 'regarding.namespace', 'regarding.name', 'regarding.uid', 'reason', 'reportingController', 'type'],
    microTimeFields: ['eventTime', 'series.lastObservedTime'],
    validate: validateEventsV1,
  }),
  defineResource({
    group: 'coordination.k8s.io',
    version: 'v1',
    resource: 'leases',
    kind: 'Lease',
    namespaced: true,
    microTimeFields: ['spec.acquireTime', 'spec.renewTime'],
    validate: validateLease,
  }),
  defineResource({
    group: 'apps',
    version: 'v1',
    resource: 'statefulsets',
    kind: 'StatefulSet',
    namespaced: true,
    shortNames: ['sts'],
    statusSubresource: true,
    generation: true,
    scale: { specReplicasPath: 'spec.replicas', statusReplicasPath: 'status.replicas', selectorFromSpec: true },
  }),
  defineResource({
    group: 'storage.k8s.io',
    version: 'v1',
    resource: 'storageclasses',
    kind: 'StorageClass',
    namespaced: false,
    shortNames: ['sc'],
  }),
  defineResource({
    group: 'policy',
    version: 'v1',
    resource: 'poddisruptionbudgets',
    kind: 'PodDisruptionBudget',
    namespaced: true,
    shortNames: ['pdb'],
    statusSubresource: true,
    generation: true,
  }),
  // Stored only: no Job or CronJob controller runs them here (the real control plane has them).
  defineResource({ group: 'batch', version: 'v1', resource: 'jobs', kind: 'Job', namespaced: true, statusSubresource: true, generation: true }),
  defineResource({
    group: 'batch',
    version: 'v1',
    resource: 'cronjobs',
    kind: 'CronJob',
    namespaced: true,
    shortNames: ['cj'],
    statusSubresource: true,
    generation: true,
  }),
  defineResource({
    group: 'networking.k8s.io',
    version: 'v1',
    resource: 'networkpolicies',
    kind: 'NetworkPolicy',
    namespaced: true,
    shortNames: ['netpol'],
    generation: true,
  }),
  defineResource({
    group: GROUP,
    version: VERSION,
    resource: PLURAL,
    singular: SINGULAR,
    kind: KIND,
    namespaced: true,
    shortNames: [...SHORT_NAMES],
    custom: true,
    statusSubresource: true,
    generation: true,
    deleteReturnsObject: true,
    scale: { specReplicasPath: 'spec.replicas', statusReplicasPath: 'status.replicas', labelSelectorPath: 'status.selector' },
  }),
];

// The validating half for built-in kinds: the rules of pkg/apis/*/validation that our children
// (StatefulSet, Service, Pod, PodDisruptionBudget, ConfigMap) depend on, including the fields a
// real server refuses to change on update, plus kubernetes-models' schema checks.
// Invariant: each function returns every cause it finds (never throws), as the server lists all
// of a write's problems in one 422.
import type { StatusCause } from '../../support/kube-api/errors.ts';
import { deepEqual } from '../../support/kube-api/patch.ts';
import type { KubeObject, StoredObject } from '../../support/kube-api/resources.ts';
import { asRecord as rec, isRecord } from '../../support/records.ts';
import { decodeProblems, type BuiltinKind } from './builtin-decode.ts';
import { arr, duplicate, forbidden, invalid, notFound, notSupported, openApiCause, required, type Json } from './causes.ts';

// ---- per-kind validation (the rules of pkg/apis/*/validation we depend on)

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;
const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;

function portProblems(field: string, port: unknown): StatusCause[] {
  return typeof port === 'number' && Number.isInteger(port) && port >= 1 && port <= 65535
    ? []
    : [invalid(field, port, 'must be between 1 and 65535, inclusive')];
}

/** ValidatePodSpec, the parts our children use. `claims` are the StatefulSet's volumeClaimTemplates names. */
export function podSpecProblems(spec: unknown, path: string, claims: ReadonlySet<string> = new Set()): StatusCause[] {
  const causes: StatusCause[] = [];
  const s = rec(spec);
  const volumes = new Set<string>();
  arr(s['volumes']).forEach((v, i) => {
    const name = rec(v)['name'];
    const f = `${path}.volumes[${i}].name`;
    if (typeof name !== 'string' || name === '') causes.push(required(f));
    else if (!DNS1123_LABEL.test(name) || name.length > 63)
      causes.push(
        invalid(
          f,
          name,
          "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
        ),
      );
    else if (volumes.has(name)) causes.push(duplicate(f, name));
    else volumes.add(name);
  });
  const containers = arr(s['containers']);
  if (containers.length === 0) causes.push(required(`${path}.containers`));
  const names = new Set<string>();
  for (const [list, key] of [
    [arr(s['initContainers']), 'initContainers'],
    [containers, 'containers'],
  ] as const) {
    list.forEach((c, i) => {
      const cf = `${path}.${key}[${i}]`;
      const container = rec(c);
      const name = container['name'];
      if (typeof name !== 'string' || name === '') causes.push(required(`${cf}.name`));
      else if (!DNS1123_LABEL.test(name))
        causes.push(
          invalid(
            `${cf}.name`,
            name,
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
          ),
        );
      else if (names.has(name)) causes.push(duplicate(`${cf}.name`, name));
      else names.add(name);
      if (typeof container['image'] !== 'string' || container['image'].trim() === '') causes.push(required(`${cf}.image`));
      arr(container['ports']).forEach((p, j) => causes.push(...portProblems(`${cf}.ports[${j}].containerPort`, rec(p)['containerPort'])));
      arr(container['env']).forEach((e, j) => {
        const n = rec(e)['name'];
        if (typeof n !== 'string' || n === '') causes.push(required(`${cf}.env[${j}].name`));
        else if (!ENV_NAME.test(n))
          causes.push(
            invalid(
              `${cf}.env[${j}].name`,
              n,
              "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit",
            ),
          );
      });
      const mountPaths = new Set<string>();
      arr(container['volumeMounts']).forEach((m, j) => {
        const mount = rec(m);
        const mf = `${cf}.volumeMounts[${j}]`;
        const n = mount['name'];
        if (typeof n !== 'string' || n === '') causes.push(required(`${mf}.name`));
        else if (!volumes.has(n) && !claims.has(n)) causes.push(notFound(`${mf}.name`, n));
        const mp = mount['mountPath'];
        if (typeof mp !== 'string' || mp === '') causes.push(required(`${mf}.mountPath`));
        else if (mountPaths.has(mp)) causes.push(invalid(`${mf}.mountPath`, mp, 'must be unique'));
        else mountPaths.add(mp);
      });
      for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
        if (!isRecord(container[probe])) continue;
        const handlers = ['exec', 'httpGet', 'tcpSocket', 'grpc'].filter((h) => rec(container[probe])[h] !== undefined);
        if (handlers.length === 0)
          causes.push({ reason: 'FieldValueRequired', field: `${cf}.${probe}`, message: 'Required value: must specify a handler type' });
        else if (handlers.length > 1) causes.push(forbidden(`${cf}.${probe}.${handlers[1]!}`, 'may not specify more than 1 handler type'));
      }
    });
  }
  return causes;
}

function labelSelectorMatches(selector: Json, labels: Json): boolean {
  for (const [k, v] of Object.entries(rec(selector['matchLabels']))) if (labels[k] !== v) return false;
  for (const e of arr(selector['matchExpressions'])) {
    const { key, operator, values } = rec(e) as { key?: string; operator?: string; values?: string[] };
    const has = typeof key === 'string' && key in labels;
    const val = typeof key === 'string' ? labels[key] : undefined;
    if (operator === 'In' && !(has && (values ?? []).includes(String(val)))) return false;
    if (operator === 'NotIn' && has && (values ?? []).includes(String(val))) return false;
    if (operator === 'Exists' && !has) return false;
    if (operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

export function statefulSetProblems(obj: StoredObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const spec = rec(obj['spec']);
  const replicas = spec['replicas'];
  if (typeof replicas === 'number' && replicas < 0) causes.push(invalid('spec.replicas', replicas, 'must be greater than or equal to 0'));
  const ppm = spec['podManagementPolicy'];
  if (ppm !== undefined && ppm !== 'OrderedReady' && ppm !== 'Parallel')
    causes.push(notSupported('spec.podManagementPolicy', ppm, ['OrderedReady', 'Parallel']));
  const strategy = rec(spec['updateStrategy'])['type'];
  if (strategy !== undefined && strategy !== 'RollingUpdate' && strategy !== 'OnDelete')
    causes.push(notSupported('spec.updateStrategy.type', strategy, ['OnDelete', 'RollingUpdate']));
  const retention = rec(spec['persistentVolumeClaimRetentionPolicy']);
  for (const k of ['whenDeleted', 'whenScaled']) {
    if (retention[k] !== undefined && retention[k] !== 'Retain' && retention[k] !== 'Delete')
      causes.push(notSupported(`spec.persistentVolumeClaimRetentionPolicy.${k}`, retention[k], ['Retain', 'Delete']));
  }
  const selector = rec(spec['selector']);
  const template = rec(spec['template']);
  const templateLabels = rec(rec(template['metadata'])['labels']);
  if (Object.keys(rec(selector['matchLabels'])).length === 0 && arr(selector['matchExpressions']).length === 0) {
    causes.push(invalid('spec.selector', selector, 'empty selector is invalid for statefulset'));
  } else if (!labelSelectorMatches(selector, templateLabels)) {
    causes.push(invalid('spec.template.metadata.labels', templateLabels, '`selector` does not match template `labels`'));
  }
  const restart = rec(template['spec'])['restartPolicy'];
  if (restart !== undefined && restart !== 'Always') causes.push(notSupported('spec.template.spec.restartPolicy', restart, ['Always']));
  const claims = new Set<string>();
  arr(spec['volumeClaimTemplates']).forEach((t, i) => {
    const name = rec(rec(t)['metadata'])['name'];
    if (typeof name !== 'string' || name === '') causes.push(required(`spec.volumeClaimTemplates[${i}].metadata.name`));
    else claims.add(name);
  });
  causes.push(...podSpecProblems(template['spec'], 'spec.template.spec', claims));
  return causes;
}

/** ValidateStatefulSetUpdate: everything in spec but these fields is immutable. */
const STS_MUTABLE = ['replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy', 'minReadySeconds'];

export function statefulSetUpdateProblems(next: KubeObject, old: KubeObject): StatusCause[] {
  const strip = (o: KubeObject) => Object.fromEntries(Object.entries(rec(o['spec'])).filter(([k]) => !STS_MUTABLE.includes(k)));
  return deepEqual(strip(next), strip(old))
    ? []
    : [
        forbidden(
          'spec',
          "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        ),
      ];
}

export function serviceProblems(obj: StoredObject, old: StoredObject | undefined): StatusCause[] {
  const causes: StatusCause[] = [];
  const spec = rec(obj['spec']);
  const headless = spec['clusterIP'] === 'None';
  const ports = arr(spec['ports']);
  if (ports.length === 0 && !headless && spec['type'] !== 'ExternalName') causes.push(required('spec.ports'));
  const names = new Set<string>();
  ports.forEach((p, i) => {
    const port = rec(p);
    const name = port['name'];
    if (ports.length > 1 && (typeof name !== 'string' || name === '')) causes.push(required(`spec.ports[${i}].name`));
    if (typeof name === 'string' && name !== '') {
      if (names.has(name)) causes.push(duplicate(`spec.ports[${i}].name`, name));
      names.add(name);
    }
    causes.push(...portProblems(`spec.ports[${i}].port`, port['port']));
  });
  if (old !== undefined) {
    const before = rec(old['spec'])['clusterIPs'];
    const after = spec['clusterIPs'];
    if (Array.isArray(before) && before.length > 0 && !deepEqual(before[0], arr(after)[0])) {
      causes.push(invalid('spec.clusterIPs[0]', arr(after)[0] ?? '', 'may not change once set'));
    }
  }
  return causes;
}

/** ValidatePodUpdate: a pod's spec is immutable but for images, activeDeadlineSeconds, tolerations and the grace period. */
export function podUpdateProblems(next: KubeObject, old: KubeObject): StatusCause[] {
  const strip = (o: KubeObject): Json => {
    const spec = structuredClone(rec(o['spec']));
    for (const key of ['containers', 'initContainers', 'ephemeralContainers']) {
      spec[key] = arr(spec[key]).map((c) => ({ ...rec(c), image: undefined }));
    }
    delete spec['activeDeadlineSeconds'];
    delete spec['tolerations'];
    delete spec['terminationGracePeriodSeconds'];
    // Binding sets nodeName once: an unset one may be filled in.
    if (!rec(old['spec'])['nodeName']) delete spec['nodeName'];
    return spec;
  };
  const before = strip(old);
  const after = strip(next);
  return deepEqual(before, after)
    ? []
    : [
        forbidden(
          'spec',
          'pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)',
        ),
      ];
}

export function pdbProblems(obj: StoredObject): StatusCause[] {
  const spec = rec(obj['spec']);
  return 'minAvailable' in spec && 'maxUnavailable' in spec ? [invalid('spec', spec, 'minAvailable and maxUnavailable cannot be both set')] : [];
}

export function configMapProblems(obj: StoredObject): StatusCause[] {
  const causes: StatusCause[] = [];
  let size = 0;
  for (const field of ['data', 'binaryData']) {
    for (const [k, v] of Object.entries(rec(obj[field]))) {
      if (!CONFIG_KEY.test(k) || k.length > 253)
        causes.push(invalid(`${field}[${k}]`, k, "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"));
      size += String(v).length;
    }
  }
  if (size > 1024 * 1024) causes.push({ reason: 'FieldValueTooLong', field: '', message: 'Too long: must have at most 1048576 bytes' });
  return causes;
}

/** kubernetes-models (the API's OpenAPI schema): required fields, enums, formats. Types are checked at decode. */
export function schemaProblems(obj: StoredObject, info: BuiltinKind): StatusCause[] {
  return decodeProblems(obj, info)
    .filter((e) => e.keyword !== 'type')
    .map((e) => openApiCause(e, obj));
}

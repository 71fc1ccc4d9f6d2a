// API-server validation for the local cluster (test/cluster/validation.ts) on the kube-api
// stand-in's in-process store: our CRD's schema, defaults, pruning and CEL rules; built-in kinds'
// schemas, defaults and immutable fields; the wording and codes a real server answers with.
// No network, no redis-server.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { sync } from '../../src/hook/index.ts';
import type { HookRequest } from '../../src/hook/index.ts';
import { KubeApiError, ObjectStore, type KubeObject, type StoredObject } from '../support/kube-api/index.ts';
import { validateK8sObject } from '../support/k8s-validate.ts';
import { fieldPath, installValidation, loadCrdSchema, type ValidationOptions } from './validation.ts';

type Json = Record<string, unknown>;
const NS = 'default';
const EXAMPLE = parse(readFileSync(new URL('../../manifests/examples/redis.yaml', import.meta.url), 'utf8')) as Json;

function cluster(options: ValidationOptions = {}): ObjectStore {
  const store = new ObjectStore();
  installValidation(store, options);
  return store;
}

function redis(spec: Json = structuredClone(EXAMPLE['spec']) as Json, name = 'my-redis'): KubeObject {
  return { apiVersion: 'redis.example.com/v1', kind: 'Redis', metadata: { name, namespace: NS }, spec };
}

/** Runs `write`; it must fail with `code`, and (for 422) a cause on `field` whose message matches. */
function refused(write: () => unknown, code: number, field?: string, message?: RegExp): KubeApiError {
  try {
    write();
  } catch (error) {
    assert.ok(error instanceof KubeApiError, `expected a KubeApiError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    assert.equal(error.status.kind, 'Status');
    if (code === 422) {
      assert.equal(error.reason, 'Invalid');
      const causes = error.status.details?.causes ?? [];
      const hit = causes.find((c) => c.field === field && (message === undefined || message.test(c.message)));
      assert.ok(hit, `no cause on ${field} matching ${String(message)} in ${JSON.stringify(causes)}`);
    } else if (message) {
      assert.match(error.message, message);
    }
    return error;
  }
  assert.fail(`expected HTTP ${code}`);
}

function spec(obj: StoredObject): Json {
  return obj['spec'] as Json;
}

/** The hook's children for the design Redis, as Metacontroller would create them. */
function hookChildren(parent: StoredObject): KubeObject[] {
  const request: HookRequest = { parent: parent as never, children: {}, related: {}, finalizing: false };
  return sync(request).children as KubeObject[];
}

const RESOURCE: Record<string, string> = {
  StatefulSet: 'statefulsets',
  Service: 'services',
  ConfigMap: 'configmaps',
  PodDisruptionBudget: 'poddisruptionbudgets',
};

function withChildren(store: ObjectStore): { parent: StoredObject; sts: StoredObject } {
  const parent = store.create('redises', redis(), { keepStatus: false });
  for (const child of hookChildren(parent)) store.create(RESOURCE[child.kind!]!, child);
  return { parent, sts: store.read('statefulsets', NS, 'my-redis-master') };
}

describe('the Redis CRD: schema, pruning, defaults, CEL', () => {
  test('the design Redis is accepted and defaulted as the API server would; unknown fields are pruned', () => {
    const store = cluster();
    const body = redis();
    (body['spec'] as Json)['bogus'] = 1;
    (body.metadata as Json)['bogusMeta'] = 'x';
    const stored = store.create('redises', body, { keepStatus: false });
    assert.deepEqual(spec(stored)['persistence'], { enableRdb: true, rdbSchedule: '*/15 * * * *', enableAof: true, size: '10Gi', whenDeleted: 'Retain' });
    assert.deepEqual(spec(stored)['failover'], { downAfterMilliseconds: 1000, minReplicasToWrite: 1, minReplicasMaxLagSeconds: 5 });
    assert.equal(spec(stored)['bogus'], undefined);
    assert.equal((stored.metadata as Json)['bogusMeta'], undefined);
  });

  test('no spec at all is a fully defaulted Redis', () => {
    const stored = cluster().create('redises', { metadata: { name: 'r', namespace: NS } });
    assert.equal(spec(stored)['version'], '7.2');
    assert.equal(spec(stored)['replicas'], 2);
    assert.deepEqual(spec(stored)['master'], { replicas: 1 });
  });

  const badCreates: Array<{ name: string; edit: (s: Json) => void; field: string; message: RegExp }> = [
    {
      name: 'replicas above the maximum',
      edit: (s) => (s['replicas'] = 16),
      field: 'spec.replicas',
      message: /^Invalid value: 16: spec\.replicas in body should be less than or equal to 15$/,
    },
    { name: 'two masters', edit: (s) => (s['master'] = { replicas: 2 }), field: 'spec.master.replicas', message: /less than or equal to 1/ },
    {
      name: 'a version that is not one',
      edit: (s) => (s['version'] = 'latest'),
      field: 'spec.version',
      message: /^Invalid value: "latest": spec\.version in body should match/,
    },
    {
      name: 'a size that is not a quantity',
      edit: (s) => ((s['persistence'] as Json)['size'] = 'ten gigs'),
      field: 'spec.persistence.size',
      message: /should match/,
    },
    {
      name: 'an unknown volume policy',
      edit: (s) => ((s['persistence'] as Json)['whenDeleted'] = 'Keep'),
      field: 'spec.persistence.whenDeleted',
      message: /^Unsupported value: "Keep": supported values: "Retain", "Delete"$/,
    },
    { name: 'a string where an integer belongs', edit: (s) => (s['replicas'] = '2'), field: 'spec.replicas', message: /must be of type integer: "string"/ },
    {
      name: 'a directive the operator owns (CEL)',
      edit: (s) => (s['config'] = { replicaof: 'x 1' }),
      field: 'spec.config',
      message: /^Invalid value: "object": config sets a directive the operator owns$/,
    },
    {
      name: 'an upper-case directive (CEL)',
      edit: (s) => (s['config'] = { MaxMemory: '1gb' }),
      field: 'spec.config',
      message: /lower-case redis\.conf directive names/,
    },
  ];
  for (const b of badCreates) {
    test(`create refused: ${b.name}`, () => {
      const s = structuredClone(EXAMPLE['spec']) as Json;
      b.edit(s);
      refused(() => cluster().create('redises', redis(s), { keepStatus: false }), 422, b.field, b.message);
    });
  }

  const updates: Array<{ name: string; edit: (s: Json) => void; field?: string; message?: RegExp }> = [
    { name: 'persistence size grows', edit: (s) => ((s['persistence'] as Json)['size'] = '20Gi') },
    { name: 'version upgrade', edit: (s) => (s['version'] = '7.4') },
    { name: 'scale replicas', edit: (s) => (s['replicas'] = 5) },
    {
      name: 'persistence size shrinks',
      edit: (s) => ((s['persistence'] as Json)['size'] = '5Gi'),
      field: 'spec.persistence',
      message: /^Invalid value: "object": persistence\.size cannot shrink$/,
    },
    {
      name: 'storage class changes',
      edit: (s) => ((s['persistence'] as Json)['storageClassName'] = 'fast'),
      field: 'spec.persistence',
      message: /storageClassName cannot change/,
    },
    { name: 'version downgrade', edit: (s) => (s['version'] = '6.2'), field: 'spec.version', message: /cannot be downgraded/ },
    {
      name: 'persistence switched off',
      edit: (s) => Object.assign(s['persistence'] as Json, { enableRdb: false, enableAof: false }),
      field: 'spec.persistence',
      message: /cannot be switched on or off/,
    },
  ];
  for (const u of updates) {
    test(`update ${u.field ? 'refused' : 'accepted'}: ${u.name}`, () => {
      const store = cluster();
      store.create('redises', redis(), { keepStatus: false });
      const write = () => store.mutate('redises', NS, 'my-redis', (r) => u.edit(spec(r)));
      if (u.field) refused(write, 422, u.field, u.message);
      else assert.equal(write().metadata.generation, 2);
    });
  }

  test('status writes are validated and pruned too; a scale above the bound is refused', () => {
    const store = cluster();
    const stored = store.create('redises', redis(), { keepStatus: false });
    refused(
      () => store.update('redises', { ...stored, status: { phase: 'Bogus' } }, { subresource: 'status' }),
      422,
      'status.phase',
      /^Unsupported value: "Bogus"/,
    );
    const written = store.update('redises', { ...stored, status: { phase: 'Pending', unknownThing: 1 } }, { subresource: 'status' });
    assert.deepEqual(written['status'], { phase: 'Pending' });
    refused(() => store.updateScale('redises', NS, 'my-redis', { spec: { replicas: 20 } }), 422, 'spec.replicas', /less than or equal to 15/);
  });

  test('every CEL rule of the installed CRD is evaluated (none is silently skipped)', () => {
    const rules = JSON.stringify(loadCrdSchema()).match(/"rule":/g) ?? [];
    assert.ok(rules.length >= 7, `the CRD declares ${rules.length} rules`);
  });
});

describe('built-in kinds: schema, defaults, immutable fields', () => {
  test("the hook's children are accepted, stored with the server's defaults, and stay valid Kubernetes objects", () => {
    const store = cluster();
    withChildren(store);
    const sts = store.read('statefulsets', NS, 'my-redis-master');
    assert.equal(spec(sts)['revisionHistoryLimit'], 10);
    assert.equal(spec(sts)['podManagementPolicy'], 'Parallel', 'a value that was set is never overwritten');
    const pod = (spec(sts)['template'] as Json)['spec'] as Json;
    assert.equal(pod['schedulerName'], 'default-scheduler');
    assert.equal((pod['containers'] as Json[])[0]!['terminationMessagePath'], '/dev/termination-log');
    const vct = (spec(sts)['volumeClaimTemplates'] as Json[])[0]!;
    assert.deepEqual(vct['status'], { phase: 'Pending' });
    const master = store.read('services', NS, 'my-redis-master');
    assert.match(String(spec(master)['clusterIP']), /^10\.96\.\d+\.\d+$/);
    assert.equal(spec(store.read('services', NS, 'my-redis-headless'))['clusterIP'], 'None');
    for (const r of ['statefulsets', 'services', 'configmaps', 'poddisruptionbudgets']) for (const o of store.list(r)) validateK8sObject(o);
  });

  test('a write that changes nothing once defaulted is a no-op (no resourceVersion, no generation bump)', () => {
    const store = cluster();
    const { parent, sts } = withChildren(store);
    const desired = hookChildren(parent).find((c) => c.kind === 'StatefulSet' && c.metadata?.name === 'my-redis-master')!;
    const again = store.update('statefulsets', { ...desired, metadata: { ...desired.metadata, resourceVersion: sts.metadata.resourceVersion } });
    assert.equal(again.metadata.resourceVersion, sts.metadata.resourceVersion);
    assert.equal(again.metadata.generation, 1);
  });

  const STS_MESSAGE =
    "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden";
  const stsEdits: Array<{ name: string; edit: (s: Json) => void; forbidden: boolean }> = [
    {
      name: 'spec.selector',
      edit: (s) => {
        ((s['selector'] as Json)['matchLabels'] as Json)['extra'] = 'x';
        (((s['template'] as Json)['metadata'] as Json)['labels'] as Json)['extra'] = 'x';
      },
      forbidden: true,
    },
    { name: 'spec.serviceName', edit: (s) => (s['serviceName'] = 'other'), forbidden: true },
    {
      name: 'spec.volumeClaimTemplates',
      edit: (s) => ((((s['volumeClaimTemplates'] as Json[])[0]!['spec'] as Json)['resources'] as Json)['requests'] = { storage: '20Gi' }),
      forbidden: true,
    },
    { name: 'spec.podManagementPolicy', edit: (s) => (s['podManagementPolicy'] = 'OrderedReady'), forbidden: true },
    { name: 'spec.revisionHistoryLimit', edit: (s) => (s['revisionHistoryLimit'] = 3), forbidden: true },
    { name: 'spec.replicas', edit: (s) => (s['replicas'] = 3), forbidden: false },
    {
      name: 'spec.template (image)',
      edit: (s) => ((((s['template'] as Json)['spec'] as Json)['containers'] as Json[])[0]!['image'] = 'redis:7.4'),
      forbidden: false,
    },
    { name: 'spec.updateStrategy', edit: (s) => (s['updateStrategy'] = { type: 'RollingUpdate' }), forbidden: false },
    {
      name: 'spec.persistentVolumeClaimRetentionPolicy',
      edit: (s) => (s['persistentVolumeClaimRetentionPolicy'] = { whenDeleted: 'Delete', whenScaled: 'Retain' }),
      forbidden: false,
    },
    { name: 'spec.minReadySeconds', edit: (s) => (s['minReadySeconds'] = 5), forbidden: false },
  ];
  for (const e of stsEdits) {
    test(`StatefulSet update of ${e.name}: ${e.forbidden ? '422 Forbidden' : 'accepted'}`, () => {
      const store = cluster();
      withChildren(store);
      const write = () => store.mutate('statefulsets', NS, 'my-redis-master', (s) => e.edit(spec(s)));
      if (e.forbidden) {
        const error = refused(write, 422, 'spec', new RegExp(`^${STS_MESSAGE.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
        assert.equal(error.message, `StatefulSet "my-redis-master" is invalid: spec: ${STS_MESSAGE}`);
      } else {
        assert.equal(write().metadata.generation, 2);
      }
    });
  }

  const badChildren: Array<{ name: string; resource: string; object: () => KubeObject; code: number; field?: string; message: RegExp }> = [
    {
      name: 'StatefulSet whose selector does not match its template',
      resource: 'statefulsets',
      code: 422,
      field: 'spec.template.metadata.labels',
      message: /`selector` does not match template `labels`/,
      object: () => sts({ selector: { matchLabels: { app: 'b' } } }),
    },
    {
      name: 'StatefulSet with an empty selector',
      resource: 'statefulsets',
      code: 422,
      field: 'spec.selector',
      message: /empty selector is invalid for statefulset/,
      object: () => sts({ selector: {} }),
    },
    {
      name: 'container without an image',
      resource: 'statefulsets',
      code: 422,
      field: 'spec.template.spec.containers[0].image',
      message: /^Required value$/,
      object: () => sts({}, { name: 'c' }),
    },
    {
      name: 'volumeMount naming no volume',
      resource: 'statefulsets',
      code: 422,
      field: 'spec.template.spec.containers[0].volumeMounts[0].name',
      message: /^Not found: "data"$/,
      object: () => sts({}, { name: 'c', image: 'redis:7.2', volumeMounts: [{ name: 'data', mountPath: '/data' }] }),
    },
    {
      name: 'negative replicas',
      resource: 'statefulsets',
      code: 422,
      field: 'spec.replicas',
      message: /must be greater than or equal to 0/,
      object: () => sts({ replicas: -1 }),
    },
    {
      name: 'a string where an integer belongs (decode error)',
      resource: 'statefulsets',
      code: 400,
      message: /cannot be handled as a StatefulSet: json: cannot unmarshal string/,
      object: () => sts({ replicas: 'two' }),
    },
    {
      name: 'Service type that does not exist',
      resource: 'services',
      code: 422,
      field: 'spec.type',
      message: /^Unsupported value: "Magic"/,
      object: () => svc({ type: 'Magic', ports: [{ port: 80 }] }),
    },
    {
      name: 'Service without ports',
      resource: 'services',
      code: 422,
      field: 'spec.ports',
      message: /^Required value$/,
      object: () => svc({ selector: { a: 'b' } }),
    },
    {
      name: 'Service with two unnamed ports',
      resource: 'services',
      code: 422,
      field: 'spec.ports[0].name',
      message: /^Required value$/,
      object: () => svc({ ports: [{ port: 80 }, { port: 81 }] }),
    },
    {
      name: 'PDB with both minAvailable and maxUnavailable',
      resource: 'poddisruptionbudgets',
      code: 422,
      field: 'spec',
      message: /cannot be both set/,
      object: () => ({
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: { name: 'p', namespace: NS },
        spec: { minAvailable: 1, maxUnavailable: 1, selector: { matchLabels: { a: 'b' } } },
      }),
    },
    {
      name: 'ConfigMap with a bad key',
      resource: 'configmaps',
      code: 422,
      field: 'data[a b]',
      message: /valid config key/,
      object: () => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: NS }, data: { 'a b': 'x' } }),
    },
    {
      name: 'Event without involvedObject (schema: required)',
      resource: 'events',
      code: 422,
      field: 'involvedObject',
      message: /^Required value$/,
      object: () => ({ apiVersion: 'v1', kind: 'Event', metadata: { name: 'e', namespace: NS } }),
    },
  ];
  for (const b of badChildren) {
    test(`refused: ${b.name}`, () => {
      refused(() => cluster().create(b.resource, b.object()), b.code, b.field, b.message);
    });
  }

  test('unknown fields of built-in kinds are dropped by default and refused with fieldValidation=Strict', () => {
    const body = (): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: NS }, data: { a: '1' }, spec: { nope: true } });
    const stored = cluster().create('configmaps', body());
    assert.equal(stored['spec'], undefined);
    assert.deepEqual(stored['data'], { a: '1' });
    refused(() => cluster({ unknownFields: 'strict' }).create('configmaps', body()), 400, undefined, /strict decoding error: unknown field "spec"/);
  });

  test('Service clusterIP: kept when an update omits it, refused when changed', () => {
    const store = cluster();
    const created = store.create('services', svc({ selector: { a: 'b' }, ports: [{ port: 80 }] }));
    const ip = spec(created)['clusterIP'];
    const kept = store.update('services', svc({ selector: { a: 'c' }, ports: [{ port: 80 }] }, created.metadata.resourceVersion));
    assert.equal(spec(kept)['clusterIP'], ip);
    refused(
      () => store.mutate('services', NS, 's', (s) => Object.assign(spec(s), { clusterIP: '10.96.99.99', clusterIPs: ['10.96.99.99'] })),
      422,
      'spec.clusterIPs[0]',
      /may not change once set/,
    );
  });

  test('Pod spec is immutable but for images; labels, status and a first nodeName may change', () => {
    const store = cluster();
    store.create('pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: NS }, spec: { containers: [{ name: 'c', image: 'redis:7.2' }] } });
    store.mutate('pods', NS, 'p', (p) => {
      p.metadata.labels = { 'redis.example.com/role': 'master' };
      p['status'] = { phase: 'Running', podIP: '127.0.40.1' };
      spec(p)['nodeName'] = 'node-a';
    });
    store.mutate('pods', NS, 'p', (p) => ((spec(p)['containers'] as Json[])[0]!['image'] = 'redis:7.4'));
    refused(
      () => store.mutate('pods', NS, 'p', (p) => ((spec(p)['containers'] as Json[])[0]!['command'] = ['sh'])),
      422,
      'spec',
      /^Forbidden: pod updates may not change fields other than/,
    );
    refused(() => store.mutate('pods', NS, 'p', (p) => (spec(p)['nodeName'] = 'node-b')), 422, 'spec', /^Forbidden: pod updates/);
  });

  test("field paths read like the server's", () => {
    assert.equal(fieldPath(['spec', 'containers', 0, 'ports', 1, 'containerPort']), 'spec.containers[0].ports[1].containerPort');
  });
});

function sts(specPatch: Json, container: Json = { name: 'c', image: 'redis:7.2' }): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: 's', namespace: NS },
    spec: {
      selector: { matchLabels: { app: 'a' } },
      serviceName: 's',
      template: { metadata: { labels: { app: 'a' } }, spec: { containers: [container] } },
      ...specPatch,
    },
  };
}

function svc(specBody: Json, resourceVersion?: string): KubeObject {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name: 's', namespace: NS, ...(resourceVersion ? { resourceVersion } : {}) }, spec: specBody };
}

// sync: determinism, both hook versions' key shapes, the steady-state fixture, immutable
// StatefulSet fields, invalid specs (observed children returned untouched) and edge requests.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LAST_APPLIED_ANNOTATION, lastAppliedOf } from '../../../src/hook/common/observed.ts';
import {
  finalize,
  parseHookRequest,
  sync,
  type HookRequest,
  type KubeObject,
  type ObjectMap,
} from '../../../src/hook/index.ts';
import { dryRunMissing, startDryRunServer, type DryRunServer } from '../../k8s/dry-run.ts';
import {
  condition,
  designSpec,
  find,
  fixtureRequest,
  get,
  healthyPods,
  loadFixture,
  objectMap,
  redis,
  request,
  type Json,
} from '../common/helpers.ts';

function reversedMap(map: ObjectMap): ObjectMap {
  const out: ObjectMap = {};
  for (const group of Object.keys(map).reverse()) {
    const inner: Record<string, KubeObject> = {};
    for (const key of Object.keys(map[group] ?? {}).reverse()) inner[key] = (map[group] ?? {})[key] as KubeObject;
    out[group] = inner;
  }
  return out;
}

function toV1Keys(map: ObjectMap): ObjectMap {
  const out: ObjectMap = {};
  for (const [group, inner] of Object.entries(map)) {
    out[group] = {};
    for (const object of Object.values(inner))
      (out[group] as Record<string, KubeObject>)[object.metadata.name] = object;
  }
  return out;
}

function allObserved(req: HookRequest): KubeObject[] {
  return Object.values(req.children).flatMap((inner) => Object.values(inner));
}

test('the fixture is in steady state: its status comes back unchanged and the children match what was applied', () => {
  const req = fixtureRequest();
  const response = sync(req);
  assert.deepEqual(response.status, req.parent.status);
  for (const child of response.children) {
    const observed = find(allObserved(req), child.kind, child.metadata.name);
    const lastApplied = JSON.parse(
      String(observed.metadata.annotations?.['metacontroller.k8s.io/last-applied-configuration']),
    ) as unknown;
    assert.deepEqual(
      // The claim templates are echoed as observed (with server defaults); everything else must equal what was applied.
      { ...child, spec: { ...(child['spec'] as Json), volumeClaimTemplates: undefined } },
      { ...(lastApplied as Json), spec: { ...(get(lastApplied, 'spec') as Json), volumeClaimTemplates: undefined } },
      `${child.kind}/${child.metadata.name} differs from the fixture: regenerate it with node test/fixtures/make-sync-request.ts`,
    );
  }
});

test('same request twice gives byte-identical responses, and the request is not modified', () => {
  const body = loadFixture();
  const before = JSON.stringify(body);
  const parsed = parseHookRequest(body);
  assert.ok(parsed.ok);
  const a = JSON.stringify(sync(parsed.request));
  const b = JSON.stringify(sync(parsed.request));
  assert.equal(a, b);
  assert.equal(JSON.stringify(body), before);
});

test('map order and hook version (v1 bare names, v2 namespace/name) do not change the response', async (t) => {
  const req = fixtureRequest();
  const expected = JSON.stringify(sync(req));
  const variants: Array<[string, HookRequest]> = [
    ['reversed', { ...req, children: reversedMap(req.children), related: reversedMap(req.related) }],
    ['v1 keys', { ...req, children: toV1Keys(req.children), related: toV1Keys(req.related) }],
    [
      'v1 keys reversed',
      { ...req, children: reversedMap(toV1Keys(req.children)), related: reversedMap(toV1Keys(req.related)) },
    ],
  ];
  for (const [label, variant] of variants)
    await t.test(label, () => assert.equal(JSON.stringify(sync(variant)), expected, label));
});

test('a shuffled invalid-spec request returns the same echo in the same order', () => {
  const bad = (body: Json) => {
    (body['parent'] as Json)['spec'] = { ...designSpec(), replicas: -3 };
  };
  const req = fixtureRequest(bad);
  const expected = JSON.stringify(sync(req));
  assert.equal(JSON.stringify(sync({ ...req, children: reversedMap(toV1Keys(req.children)) })), expected);
});

test('a sync response has exactly status and children', () => {
  assert.deepEqual(Object.keys(sync(fixtureRequest())), ['status', 'children']);
  assert.deepEqual(Object.keys(sync(request({}))), ['status', 'children']);
});

// ---- immutable StatefulSet fields ----

function withObservedSet(mutateSet: (set: Json) => void, spec: Json = designSpec() as Json): HookRequest {
  return fixtureRequest((body) => {
    (body['parent'] as Json)['spec'] = { ...(get(body, 'parent', 'spec') as Json), ...spec };
    const sets = get(body, 'children', 'StatefulSet.apps/v1') as Record<string, Json>;
    for (const set of Object.values(sets)) mutateSet(set);
  });
}

/** A StatefulSet made by an older operator: its selector, serviceName and podManagementPolicy differ from ours. */
const echoedSelector = () =>
  withObservedSet((set) => {
    const spec = set['spec'] as Json;
    spec['podManagementPolicy'] = 'OrderedReady';
    spec['serviceName'] = 'legacy-headless';
    (get(spec, 'selector', 'matchLabels') as Json)['legacy'] = 'yes';
  });

test('observed selector, serviceName, podManagementPolicy and claim templates are echoed exactly', () => {
  const req = echoedSelector();
  const response = sync(req);
  for (const name of ['my-redis-master', 'my-redis-replica']) {
    const observed = find(allObserved(req), 'StatefulSet', name);
    const child = find(response.children, 'StatefulSet', name);
    for (const field of ['selector', 'serviceName', 'podManagementPolicy', 'volumeClaimTemplates']) {
      assert.deepEqual(get(child, 'spec', field), get(observed, 'spec', field), `${name} ${field}`);
    }
    // The template keeps matching the echoed selector (the server checks it below), and the role label stays out.
    assert.equal(get(child, 'spec', 'template', 'metadata', 'labels', 'legacy'), 'yes');
  }
  assert.equal(get(condition(response.status, 'SpecValid'), 'status'), 'True');
});

const conflicts: Array<[string, Json, (set: Json) => void, RegExp]> = [
  [
    // The CRD refuses a shrink; a StatefulSet made by hand with bigger templates is the way here.
    'size below the claim templates',
    { persistence: { enableRdb: true, rdbSchedule: '*/15 * * * *', enableAof: true, size: '5Gi' } },
    () => {},
    /spec\.persistence\.size: 5Gi requested .* 10Gi .*never shrink/,
  ],
  [
    'storage class changed',
    {
      persistence: {
        enableRdb: true,
        rdbSchedule: '*/15 * * * *',
        enableAof: true,
        size: '10Gi',
        storageClassName: 'fast',
      },
    },
    () => {},
    /spec\.persistence\.storageClassName: fast requested/,
  ],
  [
    'persistence switched off',
    { persistence: { enableRdb: false, enableAof: false } },
    () => {},
    /spec\.persistence: RDB and AOF are off/,
  ],
  [
    'persistence switched on',
    {},
    (set) => {
      delete (set['spec'] as Json)['volumeClaimTemplates'];
    },
    /spec\.persistence: RDB\/AOF is on/,
  ],
];
for (const [label, spec, mutate, message] of conflicts) {
  test(`an immutable change is reported, not applied: ${label}`, () => {
    const req = withObservedSet(mutate, spec);
    const response = sync(req);
    for (const name of ['my-redis-master', 'my-redis-replica']) {
      const child = find(response.children, 'StatefulSet', name);
      assert.deepEqual(
        get(child, 'spec', 'volumeClaimTemplates'),
        get(find(allObserved(req), 'StatefulSet', name), 'spec', 'volumeClaimTemplates'),
      );
      const claims = (get(child, 'spec', 'volumeClaimTemplates') ?? []) as Json[];
      const dataVolume = (get(child, 'spec', 'template', 'spec', 'volumes') as Json[]).find(
        (v) => v['name'] === 'data',
      );
      assert.equal(dataVolume !== undefined, claims.length === 0, 'emptyDir data volume iff no claim template');
    }
    const specValid = condition(response.status, 'SpecValid');
    assert.equal(get(specValid, 'status'), 'False');
    assert.equal(get(specValid, 'reason'), 'ImmutableFieldChanged');
    assert.match(String(get(specValid, 'message')), message);
    // Serving is unaffected.
    assert.equal(response.status.phase, 'Running');
    assert.equal(get(condition(response.status, 'Ready'), 'status'), 'True');
  });
}

test('a grown size is no conflict (the sidecar grows the claims, then replaces the StatefulSets): templates echoed, SpecValid', () => {
  const req = withObservedSet(() => {}, {
    persistence: { enableRdb: true, rdbSchedule: '*/15 * * * *', enableAof: true, size: '20Gi' },
  });
  const response = sync(req);
  for (const name of ['my-redis-master', 'my-redis-replica']) {
    const child = find(response.children, 'StatefulSet', name);
    assert.deepEqual(
      get(child, 'spec', 'volumeClaimTemplates'),
      get(find(allObserved(req), 'StatefulSet', name), 'spec', 'volumeClaimTemplates'),
    );
  }
  assert.equal(get(condition(response.status, 'SpecValid'), 'status'), 'True');
});

test('the same size written differently (10Gi vs 10240Mi) is no conflict', () => {
  const response = sync(
    withObservedSet(() => {}, {
      persistence: { enableRdb: true, rdbSchedule: '*/15 * * * *', enableAof: true, size: '10240Mi' },
    }),
  );
  assert.equal(get(condition(response.status, 'SpecValid'), 'status'), 'True');
});

// ---- invalid specs ----

const invalid: Array<[string, (spec: Json) => unknown, string, string?]> = [
  ['no spec', () => undefined, 'spec'],
  ['spec is a string', () => 'redis please', 'spec'],
  ['version is not a version', (s) => ({ ...s, version: 'latest' }), 'spec.version'],
  ['negative replicas', (s) => ({ ...s, replicas: -1 }), 'spec.replicas'],
  ['too many replicas', (s) => ({ ...s, replicas: 99 }), 'spec.replicas'],
  ['replicas as a string', (s) => ({ ...s, replicas: '2' }), 'spec.replicas'],
  ['two masters', (s) => ({ ...s, master: { replicas: 2 } }), 'spec.master.replicas'],
  [
    'size not a quantity',
    (s) => ({ ...s, persistence: { ...(s['persistence'] as Json), size: 'ten gigs' } }),
    'spec.persistence.size',
  ],
  [
    'unsupported cron',
    (s) => ({ ...s, persistence: { ...(s['persistence'] as Json), rdbSchedule: '5 4 * * *' } }),
    'spec.persistence.rdbSchedule',
  ],
  [
    'unknown whenDeleted',
    (s) => ({ ...s, persistence: { ...(s['persistence'] as Json), whenDeleted: 'Maybe' } }),
    'spec.persistence.whenDeleted',
  ],
  [
    'memory limit not a quantity',
    (s) => ({ ...s, resources: { limits: { memory: 'lots' } } }),
    'spec.resources.limits.memory',
  ],
  ['reserved config key', (s) => ({ ...s, config: { requirepass: 'hunter2' } }), 'spec.config.requirepass'],
  ['config key with spaces', (s) => ({ ...s, config: { 'Bad Key': 'x' } }), 'spec.config.Bad Key'],
  [
    'config value smuggling a directive',
    (s) => ({ ...s, config: { 'maxmemory-policy': 'noeviction\nreplicaof 10.0.0.1 6379' } }),
    'spec.config.maxmemory-policy',
  ],
  ['auth without a secret name', (s) => ({ ...s, auth: {} }), 'spec.auth.secretName'],
  [
    'failover window too short',
    (s) => ({ ...s, failover: { downAfterMilliseconds: 5 } }),
    'spec.failover.downAfterMilliseconds',
  ],
  ['tolerations not a list', (s) => ({ ...s, tolerations: 'all' }), 'spec.tolerations'],
  ['name too long', (s) => s, 'metadata.name', 'r'.repeat(41)],
];

for (const [label, mutate, field, name] of invalid) {
  for (const shape of ['v2', 'v1'] as const) {
    test(`invalid spec (${label}, ${shape} keys): observed children come back untouched and the field is named`, () => {
      const req = fixtureRequest((body) => {
        const parent = body['parent'] as Json;
        const spec = mutate(structuredClone(parent['spec']) as Json);
        if (spec === undefined) delete parent['spec'];
        else parent['spec'] = spec;
        if (name !== undefined) (parent['metadata'] as Json)['name'] = name;
      });
      // One child of a kind we never produce must survive too.
      const stray: KubeObject = {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'my-redis-legacy', namespace: 'default' },
        data: {},
      };
      req.children['ConfigMap.v1'] = { ...req.children['ConfigMap.v1'], 'default/my-redis-legacy': stray };
      if (shape === 'v1') req.children = toV1Keys(req.children);
      const observed = allObserved(req);
      const response = sync(req);
      assert.equal(response.children.length, observed.length);
      // Each observed child comes back as it was last applied: no change for Metacontroller to make.
      for (const object of observed) {
        const echoed = response.children.find(
          (c) => c.kind === object.kind && c.metadata.name === object.metadata.name,
        );
        assert.deepEqual(
          echoed,
          lastAppliedOf(object),
          `${object.kind}/${object.metadata.name} returned as last applied`,
        );
      }
      assert.equal(response.status.phase, 'Failed');
      for (const type of ['Ready', 'SpecValid']) {
        const c = condition(response.status, type);
        assert.equal(get(c, 'status'), 'False');
        assert.equal(get(c, 'reason'), 'InvalidSpec');
        assert.ok(
          String(get(c, 'message')).includes(`${field}:`),
          `${type} message names ${field}: ${String(get(c, 'message'))}`,
        );
      }
      assert.deepEqual(Object.keys(response), ['status', 'children']);
      // Still deterministic and clock-free: the pods' facts are reported.
      assert.equal(JSON.stringify(sync(req)), JSON.stringify(response));
    });
  }
}

test('an invalid spec with nothing observed returns no children (and so deletes nothing)', () => {
  const response = sync(request({ parent: redis({ replicas: -1 }) }));
  assert.deepEqual(response.children, []);
  assert.equal(response.status.phase, 'Failed');
});

test('an invalid spec still reports the master the pods show', () => {
  const response = sync(request({ parent: redis({ ...designSpec(), replicas: 100 }), related: healthyPods() }));
  assert.equal(response.status.master, 'my-redis-master-0');
  assert.equal(response.status.masterStatus, 'Ready');
  assert.equal(response.status.phase, 'Failed');
});

// ---- edge requests ----

test('a parent being deleted but synced (finalizing false) is synced normally and never finalized', () => {
  const normal = sync(fixtureRequest());
  const deleting = sync(
    fixtureRequest((body) => {
      ((body['parent'] as Json)['metadata'] as Json)['deletionTimestamp'] = '2025-01-16T00:00:00Z';
    }),
  );
  assert.deepEqual(deleting, normal);
  assert.equal('finalized' in deleting, false);
});

test('sync called with finalizing: true behaves as finalize; finalize called with finalizing: false behaves as sync', () => {
  const finalizing = fixtureRequest((body) => {
    body['finalizing'] = true;
  });
  assert.deepEqual(sync(finalizing), finalize(finalizing));
  const plain = fixtureRequest();
  assert.deepEqual(finalize(plain), sync(plain));
  assert.equal('finalized' in finalize(plain), false);
});

test('without a uid the children carry no controller-uid label rather than a wrong one', () => {
  const parent = redis();
  delete (parent['metadata'] as Json)['uid'];
  for (const child of sync(request({ parent })).children)
    assert.equal(child.metadata.labels?.['controller-uid'], undefined);
});

test('children maps with empty groups (as Metacontroller sends them) are fine', () => {
  const req = request({});
  req.children = objectMap([], 'v2', [
    'StatefulSet.apps/v1',
    'Service.v1',
    'ConfigMap.v1',
    'PodDisruptionBudget.policy/v1',
  ]);
  assert.equal(sync(req).children.length, 8, 'the design: ConfigMap, four Services, two StatefulSets, the PDB');
});

test('an invalid spec echoes what was last applied, so the last-applied annotation never nests', () => {
  const req = fixtureRequest((body) => {
    ((body['parent'] as Json)['spec'] as Json)['replicas'] = -1;
  });
  const observed = allObserved(req);
  const withAnnotation = observed.filter((o) => typeof o.metadata.annotations?.[LAST_APPLIED_ANNOTATION] === 'string');
  assert.ok(withAnnotation.length > 0, "the fixture carries Metacontroller's last-applied annotations");
  const response = sync(req);
  for (const child of response.children) {
    assert.equal(
      child.metadata.annotations?.[LAST_APPLIED_ANNOTATION],
      undefined,
      `${child.kind}/${child.metadata.name} carries no last-applied annotation`,
    );
    assert.equal('status' in child, false, `${child.kind}/${child.metadata.name} carries no status`);
    for (const key of ['resourceVersion', 'uid', 'creationTimestamp', 'managedFields'])
      assert.equal(key in child.metadata, false, key);
  }
  for (const object of withAnnotation) {
    const echoed = response.children.find((c) => c.kind === object.kind && c.metadata.name === object.metadata.name);
    assert.deepEqual(echoed, JSON.parse(object.metadata.annotations?.[LAST_APPLIED_ANNOTATION] ?? ''));
  }
});

test('lastAppliedOf: a corrupt or foreign annotation falls back to the observed object without server fields', async (t) => {
  const base = { apiVersion: 'v1', kind: 'ConfigMap', data: { a: '1' }, status: { x: 1 } };
  const cases: Array<{ name: string; annotation: string | undefined }> = [
    { name: 'no annotation', annotation: undefined },
    { name: 'not JSON', annotation: '{oops' },
    {
      name: 'another object',
      annotation: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'other' } }),
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const object: KubeObject = {
        ...base,
        metadata: {
          name: 'cm',
          namespace: 'default',
          uid: 'u',
          resourceVersion: '9',
          labels: { a: 'b' },
          annotations: {
            keep: 'me',
            ...(c.annotation !== undefined ? { [LAST_APPLIED_ANNOTATION]: c.annotation } : {}),
          },
        },
      };
      assert.deepEqual(
        lastAppliedOf(object),
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          data: { a: '1' },
          metadata: { name: 'cm', namespace: 'default', labels: { a: 'b' }, annotations: { keep: 'me' } },
        },
        c.name,
      );
    });
  }
});

describe(
  'the real kube-apiserver accepts the objects (dry-run create, strict field validation)',
  { skip: dryRunMissing() ?? false },
  () => {
    let server: DryRunServer;
    // `default`'s ServiceAccount, without which the fixture's pods are refused (no controller makes it here).
    before(async () => (server = await startDryRunServer({ namespaces: ['default'] })));
    after(() => server?.close());

    /**
     * A stored object as a create would send it: its Service addresses come from the fixture cluster's
     * 10.96.0.0/12, not
     * this server's range.
     */
    const asCreated = (object: KubeObject): KubeObject => {
      const spec = object['spec'] as Json | undefined;
      if (object.kind !== 'Service' || spec?.['clusterIP'] === 'None') return object;
      const { clusterIP: _ip, clusterIPs: _ips, ...rest } = spec ?? {};
      return { ...object, spec: rest };
    };

    test('every object in the fixture, and every child returned for it', async () => {
      const req = fixtureRequest();
      const stored = [...allObserved(req), ...Object.values(req.related).flatMap((i) => Object.values(i))];
      assert.deepEqual(await server.refusals([...stored.map(asCreated), ...sync(req).children]), []);
    });

    test('the children echoing an older selector, serviceName and podManagementPolicy (the template still matches)', async () => {
      assert.deepEqual(await server.refusals(sync(echoedSelector()).children), []);
    });

    for (const [label, spec, mutate] of conflicts) {
      test(`the children for an immutable change: ${label}`, async () => {
        assert.deepEqual(await server.refusals(sync(withObservedSet(mutate, spec)).children), []);
      });
    }
  },
);

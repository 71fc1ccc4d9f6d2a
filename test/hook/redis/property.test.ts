// Properties over generated requests (fast-check): for every body parseHookRequest accepts,
// sync and finalize never throw, are deterministic, return only the allowed keys, never
// release the finalizer outside finalizing, never return fewer children than observed on an
// invalid spec, and for a valid spec return children labelled for the selector that the real
// kube-apiserver accepts.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { validateSpec } from '../../../src/api/validate.ts';
import { readState } from '../../../src/hook/redis/state.ts';
import {
  finalize,
  parseHookRequest,
  sync,
  type HookRequest,
  type HookResponse,
  type KubeObject,
} from '../../../src/hook/index.ts';
import { dryRunMissing, startDryRunServer, type DryRunServer } from '../../k8s/dry-run.ts';
import { loadFixture, objectMap, pod, type Json } from '../common/helpers.ts';

const RESPONSE_KEYS = new Set(['status', 'children', 'resyncAfterSeconds', 'finalized']);
const fixture = loadFixture();

const validishSpec = fc.record(
  {
    engine: fc.constantFrom('redis', 'valkey', 'keydb'),
    version: fc.constantFrom('7.2', '7.0.15', '6.2', '7.2-rc.', '8.0', '8.0.1', 'latest'),
    image: fc.constantFrom('redis:7.2-alpine', ''),
    master: fc.record({ replicas: fc.integer({ min: 0, max: 2 }) }, { requiredKeys: [] }),
    replicas: fc.oneof(fc.integer({ min: -1, max: 16 }), fc.constant('2')),
    persistence: fc.record(
      {
        enableRdb: fc.boolean(),
        enableAof: fc.boolean(),
        rdbSchedule: fc.constantFrom('*/15 * * * *', '@daily', '0 */6 * * *', '5 4 * * *'),
        size: fc.constantFrom('1Gi', '10Gi', '10240Mi', '1.5Gi', 'big'),
        storageClassName: fc.constantFrom('standard', 'fast'),
        whenDeleted: fc.constantFrom('Retain', 'Delete', 'Maybe'),
      },
      { requiredKeys: [] },
    ),
    resources: fc.record(
      { limits: fc.record({ memory: fc.constantFrom('512Mi', '1G', 1048576, 'lots') }, { requiredKeys: [] }) },
      { requiredKeys: [] },
    ),
    auth: fc.record(
      { secretName: fc.constantFrom('corp', ''), key: fc.constantFrom('pw', 'password') },
      { requiredKeys: [] },
    ),
    failover: fc.record(
      {
        minReplicasToWrite: fc.integer({ min: 0, max: 16 }),
        minReplicasMaxLagSeconds: fc.integer({ min: 0, max: 61 }),
      },
      { requiredKeys: [] },
    ),
    config: fc.dictionary(
      fc.constantFrom('maxmemory-policy', 'hz', 'requirepass', 'Bad', 'tcp-keepalive'),
      fc.constantFrom('1', 'allkeys-lru', 'a\nb'),
    ),
    nodeSelector: fc.dictionary(fc.constantFrom('disk', 'zone', 'example.com/pool'), fc.constantFrom('ssd', 'a', '')),
    tolerations: fc.constantFrom([], [{ key: 'dedicated', operator: 'Exists', effect: 'NoSchedule' }]),
    priorityClassName: fc.constantFrom('high'),
    podAnnotations: fc.dictionary(fc.constantFrom('a.example.com/x', 'b'), fc.constantFrom('1', '')),
  },
  { requiredKeys: [] },
);

/**
 * The engine and version the fixture's observed children (Redis 7.2) may move to: the same release,
 * a patch, the default, or Valkey 8.0 (either written out or left to the default).
 */
const validRelease = fc.constantFrom<Json>(
  {},
  { version: '7.2' },
  { version: '7.2.6' },
  { version: '7.2-rc.1' },
  { engine: 'valkey' },
  { engine: 'valkey', version: '8.0.1' },
);

/** Only values the schema accepts (validishSpec gives a valid spec about one run in 300). */
const validFields = fc.record(
  {
    image: fc.constantFrom('redis:7.2-alpine', 'registry.example.com/redis:7.2.4-custom'),
    master: fc.record({ replicas: fc.constant(1) }, { requiredKeys: [] }),
    replicas: fc.integer({ min: 0, max: 15 }),
    persistence: fc.record(
      {
        enableRdb: fc.boolean(),
        enableAof: fc.boolean(),
        rdbSchedule: fc.constantFrom('*/15 * * * *', '@daily', '0 */6 * * *'),
        size: fc.constantFrom('1Gi', '10Gi', '10240Mi', '1.5Gi'),
        storageClassName: fc.constantFrom('standard', 'fast'),
        whenDeleted: fc.constantFrom('Retain', 'Delete'),
      },
      { requiredKeys: [] },
    ),
    resources: fc.record(
      { limits: fc.record({ memory: fc.constantFrom('512Mi', '1G', 1048576) }, { requiredKeys: [] }) },
      { requiredKeys: [] },
    ),
    auth: fc.record(
      { secretName: fc.constant('corp'), key: fc.constantFrom('pw', 'password') },
      { requiredKeys: ['secretName'] },
    ),
    failover: fc.record(
      {
        minReplicasToWrite: fc.integer({ min: 0, max: 15 }),
        minReplicasMaxLagSeconds: fc.integer({ min: 1, max: 60 }),
      },
      { requiredKeys: [] },
    ),
    config: fc.dictionary(
      fc.constantFrom('maxmemory-policy', 'hz', 'tcp-keepalive'),
      fc.constantFrom('1', 'allkeys-lru'),
    ),
    nodeSelector: fc.dictionary(fc.constantFrom('disk', 'zone', 'example.com/pool'), fc.constantFrom('ssd', 'a', '')),
    tolerations: fc.constantFrom([], [{ key: 'dedicated', operator: 'Exists', effect: 'NoSchedule' }]),
    priorityClassName: fc.constantFrom('high'),
    podAnnotations: fc.dictionary(fc.constantFrom('a.example.com/x', 'b'), fc.constantFrom('1', '')),
  },
  { requiredKeys: [] },
);
const validSpec = fc.tuple(validFields, validRelease).map(([fields, release]) => ({ ...fields, ...release }));

const specArb = fc.oneof({ weight: 6, arbitrary: validishSpec }, { weight: 1, arbitrary: fc.anything() });

const podArb = fc.record({
  name: fc.constantFrom(
    'my-redis-master-0',
    'my-redis-replica-0',
    'my-redis-replica-1',
    'my-redis-replica-2',
    'other-master-0',
  ),
  role: fc.constantFrom('master', 'replica', undefined) as fc.Arbitrary<'master' | 'replica' | undefined>,
  ready: fc.boolean(),
  link: fc.constantFrom('up', 'down', undefined) as fc.Arbitrary<'up' | 'down' | undefined>,
  ip: fc.constantFrom('10.0.0.1', '10.0.0.2', undefined),
  phase: fc.constantFrom('Running', 'Pending', 'Failed'),
  instance: fc.constantFrom('my-redis', 'my-redis', 'other'),
  namespace: fc.constantFrom('default', 'default', 'elsewhere'),
  terminating: fc.boolean(),
});

const observedChildren: KubeObject[] = Object.values(
  fixture['children'] as Record<string, Record<string, KubeObject>>,
).flatMap((i) => Object.values(i));

/** Observed StatefulSets with damaged specs: the hook must read them defensively. */
const damagedSet = fc.record({
  field: fc.constantFrom(
    'spec',
    'selector',
    'volumeClaimTemplates',
    'serviceName',
    'podManagementPolicy',
    'persistentVolumeClaimRetentionPolicy',
    'status',
    'generation',
  ),
  value: fc.anything(),
});

const requestArb = fc.record({
  spec: specArb,
  status: fc.oneof(fc.constant(undefined), fc.anything(), fc.constant((fixture['parent'] as Json)['status'])),
  uid: fc.constantFrom('u-1', undefined),
  children: fc.subarray(observedChildren),
  damage: fc.option(damagedSet, { nil: undefined }),
  pods: fc.array(podArb, { maxLength: 6 }),
  withSecret: fc.boolean(),
  shape: fc.constantFrom('v1', 'v2') as fc.Arbitrary<'v1' | 'v2'>,
  finalizing: fc.boolean(),
});

interface Generated {
  spec: unknown;
  status: unknown;
  uid: string | undefined;
  children: KubeObject[];
  damage: { field: string; value: unknown } | undefined;
  pods: Array<Parameters<typeof pod>[0]>;
  withSecret: boolean;
  shape: 'v1' | 'v2';
  finalizing: boolean;
}

function build(g: Generated): unknown {
  const children = g.children.map((c) => {
    if (c.kind !== 'StatefulSet' || g.damage === undefined) return c;
    const copy = structuredClone(c) as Json;
    if (g.damage.field === 'spec' || g.damage.field === 'status') copy[g.damage.field] = g.damage.value;
    else if (g.damage.field === 'generation') (copy['metadata'] as Json)['generation'] = g.damage.value;
    else copy['spec'] = { ...(copy['spec'] as Json), [g.damage.field]: g.damage.value };
    return copy as KubeObject;
  });
  const related = objectMap(
    g.pods.map((p) => pod(p)),
    g.shape,
  );
  if (g.withSecret) related['Secret.v1'] = {};
  return {
    controller: fixture['controller'],
    parent: {
      apiVersion: 'redis.example.com/v1',
      kind: 'Redis',
      metadata: { name: 'my-redis', namespace: 'default', ...(g.uid !== undefined ? { uid: g.uid } : {}) },
      ...(g.spec !== undefined ? { spec: g.spec } : {}),
      ...(g.status !== undefined ? { status: g.status } : {}),
    },
    children: objectMap(children, g.shape),
    related,
    finalizing: g.finalizing,
  };
}

function checkResponse(req: HookRequest, response: HookResponse, hook: 'sync' | 'finalize'): void {
  for (const key of Object.keys(response)) assert.ok(RESPONSE_KEYS.has(key), `unexpected key ${key}`);
  if (response.finalized === true) assert.equal(req.finalizing, true, 'finalized outside finalizing');
  if (!req.finalizing)
    assert.equal('finalized' in response, false, `${hook} without finalizing must not say finalized`);
  assert.ok(Array.isArray(response.children));
  assert.equal('observedGeneration' in response.status, false);
  assert.deepEqual(
    response.status.conditions?.map((c) => c.type),
    ['Ready', 'MasterAvailable', 'ReplicasInSync', 'SpecValid', 'Updated', 'Hibernated', 'SecretsReady'],
  );
  const observed = Object.values(req.children).flatMap((i) => Object.values(i));
  // The hook's own verdict: the spec's, and whether its engine and version may replace what runs.
  const verdict = readState(req).verdict;
  if (!verdict.ok) {
    assert.ok(response.children.length >= observed.length, 'an invalid spec returned fewer children than observed');
    for (const o of observed) {
      assert.ok(
        response.children.some((c) => c.kind === o.kind && c.metadata.name === o.metadata.name),
        `${o.kind}/${o.metadata.name} dropped on an invalid spec`,
      );
    }
    assert.equal(response.status.phase, 'Failed');
  } else {
    for (const child of response.children) {
      if (req.parent.metadata.uid !== undefined)
        assert.equal(child.metadata.labels?.['controller-uid'], req.parent.metadata.uid);
    }
  }
  // Serializable and stable.
  assert.equal(JSON.stringify(JSON.parse(JSON.stringify(response))), JSON.stringify(response));
}

test('property: generated requests never make sync or finalize throw, and the contract holds', () => {
  fc.assert(
    fc.property(requestArb, (g) => {
      const parsed = parseHookRequest(build(g));
      assert.ok(parsed.ok, parsed.ok ? '' : parsed.message);
      if (!parsed.ok) return;
      for (const [hook, fn] of [
        ['sync', sync],
        ['finalize', finalize],
      ] as const) {
        const first: HookResponse = fn(parsed.request);
        checkResponse(parsed.request, first, hook);
        assert.equal(JSON.stringify(fn(parsed.request)), JSON.stringify(first), `${hook} is deterministic`);
      }
    }),
    { numRuns: 400 },
  );
});

// Every generated child goes to the server: the runs repeat the same objects so often that, judged
// once each (a verdict is kept by the object's JSON), 200 runs cost a few hundred dry runs.
describe(
  'the real kube-apiserver accepts the children (dry-run create, strict field validation)',
  { skip: dryRunMissing() ?? false },
  () => {
    let server: DryRunServer;
    before(async () => (server = await startDryRunServer()));
    after(() => server?.close());

    test('property: for a valid spec with nothing damaged, every child is accepted', async (t) => {
      const verdicts = new Map<string, string[]>();
      let children = 0;
      await fc.assert(
        fc.asyncProperty(validSpec, fc.subarray(observedChildren), async (spec, observed) => {
          const parsed = parseHookRequest(
            build({
              spec,
              status: undefined,
              uid: 'u-1',
              children: observed,
              damage: undefined,
              pods: [],
              withSecret: false,
              shape: 'v2',
              finalizing: false,
            }),
          );
          assert.ok(parsed.ok);
          assert.ok(validateSpec('my-redis', spec).ok, 'validSpec made a spec the hook refuses');
          if (!parsed.ok) return;
          const keyed = sync(parsed.request).children.map((child) => [JSON.stringify(child), child] as const);
          children += keyed.length;
          const fresh = [...new Map(keyed.filter(([key]) => !verdicts.has(key))).entries()];
          const refused = await server.refusals(fresh.map(([, child]) => child));
          for (const [key, child] of fresh)
            verdicts.set(
              key,
              refused.filter((r) => r.startsWith(`${child.kind}/${child.metadata.name}: `)),
            );
          assert.deepEqual(
            keyed.flatMap(([key]) => verdicts.get(key) ?? []),
            [],
          );
        }),
        { numRuns: 200 },
      );
      t.diagnostic(`${children} children, ${verdicts.size} distinct, each judged once`);
    });
  },
);

test('property: any JSON value is either refused by parseHookRequest or handled without a throw', () => {
  const mutatedFixture = fc.record({
    path: fc.constantFrom(
      ['parent', 'spec'],
      ['parent', 'status'],
      ['parent', 'metadata', 'labels'],
      ['parent', 'metadata', 'uid'],
      ['children'],
      ['related'],
      ['children', 'StatefulSet.apps/v1'],
      ['related', 'Pod.v1', 'default/my-redis-master-0', 'status'],
      ['related', 'Pod.v1', 'default/my-redis-master-0', 'metadata', 'labels'],
      ['related', 'Pod.v1', 'default/my-redis-replica-0', 'metadata', 'annotations'],
      ['children', 'StatefulSet.apps/v1', 'default/my-redis-master', 'spec'],
      ['finalizing'],
      ['controller'],
    ),
    value: fc.anything(),
  });
  fc.assert(
    fc.property(
      fc.oneof(
        fc.anything().map((v) => ({ raw: v })),
        mutatedFixture,
      ),
      (m) => {
        let body: unknown;
        if ('raw' in m) body = m.raw;
        else {
          body = structuredClone(fixture);
          let at = body as Json;
          for (const key of m.path.slice(0, -1)) at = (at[key] ?? {}) as Json;
          at[m.path[m.path.length - 1] as string] = m.value;
        }
        const parsed = parseHookRequest(body);
        if (!parsed.ok) {
          assert.equal(typeof parsed.message, 'string');
          return;
        }
        checkResponse(parsed.request, sync(parsed.request), 'sync');
        checkResponse(parsed.request, finalize(parsed.request), 'finalize');
      },
    ),
    { numRuns: 400 },
  );
});

test('property: any order of the children and related maps gives the same response', () => {
  const parsed = parseHookRequest(fixture);
  assert.ok(parsed.ok);
  if (!parsed.ok) return;
  const expected = JSON.stringify(sync(parsed.request));
  const entries = (map: Record<string, Record<string, KubeObject>>) =>
    Object.entries(map).flatMap(([group, inner]) =>
      Object.entries(inner).map(([key, object]) => ({ group, key, object })),
    );
  const rebuild = (list: Array<{ group: string; key: string; object: KubeObject }>) => {
    const out: Record<string, Record<string, KubeObject>> = {};
    for (const { group, key, object } of list) (out[group] ??= {})[key] = object;
    return out;
  };
  const children = entries(parsed.request.children);
  const related = entries(parsed.request.related);
  fc.assert(
    fc.property(
      fc.shuffledSubarray(children, { minLength: children.length }),
      fc.shuffledSubarray(related, { minLength: related.length }),
      (c, r) => {
        const shuffled = { ...parsed.request, children: rebuild(c), related: rebuild(r) };
        assert.equal(JSON.stringify(sync(shuffled)), expected);
      },
    ),
    { numRuns: 100 },
  );
});

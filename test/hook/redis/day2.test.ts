// The hook's share of day-2 operations: OnDelete StatefulSets (the sidecar orders rollouts), the
// rollout in status, hibernation, and the design article's scale-down rule. All from the
// steady-state fixture (test/fixtures/sync-request.json), changed one field at a time.
import assert from 'node:assert/strict';
import test from 'node:test';
import { CONFIRM_SCALE_DOWN_ANNOTATION, SWITCHOVER_STATUS_ANNOTATION } from '../../../src/api/labels.ts';
import { sync } from '../../../src/hook/index.ts';
import { guardScaleDown } from '../../../src/hook/redis/scale-guard.ts';
import { condition, find, fixtureRequest, get, type Json } from '../common/helpers.ts';

type Mutate = (body: Json) => void;
const parentOf = (body: Json) => body['parent'] as Json;
const specOf = (body: Json) => parentOf(body)['spec'] as Json;
const observedSet = (body: Json, name: string) =>
  (body['children'] as Record<string, Record<string, Json>>)['StatefulSet.apps/v1']![`default/${name}`]!;
const podOf = (body: Json, name: string) =>
  (body['related'] as Record<string, Record<string, Json>>)['Pod.v1']![`default/${name}`]!;
const labelsOf = (o: Json) => (o['metadata'] as Json)['labels'] as Record<string, string>;

/** The replica StatefulSet's controller has moved to a new template revision. */
function newReplicaRevision(body: Json): void {
  const set = observedSet(body, 'my-redis-replica');
  (set['status'] as Json)['updateRevision'] = 'my-redis-replica-55d8f7c9b6';
}

test('both StatefulSets use OnDelete: a template change restarts no pod by itself', () => {
  const response = sync(fixtureRequest((b) => void (specOf(b)['version'] = '7.4')));
  for (const name of ['my-redis-master', 'my-redis-replica']) {
    assert.deepEqual(get(find(response.children, 'StatefulSet', name), 'spec', 'updateStrategy'), { type: 'OnDelete' });
  }
});

test('status shows the rollout: updated and stale pods, and the Updated condition says what it waits for', async (t) => {
  const cases: Array<{ name: string; mutate: Mutate; stale: string[]; reason: string; message: RegExp }> = [
    {
      name: 'steady state',
      mutate: () => {},
      stale: [],
      reason: 'UpToDate',
      message: /3 of 3 pods run the current template/,
    },
    {
      name: 'new replica template, every pod Ready',
      mutate: newReplicaRevision,
      stale: ['my-redis-replica-0', 'my-redis-replica-1'],
      reason: 'RollingOut',
      message: /1 of 3 pods updated; stale: my-redis-replica-0, my-redis-replica-1/,
    },
    {
      name: 'an updated pod that is not Ready stops the rollout, and status names it',
      mutate: (b) => {
        newReplicaRevision(b);
        const p = podOf(b, 'my-redis-replica-1');
        labelsOf(p)['controller-revision-hash'] = 'my-redis-replica-55d8f7c9b6';
        for (const c of (p['status'] as Json)['conditions'] as Json[]) if (c['type'] === 'Ready') c['status'] = 'False';
      },
      stale: ['my-redis-replica-0'],
      reason: 'RolloutWaiting',
      message: /waiting for my-redis-replica-1 to become Ready: no other pod is replaced/,
    },
    {
      name: 'a StatefulSet whose controller has not seen the new spec is not reported up to date',
      mutate: (b) => {
        const set = observedSet(b, 'my-redis-master');
        (set['metadata'] as Json)['generation'] = 2;
      },
      stale: [],
      reason: 'TemplateChanging',
      message: /StatefulSet my-redis-master has a spec its controller has not processed yet, or is being recreated/,
    },
    {
      name: 'a StatefulSet being recreated (volume expansion) leaves its pods neither updated nor stale in the condition',
      mutate: (b) =>
        void delete (b['children'] as Record<string, Record<string, Json>>)['StatefulSet.apps/v1']![
          'default/my-redis-replica'
        ],
      stale: [],
      reason: 'TemplateChanging',
      message: /StatefulSet my-redis-replica has a spec its controller has not processed yet, or is being recreated/,
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const status = sync(fixtureRequest(c.mutate)).status as Json;
      if (c.reason !== 'TemplateChanging') assert.deepEqual(get(status, 'rollout', 'stalePods'), c.stale);
      const updated = condition(status, 'Updated');
      assert.equal(updated?.['reason'], c.reason);
      assert.equal(updated?.['status'], c.reason === 'UpToDate' ? 'True' : 'False');
      assert.match(String(updated?.['message']), c.message);
      assert.equal(status['phase'], 'Running', 'a rollout is not an outage');
    });
  }
});

test('hibernation scales both StatefulSets to zero, keeps every claim template, and says so', async (t) => {
  const response = sync(fixtureRequest((b) => void (specOf(b)['hibernate'] = true)));
  for (const name of ['my-redis-master', 'my-redis-replica']) {
    const set = find(response.children, 'StatefulSet', name);
    assert.equal(get(set, 'spec', 'replicas'), 0);
    assert.equal((get(set, 'spec', 'volumeClaimTemplates') as unknown[]).length, 1);
    assert.equal(get(set, 'spec', 'persistentVolumeClaimRetentionPolicy', 'whenScaled'), 'Retain');
  }
  const status = response.status as Json;
  assert.equal(status['phase'], 'Hibernated');
  await t.test('while pods still run: Hibernating, naming them', () => {
    assert.equal(condition(status, 'Hibernated')?.['reason'], 'Hibernating');
    assert.match(
      String(condition(status, 'Hibernated')?.['message']),
      /waiting for my-redis-master-0, my-redis-replica-0, my-redis-replica-1 to stop/,
    );
    assert.equal(condition(status, 'Ready')?.['reason'], 'Hibernated');
  });
  await t.test('once every pod is gone: Hibernated=True', () => {
    const gone = sync(
      fixtureRequest((b) => {
        specOf(b)['hibernate'] = true;
        (b['related'] as Json)['Pod.v1'] = {};
      }),
    ).status as Json;
    assert.equal(condition(gone, 'Hibernated')?.['status'], 'True');
    assert.equal(gone['phase'], 'Hibernated');
    assert.equal(
      condition(gone, 'ReplicasInSync')?.['status'],
      'True',
      'no replica is missing: none is wanted while hibernated',
    );
  });
  await t.test('waking up asks for the pods again', () => {
    const awake = sync(
      fixtureRequest((b) => {
        observedSet(b, 'my-redis-replica')['spec'] = {
          ...(observedSet(b, 'my-redis-replica')['spec'] as Json),
          replicas: 0,
        };
        observedSet(b, 'my-redis-master')['spec'] = {
          ...(observedSet(b, 'my-redis-master')['spec'] as Json),
          replicas: 0,
        };
        (b['related'] as Json)['Pod.v1'] = {};
      }),
    );
    assert.equal(get(find(awake.children, 'StatefulSet', 'my-redis-replica'), 'spec', 'replicas'), 2);
    assert.equal(get(find(awake.children, 'StatefulSet', 'my-redis-master'), 'spec', 'replicas'), 1);
    assert.equal(condition(awake.status, 'Hibernated')?.['reason'], 'Awake');
  });
});

test('the scale-down rule: more than half in one step is refused unless the annotation names the new count', async (t) => {
  const cases: Array<{ wanted: number; running: number | undefined; confirm?: string; ok: boolean }> = [
    { wanted: 3, running: 2, ok: true },
    { wanted: 1, running: 2, ok: true },
    { wanted: 2, running: 4, ok: true },
    { wanted: 1, running: 3, ok: false },
    { wanted: 0, running: 1, ok: false },
    { wanted: 0, running: 1, confirm: '0', ok: true },
    { wanted: 1, running: 4, confirm: '2', ok: false },
    { wanted: 1, running: undefined, ok: true },
    { wanted: 1, running: 0, ok: true },
  ];
  for (const c of cases) {
    await t.test(
      `${String(c.running)} -> ${c.wanted}${c.confirm !== undefined ? ` confirmed ${c.confirm}` : ''}: ${c.ok ? 'allowed' : 'refused'}`,
      () => {
        const verdict = guardScaleDown(
          c.wanted,
          c.running,
          c.confirm !== undefined ? { [CONFIRM_SCALE_DOWN_ANNOTATION]: c.confirm } : undefined,
        );
        assert.equal(verdict.ok, c.ok);
        assert.equal(verdict.replicas, c.ok ? c.wanted : c.running);
        if (!verdict.ok)
          assert.match(verdict.message, new RegExp(`spec.replicas: scaling down from ${c.running} to ${c.wanted}`));
      },
    );
  }

  await t.test(
    'through sync: the replica StatefulSet is held where the hook last applied it, and SpecValid says why',
    () => {
      const refused = sync(
        fixtureRequest((b) => {
          specOf(b)['replicas'] = 0;
          // Someone else scaled the set to 3: the baseline is what the hook applied (2), not the drift.
          const set = observedSet(b, 'my-redis-replica');
          set['spec'] = { ...(set['spec'] as Json), replicas: 3 };
        }),
      );
      assert.equal(get(find(refused.children, 'StatefulSet', 'my-redis-replica'), 'spec', 'replicas'), 2);
      assert.equal(condition(refused.status, 'SpecValid')?.['reason'], 'ScaleDownRefused');
      assert.match(
        String(condition(refused.status, 'SpecValid')?.['message']),
        new RegExp(`${CONFIRM_SCALE_DOWN_ANNOTATION}=0`),
      );
    },
  );
  await t.test('a drift of the StatefulSet (someone scaled it to 7) is repaired, not taken for a scale-down', () => {
    const repaired = sync(
      fixtureRequest((b) => {
        const set = observedSet(b, 'my-redis-replica');
        set['spec'] = { ...(set['spec'] as Json), replicas: 7 };
      }),
    );
    assert.equal(get(find(repaired.children, 'StatefulSet', 'my-redis-replica'), 'spec', 'replicas'), 2);
    assert.equal(condition(repaired.status, 'SpecValid')?.['status'], 'True');
  });
  await t.test('through sync: confirmed, it goes ahead', () => {
    const confirmed = sync(
      fixtureRequest((b) => {
        specOf(b)['replicas'] = 0;
        const meta = parentOf(b)['metadata'] as Json;
        meta['annotations'] = { [CONFIRM_SCALE_DOWN_ANNOTATION]: '0' };
      }),
    );
    assert.equal(get(find(confirmed.children, 'StatefulSet', 'my-redis-replica'), 'spec', 'replicas'), 0);
    assert.equal(condition(confirmed.status, 'SpecValid')?.['status'], 'True');
  });
});

test("the sidecar's switchover record is shown in status", () => {
  const status = sync(
    fixtureRequest((b) => {
      (parentOf(b)['metadata'] as Json)['annotations'] = {
        [SWITCHOVER_STATUS_ANNOTATION]: 'any: Done: my-redis-replica-0 is master',
      };
    }),
  ).status as Json;
  assert.equal(status['switchover'], 'any: Done: my-redis-replica-0 is master');
});

test('spec.networkPolicy adds a NetworkPolicy: the Redis pods, the operator and the labelled clients may reach 6379, the monitoringFrom peers the metrics port, nothing else', async (t) => {
  const policyFor = (networkPolicy: Json, monitoring?: Json) =>
    find(
      sync(
        fixtureRequest((b) => {
          specOf(b)['networkPolicy'] = networkPolicy;
          if (monitoring) specOf(b)['monitoring'] = monitoring;
        }),
      ).children,
      'NetworkPolicy',
      'my-redis-ingress',
    );
  await t.test('absent by default', () => {
    assert.equal(
      sync(fixtureRequest()).children.some((c) => c.kind === 'NetworkPolicy'),
      false,
    );
  });
  await t.test('asked for: 6379 from the three peers, the metrics port closed (no monitoringFrom)', () => {
    const policy = policyFor({ allowFrom: { 'app.kubernetes.io/name': 'shop' } });
    const pods = {
      'app.kubernetes.io/instance': 'my-redis',
      'app.kubernetes.io/managed-by': 'redis-operator',
      'app.kubernetes.io/name': 'redis',
    };
    assert.deepEqual(get(policy, 'spec', 'podSelector', 'matchLabels'), pods);
    assert.deepEqual(get(policy, 'spec', 'policyTypes'), ['Ingress']);
    assert.deepEqual(get(policy, 'spec', 'ingress'), [
      {
        from: [
          { podSelector: { matchLabels: pods } },
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'redis-operator' } },
            podSelector: { matchLabels: { 'app.kubernetes.io/name': 'redis-operator' } },
          },
          { podSelector: { matchLabels: { 'app.kubernetes.io/name': 'shop' } } },
        ],
        ports: [{ protocol: 'TCP', port: 6379 }],
      },
    ]);
  });
  const prometheus = {
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } },
    podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } },
  };
  const cases: Array<[string, Json[], Json | undefined, Json[] | undefined]> = [
    ['namespace and pods: both must match', [prometheus], undefined, [prometheus]],
    [
      'pods of the Redis namespace',
      [{ podSelector: { matchLabels: { app: 'prom' } } }],
      undefined,
      [{ podSelector: { matchLabels: { app: 'prom' } } }],
    ],
    [
      'every pod of some namespaces, and a second peer',
      [{ namespaceSelector: { matchLabels: { team: 'obs' } } }, prometheus],
      undefined,
      [{ namespaceSelector: { matchLabels: { team: 'obs' } } }, prometheus],
    ],
    ['empty list: closed', [], undefined, undefined],
    [
      'without the exporter there is no metrics port to open',
      [prometheus],
      { exporter: { enabled: false } },
      undefined,
    ],
  ];
  for (const [label, monitoringFrom, monitoring, from] of cases) {
    await t.test(`monitoringFrom: ${label}`, () => {
      const ingress = get(
        policyFor({ allowFrom: { app: 'shop' }, monitoringFrom }, monitoring),
        'spec',
        'ingress',
      ) as Json[];
      assert.deepEqual(ingress[0]!['ports'], [{ protocol: 'TCP', port: 6379 }]);
      assert.deepEqual(
        ingress.slice(1),
        from === undefined ? [] : [{ from, ports: [{ protocol: 'TCP', port: 9121 }] }],
      );
    });
  }
  for (const [label, monitoringFrom, field] of [
    [
      'a bad namespace label key',
      [{ namespaceSelector: { matchLabels: { 'bad key!': 'x' } } }],
      'spec.networkPolicy.monitoringFrom[0].namespaceSelector.matchLabels.bad key!',
    ],
    [
      'a bad pod label value',
      [prometheus, { podSelector: { matchLabels: { app: 'no spaces' } } }],
      'spec.networkPolicy.monitoringFrom[1].podSelector.matchLabels.app',
    ],
    [
      'an empty peer (it would mean everyone)',
      [{}],
      'spec.networkPolicy.monitoringFrom.0: must NOT have fewer than 1 properties',
    ],
  ] as const) {
    await t.test(`refused, naming the field, nothing changed: ${label}`, () => {
      const response = sync(
        fixtureRequest(
          (b) =>
            void (specOf(b)['networkPolicy'] = {
              allowFrom: { app: 'shop' },
              monitoringFrom: monitoringFrom as unknown as Json[],
            }),
        ),
      );
      assert.equal(condition(response.status, 'SpecValid')?.['reason'], 'InvalidSpec');
      assert.ok(
        String(condition(response.status, 'SpecValid')?.['message']).includes(field),
        String(condition(response.status, 'SpecValid')?.['message']),
      );
    });
  }
  await t.test('a bad label is refused naming the field, and nothing is changed', () => {
    const response = sync(
      fixtureRequest((b) => void (specOf(b)['networkPolicy'] = { allowFrom: { 'bad key!': 'x' } })),
    );
    assert.equal(condition(response.status, 'SpecValid')?.['reason'], 'InvalidSpec');
    assert.match(
      String(condition(response.status, 'SpecValid')?.['message']),
      /spec\.networkPolicy\.allowFrom\.bad key!/,
    );
  });
});

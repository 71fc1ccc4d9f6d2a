// Status from observed pods: phase, master, replicas, conditions; deterministic and clock-free.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sync, type KubeObject } from '../../../src/hook/index.ts';
import { formatSecretReport, SECRETS_ANNOTATION, type ReportedSecret } from '../../../src/api/secret-report.ts';
import { condition, designSpec, get, healthyPods, pod, redis, request, type Json } from '../common/helpers.ts';

const CONDITION_ORDER = [
  'Ready',
  'MasterAvailable',
  'ReplicasInSync',
  'SpecValid',
  'Updated',
  'Hibernated',
  'SecretsReady',
];

interface Case {
  name: string;
  pods: KubeObject[];
  spec?: Json;
  expect: {
    phase: string;
    masterStatus: string;
    master?: string;
    masterIP?: string;
    replicaStatus: Record<string, string>;
    readyReplicas: number;
    replicas: number;
    ready: [string, string];
    masterAvailable: [string, string];
    inSync: [string, string];
    /** Substrings the Ready message must contain. */
    readyMessage?: string[];
  };
}

const cases: Case[] = [
  {
    name: 'no pods yet',
    pods: [],
    expect: {
      phase: 'Pending',
      masterStatus: 'None',
      replicaStatus: {},
      readyReplicas: 0,
      replicas: 0,
      ready: ['False', 'NoMaster'],
      masterAvailable: ['False', 'NoMaster'],
      inSync: ['False', 'ReplicasMissing'],
    },
  },
  {
    name: 'master and both replicas Ready',
    pods: healthyPods(),
    expect: {
      phase: 'Running',
      masterStatus: 'Ready',
      master: 'my-redis-master-0',
      masterIP: '10.244.1.12',
      replicaStatus: { 'my-redis-replica-0': 'Ready', 'my-redis-replica-1': 'Ready' },
      readyReplicas: 2,
      replicas: 2,
      ready: ['True', 'AllReady'],
      masterAvailable: ['True', 'MasterReady'],
      inSync: ['True', 'ReplicasInSync'],
    },
  },
  {
    name: 'a replica whose link is down',
    pods: [
      pod({ name: 'my-redis-master-0', role: 'master', link: 'up', ip: '10.244.1.12' }),
      pod({ name: 'my-redis-replica-0', role: 'replica', link: 'up', ip: '10.244.2.9' }),
      pod({ name: 'my-redis-replica-1', role: 'replica', link: 'down', ip: '10.244.3.15', ready: true }),
    ],
    expect: {
      phase: 'Running',
      masterStatus: 'Ready',
      master: 'my-redis-master-0',
      masterIP: '10.244.1.12',
      replicaStatus: { 'my-redis-replica-0': 'Ready', 'my-redis-replica-1': 'Syncing' },
      readyReplicas: 1,
      replicas: 2,
      ready: ['False', 'ReplicasSyncing'],
      masterAvailable: ['True', 'MasterReady'],
      inSync: ['False', 'ReplicasSyncing'],
      readyMessage: ['my-redis-replica-1 (Syncing)', '1/2'],
    },
  },
  {
    name: 'two pods labelled master',
    pods: [
      pod({ name: 'my-redis-master-0', role: 'master', ip: '10.244.1.12' }),
      pod({ name: 'my-redis-replica-0', role: 'master', ip: '10.244.2.9' }),
      pod({ name: 'my-redis-replica-1', role: 'replica', link: 'up', ip: '10.244.3.15' }),
    ],
    expect: {
      phase: 'Pending',
      masterStatus: 'NotReady',
      replicaStatus: { 'my-redis-replica-1': 'Ready' },
      readyReplicas: 1,
      replicas: 1,
      ready: ['False', 'MultipleMasters'],
      masterAvailable: ['False', 'MultipleMasters'],
      inSync: ['False', 'ReplicasMissing'],
      readyMessage: ['my-redis-master-0, my-redis-replica-0'],
    },
  },
  {
    name: 'no pod labelled master (before the sidecar acts)',
    pods: [
      pod({ name: 'my-redis-master-0', ready: false, ip: '10.244.1.12' }),
      pod({ name: 'my-redis-replica-0', ready: false, ip: '10.244.2.9' }),
      pod({ name: 'my-redis-replica-1', ready: false, ip: '10.244.3.15' }),
    ],
    expect: {
      phase: 'Pending',
      masterStatus: 'None',
      replicaStatus: {
        'my-redis-master-0': 'NotReady',
        'my-redis-replica-0': 'NotReady',
        'my-redis-replica-1': 'NotReady',
      },
      readyReplicas: 0,
      replicas: 3,
      ready: ['False', 'NoMaster'],
      masterAvailable: ['False', 'NoMaster'],
      inSync: ['False', 'ReplicasNotReady'],
    },
  },
  {
    name: 'master labelled but not Ready',
    pods: [
      pod({ name: 'my-redis-master-0', role: 'master', ready: false, ip: '10.244.1.12' }),
      pod({ name: 'my-redis-replica-0', role: 'replica', link: 'up' }),
      pod({ name: 'my-redis-replica-1', role: 'replica', link: 'up' }),
    ],
    expect: {
      phase: 'Pending',
      masterStatus: 'NotReady',
      master: 'my-redis-master-0',
      masterIP: '10.244.1.12',
      replicaStatus: { 'my-redis-replica-0': 'Ready', 'my-redis-replica-1': 'Ready' },
      readyReplicas: 2,
      replicas: 2,
      ready: ['False', 'MasterNotReady'],
      masterAvailable: ['False', 'MasterNotReady'],
      inSync: ['True', 'ReplicasInSync'],
    },
  },
  {
    name: 'after a failover the master is replica-0 and master-0 rejoined as replica',
    pods: [
      pod({ name: 'my-redis-master-0', role: 'replica', link: 'up', ip: '10.244.1.40' }),
      pod({ name: 'my-redis-replica-0', role: 'master', link: 'up', ip: '10.244.2.9' }),
      pod({ name: 'my-redis-replica-1', role: 'replica', link: 'up', ip: '10.244.3.15' }),
    ],
    expect: {
      phase: 'Running',
      masterStatus: 'Ready',
      master: 'my-redis-replica-0',
      masterIP: '10.244.2.9',
      replicaStatus: { 'my-redis-master-0': 'Ready', 'my-redis-replica-1': 'Ready' },
      readyReplicas: 2,
      replicas: 2,
      ready: ['True', 'AllReady'],
      masterAvailable: ['True', 'MasterReady'],
      inSync: ['True', 'ReplicasInSync'],
    },
  },
  {
    name: 'pods of another Redis and of another namespace are ignored',
    pods: [
      ...healthyPods(),
      pod({ name: 'other-master-0', role: 'master', instance: 'other', ip: '10.244.9.1' }),
      pod({ name: 'my-redis-replica-5', role: 'master', namespace: 'elsewhere', ip: '10.244.9.2' }),
    ],
    expect: {
      phase: 'Running',
      masterStatus: 'Ready',
      master: 'my-redis-master-0',
      masterIP: '10.244.1.12',
      replicaStatus: { 'my-redis-replica-0': 'Ready', 'my-redis-replica-1': 'Ready' },
      readyReplicas: 2,
      replicas: 2,
      ready: ['True', 'AllReady'],
      masterAvailable: ['True', 'MasterReady'],
      inSync: ['True', 'ReplicasInSync'],
    },
  },
  {
    name: 'a terminating master, a pending replica and a replica catching up',
    pods: [
      pod({ name: 'my-redis-master-0', role: 'master', terminating: true, ip: '10.244.1.12' }),
      pod({ name: 'my-redis-replica-0', role: 'replica', phase: 'Pending', ready: false }),
      pod({ name: 'my-redis-replica-1', role: 'replica', link: 'up', ready: false, ip: '10.244.3.15' }),
    ],
    expect: {
      phase: 'Pending',
      masterStatus: 'NotReady',
      master: 'my-redis-master-0',
      masterIP: '10.244.1.12',
      replicaStatus: { 'my-redis-replica-0': 'NotReady', 'my-redis-replica-1': 'Syncing' },
      readyReplicas: 0,
      replicas: 2,
      ready: ['False', 'MasterNotReady'],
      masterAvailable: ['False', 'MasterNotReady'],
      inSync: ['False', 'ReplicasSyncing'],
    },
  },
  {
    name: 'no replicas requested, master Ready',
    spec: { ...designSpec(), replicas: 0 },
    pods: [pod({ name: 'my-redis-master-0', role: 'master', ip: '10.244.1.12' })],
    expect: {
      phase: 'Running',
      masterStatus: 'Ready',
      master: 'my-redis-master-0',
      masterIP: '10.244.1.12',
      replicaStatus: {},
      readyReplicas: 0,
      replicas: 0,
      ready: ['True', 'AllReady'],
      masterAvailable: ['True', 'MasterReady'],
      inSync: ['True', 'ReplicasInSync'],
    },
  },
];

for (const c of cases) {
  test(`status: ${c.name}`, () => {
    const { status } = sync(request({ parent: redis(c.spec ?? designSpec()), related: c.pods }));
    assert.equal(status.phase, c.expect.phase);
    assert.equal(status.masterStatus, c.expect.masterStatus);
    assert.equal(status.master, c.expect.master);
    assert.equal(status.masterIP, c.expect.masterIP);
    assert.deepEqual(status.replicaStatus, c.expect.replicaStatus);
    assert.deepEqual(Object.keys(status.replicaStatus ?? {}), Object.keys(c.expect.replicaStatus).sort());
    assert.equal(status.readyReplicas, c.expect.readyReplicas);
    assert.equal(status.replicas, c.expect.replicas);
    assert.deepEqual(status.summary, {
      replicas: `${c.expect.readyReplicas}/${String((c.spec ?? designSpec())['replicas'])}`,
    });
    assert.equal(
      status.selector,
      'app.kubernetes.io/instance=my-redis,app.kubernetes.io/managed-by=redis-operator,app.kubernetes.io/name=redis',
    );
    assert.deepEqual(
      status.conditions?.map((x) => x.type),
      CONDITION_ORDER,
    );
    const pick = (type: string) => [get(condition(status, type), 'status'), get(condition(status, type), 'reason')];
    assert.deepEqual(pick('Ready'), c.expect.ready);
    assert.deepEqual(pick('MasterAvailable'), c.expect.masterAvailable);
    assert.deepEqual(pick('ReplicasInSync'), c.expect.inSync);
    assert.deepEqual(pick('SpecValid'), ['True', 'Valid']);
    for (const part of c.expect.readyMessage ?? [])
      assert.ok(String(get(condition(status, 'Ready'), 'message')).includes(part), part);
    assert.equal('observedGeneration' in status, false);
  });
}

test('status.summary.replicas, the REPLICAS column: replicas Ready and linked, of spec.replicas (never the pods that exist)', async (t) => {
  const cases: Array<[string, Json, KubeObject[], string]> = [
    ['healthy, one replica more wanted', { ...designSpec(), replicas: 3 }, healthyPods(), '2/3'],
    ['healthy', designSpec(), healthyPods(), '2/2'],
    [
      'one replica syncing',
      designSpec(),
      [
        pod({ name: 'my-redis-master-0', role: 'master', link: 'up' }),
        pod({ name: 'my-redis-replica-0', role: 'replica', link: 'up' }),
        pod({ name: 'my-redis-replica-1', role: 'replica', link: 'down' }),
      ],
      '1/2',
    ],
    ['hibernating: none wanted', { ...designSpec(), hibernate: true }, [], '0/0'],
  ];
  for (const [name, spec, pods, want] of cases)
    await t.test(name, () =>
      assert.equal(sync(request({ parent: redis(spec), related: pods })).status.summary?.replicas, want),
    );
});

test('status never carries observedGeneration, even when the previous status had it', () => {
  const parent = redis(designSpec(), { status: { observedGeneration: 7, phase: 'Running' } });
  const { status } = sync(request({ parent, related: healthyPods() }));
  assert.equal('observedGeneration' in status, false);
});

test('lastTransitionTime: carried over while the status is unchanged, from pod data when it changes, never a clock', () => {
  const pods = [
    pod({ name: 'my-redis-master-0', role: 'master', ip: '10.244.1.12', readySince: '2025-01-15T10:00:31Z' }),
    pod({ name: 'my-redis-replica-0', role: 'replica', link: 'up', readySince: '2025-01-15T10:00:40Z' }),
    pod({ name: 'my-redis-replica-1', role: 'replica', link: 'up', readySince: '2025-01-15T10:00:35Z' }),
  ];
  const first = sync(request({ related: pods })).status;
  assert.equal(get(condition(first, 'MasterAvailable'), 'lastTransitionTime'), '2025-01-15T10:00:31Z');
  assert.equal(get(condition(first, 'ReplicasInSync'), 'lastTransitionTime'), '2025-01-15T10:00:40Z');
  assert.equal(get(condition(first, 'Ready'), 'lastTransitionTime'), '2025-01-15T10:00:40Z');
  assert.equal(get(condition(first, 'SpecValid'), 'lastTransitionTime'), undefined);

  // Unchanged status: the previous time wins even though the pods say otherwise.
  const previous = {
    conditions: [
      { type: 'Ready', status: 'True', reason: 'AllReady', message: '', lastTransitionTime: '2024-12-01T00:00:00Z' },
    ],
  };
  const second = sync(request({ parent: redis(designSpec(), { status: previous }), related: pods })).status;
  assert.equal(get(condition(second, 'Ready'), 'lastTransitionTime'), '2024-12-01T00:00:00Z');

  // Changed status: a previous False does not carry over.
  const flipped = {
    conditions: [
      { type: 'Ready', status: 'False', reason: 'NoMaster', message: '', lastTransitionTime: '2024-12-01T00:00:00Z' },
    ],
  };
  const third = sync(request({ parent: redis(designSpec(), { status: flipped }), related: pods })).status;
  assert.equal(get(condition(third, 'Ready'), 'lastTransitionTime'), '2025-01-15T10:00:40Z');

  // Feeding the output back as the previous status is a fixed point (no status-write loop).
  const again = sync(request({ parent: redis(designSpec(), { status: first }), related: pods })).status;
  assert.deepEqual(again, first);
});

test('a garbage previous status is ignored, not trusted', async (t) => {
  for (const previous of ['x', 42, [], { conditions: 'no' }, { conditions: [null, 1, { type: 5 }] }]) {
    await t.test(JSON.stringify(previous), () => {
      const { status } = sync(request({ parent: redis(designSpec(), { status: previous }), related: healthyPods() }));
      assert.equal(status.phase, 'Running');
    });
  }
});

/** A Redis whose parent carries the sidecar's report (the hook is never sent a Secret). */
const reported = (entries: ReportedSecret[], spec: Json = designSpec()) =>
  redis(spec, { metadata: { annotations: { [SECRETS_ANNOTATION]: formatSecretReport(entries) } } });
const found = (name: string, keys = ['password'], rv = '1', unwritable: string[] = []): ReportedSecret => ({
  name,
  resourceVersion: rv,
  keys,
  unwritable,
});
const PASSWORDS = [found('my-redis-auth'), found('my-redis-operator')];

test('a missing auth Secret, as the sidecar reports it, explains why no master comes up', () => {
  const notReady = [pod({ name: 'my-redis-master-0', ready: false, phase: 'Pending' })];
  const ready = (parent: Json) => condition(sync(request({ parent, related: notReady })).status, 'Ready');
  const missing = ready(reported([{ name: 'my-redis-auth', missing: true }, found('my-redis-operator')]));
  assert.equal(get(missing, 'reason'), 'AuthSecretMissing');
  assert.match(String(get(missing, 'message')), /my-redis-auth not found/);
  assert.match(
    String(get(ready(reported([found('my-redis-auth', []), found('my-redis-operator')])), 'message')),
    /has no key password/,
  );
  // Before any report, nothing is claimed.
  assert.equal(get(ready(redis()), 'reason'), 'NoMaster');
});

test("the sidecar's bootstrap record explains why no master comes up yet (BootstrapWaiting); ignored once a master is labelled, or when not a record", async (t) => {
  const notReady = [pod({ name: 'my-redis-master-0', ready: false, phase: 'Pending' })];
  const annotated = (value: string, related = notReady) =>
    sync(
      request({
        parent: redis(designSpec(), { metadata: { annotations: { 'redis.example.com/bootstrap-status': value } } }),
        related,
      }),
    ).status;
  await t.test('waiting', () => {
    const status = annotated('Waiting: my-redis-replica-1 (volume bound, pod Pending)');
    for (const type of ['Ready', 'MasterAvailable']) {
      assert.equal(get(condition(status, type), 'reason'), 'BootstrapWaiting');
      assert.match(
        String(get(condition(status, type), 'message')),
        /waits for pods .*: my-redis-replica-1 \(volume bound, pod Pending\) \(annotation redis\.example\.com\/bootstrap-without/,
      );
    }
  });
  await t.test('a master is labelled: the record is moot', () => {
    assert.equal(
      get(
        condition(annotated('Waiting: my-redis-replica-1 (loading its data set)', healthyPods()), 'MasterAvailable'),
        'reason',
      ),
      'MasterReady',
    );
  });
  for (const value of ['Waiting: x\u0000y', 'waiting: x', `Waiting: ${'x'.repeat(3000)}`, 'Waiting: ']) {
    await t.test(`not a record: ${JSON.stringify(value.slice(0, 20))}`, () => {
      assert.equal(get(condition(annotated(value), 'MasterAvailable'), 'reason'), 'NoMaster');
    });
  }
});

test('spec.tls: a missing or incomplete TLS Secret explains why no master comes up (TLSSecretMissing), naming it', () => {
  const notReady = [pod({ name: 'my-redis-master-0', ready: false, phase: 'Pending' })];
  const withTls = (entries: ReportedSecret[]) => {
    const c = condition(
      sync(
        request({ parent: reported(entries, { ...designSpec(), tls: { secretName: 'corp-tls' } }), related: notReady }),
      ).status,
      'Ready',
    );
    return `${String(get(c, 'reason'))}: ${String(get(c, 'message'))}`;
  };
  assert.match(
    withTls([...PASSWORDS, { name: 'corp-tls', missing: true }]),
    /^TLSSecretMissing: Secret corp-tls not found \(spec\.tls\.secretName\); pods cannot start without their certificate/,
  );
  assert.match(
    withTls([...PASSWORDS, found('corp-tls', ['tls.crt'])]),
    /^TLSSecretMissing: Secret corp-tls has no key tls\.key, ca\.crt/,
  );
  assert.match(withTls([...PASSWORDS, found('corp-tls', ['tls.crt', 'tls.key', 'ca.crt'])]), /^NoMaster/);
  assert.match(
    withTls([
      { name: 'my-redis-auth', missing: true },
      found('my-redis-operator'),
      { name: 'corp-tls', missing: true },
    ]),
    /^AuthSecretMissing/,
    'the passwords are told first',
  );
});

test("status.secrets: the reported Secrets' resourceVersions, sorted by name, only those the spec names; absent before a report and with an invalid spec", () => {
  const entries = [
    found('my-redis-operator', ['password'], '41'),
    found('my-redis-auth', ['password'], '7'),
    found('not-named', ['password'], '9'),
  ];
  const expected = [
    { name: 'my-redis-auth', resourceVersion: '7' },
    { name: 'my-redis-operator', resourceVersion: '41' },
  ];
  assert.deepEqual(
    get(sync(request({ parent: reported(entries), related: healthyPods() })).status, 'secrets'),
    expected,
  );
  assert.equal(
    get(
      sync(request({ parent: reported(entries, { ...designSpec(), replicas: -1 }), related: healthyPods() })).status,
      'secrets',
    ),
    undefined,
  );
  assert.equal(get(sync(request({ related: healthyPods() })).status, 'secrets'), undefined);
  const none = sync(
    request({
      parent: reported([
        { name: 'my-redis-auth', missing: true },
        { name: 'my-redis-operator', missing: true },
      ]),
      related: healthyPods(),
    }),
  );
  assert.deepEqual(get(none.status, 'secrets'), [], 'reported, none exist: an empty list');
});

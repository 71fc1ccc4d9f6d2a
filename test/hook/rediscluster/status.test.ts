// The RedisCluster status from what the pods' cluster-node records and readiness say: phase,
// counts, per-shard master/replicas/slots/health, coverage, the reshard record, memory, and each
// condition's verdict; carried-over transition times, and independence from map order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RESHARD_ANNOTATION } from '../../../src/api/rediscluster-names.ts';
import type { KubeObject } from '../../../src/hook/index.ts';
import { condition, objectMap } from '../common/helpers.ts';
import {
  articleSpec,
  AT,
  redisCluster,
  redisClusterPod,
  evenSlots,
  healthyRedisClusterPods,
  limitedSpec,
  MAXMEMORY,
  NAME,
  observedFor,
  podName,
  request,
  sync,
  type Json,
} from './helpers.ts';
import { syncRedisCluster } from '../../../src/hook/index.ts';

const status = (
  pods: readonly KubeObject[],
  spec: unknown = limitedSpec(),
  annotations?: Record<string, string>,
  previous?: unknown,
) =>
  sync({
    parent: redisCluster(spec, {
      ...(annotations ? { annotations } : {}),
      ...(previous !== undefined ? { status: previous } : {}),
    }),
    children: observedFor(spec),
    related: pods,
  }).status;

const replacePod = (pods: KubeObject[], replacement: KubeObject) =>
  pods.map((p) => (p.metadata.name === replacement.metadata.name ? replacement : p));

test('a healthy cluster: Running, every slot covered, every shard Healthy with its master, replicas and slot ranges', () => {
  const s = status(healthyRedisClusterPods());
  assert.equal(s.phase, 'Running');
  assert.equal(s.shards, 3);
  assert.equal(s.readyMasters, 3);
  assert.equal(s.readyReplicas, 6);
  assert.deepEqual(s.summary, { masters: '3/3', replicas: '6/6' }, 'the MASTERS and REPLICAS columns');
  assert.equal(s.slotsCovered, 16384);
  assert.deepEqual(s.shardStatus?.[1], {
    index: 1,
    master: podName(1, 0),
    replicas: [podName(1, 1), podName(1, 2)],
    slots: '5461-10921',
    slotCount: 5461,
    health: 'Healthy',
  });
  assert.equal(
    s.selector,
    `app.kubernetes.io/instance=${NAME},app.kubernetes.io/managed-by=redis-operator,app.kubernetes.io/name=redis-cluster`,
  );
  for (const type of [
    'Ready',
    'SlotsCovered',
    'ShardsReady',
    'Resharded',
    'SpecValid',
    'Updated',
    'FailoverConfigured',
    'Autoscaling',
  ])
    assert.equal(condition(s, type)?.['status'], 'True', `${type}: ${JSON.stringify(condition(s, type))}`);
  assert.deepEqual(
    s.conditions?.map((c) => c.type),
    [
      'Ready',
      'SlotsCovered',
      'ShardsReady',
      'Resharded',
      'SpecValid',
      'Updated',
      'FailoverConfigured',
      'Autoscaling',
      'Hibernated',
      'SecretsReady',
    ],
  );
});

test('health of one shard, and what it does to coverage and the phase', async (t) => {
  const cases: Array<
    [
      string,
      (pods: KubeObject[]) => KubeObject[],
      { health: string; master?: string; covered: number; phase: string; ready: string },
    ]
  > = [
    [
      'its master is not Ready: NoMaster, its slots uncovered',
      (p) => replacePod(p, redisClusterPod({ shard: 1, ordinal: 0, ready: false, record: { slots: evenSlots(1, 3) } })),
      { health: 'NoMaster', master: podName(1, 0), covered: 16384 - 5461, phase: 'Pending', ready: 'SlotsUncovered' },
    ],
    [
      'its master is flagged failed by the cluster',
      (p) =>
        replacePod(p, redisClusterPod({ shard: 1, ordinal: 0, record: { slots: evenSlots(1, 3), linkUp: false } })),
      { health: 'NoMaster', covered: 16384 - 5461, phase: 'Pending', ready: 'SlotsUncovered' },
    ],
    [
      'after a failover: pod 2 is master, pod 0 its replica',
      (p) =>
        replacePod(
          replacePod(
            p,
            redisClusterPod({
              shard: 1,
              ordinal: 2,
              record: { role: 'master', slots: evenSlots(1, 3), masterId: null },
            }),
          ),
          redisClusterPod({ shard: 1, ordinal: 0, record: { role: 'replica', masterId: nodeIdOf(1, 2) } }),
        ).map((x) =>
          x.metadata.name === podName(1, 1)
            ? redisClusterPod({ shard: 1, ordinal: 1, record: { role: 'replica', masterId: nodeIdOf(1, 2) } })
            : x,
        ),
      { health: 'Healthy', master: podName(1, 2), covered: 16384, phase: 'Running', ready: 'AllReady' },
    ],
    [
      'a replica is not linked: Degraded, still covered',
      (p) => replacePod(p, redisClusterPod({ shard: 1, ordinal: 2, record: { linkUp: false } })),
      { health: 'Degraded', master: podName(1, 0), covered: 16384, phase: 'Running', ready: 'ReplicasMissing' },
    ],
  ];
  for (const [name, edit, want] of cases) {
    await t.test(name, () => {
      const s = status(edit(healthyRedisClusterPods()));
      const shard = s.shardStatus?.[1];
      assert.equal(shard?.health, want.health);
      if (want.master !== undefined) assert.equal(shard?.master, want.master);
      assert.equal(s.slotsCovered, want.covered);
      assert.equal(s.phase, want.phase);
      assert.equal(condition(s, 'Ready')?.['reason'], want.ready);
      if (want.covered < 16384)
        assert.match(String(condition(s, 'SlotsCovered')?.['message']), /not served: 5461-10921$/);
    });
  }
});

function nodeIdOf(shard: number, ordinal: number): string {
  return Buffer.from(`n${shard}-${ordinal}`).toString('hex').padEnd(40, '0').slice(0, 40);
}

test('before the sidecar forms the cluster: Pending, NotFormed, every shard Joining or without master', () => {
  const pods = [0, 1, 2].flatMap((s) =>
    [0, 1, 2].map((o) => redisClusterPod({ shard: s, ordinal: o, ready: false, record: o === 0 ? {} : null })),
  );
  const s = status(pods);
  assert.equal(s.phase, 'Pending');
  assert.equal(s.slotsCovered, 0);
  assert.equal(condition(s, 'Ready')?.['reason'], 'NotFormed');
  assert.deepEqual(s.summary, { masters: '0/3', replicas: '0/6' }, 'ready of wanted, not of what exists');
  assert.equal(condition(s, 'Resharded')?.['reason'], 'NotFormed');
  assert.deepEqual(
    s.shardStatus?.map((x) => x.health),
    ['NoMaster', 'NoMaster', 'NoMaster'],
  );
});

test('the reshard record: Running is phase Resharding; Done and Refused are reported in Resharded', async (t) => {
  const cases: Array<[string, string, string, string, RegExp]> = [
    [
      'running',
      `3->4 Running moved=1200/4096 at=${AT}`,
      'Resharding',
      'False',
      /resharding 3 -> 4 shards: 1200 of 4096 slots moved/,
    ],
    ['done', `3->4 Done moved=4096/4096 at=${AT}`, 'Running', 'True', /last reshard 3 -> 4 done/],
    [
      'refused',
      `3->2 Refused moved=0/0 at=${AT}: below the floor`,
      'Running',
      'True',
      /the last reshard was refused: below the floor/,
    ],
  ];
  for (const [name, value, phase, resharded, message] of cases) {
    await t.test(name, () => {
      const s = status(healthyRedisClusterPods(), limitedSpec(), { [RESHARD_ANNOTATION]: value });
      assert.equal(s.phase, phase);
      assert.equal(s.resharding, value);
      assert.equal(condition(s, 'Resharded')?.['status'], resharded);
      assert.match(String(condition(s, 'Resharded')?.['message']), message);
    });
  }
});

test('a new shard without slots is Joining, and Resharded waits for the sidecar to move slots to it', () => {
  const spec = limitedSpec({ master: { replicas: 4 } });
  const pods = [...healthyRedisClusterPods(), ...[0, 1, 2].map((o) => redisClusterPod({ shard: 3, ordinal: o }))];
  const s = status(pods, spec);
  assert.equal(s.shardStatus?.[3]?.health, 'Joining');
  assert.equal(condition(s, 'Resharded')?.['reason'], 'ShardsJoining');
  assert.equal(s.phase, 'Running', 'every slot is still covered');
});

test('memory: utilization over the masters that serve slots, and the Autoscaling recommendation', () => {
  const used = Math.round(MAXMEMORY * 0.9);
  const s = status(healthyRedisClusterPods(3, 2, used));
  assert.equal(s.memoryUtilization, 90);
  const autoscaling = condition(s, 'Autoscaling');
  assert.equal(autoscaling?.['reason'], 'Active');
  assert.match(
    String(autoscaling?.['message']),
    /^between 3 and 5 shards \(autoscaling\.minReplicas 2 is taken as 3: .*\), target 70% of maxmemory; now: memory 90% of maxmemory over 3 shards, target 70%: 4 shards$/,
  );
});

test('FailoverConfigured and Autoscaling say how the article’s blocks were applied', async (t) => {
  // Nodes started without a memory limit report maxmemory 0.
  const noMaxmemory = healthyRedisClusterPods().map((p) => {
    const annotations = p.metadata.annotations as Record<string, string>;
    for (const k of Object.keys(annotations))
      annotations[k] = annotations[k]!.replace(/ mem=(\d+)\/\d+ /, ' mem=$1/0 ');
    return p;
  });
  const cases: Array<[string, Json, KubeObject[], string, string, RegExp]> = [
    [
      'the article (no memory limit)',
      articleSpec(),
      noMaxmemory,
      'Autoscaling',
      'NoMemoryLimit',
      /set resources\.limits\.memory/,
    ],
    [
      'autoscaling off',
      limitedSpec({ autoscaling: { enabled: false } }),
      healthyRedisClusterPods(),
      'Autoscaling',
      'Disabled',
      /autoscaling\.enabled is false/,
    ],
    [
      'sentinel mapped',
      articleSpec(),
      noMaxmemory,
      'FailoverConfigured',
      'ClusterElection',
      /downAfterMilliseconds 5000 -> cluster-node-timeout 5000 ms.*failoverTimeout 10000 ms.*no Sentinel runs/,
    ],
    [
      'no replicas',
      limitedSpec({ replicas: 0 }),
      healthyRedisClusterPods(),
      'FailoverConfigured',
      'NoReplicas',
      /^spec\.replicas is 0/,
    ],
  ];
  for (const [name, spec, pods, type, reason, message] of cases) {
    await t.test(name, () => {
      const c = condition(status(pods, spec), type);
      assert.equal(c?.['reason'], reason);
      assert.match(String(c?.['message']), message);
    });
  }
});

test('Updated names the pods on an older template and how the sidecar rolls them out, or the pod it waits for', async (t) => {
  const stale = redisClusterPod({ shard: 2, ordinal: 1, revision: 'old', record: {} });
  await t.test('rolling out', () => {
    const c = condition(status(replacePod(healthyRedisClusterPods(), stale)), 'Updated');
    assert.equal(c?.['status'], 'False');
    assert.equal(c?.['reason'], 'RollingOut');
    assert.match(
      String(c?.['message']),
      /^8 of 9 pods updated; stale: order-cache-shard-2-1 \(one pod at a time across the shards, replicas first, each shard's master last after a CLUSTER FAILOVER/,
    );
  });
  await t.test('waiting for a pod that is not Ready', () => {
    const notReady = redisClusterPod({ shard: 0, ordinal: 1, ready: false, record: {} });
    const c = condition(status(replacePod(replacePod(healthyRedisClusterPods(), stale), notReady)), 'Updated');
    assert.equal(c?.['reason'], 'RolloutWaiting');
    assert.match(String(c?.['message']), /waiting for order-cache-shard-0-1 to become Ready/);
  });
});

test('a condition keeps its lastTransitionTime while its status holds, and takes an observed one when it changes', () => {
  const previous = {
    conditions: [
      {
        type: 'SpecValid',
        status: 'True',
        reason: 'Valid',
        message: 'spec is valid',
        lastTransitionTime: '2026-01-01T00:00:00Z',
      },
    ],
  };
  const s = status(healthyRedisClusterPods(), limitedSpec(), undefined, previous);
  assert.equal(condition(s, 'SpecValid')?.['lastTransitionTime'], '2026-01-01T00:00:00Z');
  assert.equal(condition(s, 'Ready')?.['lastTransitionTime'], AT, 'the pods’ Ready transition time');
  assert.equal(
    s.conditions?.some((c) => 'observedGeneration' in c),
    false,
  );
  assert.equal('observedGeneration' in s, false);
});

test('the status does not depend on the order of the maps Metacontroller sends', () => {
  const children = observedFor(limitedSpec());
  const pods = healthyRedisClusterPods();
  const forward = syncRedisCluster(request({ parent: redisCluster(limitedSpec()), children, related: pods }));
  const req = request({
    parent: redisCluster(limitedSpec()),
    children: [...children].reverse(),
    related: [...pods].reverse(),
    shape: 'v1',
  });
  req.related = objectMap([...pods].reverse(), 'v1');
  assert.equal(JSON.stringify(syncRedisCluster(req)), JSON.stringify(forward));
});

test('pods of another cluster, another namespace or the Redis kind are not counted', () => {
  const strangers = [
    redisClusterPod({ shard: 0, ordinal: 5, name: 'other-shard-0-0' }),
    {
      ...redisClusterPod({ shard: 0, ordinal: 6 }),
      metadata: { ...redisClusterPod({ shard: 0, ordinal: 6 }).metadata, namespace: 'elsewhere' },
    },
  ];
  (strangers[0]!.metadata.labels as Json)['app.kubernetes.io/instance'] = 'other';
  const s = status([...healthyRedisClusterPods(), ...strangers]);
  assert.equal(s.readyReplicas, 6);
  assert.equal(condition(s, 'Updated')?.['message'], '9 of 9 pods run the current template');
});

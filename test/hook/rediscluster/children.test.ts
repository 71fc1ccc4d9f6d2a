// The RedisCluster hook's children for a valid spec: the set and its order, redis.conf, the shard
// StatefulSets (pods, ports, probes, volumes, labels, affinity), the Services, the per-shard PDBs
// and backup CronJobs; every child accepted by the real kube-apiserver; the same request twice
// gives the same bytes; and the observed immutable fields are echoed, not rebuilt.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CLUSTER_BUS_PORT, SHARD_LABEL } from '../../../src/api/rediscluster-names.ts';
import { CONTROLLER_UID_LABEL } from '../../../src/api/labels.ts';
import { REDIS_CLUSTER_START_SCRIPT, RESTART_HOLD_SCRIPT } from '../../../src/hook/rediscluster/statefulset.ts';
import { REDIS_FEED_SCRIPT } from '../../../src/hook/common/redis-start.ts';
import { PASSWORD_CHECK_SCRIPT } from '../../../src/hook/common/password-check.ts';
import { dryRunMissing, rewrites, startDryRunServer, type DryRunServer } from '../../k8s/dry-run.ts';
import { emptyLists, find, get } from '../common/helpers.ts';
import {
  articleSpec,
  redisCluster,
  limitedSpec,
  named,
  NAME,
  NS,
  observedFor,
  sync,
  UID,
  type Json,
} from './helpers.ts';

const children = (spec: unknown = articleSpec()) => sync({ parent: redisCluster(spec) }).children;
const conf = (spec: unknown) => String(get(find(children(spec), 'ConfigMap', `${NAME}-config`), 'data', 'redis.conf'));
const shardSet = (spec: unknown, i = 0) => find(children(spec), 'StatefulSet', `${NAME}-shard-${i}`);
const container = (set: unknown, name: string) =>
  (get(set, 'spec', 'template', 'spec', 'containers') as Json[]).find((c) => c['name'] === name);

test("the article's RedisCluster: ConfigMap, Services, then per shard its StatefulSet, PDB and backup CronJob", () => {
  assert.deepEqual(named(children()), [
    `ConfigMap/${NAME}-config`,
    `Service/${NAME}-headless`,
    `Service/${NAME}`,
    `Service/${NAME}-metrics`,
    ...[0, 1, 2].flatMap((i) => [
      `StatefulSet/${NAME}-shard-${i}`,
      `PodDisruptionBudget/${NAME}-shard-${i}`,
      `CronJob/${NAME}-shard-${i}-backup`,
    ]),
  ]);
});

const SPECS: Array<[string, unknown]> = [
  ['the article', articleSpec()],
  ['no persistence, no monitoring', limitedSpec({ persistence: { enableRdb: false }, monitoring: { enabled: false } })],
];

test('every child carries the controller-uid and the cluster labels, never name=redis', async (t) => {
  for (const [, spec] of SPECS) {
    for (const child of children(spec)) {
      await t.test(`${child.kind}/${child.metadata.name}`, () => {
        assert.equal(child.metadata.labels?.[CONTROLLER_UID_LABEL], UID);
        assert.equal(child.metadata.labels?.['app.kubernetes.io/name'], 'redis-cluster');
        assert.equal(child.metadata.namespace, NS);
      });
    }
  }
});

describe(
  'the real kube-apiserver accepts every child (dry-run create, strict field validation)',
  { skip: dryRunMissing() ?? false },
  () => {
    let server: DryRunServer;
    before(async () => (server = await startDryRunServer({ namespaces: [NS] })));
    after(() => server?.close());
    for (const [label, spec] of SPECS)
      test(label, async () => assert.deepEqual(await server.refusals(children(spec)), []));
    // Metacontroller writes a child again on every sync when the server stores it otherwise than sent.
    test('each child is stored as the hook returned it: nothing dropped or rewritten', async () => {
      for (const [, spec] of SPECS) {
        for (const child of children(spec))
          assert.deepEqual(
            rewrites(child, (await server.dryRun(child)).object),
            [],
            `${child.kind}/${child.metadata.name}`,
          );
      }
    });
  },
);

test('the same request twice gives byte-identical answers', () => {
  assert.equal(JSON.stringify(sync({ parent: redisCluster() })), JSON.stringify(sync({ parent: redisCluster() })));
});

test('redis.conf: cluster mode as the operator runs it, from the spec', async (t) => {
  const cases: Array<[string, unknown, string[], string[]]> = [
    [
      'the article',
      articleSpec(),
      [
        'cluster-enabled yes',
        'dir /data',
        'cluster-config-file nodes.conf',
        `cluster-port ${CLUSTER_BUS_PORT}`,
        'cluster-node-timeout 5000',
        'cluster-require-full-coverage yes',
        'cluster-allow-replica-migration no',
        'save 900 1',
        'appendonly no',
      ],
      ['replicaof', 'requirepass', 'masterauth', 'maxmemory'],
    ],
    [
      'downAfterMilliseconds is the node timeout',
      limitedSpec({ sentinel: { downAfterMilliseconds: 1500 } }),
      ['cluster-node-timeout 1500'],
      [],
    ],
    ['maxmemory from the memory limit', limitedSpec(), [`maxmemory ${Math.floor(1024 ** 3 * 0.8)}`], []],
    [
      'AOF on, RDB off',
      limitedSpec({ persistence: { enableRdb: false, enableAof: true } }),
      ['save ""', 'appendonly yes', 'appendfsync everysec'],
      [],
    ],
    [
      'user directives last, sorted',
      limitedSpec({ config: { 'maxmemory-policy': 'allkeys-lru', hz: '20' } }),
      ['# from spec.config', 'hz 20', 'maxmemory-policy allkeys-lru'],
      [],
    ],
  ];
  for (const [name, spec, present, absent] of cases) {
    await t.test(name, () => {
      const lines = conf(spec).split('\n');
      for (const line of present) assert.ok(lines.includes(line), `${name}: missing "${line}" in\n${lines.join('\n')}`);
      for (const word of absent)
        assert.ok(!lines.some((l) => l.startsWith(word)), `${name}: "${word}" must not be in redis.conf`);
    });
  }
  assert.deepEqual(
    conf(limitedSpec({ config: { hz: '20' } }))
      .split('\n')
      .slice(-3),
    ['# from spec.config', 'hz 20', ''],
  );
});

test('a shard StatefulSet: 1 + replicas pods in parallel, OnDelete, its shard label on set, selector and pods', () => {
  const set = shardSet(articleSpec(), 1);
  assert.equal(get(set, 'spec', 'replicas'), 3);
  assert.equal(get(set, 'spec', 'podManagementPolicy'), 'Parallel');
  assert.deepEqual(get(set, 'spec', 'updateStrategy'), { type: 'OnDelete' });
  assert.equal(get(set, 'spec', 'serviceName'), `${NAME}-headless`);
  assert.equal(set.metadata.labels?.[SHARD_LABEL], '1');
  assert.equal(get(set, 'spec', 'selector', 'matchLabels', SHARD_LABEL), '1');
  assert.equal(get(set, 'spec', 'template', 'metadata', 'labels', SHARD_LABEL), '1');
  assert.equal(get(set, 'spec', 'template', 'metadata', 'labels', 'app.kubernetes.io/name'), 'redis-cluster');
  assert.equal(
    get(set, 'spec', 'template', 'metadata', 'labels', 'redis.example.com/role'),
    undefined,
    'the role is the sidecar’s',
  );
  assert.equal(
    get(shardSet(limitedSpec({ replicas: 0 })), 'spec', 'replicas'),
    1,
    'replicas: 0 is a shard of its master alone',
  );
});

test('the redis container: both ports, passwords from the Secrets on stdin, the node announces its pod IP', () => {
  const redis = container(shardSet(articleSpec()), 'redis')!;
  assert.deepEqual(redis['ports'], [
    { name: 'redis', containerPort: 6379, protocol: 'TCP' },
    { name: 'cluster-bus', containerPort: 16379, protocol: 'TCP' },
  ]);
  assert.deepEqual(redis['command'], ['sh', '-c', REDIS_CLUSTER_START_SCRIPT]);
  assert.ok(
    REDIS_CLUSTER_START_SCRIPT.includes(REDIS_FEED_SCRIPT.slice(0, -4)),
    "the Redis pod's feed of redis-server, one line more",
  );
  assert.equal(redis['workingDir'], '/data', 'it runs in the data directory, where nodes.conf is');
  assert.ok(
    REDIS_CLUSTER_START_SCRIPT.startsWith(`${PASSWORD_CHECK_SCRIPT}\n${RESTART_HOLD_SCRIPT}\n`),
    'the password check, then the restart hold (restart-hold.test.ts runs it)',
  );
  assert.match(REDIS_CLUSTER_START_SCRIPT, /\ncluster-announce-ip "\$POD_IP"\nEOF$/);
  const env = Object.fromEntries((redis['env'] as Json[]).map((e) => [e['name'], e]));
  assert.deepEqual(get(env['REDIS_PASSWORD'], 'valueFrom', 'secretKeyRef'), { name: `${NAME}-auth`, key: 'password' });
  assert.deepEqual(get(env['OPERATOR_PASSWORD'], 'valueFrom', 'secretKeyRef'), {
    name: `${NAME}-operator`,
    key: 'password',
  });
  assert.equal(
    get(env['REDIS_PASSWORD_SOURCE'], 'value'),
    `Secret ${NAME}-auth, key password`,
    'where it came from, named by the start script if unwritable',
  );
  assert.equal(get(env['OPERATOR_PASSWORD_SOURCE'], 'value'), `Secret ${NAME}-operator, key password`);
  assert.deepEqual(get(env['POD_IP'], 'valueFrom', 'fieldRef', 'fieldPath'), 'status.podIP');
  // The article's cluster: node timeout 5000 + failoverTimeout 10000 + 2 s.
  assert.equal(get(env['RESTART_HOLD_SECONDS'], 'value'), '17');
  const alone = container(shardSet({ ...articleSpec(), replicas: 0 }), 'redis')!;
  assert.equal(
    get(
      (alone['env'] as Json[]).find((e) => e['name'] === 'RESTART_HOLD_SECONDS'),
      'value',
    ),
    '0',
    'no replica to fail over to: no wait',
  );
  const readiness = String((get(redis, 'readinessProbe', 'exec', 'command') as string[])[2]);
  assert.match(readiness, /cluster info/);
  assert.match(readiness, /cluster_state:ok/);
  assert.match(readiness, /master_link_status:up/);
  const auth = container(shardSet({ ...articleSpec(), auth: { secretName: 'mine', key: 'pw' } }), 'redis')!;
  assert.deepEqual(
    get(
      (auth['env'] as Json[]).find((e) => e['name'] === 'REDIS_PASSWORD'),
      'valueFrom',
      'secretKeyRef',
    ),
    { name: 'mine', key: 'pw' },
  );
});

test('volumes: a claim per pod with persistence (labelled as the pods, for finalize), an emptyDir without', () => {
  const persistent = shardSet(limitedSpec({ persistence: { size: '5Gi', storageClassName: 'fast' } }), 2);
  const claim = (get(persistent, 'spec', 'volumeClaimTemplates') as Json[])[0]!;
  assert.equal(get(claim, 'metadata', 'name'), 'data');
  assert.equal(get(claim, 'metadata', 'labels', SHARD_LABEL), '2');
  assert.equal(get(claim, 'metadata', 'labels', 'app.kubernetes.io/name'), 'redis-cluster');
  assert.equal(get(claim, 'spec', 'resources', 'requests', 'storage'), '5Gi');
  assert.equal(get(claim, 'spec', 'storageClassName'), 'fast');
  assert.ok(!(get(persistent, 'spec', 'template', 'spec', 'volumes') as Json[]).some((v) => v['name'] === 'data'));
  const cache = shardSet(limitedSpec({ persistence: { enableRdb: false } }));
  assert.equal(get(cache, 'spec', 'volumeClaimTemplates'), undefined);
  assert.deepEqual(
    (get(cache, 'spec', 'template', 'spec', 'volumes') as Json[]).find((v) => v['name'] === 'data'),
    { name: 'data', emptyDir: {} },
  );
});

test('affinity: by default the pods of a shard prefer separate nodes (and the cluster’s pods somewhat); spec.affinity replaces it', () => {
  const terms = get(
    shardSet(articleSpec(), 1),
    'spec',
    'template',
    'spec',
    'affinity',
    'podAntiAffinity',
    'preferredDuringSchedulingIgnoredDuringExecution',
  ) as Json[];
  assert.equal(terms.length, 2);
  assert.equal(terms[0]!['weight'], 100);
  assert.equal(get(terms[0], 'podAffinityTerm', 'labelSelector', 'matchLabels', SHARD_LABEL), '1');
  assert.equal(get(terms[0], 'podAffinityTerm', 'topologyKey'), 'kubernetes.io/hostname');
  assert.equal(get(terms[1], 'podAffinityTerm', 'labelSelector', 'matchLabels', SHARD_LABEL), undefined);
  const mine = {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [{ key: 'pool', operator: 'In', values: ['redis'] }] }],
      },
    },
  };
  assert.deepEqual(get(shardSet({ ...articleSpec(), affinity: mine }), 'spec', 'template', 'spec', 'affinity'), mine);
});

test('the exporter runs beside redis while monitoring and its exporter are on, with the metrics Service', async (t) => {
  const cases: Array<[string, Json, boolean]> = [
    ['the article (monitoring on)', articleSpec(), true],
    ['monitoring off', { ...articleSpec(), monitoring: { enabled: false } }, false],
    ['exporter off', { ...articleSpec(), monitoring: { exporter: { enabled: false } } }, false],
  ];
  for (const [name, spec, on] of cases) {
    await t.test(name, () => {
      assert.equal(container(shardSet(spec), 'exporter') !== undefined, on);
      assert.equal(
        container(shardSet(spec), 'metrics-proxy') !== undefined,
        on,
        'the proxy alone serves the metrics port',
      );
      assert.equal(named(children(spec)).includes(`Service/${NAME}-metrics`), on);
      const env = (container(shardSet(spec), 'redis')!['env'] as Json[]).map((e) => e['name']);
      assert.equal(env.includes('EXPORTER_PASSWORD'), on, "redis starts with the exporter's user");
      if (on) {
        const exporterEnv = container(shardSet(spec), 'exporter')!['env'] as Json[];
        assert.equal(
          exporterEnv.find((e) => e['name'] === 'REDIS_USER')?.['value'],
          'redis-exporter',
          "never the operator's user",
        );
        assert.equal(
          exporterEnv.find((e) => e['name'] === 'REDIS_EXPORTER_WEB_LISTEN_ADDRESS')?.['value'],
          '127.0.0.1:9122',
        );
      }
    });
  }
});

test('Services: headless with both ports and not-ready addresses, the client ClusterIP on 6379 over every pod', () => {
  const all = children();
  const headless = find(all, 'Service', `${NAME}-headless`);
  assert.equal(get(headless, 'spec', 'clusterIP'), 'None');
  assert.equal(get(headless, 'spec', 'publishNotReadyAddresses'), true);
  assert.deepEqual(
    (get(headless, 'spec', 'ports') as Json[]).map((p) => [p['name'], p['port']]),
    [
      ['redis', 6379],
      ['cluster-bus', 16379],
    ],
  );
  const client = find(all, 'Service', NAME);
  assert.equal(get(client, 'spec', 'type'), 'ClusterIP');
  assert.deepEqual(
    (get(client, 'spec', 'ports') as Json[]).map((p) => p['port']),
    [6379],
  );
  assert.deepEqual(get(client, 'spec', 'selector'), {
    'app.kubernetes.io/name': 'redis-cluster',
    'app.kubernetes.io/instance': NAME,
    'app.kubernetes.io/managed-by': 'redis-operator',
  });
});

test('a PDB per shard: one pod at a time, only while the rest of the shard is healthy', () => {
  const pdb = find(children(), 'PodDisruptionBudget', `${NAME}-shard-2`);
  assert.equal(get(pdb, 'spec', 'maxUnavailable'), 1);
  assert.equal(get(pdb, 'spec', 'selector', 'matchLabels', SHARD_LABEL), '2');
  assert.equal(get(pdb, 'spec', 'unhealthyPodEvictionPolicy'), 'IfHealthyBudget');
});

test('no child carries an empty list (the API server drops it; Metacontroller would rewrite the child on every resync)', () => {
  assert.deepEqual(
    children().flatMap((c) => emptyLists(c, `${c.kind}/${c.metadata.name}`)),
    [],
  );
});

test("a backup CronJob per shard: the article's schedule and retention, the shard's pods replicas first, keys under shard-<i>", () => {
  const cron = find(children(), 'CronJob', `${NAME}-shard-1-backup`);
  assert.equal(get(cron, 'spec', 'schedule'), '0 */6 * * *');
  assert.equal(get(cron, 'spec', 'concurrencyPolicy'), 'Forbid');
  const pod = get(cron, 'spec', 'jobTemplate', 'spec', 'template') as Json;
  assert.equal(
    get(pod, 'metadata', 'labels', 'app.kubernetes.io/name'),
    'redis-cluster-backup',
    'never the pod selector of a Redis or of the cluster',
  );
  assert.equal(get(pod, 'metadata', 'labels', SHARD_LABEL), '1');
  const env = Object.fromEntries(
    ((get(pod, 'spec', 'containers') as Json[])[0]!['env'] as Json[]).map((e) => [
      e['name'],
      e['value'] ?? e['valueFrom'],
    ]),
  );
  assert.equal(env['BACKUP_SHARD'], '1');
  assert.equal(env['REDIS_NAME'], NAME);
  assert.equal(env['RETENTION_DAYS'], '7');
  assert.equal(env['S3_BUCKET'], 'redis-backups');
  const svc = `${NAME}-headless.${NS}.svc:6379`;
  assert.equal(env['REDIS_HOSTS'], [1, 2, 0].map((k) => `${NAME}-shard-1-${k}.${svc}`).join(','));
  assert.deepEqual(env['REDIS_PASSWORD'], { secretKeyRef: { name: `${NAME}-operator`, key: 'password' } });
  assert.ok(!named(children(limitedSpec())).some((n) => n.startsWith('CronJob/')), 'no spec.backup, no CronJob');
});

test('scaling shards up returns a StatefulSet, PDB and CronJob for each new index', () => {
  const spec = { ...articleSpec(), master: { replicas: 5 } };
  const sets = named(sync({ parent: redisCluster(spec), children: observedFor() }).children).filter((n) =>
    n.startsWith('StatefulSet/'),
  );
  assert.deepEqual(
    sets,
    [0, 1, 2, 3, 4].map((i) => `StatefulSet/${NAME}-shard-${i}`),
  );
});

test('observed immutable fields are echoed; a spec they cannot honour is a conflict naming the field', () => {
  const observed = observedFor(limitedSpec());
  const set = observed.find((c) => c.kind === 'StatefulSet')!;
  (get(set, 'spec', 'selector', 'matchLabels') as Json)['extra'] = 'kept';
  const answer = sync({ parent: redisCluster(limitedSpec({ persistence: { size: '2Gi' } })), children: observed });
  const echoed = find(answer.children, 'StatefulSet', set.metadata.name);
  assert.equal(get(echoed, 'spec', 'selector', 'matchLabels', 'extra'), 'kept');
  assert.equal(
    get(echoed, 'spec', 'template', 'metadata', 'labels', 'extra'),
    'kept',
    'the template still matches the echoed selector',
  );
  assert.equal(
    get(echoed, 'spec', 'volumeClaimTemplates', 0, 'spec', 'resources', 'requests', 'storage'),
    '1Gi',
    'claim templates are never rebuilt',
  );
  const shrink = sync({ parent: redisCluster(limitedSpec({ persistence: { size: '512Mi' } })), children: observed });
  const specValid = (shrink.status.conditions ?? []).find((c) => c.type === 'SpecValid');
  assert.equal(specValid?.status, 'False');
  assert.equal(specValid?.reason, 'ImmutableFieldChanged');
  assert.match(
    specValid?.message ?? '',
    /^spec\.persistence\.size: 512Mi requested but StatefulSet order-cache-shard-0/,
  );
});

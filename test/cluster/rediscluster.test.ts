// Loopback octet: 127.0.80.x. A RedisCluster through the whole stand-in: the CRD served and
// defaulted, the Metacontroller stand-in running metacontroller/rediscluster-controller.yaml
// against the real hook service, and the kubelet running each pod's container as written (the
// start script, redis.conf, the probes) as a real redis-server in cluster mode. No sidecar runs:
// the test forms the cluster with plain cluster commands and writes the cluster-node records the
// sidecar would, so what is checked is the hook's side of the contract: the pods come up as
// cluster nodes that only the operator's user can manage, nodes.conf lands in the data volume,
// readiness follows the cluster's state, status follows the records, a shard's backup reads its
// replica and stores under shard-<i>/, and a shard beyond spec.master.replicas is removed only
// once its pods report no data and the reshard record says Done for the count asked for.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { CLUSTER_NODE_ANNOTATION, clusterNodeRecord, parseSlotRanges, RESHARD_ANNOTATION, reshardRecord } from '../../src/api/cluster-names.ts';
import { BACKUP_MAIN, runEntry } from '../backup/support.ts';
import { startCluster } from './index.ts';

const NS = 'default';
const NAME = 'shop-cache';
const OPERATOR_PASSWORD = 'op-secret';
const PASSWORD = 'client-secret';
const rec = (v: unknown) => (typeof v === 'object' && v !== null ? (v as Record<string, any>) : {});

function node(ip: string, username = 'redis-operator', password = OPERATOR_PASSWORD): Redis {
  const c = new Redis({
    host: ip,
    port: 6379,
    username,
    password,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  c.on('error', () => {});
  return c;
}

async function call(ip: string, ...args: string[]): Promise<string> {
  const c = node(ip);
  await c.connect();
  try {
    return String(await c.call(args[0]!, ...args.slice(1)));
  } finally {
    c.disconnect();
  }
}

test(
  'a RedisCluster on the stand-in: cluster-mode pods from the hook, readiness and status from the cluster, scale-down held while a shard may hold data',
  { timeout: 240_000 },
  async (t) => {
    const c = await startCluster({ subnet: 80, sidecars: 0 });
    t.after(() => c.stop());
    // The sidecar creates these; here the test does.
    for (const [name, password] of [
      [`${NAME}-auth`, PASSWORD],
      [`${NAME}-operator`, OPERATOR_PASSWORD],
    ] as const)
      await c.apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: NS }, stringData: { password } });
    const spec = { version: '7.0', master: { replicas: 3 }, replicas: 1, monitoring: { enabled: false }, sentinel: { downAfterMilliseconds: 2000 } };
    await c.apply({ apiVersion: 'redis.example.com/v1', kind: 'RedisCluster', metadata: { name: NAME, namespace: NS }, spec });

    const podsOf = () => c.list('pods', { namespace: NS, labelSelector: `app.kubernetes.io/name=redis-cluster,app.kubernetes.io/instance=${NAME}` });
    const ipOf = (pod: string) => String(rec(c.get('pods', pod, NS)?.['status'])['podIP'] ?? '');
    const status = () => rec(c.get('redisclusters', NAME, NS)?.['status']);
    const cond = (type: string) => (status()['conditions'] as Array<Record<string, string>> | undefined)?.find((x) => x['type'] === type);

    await t.test('the pods start as cluster nodes; the status says the cluster is not formed', async () => {
      await c.waitFor(
        async () => {
          const pods = podsOf();
          if (pods.length !== 6) return false;
          for (const p of pods) if ((await call(ipOf(p.metadata.name), 'PING').catch(() => '')) !== 'PONG') return false;
          return true;
        },
        90_000,
        'six pods answering as the operator user',
      );
      await c.waitFor(() => cond('Ready')?.['reason'] === 'NotFormed' && status()['shards'] === 3, 30_000, 'status NotFormed with 3 shards');
      const info = await call(ipOf(`${NAME}-shard-0-0`), 'CLUSTER', 'INFO');
      assert.match(info, /cluster_enabled:1|cluster_state:fail/);
      assert.equal(await call(ipOf(`${NAME}-shard-0-0`), 'CONFIG', 'GET', 'cluster-node-timeout').catch((e: Error) => e.message), 'cluster-node-timeout,2000');
      // The client password works for the default user, and is nowhere in the ConfigMap.
      const client = node(ipOf(`${NAME}-shard-0-0`), 'default', PASSWORD);
      await client.connect();
      assert.equal(await client.ping(), 'PONG');
      client.disconnect();
      assert.ok(!JSON.stringify(c.get('configmaps', `${NAME}-config`, NS)).includes(PASSWORD));
      assert.ok(
        podsOf().every((p) => !(rec(p['status'])['conditions'] as Array<Record<string, string>>).some((x) => x['type'] === 'Ready' && x['status'] === 'True')),
        'not Ready before the cluster is formed',
      );
    });

    const ids = new Map<string, string>();
    await t.test(
      'formed by hand (meet, slots to pod 0 of each shard, pod 1 its replica): every pod turns Ready, nodes.conf is in the data volume',
      async () => {
        const pods = podsOf()
          .map((p) => p.metadata.name)
          .sort();
        for (const p of pods) ids.set(p, await call(ipOf(p), 'CLUSTER', 'MYID'));
        const first = ipOf(pods[0]!);
        for (const p of pods.slice(1)) await call(first, 'CLUSTER', 'MEET', ipOf(p), '6379');
        const ranges = [
          [0, 5460],
          [5461, 10922],
          [10923, 16383],
        ];
        for (let s = 0; s < 3; s++) await call(ipOf(`${NAME}-shard-${s}-0`), 'CLUSTER', 'ADDSLOTSRANGE', String(ranges[s]![0]), String(ranges[s]![1]));
        await c.waitFor(
          async () => {
            for (const p of pods) if ((await call(ipOf(p), 'CLUSTER', 'NODES').catch(() => '')).trim().split('\n').length !== 6) return false;
            return true;
          },
          30_000,
          'every node knows the six',
        );
        for (let s = 0; s < 3; s++) await call(ipOf(`${NAME}-shard-${s}-1`), 'CLUSTER', 'REPLICATE', ids.get(`${NAME}-shard-${s}-0`)!);
        await c.waitFor(
          () =>
            podsOf().every((p) =>
              (rec(p['status'])['conditions'] as Array<Record<string, string>> | undefined)?.some((x) => x['type'] === 'Ready' && x['status'] === 'True'),
            ),
          60_000,
          'every pod Ready (cluster_state ok, masters and linked replicas)',
        );
        // dir is the pod's data volume (/data, which the kubelet maps to the claim's directory): nodes.conf is there.
        for (const p of pods) {
          const dir = (await call(ipOf(p), 'CONFIG', 'GET', 'dir')).split(',')[1]!;
          assert.ok(existsSync(path.join(dir, 'nodes.conf')), `${p}: ${dir}/nodes.conf`);
          assert.match(dir, /data|pvc|claim|volumes/i, `${p}: ${dir} is a volume`);
        }
      },
    );

    await t.test('with the records the sidecar writes, the status is Running with every slot covered', async () => {
      for (const p of podsOf()) {
        const line = (await call(ipOf(p.metadata.name), 'CLUSTER', 'NODES')).split('\n').find((l) => l.includes('myself'))!;
        const [id, , flags, , , , , , ...slots] = line.trim().split(' ');
        const master = flags!.includes('master');
        const masterId = master ? null : line.split(' ')[3]!;
        const record = clusterNodeRecord({
          id: id!,
          role: master ? 'master' : 'replica',
          slots: parseSlotRanges(slots.join(',') || '-') ?? [],
          masterId,
          linkUp: true,
          usedMemory: 1_000_000,
          maxMemory: 0,
          keys: 0,
          at: new Date().toISOString(),
        });
        await c.apply({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: p.metadata.name, namespace: NS, annotations: { [CLUSTER_NODE_ANNOTATION]: record } },
        });
      }
      await c.waitFor(
        () => status()['phase'] === 'Running' && status()['slotsCovered'] === 16384 && status()['readyMasters'] === 3 && status()['readyReplicas'] === 3,
        30_000,
        'Running, 3 masters and 3 replicas',
      );
      assert.equal(cond('Ready')?.['status'], 'True', JSON.stringify(cond('Ready')));
      assert.deepEqual(
        (status()['shardStatus'] as Array<Record<string, unknown>>).map((s) => [s['index'], s['master'], s['slots'], s['health']]),
        [
          [0, `${NAME}-shard-0-0`, '0-5460', 'Healthy'],
          [1, `${NAME}-shard-1-0`, '5461-10922', 'Healthy'],
          [2, `${NAME}-shard-2-0`, '10923-16383', 'Healthy'],
        ],
      );
    });

    await t.test("a shard's backup, as its CronJob runs it: read from the replica though the master is listed first, stored under shard-<i>/", async (tt) => {
      const writer = new Cluster([{ host: ipOf(`${NAME}-shard-0-0`), port: 6379 }], {
        redisOptions: { username: 'redis-operator', password: OPERATOR_PASSWORD },
      });
      writer.on('error', () => {});
      for (let i = 0; i < 300; i++) await writer.set(`order:${i}`, `v${i}`);
      writer.disconnect();
      const claim = mkdtempSync(path.join(tmpdir(), 'cluster-backup-'));
      tt.after(() => rmSync(claim, { recursive: true, force: true }));
      const cron = c.get('cronjobs', `${NAME}-shard-0-backup`, NS);
      assert.equal(cron, undefined, 'no spec.backup here: no CronJob');
      const run = await runEntry(BACKUP_MAIN, {
        REDIS_NAMESPACE: NS,
        REDIS_NAME: NAME,
        BACKUP_SHARD: '0',
        // The CronJob lists the pods by DNS name; the stand-in has no DNS, so their addresses, master first.
        REDIS_HOSTS: [0, 1].map((o) => `${ipOf(`${NAME}-shard-0-${o}`)}:6379`).join(','),
        REDIS_USERNAME: 'redis-operator',
        REDIS_PASSWORD: OPERATOR_PASSWORD,
        BACKUP_STORAGE: 'pvc',
        BACKUP_CLAIM: 'backups',
        BACKUP_DIR: claim,
      });
      assert.equal(run.code, 0, `${JSON.stringify(run.result)}\n${run.stderr}`);
      assert.equal(run.result['role'], 'replica');
      assert.equal(run.result['source'], `${ipOf(`${NAME}-shard-0-1`)}:6379`);
      assert.match(String(run.result['key']), new RegExp(`^${NS}/${NAME}/shard-0/\\d{8}T\\d{6}Z-\\d+\\.rdb$`));
      assert.ok(existsSync(path.join(claim, String(run.result['key']))));
    });

    await t.test('a fourth shard comes and, on the way back to three, stays until its pods report no data', async () => {
      await c.apply({ apiVersion: 'redis.example.com/v1', kind: 'RedisCluster', metadata: { name: NAME, namespace: NS }, spec: { master: { replicas: 4 } } });
      await c.waitFor(
        async () => {
          const pods = podsOf();
          if (pods.length !== 8) return false;
          for (const p of pods) if ((await call(ipOf(p.metadata.name), 'PING').catch(() => '')) !== 'PONG') return false;
          return true;
        },
        60_000,
        'shard 3 pods answering',
      );
      await c.apply({ apiVersion: 'redis.example.com/v1', kind: 'RedisCluster', metadata: { name: NAME, namespace: NS }, spec: { master: { replicas: 3 } } });
      await c.waitFor(() => cond('Resharded')?.['reason'] === 'ShardsLeaving', 30_000, 'shard 3 leaving');
      assert.match(
        String(cond('Resharded')?.['message']),
        /shard 3 kept until its slots and keys have moved away: pod shop-cache-shard-3-0 has no readable cluster-node record/,
      );
      assert.ok(c.get('statefulsets', `${NAME}-shard-3`, NS), 'kept while unknown');
      for (const o of [0, 1]) {
        const pod = `${NAME}-shard-3-${o}`;
        const id = await call(ipOf(pod), 'CLUSTER', 'MYID');
        const record = clusterNodeRecord({
          id,
          role: 'master',
          slots: [],
          masterId: null,
          linkUp: true,
          usedMemory: 1,
          maxMemory: 0,
          keys: 0,
          at: new Date().toISOString(),
        });
        await c.apply({ apiVersion: 'v1', kind: 'Pod', metadata: { name: pod, namespace: NS, annotations: { [CLUSTER_NODE_ANNOTATION]: record } } });
      }
      // Records lag a move into a shard: empty records alone do not let it go, the sidecar's
      // reshard record saying Done for three shards does.
      await c.waitFor(() => /reshard to 3 shards Done/.test(String(cond('Resharded')?.['message'])), 30_000, 'shard 3 waiting for the Done record');
      assert.ok(c.get('statefulsets', `${NAME}-shard-3`, NS), 'kept on records alone');
      const done = reshardRecord({ from: 4, to: 3, state: 'Done', moved: 0, total: 0, at: new Date().toISOString(), why: '' });
      await c.apply({
        apiVersion: 'redis.example.com/v1',
        kind: 'RedisCluster',
        metadata: { name: NAME, namespace: NS, annotations: { [RESHARD_ANNOTATION]: done } },
      });
      await c.waitFor(() => c.get('statefulsets', `${NAME}-shard-3`, NS) === undefined, 30_000, 'shard 3 removed once empty');
      await c.waitFor(() => cond('Resharded')?.['status'] === 'True', 30_000, 'Resharded');
      assert.equal(c.get('statefulsets', `${NAME}-shard-2`, NS) !== undefined, true);
    });
  },
);

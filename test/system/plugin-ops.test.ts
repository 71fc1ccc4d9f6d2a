// System test: the `kubectl redis` commands that need more than the design's Redis, on
// the real control plane with a running Redis: `backup NAME` (an on-demand RedisBackup to a real
// S3 server, waited for until Completed, of a Redis whose spec.backup has storage and no schedule:
// no CronJob), `restore NEW --from-backup B --like OTHER` of a hibernated TLS Redis with a restore
// of its own (refused at once without --tls-secret, its certificate naming the other Redis; with
// one, a new Redis that leaves out hibernate, restore and the TLS Secret, saying so, restored over
// TLS, the keys back), and the refusal of a write command when the operator is not running (exit
// 5, nothing written to the Redis).
// The operator is installed from manifests/ (its Deployment, SHARDS=4: one Lease per shard), and
// stopped two ways: every sidecar container stopped at once as by SIGKILL while its pod stays
// Ready (the Deployment looks fine, the Leases expire: the Lease half decides), then the
// Deployment scaled to 0 (the sidecars SIGTERMed hand their Leases back; the Deployment half
// decides). Network: 198.18.72.x pods, 198.19.72.x Services.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { performance } from 'node:perf_hooks';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { backupFolder } from '../../src/backup/naming.ts';
import { shardLeaseName } from '../../src/sidecar/redis/decide/shards.ts';
import { LEASE_NAME } from '../k8s/system-cluster.ts';
import { OPERATOR_NAMESPACE } from '../k8s/operator.ts';
import { bucketOn } from '../backup/support.ts';
import { issue, makeCa } from '../support/tls-certs.ts';
import { isS3ServerBuilt } from '../s3/server.ts';
import { BUCKET, credentials, s3Storage } from './backup-objects.ts';
import { PLUGIN, run } from './plugin-run.ts';
import { boot, callAs, settle } from './support.ts';

const SUBNET = 72;
const NS = 'default';
const NAME = 'ledger';
const RESTORED = 'ledger-restored';
/** The Redis `restore --like` copies: hibernated, with TLS of its own Secret and a restore of its own. */
const SHAPE = 'ledger-shape';
const BACKUP = 'ledger-on-demand';
/** As manifests/deployment.yaml sets it. */
const SHARDS = 4;
const KEYS = Array.from({ length: 50 }, (_, i) => `plugin-ops:${i}`);
/** Generous deadlines: the Leases last 3 s (the sidecar's default); a restart takes its shards within seconds. */
const LEASE_BOUND = 30_000;
/** The Date header's resolution: the plugin's clock for Lease expiry. */
const DATE_HEADER_GRAIN = 1_000;
type Json = Record<string, any>;

const redisSpec = (endpoint: string): Json => ({
  apiVersion: 'redis.example.com/v1',
  kind: 'Redis',
  metadata: { name: NAME, namespace: NS },
  spec: {
    version: '7.2',
    replicas: 1,
    persistence: { enableRdb: true, enableAof: true, size: '1Gi', whenDeleted: 'Delete' },
    // Storage and no schedule: no CronJob, on-demand backups only (a schedule was once required).
    backup: { storage: s3Storage(endpoint) },
  },
});

test(
  'kubectl redis backup, restore, and the operator-not-running refusal on the real control plane',
  { timeout: 900_000 },
  async (t) => {
    if (!isS3ServerBuilt()) return t.skip('the S3 server is not built (node test/k8s/cli.ts build)');
    const tStart = performance.now();
    const c = await boot(t, { subnet: SUBNET });
    if (!c) return;
    const local = c;
    const { s3, client } = await bucketOn(t, c.hostAddress, BUCKET);
    const plugin = (...args: string[]) => run(PLUGIN, [...args, '-n', NS], { KUBECONFIG: local.kubeconfig });
    const status = (name: string) => (c.get('redises', name, NS)?.['status'] ?? {}) as Json;
    /** The Redis as the API server has it now (not the watch cache): what a refused command must not have changed. */
    const fresh = async (name: string) =>
      JSON.parse(await local.kubectl(['get', 'redis', name, '-n', NS, '-o', 'json'])) as Json;
    const running = (name: string) =>
      status(name)['phase'] === 'Running' &&
      status(name)['readyReplicas'] === 1 &&
      c.masterEndpoint(name) !== undefined;

    const shardLeases = () =>
      Array.from(
        { length: SHARDS },
        (_, i) => (c.get('leases', shardLeaseName(LEASE_NAME, i, SHARDS), OPERATOR_NAMESPACE)?.['spec'] ?? {}) as Json,
      );
    const holders = () => shardLeases().map((l) => String(l['holderIdentity'] ?? ''));
    const renewedAt = (l: Json) => new Date(String(l['renewTime'] ?? 0)).getTime();
    const expiresAt = (l: Json) => renewedAt(l) + Number(l['leaseDurationSeconds'] ?? 0) * 1000;
    /** Both sidecars ready and every shard Lease held, renewed at or after `since`. */
    const operatorUp = async (since: number) =>
      shardLeases().every((l) => l['holderIdentity'] && renewedAt(l) >= since) &&
      (await Promise.all(c.sidecarNames().map((s) => c.sidecarReady(s)))).every(Boolean);
    await c.waitFor(() => operatorUp(0), 60_000, `both sidecars ready, all ${SHARDS} shard Leases held`);

    await c.apply(credentials(NS, s3.accessKeyId, s3.secretAccessKey));
    await c.apply(redisSpec(s3.endpoint));
    await c.waitFor(() => running(NAME), 60_000, `${NAME} Running with its replica`);
    assert.equal(c.get('cronjobs', `${NAME}-backup`, NS), undefined, 'no schedule, no CronJob');
    const master = c.masterEndpoint(NAME)!;
    for (const k of KEYS) assert.equal(await callAs(c, NAME, master.ip, 'SET', k, k), 'OK');
    // The replica has every key (the backup is read from it).
    await settle(c, master.ip, 1, 10_000, NAME);
    t.diagnostic(`boot + ${NAME} Running + ${KEYS.length} keys: ${Math.round((performance.now() - tStart) / 1000)} s`);

    await t.test('backup NAME: waits until the RedisBackup is Completed; the object is in the bucket', async () => {
      const t0 = performance.now();
      const r = await plugin('backup', NAME, '--backup-name', BACKUP);
      t.diagnostic(
        `$ kubectl redis backup ${NAME} --backup-name ${BACKUP} (${Math.round(performance.now() - t0)} ms)\n${r.stdout}${r.stderr}`,
      );
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, new RegExp(`created RedisBackup ${BACKUP}`));
      assert.match(r.stdout, /phase Completed\b.*; s3:\/\/redis-backups\/\S+\.rdb \d+ bytes at offset \d+$/m);
      const b = (c.get('redisbackups', BACKUP, NS)?.['status'] ?? {}) as Json;
      assert.equal(b['phase'], 'Completed');
      assert.ok(
        r.stdout.includes(
          `; ${String(b['location'])} ${String(b['sizeBytes'])} bytes at offset ${String(b['replicationOffset'])}`,
        ),
        'the last line is the RedisBackup',
      );
      const listed = await client.send(
        new ListObjectsV2Command({
          Bucket: BUCKET,
          Prefix: backupFolder('', { kind: 'Redis', namespace: NS, name: NAME }),
        }),
      );
      assert.ok(
        (listed.Contents ?? []).some((o) => `s3://${BUCKET}/${o.Key}` === b['location']),
        `${String(b['location'])} is in the bucket`,
      );
    });

    await t.test(
      'restore NEW --from-backup B --like OTHER: refused without --tls-secret; with it, restored over TLS, saying what it left out',
      async () => {
        // The other Redis: hibernated (no pod), TLS from a Secret of its own, restored itself.
        const shape = redisSpec(s3.endpoint);
        shape['metadata'] = { name: SHAPE, namespace: NS };
        shape['spec'] = {
          ...shape['spec'],
          hibernate: true,
          tls: { secretName: `${SHAPE}-tls` },
          restore: { backup: BACKUP },
        };
        await c.apply(shape);
        await c.waitFor(() => status(SHAPE)['phase'] === 'Hibernated', 30_000, `${SHAPE} Hibernated`);

        // --timeout: it once copied hibernate and the other's certificate, and waited for a restore that never came.
        const refused = await plugin('restore', RESTORED, '--from-backup', BACKUP, '--like', SHAPE, '--timeout', '30s');
        t.diagnostic(
          `$ kubectl redis restore ${RESTORED} --from-backup ${BACKUP} --like ${SHAPE}: exit ${refused.code}\n${refused.stdout}${refused.stderr}`,
        );
        assert.equal(refused.code, 2, `${refused.stdout}${refused.stderr}`);
        assert.match(
          refused.stderr,
          new RegExp(
            `spec\\.tls\\.secretName ${SHAPE}-tls holds a certificate for ${SHAPE}, not for ${RESTORED}.*--tls-secret`,
          ),
        );
        assert.equal(c.get('redises', RESTORED, NS), undefined, 'nothing created');

        const ca = makeCa();
        const cert = issue(ca, {
          dnsNames: [`*.${RESTORED}-headless.${NS}.svc`, `*.${RESTORED}-headless.${NS}.svc.cluster.local`],
        });
        await c.apply({
          apiVersion: 'v1',
          kind: 'Secret',
          type: 'kubernetes.io/tls',
          metadata: { name: `${RESTORED}-tls`, namespace: NS },
          stringData: { 'tls.crt': cert['tls.crt'], 'tls.key': cert['tls.key'], 'ca.crt': cert['ca.crt'] },
        });
        const t0 = performance.now();
        const r = await plugin(
          'restore',
          RESTORED,
          '--from-backup',
          BACKUP,
          '--like',
          SHAPE,
          '--tls-secret',
          `${RESTORED}-tls`,
        );
        t.diagnostic(
          `$ kubectl redis restore ${RESTORED} --from-backup ${BACKUP} --like ${SHAPE} --tls-secret ${RESTORED}-tls (${Math.round(performance.now() - t0)} ms)\n${r.stdout}${r.stderr}`,
        );
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, new RegExp(`created Redis ${RESTORED} from ${BACKUP}`));
        for (const left of [
          `spec\\.restore of ${SHAPE}`,
          `spec\\.hibernate: true of ${SHAPE}`,
          `spec\\.tls\\.secretName ${SHAPE}-tls of ${SHAPE} \\(replaced by --tls-secret ${RESTORED}-tls\\)`,
        ])
          assert.match(r.stdout, new RegExp(`^restore ${RESTORED}: left out ${left}`, 'm'));
        assert.match(r.stdout, /phase Running, restore Completed/);
        const restored = await fresh(RESTORED);
        assert.equal(restored['spec']['hibernate'], false);
        assert.deepEqual(restored['spec']['tls'], { secretName: `${RESTORED}-tls` });
        assert.deepEqual(restored['spec']['restore'], { backup: BACKUP });
        assert.equal(restored['status']['restore']['phase'], 'Completed');
        assert.equal(
          restored['status']['restore']['location'],
          (c.get('redisbackups', BACKUP, NS)?.['status'] as Json)['location'],
        );
        const m = await c.waitFor(() => c.masterEndpoint(RESTORED), 30_000, `${RESTORED}'s master behind its Service`);
        const values = (await callAs(c, RESTORED, m.ip, 'MGET', ...KEYS)) as Array<string | null>;
        assert.deepEqual(
          KEYS.filter((k, i) => values[i] !== k),
          [],
          'every key written before the backup is on the restored master, read over TLS',
        );
      },
    );

    // The refusals must write nothing: the Redis' annotations (the switchover request) and spec (hibernate).
    const assertUntouched = async (before: Json, what: string) => {
      const after = await fresh(NAME);
      assert.deepEqual(
        after['metadata']['annotations'] ?? {},
        before['metadata']['annotations'] ?? {},
        `${what}: no annotation added or changed`,
      );
      assert.equal(
        after['metadata']['generation'],
        before['metadata']['generation'],
        `${what}: the spec was not written`,
      );
      assert.equal(after['spec']['hibernate'], before['spec']['hibernate'], `${what}: spec.hibernate unchanged`);
    };
    const refusedWrite = async (args: string[], before: Json, reason = 'no sidecar holds its Leases') => {
      // --timeout: were the command not refused, it would wait for an operator that is not there.
      const r = await plugin(...args, '--timeout', '30s');
      t.diagnostic(`$ kubectl redis ${args.join(' ')}: exit ${r.code}\n${r.stderr}`);
      assert.equal(r.code, 5, `${args[0]}: ${r.stdout}${r.stderr}`);
      assert.ok(r.stderr.split('\n').includes(`error: the operator is not running: ${reason}`), r.stderr);
      assert.doesNotMatch(r.stdout, /requested/);
      await assertUntouched(before, args[0]!);
    };

    await t.test(
      'every sidecar stopped at once: once their Leases expired, switchover and hibernate exit 5 and write nothing',
      async () => {
        // The premise: the Deployment still has ready pods (their hooks serve), so the Leases are what the plugin
        // decides on.
        const leaseNames = c.list('leases', { namespace: OPERATOR_NAMESPACE }).map((l) => l.metadata.name);
        t.diagnostic(
          `Leases in ${OPERATOR_NAMESPACE}: ${leaseNames.join(', ')}; shard holders ${holders().join(', ')}`,
        );
        assert.ok(
          !leaseNames.includes(LEASE_NAME),
          `no unsharded ${LEASE_NAME} Lease: the shard Leases are the ones read`,
        );
        const before = await fresh(NAME);
        const t0 = Date.now();
        for (const s of c.sidecarNames()) {
          await c.killSidecar(s);
          assert.equal(c.sidecarAlive(s), false, `${s} is gone`);
        }
        // The plugin's "now" is the API server's Date header, whole seconds and so up to 1 s behind
        // (it errs towards "running", see clusterNow): a Lease is expired for it 1 s after it expired.
        await c.waitFor(
          () => shardLeases().every((l) => expiresAt(l) + DATE_HEADER_GRAIN < Date.now()),
          LEASE_BOUND,
          `all ${SHARDS} shard Leases expired more than ${DATE_HEADER_GRAIN} ms ago (renewTime + leaseDurationSeconds)`,
        );
        t.diagnostic(
          `sidecars SIGKILLed; the shard Leases (held by ${holders().join(', ')}) all expired ${Date.now() - t0} ms later`,
        );
        await refusedWrite(['switchover', NAME], before);
        await refusedWrite(['hibernate', NAME], before);
      },
    );

    await t.test('the sidecars restarted: the refusal lifts, a switchover is Done', async () => {
      const restartedAt = Date.now();
      for (const s of c.sidecarNames()) await c.restartSidecar(s);
      await c.waitFor(
        () => operatorUp(restartedAt),
        LEASE_BOUND,
        `both sidecars ready, all ${SHARDS} shard Leases renewed since the restart`,
      );
      t.diagnostic(
        `restarted: every shard Lease held again ${Date.now() - restartedAt} ms later (${holders().join(', ')})`,
      );
      const old = c.masterEndpoint(NAME)?.pod;
      const r = await plugin('switchover', NAME);
      t.diagnostic(`$ kubectl redis switchover ${NAME}\n${r.stdout}${r.stderr}`);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /Done/);
      await c.waitFor(
        () => c.masterEndpoint(NAME) && c.masterEndpoint(NAME)!.pod !== old,
        20_000,
        `the master Service off ${old}`,
      );
    });

    await t.test(
      'the Deployment scaled to 0 (the sidecars SIGTERMed hand their Leases back): hibernate exits 5 and writes nothing',
      async () => {
        const before = await fresh(NAME);
        await local.kubectl(['scale', 'deployment', 'redis-operator', '-n', OPERATOR_NAMESPACE, '--replicas=0']);
        await c.waitFor(
          () => holders().every((h) => h === ''),
          LEASE_BOUND,
          `all ${SHARDS} shard Leases released (empty holder)`,
        );
        t.diagnostic(
          `released: ${shardLeases()
            .map((l) => `expires in ${expiresAt(l) - Date.now()} ms`)
            .join(', ')}`,
        );
        await c.waitFor(
          async () =>
            JSON.parse(
              await local.kubectl(['get', 'deployment', 'redis-operator', '-n', OPERATOR_NAMESPACE, '-o', 'json']),
            )['status']['readyReplicas'] === undefined,
          LEASE_BOUND,
          'the Deployment with no ready pod',
        );
        await refusedWrite(['hibernate', NAME], before, 'its Deployment has no ready pod');
      },
    );
    t.diagnostic(`plugin-ops total: ${Math.round((performance.now() - tStart) / 1000)} s`);
  },
);

// System test: backup and restore on the real control plane. A Redis with spec.backup
// on a real S3 server (versitygw, on this cluster's pod bridge where pods reach it) takes a
// scheduled backup (the real CronJob and Job controllers run it) and an on-demand RedisBackup
// while an application writes with SET + WAIT 1; a RedisBackup with refused credentials fails
// naming them and disturbs nothing; then the Redis is deleted under whenDeleted: Retain (the
// default) and created again from the backup, as README's recipe does: refused up front, creating
// nothing, while the old claims exist (its pods would have started on the old data); once the
// README's `kubectl delete pvc` removed them the restore goes ahead and every key acknowledged at
// or before the backup's offset is back.
// Network: 198.18.67.x pods, 198.19.67.x Services.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { CreateBucketCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { backupFolder } from '../../src/backup/naming.ts';
import { s3Client } from '../../src/backup/s3.ts';
import { isS3ServerBuilt, startS3Server } from '../s3/server.ts';
import { podSelectorLabels } from '../../src/api/labels.ts';
import { selectorString } from '../../src/hook/common/util.ts';
import { BUCKET, credentials as credentialsIn, redisBackup as redisBackupOf, s3Storage } from './backup-objects.ts';
import { boot, sleep } from './support.ts';

const SUBNET = 67;
const NS = 'default';
const NAME = 'shop';
type Json = Record<string, any>;

function redisSpec(endpoint: string, restore?: Json): Json {
  return {
    apiVersion: 'redis.example.com/v1',
    kind: 'Redis',
    metadata: { name: NAME, namespace: NS },
    spec: {
      version: '7.2',
      replicas: 1,
      // whenDeleted: Retain, the default: the restore below meets the claims it keeps.
      persistence: { enableRdb: true, enableAof: true, size: '1Gi' },
      backup: {
        schedule: '* * * * *',
        retentionCount: 10,
        storage: s3Storage(endpoint),
      },
      ...(restore ? { restore } : {}),
    },
  };
}

const credentials = (accessKeyId: string, secretAccessKey: string) => credentialsIn(NS, accessKeyId, secretAccessKey);
const redisBackup = (name: string) => redisBackupOf(NS, NAME, name);

test(
  'scheduled and on-demand backups to S3, a refused one that disturbs nothing, and a new Redis restored from a backup with every acknowledged key',
  { timeout: 600_000 },
  async (t) => {
    if (!isS3ServerBuilt()) return t.skip('the S3 server is not built (node test/k8s/cli.ts build)');
    const c = await boot(t, { subnet: SUBNET });
    if (!c) return;
    const s3 = await startS3Server({ ip: c.hostAddress });
    t.after(() => s3.stop());
    const client = s3Client({
      bucket: BUCKET,
      region: s3.region,
      endpoint: s3.endpoint,
      prefix: '',
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    t.after(() => client.destroy());
    await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
    const status = () => (c.get('redises', NAME, NS)?.['status'] ?? {}) as Json;
    const backupStatus = (name: string) => (c.get('redisbackups', name, NS)?.['status'] ?? {}) as Json;

    await c.apply(credentials(s3.accessKeyId, s3.secretAccessKey));
    const t0 = performance.now();
    await c.apply(redisSpec(s3.endpoint));
    await c.waitFor(
      () => status()['phase'] === 'Running' && status()['readyReplicas'] === 1 && c.masterEndpoint(NAME),
      60_000,
      `${NAME} Running with its replica`,
    );
    t.diagnostic(`apply -> Running: ${Math.round(performance.now() - t0)} ms`);

    // The application: SET + WAIT 1, recording for each acknowledged key the master's offset then.
    const acked: Array<{ key: string; offset: number }> = [];
    let writing = true;
    let writeErrors = 0;
    const writer = (async () => {
      const master = c.masterEndpoint(NAME)!;
      const conn = c.redis(master.ip, NAME);
      conn.on('error', () => {});
      await conn.connect();
      for (let i = 0; writing; i++) {
        try {
          await conn.set(`k${i}`, `v${i}`);
          if (Number(await conn.call('WAIT', '1', '2000')) < 1) continue;
          const info = String(await conn.call('INFO', 'replication'));
          acked.push({ key: `k${i}`, offset: Number(/master_repl_offset:(\d+)/.exec(info)?.[1]) });
        } catch {
          writeErrors++;
          await sleep(50);
        }
      }
      conn.disconnect();
    })();
    t.after(() => {
      writing = false;
    });

    // Scheduled: the CronJob runs every minute; its result reaches status.backup.
    const tScheduled = performance.now();
    await c.waitFor(
      () => status()['backup']?.lastSuccessful?.location !== undefined,
      150_000,
      'a scheduled backup in status.backup.lastSuccessful',
    );
    const scheduled = status()['backup'].lastSuccessful as Json;
    t.diagnostic(
      `first scheduled backup: ${scheduled['location']} (${scheduled['sizeBytes']} bytes, offset ${scheduled['replicationOffset']}) ${Math.round((performance.now() - tScheduled) / 1000)} s after Running`,
    );
    assert.match(
      String(scheduled['location']),
      new RegExp(`^s3://${BUCKET}/redis~${NS}~${NAME}/\\d{8}T\\d{6}Z-\\d+\\.rdb$`),
    );
    assert.equal(
      ((status()['conditions'] ?? []) as Json[]).find((x) => x['type'] === 'BackupHealthy')?.['status'],
      'True',
    );
    const listed = await client.send(
      new ListObjectsV2Command({
        Bucket: BUCKET,
        Prefix: backupFolder('', { kind: 'Redis', namespace: NS, name: NAME }),
      }),
    );
    assert.ok(
      (listed.Contents ?? []).some((o) => `s3://${BUCKET}/${o.Key}` === scheduled['location']),
      'the object is in the bucket',
    );

    // Refused credentials: the backup fails naming them; nothing is deleted, the Redis is not disturbed.
    const objectsBefore = (listed.Contents ?? []).length;
    await c.apply(credentials(s3.accessKeyId, 'wrong-secret'));
    await c.apply(redisBackup('denied'));
    await c.waitFor(() => backupStatus('denied')['phase'] === 'Failed', 90_000, 'RedisBackup denied Failed');
    t.diagnostic(`denied: ${backupStatus('denied')['message']}`);
    assert.match(String(backupStatus('denied')['message']), /refused the credentials/);
    // The Redis says so too: its condition and an Event (the sidecar's), both naming the cause.
    const healthy = () => ((status()['conditions'] ?? []) as Json[]).find((x) => x['type'] === 'BackupHealthy') ?? {};
    await c.waitFor(() => healthy()['reason'] === 'BackupFailed', 30_000, 'BackupHealthy False, reason BackupFailed');
    assert.match(String(healthy()['message']), /refused the credentials/);
    await c.waitFor(
      () => c.events({ name: NAME }).some((e) => e.reason === 'BackupFailed'),
      30_000,
      'a BackupFailed Event on the Redis',
    );
    await c.apply(credentials(s3.accessKeyId, s3.secretAccessKey));
    const after = await client.send(
      new ListObjectsV2Command({
        Bucket: BUCKET,
        Prefix: backupFolder('', { kind: 'Redis', namespace: NS, name: NAME }),
      }),
    );
    assert.ok((after.Contents ?? []).length >= objectsBefore, 'a failed backup deletes nothing');
    assert.equal(status()['phase'], 'Running');

    // On demand: kubectl apply of a RedisBackup.
    await c.apply(redisBackup('before-delete'));
    await c.waitFor(
      () => backupStatus('before-delete')['phase'] === 'Completed',
      90_000,
      'RedisBackup before-delete Completed',
    );
    const taken = backupStatus('before-delete');
    t.diagnostic(
      `on demand: ${taken['location']} offset ${taken['replicationOffset']} version ${taken['redisVersion']} from ${taken['source']}`,
    );
    assert.equal(typeof taken['replicationOffset'], 'number');
    assert.equal(
      taken['redisVersion'],
      '7.2.6',
      "the engine the pods run: the redis:7.2 image carries ../shared's 7.2.6",
    );
    assert.ok(Number(taken['sizeBytes']) > 0);
    assert.match(String(taken['source']), /\(replica\)$/, 'read from the replica, not the master');
    await c.waitFor(() => healthy()['status'] === 'True', 30_000, 'BackupHealthy True again after a success');
    writing = false;
    await writer;
    const covered = acked.filter((w) => w.offset <= Number(taken['replicationOffset']));
    t.diagnostic(
      `${acked.length} writes acknowledged (${writeErrors} errors); ${covered.length} at or before the backup's offset`,
    );
    assert.equal(writeErrors, 0, 'the backups never disturbed the writes');
    assert.ok(covered.length > 0);

    // Delete the Redis: whenDeleted: Retain keeps its claims.
    await c.delete('redises', NAME, NS);
    await c.waitFor(() => !c.get('redises', NAME, NS), 60_000, `${NAME} gone`);
    const selector = selectorString(podSelectorLabels(NAME));
    const claims = () =>
      c
        .list('persistentvolumeclaims', { namespace: NS })
        .filter((p) => p.metadata.labels?.['app.kubernetes.io/instance'] === NAME);
    assert.ok(claims().length > 0, 'whenDeleted: Retain kept the claims');
    // A new Redis from the backup under the same name: refused up front while the old claims exist.
    // It once bound them, the restore skipped the data it found, and only then said Failed.
    const tRestore = performance.now();
    await c.apply(redisSpec(s3.endpoint, { backup: 'before-delete' }));
    const ready = () => ((status()['conditions'] ?? []) as Json[]).find((x) => x['type'] === 'Ready') ?? {};
    await c.waitFor(
      () => ready()['reason'] === 'RestoreRefused',
      30_000,
      'Ready False RestoreRefused while the old claims exist',
    );
    t.diagnostic(`refused: ${String(status()['restore']?.message)}`);
    assert.equal(status()['restore']?.phase, 'Pending');
    assert.ok(
      String(status()['restore']?.message).includes(`kubectl delete pvc -n ${NS} -l ${selector}`),
      'it says what to do',
    );
    const uid = c.get('redises', NAME, NS)?.metadata.uid;
    const ownedSets = () =>
      c
        .list('statefulsets', { namespace: NS })
        .filter((o) => (o.metadata.ownerReferences ?? []).some((r) => r.uid === uid));
    assert.deepEqual(ownedSets(), [], 'no StatefulSet of the new Redis: no pod bound the old claims');
    // The README's recipe: delete the claims (kubectl waits for the old pods to let go of them).
    await c.kubectl(['delete', 'pvc', '-n', NS, '-l', selector]);
    t.diagnostic(`refused, then the old claims deleted: ${Math.round(performance.now() - tRestore)} ms`);
    // The old <name>-config may still be being garbage-collected, and the hook must hold the pods
    // until the new one carries the location (it once let them start empty).
    let heldForConfig = false;
    await c.waitFor(
      () => {
        heldForConfig ||= /waiting for ConfigMap/.test(String(status()['restore']?.message));
        return status()['restore']?.phase === 'Completed' && status()['phase'] === 'Running' && c.masterEndpoint(NAME);
      },
      120_000,
      `${NAME} restored and Running`,
    );
    t.diagnostic(
      `restore: pods held until the new ${NAME}-config carried the location: ${heldForConfig ? 'seen' : 'not seen (too brief to observe)'}`,
    );
    t.diagnostic(
      `restore: apply -> Running from ${status()['restore'].location} in ${Math.round(performance.now() - tRestore)} ms`,
    );
    assert.equal(status()['restore'].location, taken['location']);
    assert.equal(
      status()['restore'].decidedBy,
      c.masterEndpoint(NAME)!.pod,
      "Completed on the master restore container's own word",
    );
    const master = c.masterEndpoint(NAME)!;
    const conn = c.redis(master.ip, NAME);
    conn.on('error', () => {});
    await conn.connect();
    t.after(() => conn.disconnect());
    const missing: string[] = [];
    for (let i = 0; i < covered.length; i += 500) {
      const batch = covered.slice(i, i + 500);
      const values = await conn.mget(...batch.map((w) => w.key));
      batch.forEach((w, j) => {
        if (values[j] !== `v${w.key.slice(1)}`) missing.push(w.key);
      });
    }
    assert.deepEqual(missing, [], 'every key acknowledged at or before the backup offset is back');
    // And the restored Redis takes writes and backs up again.
    await c.waitFor(() => status()['readyReplicas'] === 1, 60_000, 'the restored replica linked');
    await c.waitFor(
      () =>
        conn.set('after-restore', '1').then(
          (r) => r === 'OK',
          () => false,
        ),
      30_000,
      'a write acknowledged by the restored Redis (fencing waits for the replica)',
    );
  },
);

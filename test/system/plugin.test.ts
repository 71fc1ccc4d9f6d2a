// System test: the `kubectl redis` plugin as a user runs it, a subprocess with the test
// cluster's kubeconfig, directly and through the real kubectl's plugin lookup (bin/ on PATH),
// against the design's Redis on the real control plane: status, -o json, a switchover that moves
// the master Service, hibernate and wake keeping a key, events, a missing Redis, a ServiceAccount
// without rights, a backup of a Redis with nowhere to store it refused at once, `cli` (redis-cli
// through kubectl exec, no password in argv); `kubectl get redis` naming the master pod and ready
// replicas; status listing only the Redis pods beside a backup Job's pod, and naming the sidecar
// that leads it (whose log the docs send on-call to). Real control plane only. Network: 198.18.58.x.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import path from 'node:path';
import { backupSelectorLabels } from '../../src/api/backup.ts';
import { readReplicationRecord, REPLICATION_ANNOTATION, ROLE_LABEL } from '../../src/api/labels.ts';
import { BIN_DIR, PLUGIN, run } from './plugin-run.ts';
import { applyDesign, boot, call, NAME, NS, podIp, servicesRouted, allLinked, BOUND, settle } from './support.ts';

const SUBNET = 58;

test('kubectl redis on the real control plane', { timeout: 900_000 }, async (t) => {
  const c = await boot(t, { subnet: SUBNET });
  if (!c) return;
  await applyDesign(t, c);
  const local = c;
  const env = { KUBECONFIG: local.kubeconfig };
  const plugin = (...args: string[]) => run(PLUGIN, [...args, '-n', NS], env);
  const master = () => c.pods(NAME).find((p) => p.metadata.labels?.[ROLE_LABEL] === 'master')?.metadata.name;

  await t.test('status: the phase and every pod with its role', async () => {
    const r = await plugin('status', NAME);
    t.diagnostic(`$ kubectl redis status ${NAME}\n${r.stdout}`);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /phase Running/);
    for (const p of c.pods(NAME))
      assert.match(r.stdout, new RegExp(`${p.metadata.name}\\s+${p.metadata.labels?.[ROLE_LABEL]}\\s+yes`));
  });

  await t.test(
    "status: each pod's replication offset, and each replica's lag, from the sidecar's annotation",
    async () => {
      await c.waitFor(
        () =>
          c.pods(NAME).every((p) => readReplicationRecord(p.metadata.annotations?.[REPLICATION_ANNOTATION]) !== null),
        BOUND.allReady,
        'every pod carrying its replication record',
      );
      const r = await plugin('status', NAME);
      assert.equal(r.code, 0, r.stderr);
      for (const p of c.pods(NAME)) {
        const rec = readReplicationRecord(p.metadata.annotations?.[REPLICATION_ANNOTATION])!;
        const lag = p.metadata.labels?.[ROLE_LABEL] === 'master' ? '-' : '\\d+(\\.\\d)? (B|KiB|MiB)';
        assert.match(
          r.stdout,
          new RegExp(
            `${p.metadata.name}\\s+\\w+\\s+yes\\s+up\\s+${rec.offset}\\s+${lag}\\s+${rec.at.replace(/\./g, '\\.')}`,
          ),
        );
      }
      const json = await plugin('status', NAME, '-o', 'json');
      const v = JSON.parse(json.stdout) as {
        pods: Array<{ role: string; replication: { offset: number; lagBytes: number | null } | null }>;
      };
      for (const p of v.pods) assert.equal(typeof p.replication?.offset, 'number');
      assert.ok(
        v.pods.filter((p) => p.role === 'replica').every((p) => typeof p.replication?.lagBytes === 'number'),
        'the master lists every replica',
      );
    },
  );

  await t.test('through kubectl: `kubectl redis status` with bin/ on PATH', async () => {
    const kubectl = path.join(local.controlPlane.binDir, 'kubectl');
    const r = await run(kubectl, ['redis', 'status', NAME, '-n', NS], {
      ...env,
      PATH: `${BIN_DIR}:${process.env['PATH'] ?? ''}`,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /phase Running/);
  });

  await t.test('-o json parses and has the master', async () => {
    const r = await plugin('status', NAME, '-o', 'json');
    assert.equal(r.code, 0, r.stderr);
    const v = JSON.parse(r.stdout) as { master: string; pods: Array<{ name: string; role: string }> };
    assert.equal(v.master, master());
    assert.equal(v.pods.find((p) => p.role === 'master')?.name, master());
  });

  await t.test(
    'cli: set then get through the plugin as the operator user, on the master and --pod a replica; no password on any command line',
    async () => {
      const withKubectl = { ...env, PATH: `${local.controlPlane.binDir}:${BIN_DIR}:${process.env['PATH'] ?? ''}` };
      const cli = (...args: string[]) => run(PLUGIN, ['cli', NAME, '-n', NS, ...args], withKubectl);
      const value = 'a value; with $(spaces) and "quotes"';
      const set = await cli('--', 'set', 'cli-key', value);
      assert.equal(set.code, 0, set.stderr);
      assert.equal(set.stdout, 'OK\n');
      assert.equal((await cli('--', 'get', 'cli-key')).stdout, `${value}\n`);
      assert.equal((await cli('--', 'acl', 'whoami')).stdout, 'redis-operator\n');
      assert.match((await cli('--', 'role')).stdout, /^master\n/, 'on the master');
      const replica = c.pods(NAME).find((p) => p.metadata.labels?.[ROLE_LABEL] === 'replica')!.metadata.name;
      assert.match((await cli('--pod', replica, '--', 'role')).stdout, /^slave\n/, '--pod: on that replica');
      await c.waitFor(
        async () => (await cli('--pod', replica, '--', 'get', 'cli-key')).stdout === `${value}\n`,
        10_000,
        'the key on the replica',
      );
      // Through kubectl's plugin lookup, `--` and what follows reach the plugin as given.
      const viaKubectl = await run('kubectl', ['redis', 'cli', NAME, '-n', NS, '--', 'get', 'cli-key'], withKubectl);
      assert.equal(viaKubectl.stdout, `${value}\n`, viaKubectl.stderr);
      const refused = await cli('get', 'cli-key');
      assert.equal(refused.code, 2);
      assert.match(refused.stderr, /redis-cli's arguments go after --/);

      // What `ps` shows while a command runs: in the pod, and on this machine (the plugin, kubectl).
      const secret = c.get('secrets', `${NAME}-operator`, NS) as { data?: Record<string, string> } | undefined;
      const passwords = [Buffer.from(secret!.data!['password']!, 'base64').toString(), c.password(NAME)!];
      const blocking = cli('--', 'blpop', 'cli-no-such-list', '6');
      const inPod = await c.waitFor(
        async () => {
          const ps = await local.kubectl([
            'exec',
            master()!,
            '-n',
            NS,
            '-c',
            'redis',
            '--',
            'ps',
            '-eww',
            '-o',
            'args',
          ]);
          // Not the shell's line, which lasts until it execs redis-cli: redis-cli's own.
          return /^redis-cli .*cli-no-such-list/m.test(ps) ? ps : undefined;
        },
        10_000,
        'redis-cli running BLPOP in the pod',
      );
      t.diagnostic(`ps in ${master()} while the plugin runs BLPOP:\n${inPod}`);
      assert.match(inPod, /^redis-cli --user redis-operator -h \S+ -p 6379 blpop cli-no-such-list 6$/m);
      const host = (await run('ps', ['-eww', '-o', 'args'], {})).stdout
        .split('\n')
        .filter((l) => l.includes('cli-no-such-list'));
      t.diagnostic(`ps on this machine:\n${host.join('\n')}`);
      assert.ok(
        host.some((l) => l.includes(`kubectl exec -i --namespace=${NS} --container=redis ${master()} -- sh -c`)),
      );
      for (const pw of passwords) {
        assert.ok(!inPod.includes(pw), 'no password in any argv in the pod');
        assert.ok(!host.some((l) => l.includes(pw)), 'no password in any argv on this machine');
      }
      assert.equal((await blocking).stdout, '\n');
    },
  );

  await t.test(
    'kubectl get redis: the master pod and replicas ready of wanted (the real kubectl, the installed CRD)',
    async () => {
      await c.waitFor(() => allLinked(c, 3), BOUND.allReady, 'three linked pods');
      // The hook writes status.summary at its next sync after the pods settle.
      const row = new RegExp(`^${NAME}\\s+redis\\s+7\\.2\\s+${master()}\\s+2/2\\s+Running\\s+\\S+$`, 'm');
      const table = await c.waitFor(
        async () => {
          const out = await local.kubectl(['get', 'redis', NAME, '-n', NS]);
          return row.test(out) ? out : undefined;
        },
        BOUND.running,
        `kubectl get redis naming ${master()} and 2/2`,
      );
      t.diagnostic(`$ kubectl get redis ${NAME}\n${table}`);
      assert.match(table.split('\n')[0]!, /^NAME\s+ENGINE\s+VERSION\s+MASTER\s+REPLICAS\s+PHASE\s+AGE$/);
      const wide = await local.kubectl(['get', 'redis', NAME, '-n', NS, '-o', 'wide']);
      assert.match(
        wide,
        new RegExp(
          `AGE\\s+MASTER STATUS\\n${NAME}\\s+redis\\s+7\\.2\\s+${master()}\\s+2/2\\s+Running\\s+\\S+\\s+Ready$`,
          'm',
        ),
        wide,
      );
    },
  );

  await t.test(
    "status lists only the Redis pods while a backup Job's pod exists, and names the sidecar that leads the Redis",
    async (st) => {
      // A Job whose pod carries the backup pods' labels (backup-job.ts), unschedulable so that it stays Pending and
      // costs nothing.
      const job = `${NAME}-backup-plugin`;
      await c.apply({
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: job, namespace: NS },
        spec: {
          backoffLimit: 0,
          template: {
            metadata: { labels: backupSelectorLabels(NAME) },
            spec: {
              restartPolicy: 'Never',
              nodeSelector: { 'redis-operator.test/nowhere': 'true' },
              containers: [{ name: 'backup', image: 'registry.invalid/backup:none' }],
            },
          },
        },
      });
      // The subtest's own hook: the scenario's (t.after) runs once its cluster is gone.
      st.after(() =>
        local.kubectl(['delete', 'job', job, '-n', NS, '--cascade=foreground', '--wait=false']).then(() => undefined),
      );
      const backupPod = await c.waitFor(
        () => c.list('pods', { namespace: NS, labelSelector: `batch.kubernetes.io/job-name=${job}` })[0]?.metadata.name,
        30_000,
        "the backup Job's pod",
      );
      const r = await plugin('status', NAME);
      st.diagnostic(`$ kubectl redis status ${NAME} (backup pod ${backupPod} present)\n${r.stdout}`);
      assert.equal(r.code, 0, r.stderr);
      assert.ok(!r.stdout.includes(backupPod), `${backupPod} is not listed`);
      const json = JSON.parse((await plugin('status', NAME, '-o', 'json')).stdout) as { pods: Array<{ name: string }> };
      assert.deepEqual(
        json.pods.map((p) => p.name),
        c.pods(NAME).map((p) => p.metadata.name),
      );

      const leader = c.leader(NAME);
      assert.ok(leader, "a sidecar holds the Redis's shard Lease");
      assert.match(
        r.stdout,
        new RegExp(
          `^  ${leader} leads it \\(Lease redis-operator/redis-operator-sidecar-shard-\\d, shard \\d of 4, renewed \\d+s ago\\)$`,
          'm',
        ),
      );
      const named = await plugin('status', NAME, '-o', 'leader');
      assert.equal(named.code, 0, named.stderr);
      assert.equal(named.stdout.trim(), leader);
      // The documented command reads the log of the sidecar that acted: it chose this Redis's master.
      const log = await local.kubectl(['logs', '-n', 'redis-operator', leader, '-c', 'sidecar']);
      const lines = log.split('\n').filter((l) => l.includes(`"name":"${NAME}"`));
      assert.ok(
        lines.some((l) => l.includes('bootstrap: master chosen')),
        `the leader's log tells the bootstrap of ${NAME}:\n${lines.slice(-10).join('\n')}`,
      );
    },
  );

  await t.test('switchover --to a replica waits until it is master; the Service follows', async () => {
    // A replica still syncing is rightly refused as a target ("did not complete"): start from three linked pods.
    await c.waitFor(
      () => allLinked(c, 3) && servicesRouted(c),
      BOUND.allReady,
      'three linked pods before the switchover',
    );
    const target = c.pods(NAME).find((p) => p.metadata.labels?.[ROLE_LABEL] === 'replica')!.metadata.name;
    const r = await plugin('switchover', NAME, '--to', target);
    t.diagnostic(`$ kubectl redis switchover ${NAME} --to ${target}\n${r.stdout}${r.stderr}`);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Done/);
    assert.equal(master(), target);
    await c.waitFor(
      () => c.masterEndpoint(NAME)?.pod === target,
      BOUND.failover,
      `the master Service routing to ${target}`,
    );
  });

  await t.test('a switchover to a pod that does not exist is refused with the reason, non-zero', async () => {
    const r = await plugin('switchover', NAME, '--to', 'no-such-pod', '--timeout', '2m');
    t.diagnostic(`refused: ${r.stderr}`);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /refused/);
  });

  await t.test('hibernate then wake keep a key written before', async () => {
    await c.waitFor(() => allLinked(c, 3) && servicesRouted(c), BOUND.allReady, 'three linked pods before hibernating');
    assert.equal(await call(c, podIp(c, master()!)!, 'SET', 'plugin-key', 'kept'), 'OK');
    await settle(c, podIp(c, master()!)!, 2);
    const h = await plugin('hibernate', NAME);
    t.diagnostic(`$ kubectl redis hibernate ${NAME}\n${h.stdout}${h.stderr}`);
    assert.equal(h.code, 0, h.stderr);
    assert.equal(c.pods(NAME).length, 0);
    const w = await plugin('wake', NAME);
    t.diagnostic(`$ kubectl redis wake ${NAME}\n${w.stdout}${w.stderr}`);
    assert.equal(w.code, 0, w.stderr);
    // Labelled master as soon as the sidecar promotes it; on a loaded box its first connections
    // may still be refused or time out, so read until it answers, then judge the answer.
    const value = await c.waitFor(
      async () => {
        const ip = master() !== undefined ? podIp(c, master()!) : undefined;
        return ip ? call(c, ip, 'GET', 'plugin-key').then(String, () => undefined) : undefined;
      },
      BOUND.allReady,
      'the master answering after wake',
    );
    assert.equal(value, 'kept');
  });

  await t.test('events lists the switchover, oldest first', async () => {
    const r = await plugin('events', NAME);
    t.diagnostic(`$ kubectl redis events ${NAME}\n${r.stdout}`);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Switchover\s+planned switchover/);
    const times = r.stdout
      .trim()
      .split('\n')
      .map((l) => l.split(' ')[0]!);
    assert.deepEqual(times, [...times].sort());
  });

  await t.test('a missing Redis: non-zero, naming it and the namespace', async () => {
    const r = await plugin('status', 'no-such-redis');
    assert.equal(r.code, 3);
    assert.match(r.stderr, /no such Redis "no-such-redis" in namespace "default"/);
  });

  await t.test(
    'backup of the example Redis (no spec.backup.storage): refused at once, naming the field; no RedisBackup made',
    async () => {
      const r = await plugin('backup', NAME, '--backup-name', 'never-made', '--timeout', '30s');
      t.diagnostic(`$ kubectl redis backup ${NAME}: exit ${r.code}\n${r.stderr}`);
      assert.equal(r.code, 1, `${r.stdout}${r.stderr}`);
      assert.match(
        r.stderr,
        new RegExp(`^error: backup ${NAME}: ${NAME} has no spec\\.backup\\.storage: .*no schedule needed`, 'm'),
      );
      // It once made a RedisBackup that could only fail (NoBackupStorage) and waited for it.
      assert.equal(JSON.parse(await local.kubectl(['get', 'redisbackups', '-n', NS, '-o', 'json']))['items'].length, 0);
    },
  );

  await t.test('a ServiceAccount with no role: the RBAC message', async () => {
    await local.kubectl(['create', 'serviceaccount', 'nobody', '-n', NS]);
    const token = await local.controlPlane.tokenFor(NS, 'nobody');
    const kubeconfig = local.controlPlane.kubeconfigFor(`system:serviceaccount:${NS}:nobody`, token);
    const r = await run(PLUGIN, ['status', NAME, '-n', NS], { KUBECONFIG: kubeconfig });
    assert.equal(r.code, 4, r.stderr);
    assert.match(r.stderr, /not allowed by RBAC: you cannot get redises in namespace "default"/);
  });
});

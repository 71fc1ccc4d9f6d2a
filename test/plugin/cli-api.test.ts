// `kubectl redis cli` as a user runs it (bin/kubectl-redis, a subprocess) on a real kube-apiserver,
// as a ServiceAccount that may only list pods and create pods/exec: the plugin finds the pod
// labelled master among the Redis' pods (not a backup pod, not another Redis'), sees TLS in that
// pod's mounts, and runs kubectl (here a stand-in on PATH that records its argv and env and exits
// 7) with the user's arguments after `--` unchanged, even those that look like the plugin's own
// flags; kubectl's exit code is the plugin's. With no right to read Secrets, no password can reach it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startApiServer } from '../k8s/api-server.ts';
import { cliScript } from '../../src/plugin/cli.ts';
import { until } from '../support/until.ts';

const BIN = new URL('../../bin/kubectl-redis', import.meta.url).pathname;
const NS = 'apps';

const redisPod = (name: string, labels: Record<string, string>, tls: boolean) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: NS, labels: { 'app.kubernetes.io/managed-by': 'redis-operator', ...labels } },
  spec: {
    containers: [
      {
        name: 'redis',
        image: 'redis:7.2',
        volumeMounts: [{ name: 'data', mountPath: '/data' }, ...(tls ? [{ name: 'tls', mountPath: '/tls' }] : [])],
      },
    ],
    volumes: [{ name: 'data', emptyDir: {} }, ...(tls ? [{ name: 'tls', secret: { secretName: 'x' } }] : [])],
  },
});
const of = (instance: string, app = 'redis') => ({
  'app.kubernetes.io/instance': instance,
  'app.kubernetes.io/name': app,
});
const master = { 'redis.example.com/role': 'master' };

test(
  'kubectl redis cli on a real API server, as a user who may only list pods and exec',
  { timeout: 120_000 },
  async (t) => {
    const api = await startApiServer({ namespaces: [NS] });
    t.after(() => api.close());
    for (const p of [
      redisPod('my-redis-master-0', { ...of('my-redis'), 'redis.example.com/role': 'replica' }, true),
      redisPod('my-redis-replica-0', { ...of('my-redis'), ...master }, true),
      // A backup Job's pod carries the instance label, and another Redis has its own master.
      redisPod('my-redis-backup-x', { ...of('my-redis', 'redis-backup'), ...master }, false),
      redisPod('other-master-0', { ...of('other'), ...master }, false),
    ])
      await api.store.create('pods', p);
    const cp = api.controlPlane;
    await cp.kubectl(['create', 'serviceaccount', 'oncall', '-n', NS]);
    await cp.kubectl(['create', 'role', 'redis-cli', '-n', NS, '--verb=list', '--resource=pods']);
    await cp.kubectl(['create', 'role', 'redis-exec', '-n', NS, '--verb=create', '--resource=pods/exec']);
    for (const role of ['redis-cli', 'redis-exec'])
      await cp.kubectl(['create', 'rolebinding', role, '-n', NS, `--role=${role}`, `--serviceaccount=${NS}:oncall`]);
    // RBAC is read from the API server's cache: wait until it has the bindings.
    await until('the bindings in effect', () =>
      Promise.all(
        [
          ['list', 'pods'],
          ['create', 'pods', '--subresource=exec'],
        ].map((a) =>
          cp.kubectl(['auth', 'can-i', ...a, '-n', NS, `--as=system:serviceaccount:${NS}:oncall`]).then(
            () => true,
            () => false,
          ),
        ),
      ).then((ok) => ok.every(Boolean)),
    );
    const kubeconfig = cp.kubeconfigFor(`system:serviceaccount:${NS}:oncall`, await cp.tokenFor(NS, 'oncall'));

    const dir = mkdtempSync(path.join(tmpdir(), 'kubectl-redis-cli-'));
    const record = path.join(dir, 'argv');
    writeFileSync(path.join(dir, 'kubectl'), `#!/bin/sh\nprintf '%s\\0' "$@" > '${record}'\nexit 7\n`);
    chmodSync(path.join(dir, 'kubectl'), 0o755);
    const plugin = (args: string[]) =>
      promisify(execFile)(BIN, args, { env: { PATH: `${dir}:${process.env['PATH'] ?? ''}` } }).then(
        (r) => ({ code: 0, ...r }),
        (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
      );
    const recorded = () => readFileSync(record, 'utf8').split('\0').slice(0, -1);

    await t.test(
      "the master over TLS; the arguments after -- reach kubectl as given; kubectl's exit code",
      async () => {
        const args = ['--help', '-n', 'x', '--pod', 'y', '$(id)', 'a b', '', '"', "'", '--', 'ünï', '*'];
        const r = await plugin(['cli', 'my-redis', '--kubeconfig', kubeconfig, '-n', NS, '--', ...args]);
        assert.equal(r.code, 7, r.stderr);
        assert.deepEqual(recorded(), [
          'exec',
          '-i',
          `--namespace=${NS}`,
          `--kubeconfig=${kubeconfig}`,
          '--container=redis',
          'my-redis-replica-0',
          '--',
          'sh',
          '-c',
          cliScript({ tls: true, cluster: false }),
          'redis-cli',
          ...args,
        ]);
      },
    );

    await t.test(
      '--pod: that pod, plaintext when it mounts no TLS files; not a pod of this Redis: refused, kubectl not run',
      async () => {
        let r = await plugin([
          'cli',
          'other',
          '--kubeconfig',
          kubeconfig,
          '-n',
          NS,
          '--pod',
          'other-master-0',
          '--',
          'ping',
        ]);
        assert.equal(r.code, 7, r.stderr);
        assert.equal(recorded()[9], cliScript({ tls: false, cluster: false }));
        writeFileSync(record, '');
        r = await plugin(['cli', 'my-redis', '--kubeconfig', kubeconfig, '-n', NS, '--pod', 'other-master-0']);
        assert.equal(r.code, 1);
        assert.match(
          r.stderr,
          /other-master-0 is not a pod of "my-redis" \(its pods: my-redis-master-0, my-redis-replica-0\)/,
        );
        assert.equal(readFileSync(record, 'utf8'), '');
      },
    );

    await t.test('no such Redis: exit 3 naming it; arguments before --: exit 2 saying where they go', async () => {
      let r = await plugin(['cli', 'nope', '--kubeconfig', kubeconfig, '-n', NS, '--', 'ping']);
      assert.equal(r.code, 3);
      assert.match(r.stderr, /no pod of a Redis or RedisCluster "nope" in namespace "apps"/);
      r = await plugin(['cli', 'my-redis', '--kubeconfig', kubeconfig, '-n', NS, 'get', 'k']);
      assert.equal(r.code, 2);
      assert.match(r.stderr, /redis-cli's arguments go after --, e\.g\. kubectl redis cli my-redis -- get k/);
    });

    await t.test('without the right to list pods: the RBAC message, exit 4', async () => {
      await cp.kubectl(['create', 'serviceaccount', 'nobody', '-n', NS]);
      const nobody = cp.kubeconfigFor(`system:serviceaccount:${NS}:nobody`, await cp.tokenFor(NS, 'nobody'));
      const r = await plugin(['cli', 'my-redis', '--kubeconfig', nobody, '-n', NS, '--', 'ping']);
      assert.equal(r.code, 4, r.stderr);
      assert.match(r.stderr, /not allowed by RBAC: you cannot list pods in namespace "apps"/);
    });
  },
);

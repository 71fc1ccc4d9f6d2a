// test/e2e/run.sh in the test suite: `npm run e2e:local` (test/k8s/e2e-local.ts) on a real cluster on
// this machine (real nodes, the real Metacontroller, the operator as its Deployment from the image
// built from this repository), scenarios 1 to 5 with the real kubectl. It passes only when the
// script ends with every scenario passed and prints its summary lines. Skips, saying why, where a
// real cluster cannot run here (not root, no iproute2, binaries or images not built, no ../shared).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { isBuilt } from '../k8s/build.ts';
import { REPO_ROOT } from '../k8s/operator.ts';
import { realClusterMissing } from '../k8s/real-cluster.ts';

const why = realClusterMissing() ?? (isBuilt() ? undefined : 'the control plane is not built (npm run cluster:build)');

test(
  'run.sh scenarios 1-5 pass on a real cluster with the operator as its Deployment (npm run e2e:local)',
  { skip: why ?? false, timeout: 900_000 },
  async (t) => {
    const output = await new Promise<{ code: number | null; text: string }>((resolve) => {
      const child = spawn(process.execPath, ['test/k8s/e2e-local.ts'], {
        cwd: REPO_ROOT,
        env: { ...process.env, E2E_SUBNET: '49' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let text = '';
      child.stdout.setEncoding('utf8').on('data', (c: string) => (text += c));
      child.stderr.setEncoding('utf8').on('data', (c: string) => (text += c));
      child.once('close', (code) => resolve({ code, text }));
    });
    const keys = 'kube_version|metacontroller|nodes|runtime|operator|e2e_passed';
    for (const line of output.text.split('\n'))
      if (new RegExp(`^\\s+# |^(${keys})=|scenario \\d+ passed|real cluster up|nodes started`).test(line))
        t.diagnostic(line.trim());
    const summary = Object.fromEntries(
      [...output.text.matchAll(new RegExp(`^(${keys})=(.*)$`, 'gm'))].map((m) => [m[1], m[2]]),
    );
    // The scenario's own failure line and measurements first: CI shows only so much of a message.
    const failures = output.text.split('\n').filter((l) => /^FAIL \[|^\S+ scenario |^\s+# /.test(l));
    assert.equal(
      summary['e2e_passed'],
      '5/5',
      `every scenario passed:\n${failures.join('\n')}\n-- last lines:\n${output.text.split('\n').slice(-40).join('\n')}`,
    );
    assert.match(summary['kube_version'] ?? '', /^v1\.\d+\.\d+/);
    assert.equal(summary['metacontroller'], 'real');
    assert.equal(summary['nodes'], '3');
    assert.match(summary['runtime'] ?? '', /^containerd:\/\/2\.\d+\.\d+$/);
    assert.equal(summary['operator'], 'deployment');
    assert.equal(output.code, 0);
  },
);

// The real node's container runtime parts (test/k8s/node-build.ts): containerd reports the pinned
// version, ctr runs, each CNI plugin answers the CNI VERSION command, and a second call is warm.
// Builds the parts when they are missing (about 2 min cold on 2 cores); skipped (with the reason)
// when this machine cannot run a real node.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { buildNodeParts, CNI_PLUGINS, CNI_VERSION, CONTAINERD_VERSION, nodePartsMissing } from './node-build.ts';

function run(bin: string, args: string[], env: Record<string, string> = {}): string {
  const r = spawnSync(bin, args, { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 30_000 });
  assert.equal(r.status, 0, `${bin} ${args.join(' ')} failed: ${r.error?.message ?? r.stderr}`);
  return r.stdout;
}

test(
  'node parts: the pinned containerd, ctr and CNI plugins run; a second call is warm',
  { timeout: 30 * 60_000 },
  async (t) => {
    const missing = nodePartsMissing();
    if (missing) {
      t.skip(missing);
      return;
    }
    const parts = await buildNodeParts((l) => t.diagnostic(l));

    assert.match(
      run(parts.containerd, ['--version']),
      new RegExp(`^containerd github\\.com/containerd/containerd/v2 ${CONTAINERD_VERSION.replace(/\./g, '\\.')}\\b`),
    );
    assert.equal(parts.containerdVersion, CONTAINERD_VERSION);
    assert.match(
      run(parts.ctr, ['--version']),
      new RegExp(`^ctr github\\.com/containerd/containerd/v2 ${CONTAINERD_VERSION.replace(/\./g, '\\.')}\\b`),
    );
    for (const plugin of Object.keys(CNI_PLUGINS)) {
      const out = run(path.join(parts.cniBinDir, plugin), [], { CNI_COMMAND: 'VERSION' });
      const info = JSON.parse(out) as { supportedVersions?: unknown };
      assert.ok(
        Array.isArray(info.supportedVersions) && info.supportedVersions.includes('1.0.0'),
        `${plugin} (CNI plugins ${CNI_VERSION}): ${out}`,
      );
    }

    const logged: string[] = [];
    const t0 = Date.now();
    assert.deepEqual(await buildNodeParts((l) => logged.push(l)), parts);
    assert.deepEqual(logged, [], 'a warm call builds nothing');
    assert.ok(Date.now() - t0 < 5_000, `a warm call returns at once (took ${Date.now() - t0} ms)`);
  },
);

// `npm run e2e:local`: test/e2e/run.sh, unchanged in its scenarios and assertions, against the
// real control plane on this machine. Starts the local cluster (test/k8s/local-cluster.ts: builds
// the control plane first when it is not cached), which installs manifests/ and metacontroller/
// with the real kubectl; runs run.sh with the built kubectl first on PATH and E2E_RUNTIME=host;
// tears everything down; ends with
//   kube_version=<server version>
//   metacontroller=<real|stand-in>
//   e2e_passed=<passed>/<total>
// Exit status 0 only when every scenario passed. E2E_SCENARIOS picks scenarios (default 1-5);
// E2E_SUBNET the cluster's ranges (default 45); KEEP_CLUSTER_DATA=1 keeps logs and data.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { startLocalCluster } from './local-cluster.ts';
import { REPO_ROOT } from './operator.ts';

const log = (line: string) => console.log(`${new Date().toISOString().slice(11, 19)} ${line}`);

async function main(): Promise<number> {
  const scenarios = (process.env['E2E_SCENARIOS'] ?? '1 2 3 4 5').trim().split(/\s+/);
  const t0 = Date.now();
  const lc = await startLocalCluster({ subnet: Number(process.env['E2E_SUBNET'] ?? 45), onProgress: log });
  log(`local cluster up in ${((Date.now() - t0) / 1000).toFixed(1)} s (data in ${lc.dataRoot})`);
  let passed = 0;
  let code = 1;
  try {
    const e2eLogs = path.join(lc.dataRoot, 'e2e');
    mkdirSync(e2eLogs, { recursive: true });
    code = await new Promise<number>((resolve) => {
      const child = spawn('bash', [path.join(REPO_ROOT, 'test/e2e/run.sh')], {
        cwd: REPO_ROOT,
        stdio: ['ignore', 'pipe', 'inherit'],
        env: {
          ...process.env,
          PATH: `${lc.controlPlane.binDir}:${process.env['PATH'] ?? '/usr/bin:/bin'}`,
          KUBECONFIG: lc.kubeconfig,
          E2E_RUNTIME: 'host',
          E2E_BUILD: '0',
          E2E_INSTALL: '0',
          E2E_SCENARIOS: scenarios.join(' '),
          E2E_LOG_DIR: e2eLogs,
          E2E_OPERATOR_LOGS: lc.logDir,
        },
      });
      let output = '';
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (chunk: string) => {
        process.stdout.write(chunk);
        output += chunk;
      });
      child.once('close', (c) => {
        // Counted on the whole output: a line may arrive split across chunks.
        passed = [...output.matchAll(/^\S+ scenario \d+ passed$/gm)].length;
        resolve(c ?? 1);
      });
    });
  } finally {
    await lc.stop();
  }
  console.log(`kube_version=${lc.version}`);
  console.log(`metacontroller=${lc.metacontrollerKind}`);
  console.log(`e2e_passed=${passed}/${scenarios.length}`);
  return code === 0 && passed === scenarios.length ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : err);
    process.exit(1);
  },
);

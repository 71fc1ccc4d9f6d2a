// `npm run e2e:local`: test/e2e/run.sh, unchanged in its scenarios and assertions, against a real
// cluster on this machine (test/k8s/real-cluster.ts: the control plane, real nodes with
// containerd, the real Metacontroller as a Deployment, and manifests/ applied verbatim, so the
// operator runs from the image built from this repository). run.sh runs as it does on kind, with
// the built kubectl first on PATH (no image build or install: the harness did both); then
// everything is torn down. Ends with
//   kube_version=<server version>
//   metacontroller=real
//   nodes=<n>
//   runtime=containerd://<version>
//   operator=deployment
//   e2e_passed=<passed>/<total>
// Exit status 0 only when every scenario passed. E2E_SCENARIOS picks scenarios (default 1-5);
// E2E_SUBNET the cluster's ranges (default 45); E2E_NODES the node count (default 3);
// KEEP_CLUSTER_DATA=1 keeps logs and data.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './operator.ts';
import { startRealCluster } from './real-cluster.ts';

const log = (line: string) => console.log(`${new Date().toISOString().slice(11, 19)} ${line}`);

async function main(): Promise<number> {
  const scenarios = (process.env['E2E_SCENARIOS'] ?? '1 2 3 4 5').trim().split(/\s+/);
  const t0 = Date.now();
  const rc = await startRealCluster({
    subnet: Number(process.env['E2E_SUBNET'] ?? 45),
    nodes: Number(process.env['E2E_NODES'] ?? 3),
    onProgress: log,
  });
  log(`real cluster up in ${((Date.now() - t0) / 1000).toFixed(1)} s (data in ${rc.dataRoot})`);
  const operatorPods = (
    await rc.kubectl([
      'get',
      'pods',
      '-n',
      'redis-operator',
      '-o',
      'custom-columns=NAME:.metadata.name,NODE:.spec.nodeName,IMAGE:.spec.containers[0].image,PHASE:.status.phase',
      '--no-headers',
    ])
  ).trim();
  for (const line of operatorPods.split('\n')) log(`operator pod: ${line.replace(/\s+/g, ' ')}`);
  let passed = 0;
  let code = 1;
  try {
    const e2eLogs = path.join(rc.dataRoot, 'e2e');
    mkdirSync(e2eLogs, { recursive: true });
    code = await new Promise<number>((resolve) => {
      const child = spawn('bash', [path.join(REPO_ROOT, 'test/e2e/run.sh')], {
        cwd: REPO_ROOT,
        stdio: ['ignore', 'pipe', 'inherit'],
        env: {
          ...process.env,
          PATH: `${rc.controlPlane.binDir}:${process.env['PATH'] ?? '/usr/bin:/bin'}`,
          KUBECONFIG: rc.kubeconfig,
          E2E_BUILD: '0',
          E2E_INSTALL: '0',
          E2E_SCENARIOS: scenarios.join(' '),
          E2E_LOG_DIR: e2eLogs,
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
    await rc.stop();
  }
  console.log(`kube_version=${rc.version}`);
  console.log('metacontroller=real');
  console.log(`nodes=${rc.nodes.length}`);
  console.log(`runtime=${rc.runtime}`);
  console.log('operator=deployment');
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

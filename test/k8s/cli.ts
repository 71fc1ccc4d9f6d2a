// Command line for the real local control plane:
//   node test/k8s/cli.ts build     build (or find cached) kube-apiserver, controller-manager,
//                                  scheduler, kubectl and etcd; prints bin_dir=<path>; then the
//                                  tests' S3 server (test/s3/build.ts); prints s3_server=<path>;
//                                  then CoreDNS, the cluster DNS (test/k8s/coredns-build.ts);
//                                  prints coredns=<path>; then the monitoring tests' Prometheus,
//                                  promtool and redis_exporter (test/monitoring/tools.ts) and
//                                  prometheus-operator's CRDs (test/k8s/prometheus-operator.ts);
//                                  prints prometheus=<path> ... prometheus_operator_crds=<dir>;
//                                  then Helm, for the chart's tests (test/k8s/helm-build.ts);
//                                  prints helm=<path>; then the real nodes' containerd, runc shim
//                                  and CNI plugins (node-build.ts) and the images their pods run
//                                  (images.ts); prints containerd=, cni_bin_dir=, images=
//   node test/k8s/cli.ts up        start the control plane and wait (Ctrl-C stops and cleans up);
//                                  prints KUBECONFIG=<path> for your own kubectl
// Invariant: nothing is left running after the command ends (every process dies with it).
import { binDir, ensureBinaries, isBuilt } from './build.ts';
import { buildCoredns } from './coredns-build.ts';
import { buildHelm } from './helm-build.ts';
import { ensureImages, imagesMissing } from './images.ts';
import { buildNodeParts, nodePartsMissing } from './node-build.ts';
import { DEFAULT_IMAGES } from './real-cluster.ts';
import { startControlPlane } from './control-plane.ts';
import { prometheusOperatorCrds } from './prometheus-operator.ts';
import { buildS3Server } from '../s3/build.ts';
import { ensureMonitoringTools, toolLines } from '../monitoring/tools.ts';

const log = (line: string) => console.log(`${new Date().toISOString().slice(11, 19)} ${line}`);

async function main(): Promise<void> {
  const cmd = process.argv[2] ?? 'help';
  if (cmd === 'build') {
    const t0 = Date.now();
    const warm = isBuilt();
    const dir = await ensureBinaries(log);
    console.log(`bin_dir=${dir}`);
    console.log(`${warm ? 'warm' : 'cold'}_build_s=${Math.round((Date.now() - t0) / 1000)}`);
    console.log(`s3_server=${await buildS3Server(log)}`);
    console.log(`coredns=${await buildCoredns(log)}`);
    console.log(toolLines(await ensureMonitoringTools(log)).join('\n'));
    const crds = prometheusOperatorCrds();
    if ('why' in crds) throw new Error(`prometheus-operator CRDs: ${crds.why}`);
    console.log(`prometheus_operator_crds=${crds.dir}`);
    console.log(`helm=${await buildHelm(log)}`);
    // The real nodes' runtime and the images their pods run: only where a real node can run.
    const noNode = nodePartsMissing() ?? imagesMissing(['pause', ...DEFAULT_IMAGES]);
    if (noNode) {
      console.log(`real_nodes=skipped (${noNode})`);
      return;
    }
    const parts = await buildNodeParts(log);
    console.log(`containerd=${parts.containerd}`);
    console.log(`cni_bin_dir=${parts.cniBinDir}`);
    const images = await ensureImages(log);
    console.log(`images=${Object.keys(images).sort().join(',')}`);
    return;
  }
  if (cmd === 'up') {
    const t0 = Date.now();
    const cp = await startControlPlane({ subnet: Number(process.env['K8S_SUBNET'] ?? 40), onProgress: log });
    log(`control plane ${cp.version} up in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    console.log(`KUBECONFIG=${cp.adminKubeconfig}`);
    const stop = () => {
      log('stopping');
      void cp.stop().then(() => process.exit(0));
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    await new Promise(() => undefined);
    return;
  }
  console.log(`usage: node test/k8s/cli.ts build|up\n(binaries for this checkout: ${binDir()})`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});

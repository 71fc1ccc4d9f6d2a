// `npm run demo`: the operator end to end on one machine, for a newcomer. By default on a REAL
// cluster here (demo/real.ts on test/k8s/real-cluster.ts): the control plane built from source,
// 3 real nodes (containerd, runc, kubelet, kube-proxy), CoreDNS, the real Metacontroller, and
// `kubectl apply -k manifests/` verbatim, so the operator runs as its Deployment from the image
// built from this repository. It applies manifests/examples/redis.yaml, prints `kubectl get
// redis` and the pods, writes 100 keys to the master, deletes the master pod and prints the
// failover as it unfolds, shows the recreated pod as a replica holding the keys, prints the
// Redis's Events, cleans up, and ends with `demo_failover_ms=<n>` (master pod deleted -> a new
// master pod behind the my-redis-master Service's endpoints).
//
// The real cluster needs Linux, root, iproute2, Go 1.26+, runc, buildah, mmdebstrap and
// ../shared beside the checkout (Metacontroller); the first run builds Kubernetes, containerd and
// the images (about 10 minutes on 2 cores, cached in ~/.cache/redis-operator-k8s), later runs
// start in about a minute. Where it cannot run, the demo says what is missing in one line and
// points to the same walk-through on kind (test/e2e/run.sh).
// Needs: `npm ci`.
// Dev tool only (it imports test/); never part of the image.
// Environment: DEMO_SUBNET (third octet of the cluster's addresses, default 69), DEMO_KEEP=1
// (keep the data directory and logs for a look afterwards).
// Invariant: everything it starts is gone when it exits, also on Ctrl-C (SIGINT) or SIGTERM.
import { clusterLeftovers, realClusterMissing } from '../test/k8s/real-cluster.ts';
import { runReal } from './real.ts';
import { announce, cleanup, dim, interrupt, say, wasInterrupted } from './ui.ts';

const subnet = Number(process.env['DEMO_SUBNET'] ?? 69);
if (!Number.isInteger(subnet) || subnet < 1 || subnet > 254) {
  process.stderr.write(`DEMO_SUBNET=${process.env['DEMO_SUBNET']} is invalid: a third octet from 1 to 254\n`);
  process.exit(1);
}

let real = false;
/** After the real cluster's stop(): says whether anything of it is left (nothing, by stop()'s invariant). */
function reportLeftovers(): void {
  if (!real) return;
  const left = clusterLeftovers(subnet);
  announce(
    left.length > 0
      ? `left behind (please report): ${left.join(', ')}`
      : dim(`nothing left: no rok${subnet} namespace, link or cgroup`),
  );
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  // process.on, not once: a second Ctrl-C while stopping must not kill the demo halfway through
  // its cleanup and leave nodes behind.
  process.on(signal, () => {
    if (!interrupt()) {
      announce(`\n${signal}: still stopping`);
      return;
    }
    announce(`\n${signal}: stopping`);
    void cleanup().then(() => {
      reportLeftovers();
      process.exit(signal === 'SIGINT' ? 130 : 143);
    });
  });
}

async function main(): Promise<void> {
  const why = realClusterMissing();
  if (why)
    throw new Error(
      `no real cluster here: ${why}. The same walk-through runs on kind: test/e2e/run.sh (see its README)`,
    );
  real = true;
  const failoverMs = await runReal(subnet);
  await cleanup();
  reportLeftovers();
  say(`demo_failover_ms=${Math.round(failoverMs)}`);
}

main().then(
  () => process.exit(0),
  async (err: unknown) => {
    // Interrupted: the kubectl or build the signal also reached failed, which is no news, and the
    // signal handler cleans up and exits.
    if (wasInterrupted()) return;
    process.stderr.write(`demo failed: ${err instanceof Error ? err.message : String(err)}\n`);
    await cleanup();
    reportLeftovers();
    process.exit(1);
  },
);

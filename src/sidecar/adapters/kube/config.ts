// Where the sidecar's KubeConfig comes from. Invariant: with nothing configured and no in-cluster
// environment it fails loudly at start instead of talking to some default (localhost) server.
// In a pod: client-node's in-cluster config, which reads /var/run/secrets/kubernetes.io/serviceaccount
// (the projected volume only the sidecar container mounts: token, ca.crt, namespace). It reads
// ca.crt on every request and the token again once a minute, so the kubelet's rotation of the
// token (at 80% of its hour) is picked up without a restart (test/sidecar/adapters/kube/in-cluster.test.ts).
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';

export interface KubeConfigSource {
  /** Use this KubeConfig as is (tests). */
  kubeConfig?: KubeConfig;
  /** Options for KubeConfig.loadFromOptions (tests: the stand-in's kubeConfigOptions()). */
  options?: Parameters<KubeConfig['loadFromOptions']>[0];
  /** Environment to read KUBECONFIG and KUBERNETES_SERVICE_HOST from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Tests: a directory standing for / where the in-cluster files are read (client-node's pathPrefix). */
  inClusterRoot?: string;
}

/** In-cluster by default; KUBECONFIG (one path or a path list) when set; injected options for tests. */
export function loadKubeConfig(source: KubeConfigSource = {}): KubeConfig {
  if (source.kubeConfig) return source.kubeConfig;
  const kc = new KubeConfig();
  if (source.options) {
    kc.loadFromOptions(source.options);
    return kc;
  }
  const env = source.env ?? process.env;
  const files = (env['KUBECONFIG'] ?? '').split(path.delimiter).filter(Boolean);
  if (files.length > 0) {
    kc.loadFromFile(files[0]!);
    for (const file of files.slice(1)) {
      const extra = new KubeConfig();
      extra.loadFromFile(file);
      kc.mergeConfig(extra);
    }
    return kc;
  }
  if (!env['KUBERNETES_SERVICE_HOST'] || !env['KUBERNETES_SERVICE_PORT']) {
    throw new Error(
      'no Kubernetes configuration: KUBECONFIG is not set and KUBERNETES_SERVICE_HOST/PORT are absent (not running in a pod)',
    );
  }
  kc.loadFromCluster(source.inClusterRoot);
  return kc;
}

// Where the sidecar's KubeConfig comes from. Invariant: with nothing configured and no in-cluster
// environment it fails loudly at start instead of talking to some default (localhost) server.
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';

export interface KubeConfigSource {
  /** Use this KubeConfig as is (tests). */
  kubeConfig?: KubeConfig;
  /** Options for KubeConfig.loadFromOptions (tests: the stand-in's kubeConfigOptions()). */
  options?: Parameters<KubeConfig['loadFromOptions']>[0];
  /** Environment to read KUBECONFIG and KUBERNETES_SERVICE_HOST from (default process.env). */
  env?: NodeJS.ProcessEnv;
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
    throw new Error('no Kubernetes configuration: KUBECONFIG is not set and KUBERNETES_SERVICE_HOST/PORT are absent (not running in a pod)');
  }
  kc.loadFromCluster();
  return kc;
}

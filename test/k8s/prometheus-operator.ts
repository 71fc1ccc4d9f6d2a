// prometheus-operator's real CRDs for the objects the monitoring component attaches (PodMonitor,
// PrometheusRule) and ServiceMonitor, from its Go module (the Go module proxy serves the
// repository; example/prometheus-operator-crd holds the CRDs its bundle installs). Only the CRDs:
// the operator itself is not run here (test/monitoring/scrape-config.ts plays its part for a real
// Prometheus), so applying them lets the real API server validate our objects by their schemas.
// The module's source is also what scrape-config.ts was written against (pkg/prometheus/promcfg.go).
// Invariant: a pinned version; the module cache keeps it between runs (go mod download is a no-op
// once it is there), and `node test/k8s/cli.ts build` fetches it so CI always has it.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

export const PROMETHEUS_OPERATOR_MODULE = 'github.com/prometheus-operator/prometheus-operator';
export const PROMETHEUS_OPERATOR_VERSION = 'v0.93.0';

const CRD_DIR = 'example/prometheus-operator-crd';
const CRD_FILES = {
  podMonitors: 'monitoring.coreos.com_podmonitors.yaml',
  serviceMonitors: 'monitoring.coreos.com_servicemonitors.yaml',
  prometheusRules: 'monitoring.coreos.com_prometheusrules.yaml',
} as const;

export type PrometheusOperatorCrds = { dir: string; paths: Record<keyof typeof CRD_FILES, string> };

/** The module's directory in the Go module cache (downloading it if needed), or why not. */
export function prometheusOperatorModule(): { dir: string } | { why: string } {
  const ref = `${PROMETHEUS_OPERATOR_MODULE}@${PROMETHEUS_OPERATOR_VERSION}`;
  try {
    const out = execFileSync('go', ['mod', 'download', '-json', ref], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 300_000,
      env: { ...process.env, GOFLAGS: '-mod=mod' },
    });
    const dir = (JSON.parse(out) as { Dir?: string }).Dir;
    return dir && existsSync(dir) ? { dir } : { why: `go mod download ${ref} named no module directory` };
  } catch (err) {
    return { why: `go mod download ${ref} failed: ${(err as Error).message.split('\n')[0]}` };
  }
}

/** The paths of the three CRD files, or why they cannot be had here. */
export function prometheusOperatorCrds(): PrometheusOperatorCrds | { why: string } {
  const mod = prometheusOperatorModule();
  if ('why' in mod) return mod;
  const dir = path.join(mod.dir, CRD_DIR);
  const paths = Object.fromEntries(
    Object.entries(CRD_FILES).map(([k, f]) => [k, path.join(dir, f)]),
  ) as PrometheusOperatorCrds['paths'];
  const missing = Object.values(paths).filter((p) => !existsSync(p));
  return missing.length === 0
    ? { dir, paths }
    : { why: `no ${missing.map((p) => path.basename(p)).join(', ')} in ${dir}` };
}

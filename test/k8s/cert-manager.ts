// cert-manager's real Certificate CRD, from its Go module (the Go module proxy serves the
// repository, and deploy/crds holds the CRDs its releases install). Only the CRD: cert-manager's
// controller is not run here, so a test plays its part (it writes the Secret).
// Invariant: a pinned version; the module cache keeps it between runs (go mod download is a no-op
// once it is there).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

export const CERT_MANAGER_MODULE = 'github.com/cert-manager/cert-manager';
export const CERT_MANAGER_VERSION = 'v1.21.2';

/** The path of cert-manager's Certificate CRD, or why it cannot be had here. */
export function certificateCrd(): { path: string } | { why: string } {
  try {
    const out = execFileSync('go', ['mod', 'download', '-json', `${CERT_MANAGER_MODULE}@${CERT_MANAGER_VERSION}`], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 300_000,
      env: { ...process.env, GOFLAGS: '-mod=mod' },
    });
    const dir = (JSON.parse(out) as { Dir?: string }).Dir;
    const file = dir ? path.join(dir, 'deploy/crds/cert-manager.io_certificates.yaml') : '';
    return existsSync(file) ? { path: file } : { why: `no Certificate CRD in ${dir ?? 'the module download'}` };
  } catch (err) {
    return {
      why: `go mod download ${CERT_MANAGER_MODULE}@${CERT_MANAGER_VERSION} failed: ${(err as Error).message.split('\n')[0]}`,
    };
  }
}

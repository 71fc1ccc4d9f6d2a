// The operator's own image (`redis-operator:<tag>`: Node 24, WORKDIR /app holding src/, ENV
// NODE_ENV=production; see the Dockerfile) as the node agent runs it on this machine: `node` on the
// container's PATH is the project's Node (nodeBinary()), /app is this repository (the same src/),
// and, since there is no mount namespace, environment values naming container paths are rewritten.
// The rewrite (README, "What it does not model"): a whole env value that is an absolute path under
// a volume mount, the termination message path or /app becomes the host path behind it, exactly as
// mapPath does for redis-server's arguments. Nothing else about the process changes.
// Invariant: only values that start with `/` and are covered by a mount change (lists, URLs and
// relative paths stay as they are).
import { createHash } from 'node:crypto';
import { readFileSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { mapPath, type Mount } from '../../cluster/workloads/container.ts';
import { nodeBinary } from '../../support/host.ts';

/** The image's WORKDIR; here, the repository root. */
export const IMAGE_WORKDIR = '/app';
export const REPO_ROOT = path.resolve(fileURLToPath(new URL('../../../', import.meta.url)));
/** The image's own ENV (its runtime stage); the container's env may override it. */
export const IMAGE_ENV: ReadonlyArray<readonly [string, string]> = [['NODE_ENV', 'production']];

/** The container's mounts plus the image's /app, which is this repository (a volume mounted there wins). */
export function operatorMounts(mounts: Mount[], repoRoot = REPO_ROOT): Mount[] {
  return [...mounts, { containerPath: IMAGE_WORKDIR, hostPath: repoRoot }];
}

/** Env values that are container paths under a mount, as host paths (see the header). */
export function mapEnvPaths(env: ReadonlyArray<readonly [string, string]>, mounts: Mount[]): Array<[string, string]> {
  return env.map(([k, v]) => [k, v.startsWith('/') ? (mapPath(mounts, v) ?? v) : v]);
}

/** The working directory: `workingDir` (default the image's /app) on the host. */
export function operatorWorkingDir(workingDir: string | undefined, mounts: Mount[]): string | undefined {
  return mapPath(mounts, workingDir ?? IMAGE_WORKDIR);
}

/** Puts `node` (the project's Node 24) into the container's bin directory. */
export function installNode(binDir: string): void {
  const link = path.join(binDir, 'node');
  rmSync(link, { force: true });
  symlinkSync(nodeBinary(), link);
}

let imageID: string | undefined;

/** containerStatuses[].imageID of operator containers: the Node binary that runs them (hashed once). */
export function operatorImageID(): string {
  imageID ??= `node-agent://node@sha256:${createHash('sha256').update(readFileSync(nodeBinary())).digest('hex')}`;
  return imageID;
}

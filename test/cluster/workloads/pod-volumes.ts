// A pod worker's volumes, as the kubelet mounts them before the sandbox exists: emptyDir,
// configMap and secret (written as files, with `items`), and a persistentVolumeClaim's directory.
// Invariants:
// - prepareVolumes() sets the worker's volumes only when every volume is ready; until then it
//   returns the FailedMount-like message the pod waits with (and is retried on the next sync).
// - A claim is used by one live pod at a time (the kubelet's Multi-Attach check), so two pods never
//   run on one data directory.
// - Key volumes hold exactly their source's keys; files are replaced atomically and only when
//   their content changed, so a running container never reads a half-written file.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { V1KeyToPath } from '@kubernetes/client-node';
import type { PodWorker } from './pod-worker.ts';

function writeFileAtomic(file: string, content: string | Buffer): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, content);
  renameSync(tmp, file);
}

/** Sets up every volume of the pod; returns why the pod must wait, or undefined once all are ready. */
export function prepareVolumes(w: PodWorker): string | undefined {
  const { store } = w.kubelet.options;
  const volumes = new Map<string, string>();
  const claims: string[] = [];
  for (const v of w.pod.spec?.volumes ?? []) {
    const host = path.join(w.dir, 'volumes', v.name);
    if (v.emptyDir) {
      mkdirSync(host, { recursive: true });
    } else if (v.configMap || v.secret) {
      const problem = writeKeyVolume(w, v.name, host);
      if (problem) return problem;
    } else if (v.persistentVolumeClaim) {
      const claimName = v.persistentVolumeClaim.claimName;
      const claim = store.get('persistentvolumeclaims', w.namespace, claimName);
      if (!claim) return `persistentvolumeclaim "${claimName}" not found`;
      if (claim.metadata.deletionTimestamp) return `persistentvolumeclaim "${claimName}" is being deleted`;
      const dir = w.kubelet.options.volumes.pathOf(claim);
      if (!dir) return `pod has unbound immediate PersistentVolumeClaims (${claimName})`;
      const holder = w.kubelet.claimHolder(claim.metadata.uid, w);
      if (holder) return `Multi-Attach error for volume "pvc-${claim.metadata.uid}": Volume is already used by pod ${holder}`;
      mkdirSync(dir, { recursive: true });
      volumes.set(v.name, dir);
      claims.push(claim.metadata.uid);
      continue;
    } else {
      return `volume "${v.name}": the stand-in kubelet supports emptyDir, configMap, secret and persistentVolumeClaim volumes`;
    }
    volumes.set(v.name, host);
  }
  w.volumes = volumes;
  w.claimUids = claims;
  return undefined;
}

/** Writes a configMap/secret volume's files; returns the FailedMount message when its source is missing. */
function writeKeyVolume(w: PodWorker, name: string, host: string): string | undefined {
  const v = (w.pod.spec?.volumes ?? []).find((x) => x.name === name);
  const isSecret = v?.secret !== undefined;
  const sourceName = (isSecret ? v?.secret?.secretName : v?.configMap?.name) ?? '';
  const optional = (isSecret ? v?.secret?.optional : v?.configMap?.optional) === true;
  const items: V1KeyToPath[] | undefined = isSecret ? v?.secret?.items : v?.configMap?.items;
  const source = w.kubelet.options.store.get(isSecret ? 'secrets' : 'configmaps', w.namespace, sourceName);
  if (!source) {
    if (optional) {
      mkdirSync(host, { recursive: true });
      return undefined;
    }
    return `MountVolume.SetUp failed for volume "${name}" : ${isSecret ? 'secret' : 'configmap'} "${sourceName}" not found`;
  }
  const files = new Map<string, Buffer>();
  for (const [key, value] of Object.entries((source['data'] ?? {}) as Record<string, string>)) {
    files.set(key, isSecret ? Buffer.from(value, 'base64') : Buffer.from(value, 'utf8'));
  }
  for (const [key, value] of Object.entries((source['binaryData'] ?? {}) as Record<string, string>)) files.set(key, Buffer.from(value, 'base64'));
  const wanted = new Map<string, Buffer>();
  if (items && items.length > 0) {
    for (const item of items) {
      const content = files.get(item.key);
      if (content === undefined) return `MountVolume.SetUp failed for volume "${name}" : configmap references non-existent config key: ${item.key}`;
      wanted.set(item.path, content);
    }
  } else {
    for (const [key, content] of files) wanted.set(key, content);
  }
  mkdirSync(host, { recursive: true });
  for (const [rel, content] of wanted) {
    const file = path.join(host, rel);
    if (!existsSync(file) || !readFileSync(file).equals(content)) writeFileAtomic(file, content);
  }
  for (const entry of readdirSync(host, { recursive: true, withFileTypes: true })) {
    const rel = path.relative(host, path.join(entry.parentPath, entry.name));
    if (entry.isFile() && !wanted.has(rel)) rmSync(path.join(host, rel), { force: true });
  }
  return undefined;
}

/** ConfigMap/Secret edits reach mounted volumes (at once here; within about a minute on a real node). */
export function refreshConfigVolumes(w: PodWorker): void {
  for (const v of w.pod.spec?.volumes ?? []) {
    const host = w.volumes?.get(v.name);
    if (host && (v.configMap || v.secret)) writeKeyVolume(w, v.name, host);
  }
}

// A pod's volumes on this machine: reads what they need from the API server with the node's own
// credential (the Node authorizer lets a node read only the Secrets, ConfigMaps, claims and
// volumes of pods bound to it, and mint tokens only for them), and lays out the directories:
// emptyDir, secret, configMap, downwardAPI and projected (service-account tokens via the
// TokenRequest API, bound to the pod) under the pod's directory; a persistentVolumeClaim is the
// bound PersistentVolume's own directory (hostPath or local path).
// Invariants:
// - A volume directory exists before any container starts and outlives container restarts;
//   a claim's directory is never removed here (it belongs to the PV).
// - Files are written atomically and only when their content or mode changed; files no longer
//   in the source are removed (ConfigMap/Secret edits reach running pods on refresh()).
// - Tokens are re-requested after 80% of their lifetime, as the kubelet's token manager does.
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { isStatus, type Json, type KubeClient } from './api-client.ts';
import { referencedObjects, tokenKey, volumeFiles, type Files, type Sources } from './volume-files.ts';

export interface MachineShape {
  memoryBytes: number;
  cpus: number;
}

export interface PodVolumesOptions {
  client: KubeClient;
  /** The pod's own directory (volumes/<name> live under it). */
  dir: string;
  machine: MachineShape;
  /** `namespace/name` of another live pod of this agent using that PV, if any. */
  holderOf: (pvName: string) => string | undefined;
}

function writeAtomic(file: string, content: Buffer, mode: number): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, content, { mode });
  chmodSync(tmp, mode);
  renameSync(tmp, file);
}

/** Makes `host` hold exactly `files` (relative paths). */
export function syncDir(host: string, files: Files): void {
  mkdirSync(host, { recursive: true });
  for (const [rel, f] of files) {
    const file = path.join(host, rel);
    const same = existsSync(file) && (statSync(file).mode & 0o777) === f.mode && readFileSync(file).equals(f.content);
    if (!same) writeAtomic(file, f.content, f.mode);
  }
  for (const entry of readdirSync(host, { recursive: true, withFileTypes: true })) {
    const rel = path.relative(host, path.join(entry.parentPath, entry.name));
    if (entry.isFile() && !files.has(rel)) rmSync(path.join(host, rel), { force: true });
  }
}

export class PodVolumes {
  readonly #o: PodVolumesOptions;
  #pod: V1Pod;
  /** Volume name -> host directory, once every volume is set up. */
  hostPaths: Map<string, string> | undefined;
  /** Names of the PersistentVolumes this pod mounts. */
  volumes: string[] = [];
  sources: Sources = { secrets: new Map(), configMaps: new Map(), tokens: new Map() };
  readonly #tokenRenewAt = new Map<string, number>();

  constructor(pod: V1Pod, options: PodVolumesOptions) {
    this.#pod = pod;
    this.#o = options;
  }

  set pod(pod: V1Pod) {
    this.#pod = pod;
  }

  get #ns(): string {
    return this.#pod.metadata?.namespace ?? '';
  }

  /** Reads every Secret and ConfigMap the pod references (404 = absent) and the tokens it mounts. */
  async fetchSources(): Promise<Sources> {
    const { client } = this.#o;
    const refs = referencedObjects(this.#pod);
    const secrets = new Map<string, Json | undefined>();
    const configMaps = new Map<string, Json | undefined>();
    await Promise.all([
      ...refs.secrets.map(async (n) => secrets.set(n, await client.get(`/api/v1/namespaces/${this.#ns}/secrets/${n}`))),
      ...refs.configMaps.map(async (n) => configMaps.set(n, await client.get(`/api/v1/namespaces/${this.#ns}/configmaps/${n}`))),
    ]);
    const tokens = new Map(this.sources.tokens);
    for (const t of refs.tokens) {
      const key = tokenKey(t);
      if (tokens.has(key) && Date.now() < (this.#tokenRenewAt.get(key) ?? 0)) continue;
      const sa = this.#pod.spec?.serviceAccountName ?? 'default';
      const res = await client.request<Json>('POST', `/api/v1/namespaces/${this.#ns}/serviceaccounts/${sa}/token`, {
        body: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenRequest',
          spec: {
            audiences: t.audience ? [t.audience] : [],
            expirationSeconds: t.expirationSeconds,
            boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: this.#pod.metadata?.name, uid: this.#pod.metadata?.uid },
          },
        },
      });
      const status = (res['status'] ?? {}) as { token?: string; expirationTimestamp?: string };
      tokens.set(key, status.token ?? '');
      const expires = Date.parse(status.expirationTimestamp ?? '') || Date.now() + t.expirationSeconds * 1000;
      this.#tokenRenewAt.set(key, Date.now() + 0.8 * (expires - Date.now()));
    }
    this.sources = { secrets, configMaps, tokens };
    return this.sources;
  }

  /** The host directory behind a claim, or the reason it cannot be mounted yet. */
  async #claimDir(claimName: string): Promise<{ dir: string; pv: string } | string> {
    const { client } = this.#o;
    const claim = await client.get<Json>(`/api/v1/namespaces/${this.#ns}/persistentvolumeclaims/${claimName}`);
    if (!claim) return `persistentvolumeclaim "${claimName}" not found`;
    if ((claim['metadata'] as Json)['deletionTimestamp']) return `persistentvolumeclaim "${claimName}" is being deleted`;
    const pvName = (claim['spec'] as Json | undefined)?.['volumeName'] as string | undefined;
    if (((claim['status'] ?? {}) as Json)['phase'] !== 'Bound' || !pvName) return `persistentvolumeclaim "${claimName}" is not bound`;
    const pv = await client.get<Json>(`/api/v1/persistentvolumes/${pvName}`);
    if (!pv) return `persistentvolume "${pvName}" not found`;
    const spec = (pv['spec'] ?? {}) as { hostPath?: { path?: string }; local?: { path?: string } };
    const dir = spec.hostPath?.path ?? spec.local?.path;
    if (!dir) return `persistentvolume "${pvName}": the node agent mounts only hostPath and local volumes`;
    const holder = this.#o.holderOf(pvName);
    if (holder) return `Multi-Attach error for volume "${pvName}" Volume is already used by pod ${holder}`;
    mkdirSync(dir, { recursive: true });
    return { dir, pv: pvName };
  }

  /**
   * Sets up every volume (the kubelet's WaitForAttachAndMount); undefined when all are ready,
   * else the FailedMount message. 403 from the Node authorizer (its graph may lag the binding
   * by a moment) and other API errors throw: the caller retries.
   */
  async setUp(): Promise<string | undefined> {
    await this.fetchSources();
    const hostPaths = new Map<string, string>();
    const volumes: string[] = [];
    for (const v of this.#pod.spec?.volumes ?? []) {
      const host = path.join(this.#o.dir, 'volumes', v.name);
      if (v.emptyDir) {
        mkdirSync(host, { recursive: true });
      } else if (v.persistentVolumeClaim) {
        const claim = await this.#claimDir(v.persistentVolumeClaim.claimName);
        if (typeof claim === 'string') return `MountVolume.SetUp failed for volume "${v.name}" : ${claim}`;
        hostPaths.set(v.name, claim.dir);
        volumes.push(claim.pv);
        continue;
      } else {
        const files = volumeFiles(this.#pod, v, this.sources, this.#o.machine);
        if (files === undefined)
          return `volume "${v.name}": the node agent supports emptyDir, secret, configMap, downwardAPI, projected and persistentVolumeClaim volumes`;
        if ('error' in files) return files.error as string;
        syncDir(host, files as Files);
      }
      hostPaths.set(v.name, host);
    }
    this.hostPaths = hostPaths;
    this.volumes = volumes;
    return undefined;
  }

  /** The kubelet's periodic remount of secret/configMap/downwardAPI/projected volumes. */
  async refresh(): Promise<void> {
    if (!this.hostPaths) return;
    await this.fetchSources();
    for (const v of this.#pod.spec?.volumes ?? []) {
      const host = this.hostPaths.get(v.name);
      if (!host || v.emptyDir || v.persistentVolumeClaim) continue;
      const files = volumeFiles(this.#pod, v, this.sources, this.#o.machine);
      // A source deleted under a running pod leaves the last files in place, as on a node.
      if (files && !('error' in files)) syncDir(host, files as Files);
    }
  }
}

export const isForbidden = (err: unknown): boolean => isStatus(err, 403);

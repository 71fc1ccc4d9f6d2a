// The files a pod's secret, configMap, downwardAPI and projected volumes hold, as the kubelet's
// volume plugins lay them out (keys as file names, `items` remapping, modes), computed from the
// objects the agent read. Pure: no I/O; pod-volumes.ts fetches and writes.
// Invariants: a missing source that is not optional is the kubelet's FailedMount message and no
// files; an optional one is an empty directory. Projected sources merge into one directory.
import type { V1Container, V1DownwardAPIVolumeFile, V1KeyToPath, V1Pod, V1Volume } from '@kubernetes/client-node';
import { resourceFieldValue } from '../../cluster/workloads/container.ts';
import type { Json } from './api-client.ts';

export interface FileContent {
  content: Buffer;
  mode: number;
}

export type Files = Map<string, FileContent>;

/** What the agent fetched for a pod: absent key = not asked for; undefined value = 404. */
export interface Sources {
  secrets: Map<string, Json | undefined>;
  configMaps: Map<string, Json | undefined>;
  /** Service-account tokens by `${audience}|${expirationSeconds}`. */
  tokens: Map<string, string>;
}

export interface TokenRequestSpec {
  audience: string;
  expirationSeconds: number;
}

export const tokenKey = (t: TokenRequestSpec): string => `${t.audience}|${t.expirationSeconds}`;

const DEFAULT_MODE = 0o644;

/** Every Secret, ConfigMap and token a pod needs (env and volumes), so one fetch covers a sync. */
export function referencedObjects(pod: V1Pod): { secrets: string[]; configMaps: string[]; tokens: TokenRequestSpec[] } {
  const secrets = new Set<string>();
  const configMaps = new Set<string>();
  const tokens = new Map<string, TokenRequestSpec>();
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    for (const from of c.envFrom ?? []) {
      if (from.secretRef?.name) secrets.add(from.secretRef.name);
      if (from.configMapRef?.name) configMaps.add(from.configMapRef.name);
    }
    for (const e of c.env ?? []) {
      if (e.valueFrom?.secretKeyRef?.name) secrets.add(e.valueFrom.secretKeyRef.name);
      if (e.valueFrom?.configMapKeyRef?.name) configMaps.add(e.valueFrom.configMapKeyRef.name);
    }
  }
  for (const v of pod.spec?.volumes ?? []) {
    if (v.secret?.secretName) secrets.add(v.secret.secretName);
    if (v.configMap?.name) configMaps.add(v.configMap.name);
    for (const s of v.projected?.sources ?? []) {
      if (s.secret?.name) secrets.add(s.secret.name);
      if (s.configMap?.name) configMaps.add(s.configMap.name);
      if (s.serviceAccountToken) {
        const t = { audience: s.serviceAccountToken.audience ?? '', expirationSeconds: s.serviceAccountToken.expirationSeconds ?? 3600 };
        tokens.set(tokenKey(t), t);
      }
    }
  }
  return { secrets: [...secrets], configMaps: [...configMaps], tokens: [...tokens.values()] };
}

function keyData(source: Json, isSecret: boolean): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const [k, v] of Object.entries((source['data'] ?? {}) as Record<string, string>)) out.set(k, Buffer.from(v, isSecret ? 'base64' : 'utf8'));
  for (const [k, v] of Object.entries((source['binaryData'] ?? {}) as Record<string, string>)) out.set(k, Buffer.from(v, 'base64'));
  return out;
}

/** A secret or configMap source's files, or the FailedMount reason. */
function keyedFiles(
  kind: 'secret' | 'configmap',
  name: string,
  source: Json | undefined,
  items: V1KeyToPath[] | undefined,
  optional: boolean,
  mode: number,
  into: Files,
): string | undefined {
  if (!source) return optional ? undefined : `${kind} "${name}" not found`;
  const data = keyData(source, kind === 'secret');
  if (items && items.length > 0) {
    for (const item of items) {
      const content = data.get(item.key);
      if (content === undefined) {
        if (optional) continue;
        return `${kind === 'secret' ? 'secret' : 'configmap'} references non-existent ${kind === 'secret' ? 'secret' : 'config'} key: ${item.key}`;
      }
      into.set(item.path, { content, mode: item.mode ?? mode });
    }
  } else {
    for (const [key, content] of data) into.set(key, { content, mode });
  }
  return undefined;
}

function quoteMap(map: Record<string, string> | undefined): string {
  return Object.keys(map ?? {})
    .sort()
    .map((k) => `${k}=${JSON.stringify(map![k])}\n`)
    .join('');
}

/** A downwardAPI item's content (the volume flavour: whole label/annotation maps are allowed). */
export function downwardValue(pod: V1Pod, item: V1DownwardAPIVolumeFile, node: { memoryBytes: number; cpus: number }): string | { error: string } {
  const meta = pod.metadata ?? {};
  if (item.fieldRef) {
    const f = item.fieldRef.fieldPath;
    const keyed = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(f);
    if (keyed) return ((keyed[1] === 'labels' ? meta.labels : meta.annotations) ?? {})[keyed[2]!] ?? '';
    if (f === 'metadata.labels') return quoteMap(meta.labels);
    if (f === 'metadata.annotations') return quoteMap(meta.annotations);
    if (f === 'metadata.name') return meta.name ?? '';
    if (f === 'metadata.namespace') return meta.namespace ?? '';
    if (f === 'metadata.uid') return meta.uid ?? '';
    return { error: `unsupported downwardAPI volume fieldPath ${f}` };
  }
  if (item.resourceFieldRef) {
    const c = (pod.spec?.containers ?? []).find((x: V1Container) => x.name === item.resourceFieldRef?.containerName) ?? pod.spec?.containers?.[0];
    if (!c) return { error: 'resourceFieldRef names no container' };
    return resourceFieldValue(c, item.resourceFieldRef.resource, item.resourceFieldRef.divisor, node);
  }
  return { error: 'downwardAPI item without fieldRef or resourceFieldRef' };
}

function downwardFiles(
  pod: V1Pod,
  items: V1DownwardAPIVolumeFile[],
  mode: number,
  node: { memoryBytes: number; cpus: number },
  into: Files,
): string | undefined {
  for (const item of items) {
    const v = downwardValue(pod, item, node);
    if (typeof v !== 'string') return v.error;
    into.set(item.path, { content: Buffer.from(v), mode: item.mode ?? mode });
  }
  return undefined;
}

/**
 * The files of a secret/configMap/downwardAPI/projected volume, or the FailedMount message
 * (`MountVolume.SetUp failed for volume "x" : ...`). Other volume types answer undefined.
 */
export function volumeFiles(pod: V1Pod, v: V1Volume, sources: Sources, node: { memoryBytes: number; cpus: number }): Files | { error: string } | undefined {
  const files: Files = new Map();
  const fail = (reason: string) => ({ error: `MountVolume.SetUp failed for volume "${v.name}" : ${reason}` });
  let problem: string | undefined;
  if (v.secret) {
    const name = v.secret.secretName ?? '';
    problem = keyedFiles('secret', name, sources.secrets.get(name), v.secret.items, v.secret.optional === true, v.secret.defaultMode ?? DEFAULT_MODE, files);
  } else if (v.configMap) {
    const name = v.configMap.name ?? '';
    problem = keyedFiles(
      'configmap',
      name,
      sources.configMaps.get(name),
      v.configMap.items,
      v.configMap.optional === true,
      v.configMap.defaultMode ?? DEFAULT_MODE,
      files,
    );
  } else if (v.downwardAPI) {
    problem = downwardFiles(pod, v.downwardAPI.items ?? [], v.downwardAPI.defaultMode ?? DEFAULT_MODE, node, files);
  } else if (v.projected) {
    const mode = v.projected.defaultMode ?? DEFAULT_MODE;
    for (const s of v.projected.sources ?? []) {
      if (s.secret)
        problem = keyedFiles('secret', s.secret.name ?? '', sources.secrets.get(s.secret.name ?? ''), s.secret.items, s.secret.optional === true, mode, files);
      else if (s.configMap)
        problem = keyedFiles(
          'configmap',
          s.configMap.name ?? '',
          sources.configMaps.get(s.configMap.name ?? ''),
          s.configMap.items,
          s.configMap.optional === true,
          mode,
          files,
        );
      else if (s.downwardAPI) problem = downwardFiles(pod, s.downwardAPI.items ?? [], mode, node, files);
      else if (s.serviceAccountToken) {
        const t = sources.tokens.get(
          tokenKey({ audience: s.serviceAccountToken.audience ?? '', expirationSeconds: s.serviceAccountToken.expirationSeconds ?? 3600 }),
        );
        if (t === undefined) problem = 'service account token not issued yet';
        else files.set(s.serviceAccountToken.path, { content: Buffer.from(t), mode });
      } else problem = 'unsupported projected volume source (clusterTrustBundle, podCertificate are not modelled)';
      if (problem) break;
    }
  } else {
    return undefined;
  }
  return problem ? fail(problem) : files;
}

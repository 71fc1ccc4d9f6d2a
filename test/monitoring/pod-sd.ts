// A stand-in for Prometheus's Kubernetes pod discovery, because Debian's Prometheus has none:
// Debian removed discovery/kubernetes from its build (NEWS.Debian, 1.5.0+ds-1: "Kubernetes
// support has been completely removed"), so its prometheus and promtool refuse
// `kubernetes_sd_configs` ("field kubernetes_sd_configs not found"). Its file discovery is there.
// So: the scrape configs scrape-config.ts generates keep their relabelings, and their
// kubernetes_sd_configs (role pod) become file_sd_configs whose targets this module builds from
// Pod objects (listed by the test from the real API server) with the labels Prometheus 2.42's
// pod role gives them (discovery/kubernetes/pod.go of github.com/prometheus/prometheus@v0.42.0):
// one target per container port (one per container without ports, address the pod IP),
// __meta_kubernetes_namespace, pod_name/ip/uid/phase/ready/node_name/host_ip,
// pod_label_*/labelpresent_*, pod_annotation_*/annotationpresent_*, controller kind/name,
// pod_container_name/id/image/init, pod_container_port_name/number/protocol. A pod without an IP
// has no targets. The namespaces the SD config names filter the pods (none: every namespace).
// Not modelled: attach_metadata (node labels), `selectors` (field/label selectors of the watch),
// own_namespace, and the watch's latency (a test rewrites the file when pods change).
// file SD adds __meta_filepath, which kubernetes SD does not; relabeling never reads it.
// Invariant: pure except writeFileSd, which replaces each file atomically (Prometheus watches them
// and must never read half a file).
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { sanitizeLabelName, type ScrapeConfig } from './scrape-config.ts';

export interface Pod {
  metadata: {
    name: string;
    namespace: string;
    uid?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: Array<{ kind: string; name: string; controller?: boolean }>;
  };
  spec: {
    nodeName?: string;
    containers: PodContainer[];
    initContainers?: PodContainer[];
  };
  status?: {
    phase?: string;
    podIP?: string;
    hostIP?: string;
    conditions?: Array<{ type: string; status: string }>;
    containerStatuses?: Array<{ name: string; containerID?: string }>;
    initContainerStatuses?: Array<{ name: string; containerID?: string }>;
  };
}

interface PodContainer {
  name: string;
  image?: string;
  ports?: Array<{ name?: string; containerPort: number; protocol?: string }>;
}

/** A file_sd target group. */
export interface TargetGroup {
  targets: string[];
  labels: Record<string, string>;
}

const META = '__meta_kubernetes_';

function podLabels(pod: Pod): Record<string, string> {
  const ready = pod.status?.conditions?.find((c) => c.type === 'Ready')?.status ?? 'Unknown';
  const ls: Record<string, string> = {
    [`${META}namespace`]: pod.metadata.namespace,
    [`${META}pod_name`]: pod.metadata.name,
    [`${META}pod_ip`]: pod.status?.podIP ?? '',
    [`${META}pod_ready`]: ready.toLowerCase(),
    [`${META}pod_phase`]: pod.status?.phase ?? '',
    [`${META}pod_node_name`]: pod.spec.nodeName ?? '',
    [`${META}pod_host_ip`]: pod.status?.hostIP ?? '',
    [`${META}pod_uid`]: pod.metadata.uid ?? '',
  };
  const controller = pod.metadata.ownerReferences?.find((r) => r.controller === true);
  if (controller?.kind) ls[`${META}pod_controller_kind`] = controller.kind;
  if (controller?.name) ls[`${META}pod_controller_name`] = controller.name;
  for (const [k, v] of Object.entries(pod.metadata.labels ?? {})) {
    ls[`${META}pod_label_${sanitizeLabelName(k)}`] = v;
    ls[`${META}pod_labelpresent_${sanitizeLabelName(k)}`] = 'true';
  }
  for (const [k, v] of Object.entries(pod.metadata.annotations ?? {})) {
    ls[`${META}pod_annotation_${sanitizeLabelName(k)}`] = v;
    ls[`${META}pod_annotationpresent_${sanitizeLabelName(k)}`] = 'true';
  }
  return ls;
}

/** What the pod role discovers for these pods: one group per target (its labels differ per port). */
export function podTargetGroups(pods: Pod[]): TargetGroup[] {
  const groups: TargetGroup[] = [];
  for (const pod of pods) {
    const ip = pod.status?.podIP;
    if (!ip) continue;
    const base = podLabels(pod);
    const containers = [
      ...pod.spec.containers.map((c) => ({ c, init: false })),
      ...(pod.spec.initContainers ?? []).map((c) => ({ c, init: true })),
    ];
    for (const { c, init } of containers) {
      const statuses = (init ? pod.status?.initContainerStatuses : pod.status?.containerStatuses) ?? [];
      const container = {
        [`${META}pod_container_name`]: c.name,
        [`${META}pod_container_id`]: statuses.find((s) => s.name === c.name)?.containerID ?? '',
        [`${META}pod_container_image`]: c.image ?? '',
        [`${META}pod_container_init`]: String(init),
      };
      if (!c.ports || c.ports.length === 0) {
        groups.push({ targets: [ip], labels: { ...base, ...container } });
        continue;
      }
      for (const p of c.ports) {
        groups.push({
          targets: [ip.includes(':') ? `[${ip}]:${p.containerPort}` : `${ip}:${p.containerPort}`],
          labels: {
            ...base,
            ...container,
            [`${META}pod_container_port_number`]: String(p.containerPort),
            [`${META}pod_container_port_name`]: p.name ?? '',
            // The API server defaults the protocol to TCP; objects built by hand may leave it out.
            [`${META}pod_container_port_protocol`]: p.protocol ?? 'TCP',
          },
        });
      }
    }
  }
  return groups;
}

type SdConfig = { role?: string; namespaces?: { names?: string[] } };

function podSd(config: ScrapeConfig): SdConfig {
  const sds = config['kubernetes_sd_configs'] as SdConfig[] | undefined;
  if (!sds || sds.length !== 1 || sds[0]!.role !== 'pod')
    throw new Error(`${String(config['job_name'])}: one kubernetes_sd_configs entry of role pod expected`);
  return sds[0]!;
}

/** The file (relative to the Prometheus config's directory) a job's targets are written to. */
export function fileSdPath(jobName: string): string {
  return `sd/${jobName.replace(/[^\w.-]/g, '_')}.json`;
}

/** The scrape configs with kubernetes_sd_configs replaced by file_sd_configs (in place of the SD entry). */
export function withFileSd(configs: ScrapeConfig[]): ScrapeConfig[] {
  return configs.map((c) => {
    podSd(c);
    const out: ScrapeConfig = {};
    // Same key order, so a diff against the kubernetes_sd form shows only the SD entry.
    for (const [k, v] of Object.entries(c)) {
      if (k === 'kubernetes_sd_configs')
        out['file_sd_configs'] = [{ files: [fileSdPath(String(c['job_name']))], refresh_interval: '1s' }];
      else out[k] = v;
    }
    return out;
  });
}

/** The target groups a job's kubernetes SD would discover among `pods` (its namespaces filter). */
export function fileSdTargets(config: ScrapeConfig, pods: Pod[]): TargetGroup[] {
  const names = podSd(config).namespaces?.names ?? [];
  return podTargetGroups(names.length === 0 ? pods : pods.filter((p) => names.includes(p.metadata.namespace)));
}

/**
 * Writes every job's targets under `dir` (the Prometheus harness's directory), each file replaced
 * atomically. `configs` are the kubernetes_sd form (scrape-config.ts's output).
 */
export function writeFileSd(dir: string, configs: ScrapeConfig[], pods: Pod[]): void {
  mkdirSync(path.join(dir, 'sd'), { recursive: true });
  for (const c of configs) {
    const file = path.join(dir, fileSdPath(String(c['job_name'])));
    writeFileSync(`${file}.tmp`, `${JSON.stringify(fileSdTargets(c, pods), null, 1)}\n`);
    renameSync(`${file}.tmp`, file);
  }
}

// What prometheus-operator would hand Prometheus for our monitoring objects, since no operator
// runs here: PodMonitors -> `scrape_configs` (kubernetes_sd_configs, role pod) and
// PrometheusRules -> rule files. Pure functions, no I/O. Written against the module
// test/k8s/prometheus-operator.ts pins (v0.93.0: pkg/prometheus/promcfg.go
// generatePodMonitorConfig and generateK8SSDConfig, pkg/operator/rules.go), for Prometheus 2.42,
// with the operator's defaults (one shard, no scrape classes, no enforced namespace label, no
// enforced limits, honor-labels/timestamps not overridden, SelectorMechanism Relabel).
// Modelled, in the operator's order: job `podMonitor/<ns>/<name>/<i>`, honor_labels, the SD
// config (role, namespaces from namespaceSelector, api_server and its credentials or a
// kubeconfig_file), interval/scrapeTimeout/path/params/scheme, then the relabelings: job ->
// __tmp_prometheus_job_name, the Failed/Succeeded phase drop (filterRunning), keep/drop per
// matchLabels/matchExpressions, keep on the container port name, namespace/container/pod,
// podTargetLabels, job (and jobLabel), endpoint, the user's relabelings, the sharding hashmod for
// shard 0 of 1 (what the config-reloader's $(SHARD) substitution makes of it); metricRelabelings.
// Not modelled (refused with an error, never silently dropped): selectorMechanism RoleSelector,
// attachMetadata, portNumber/targetPort, any scrape auth or TLS (basicAuth, authorization,
// oauth2, bearerTokenSecret, tlsConfig), proxies, scrapeClass, limits, scrape protocols, native
// histograms, trackTimestampsStaleness, followRedirects/enableHttp2. Also not modelled: the
// operator's validation and its dropping of invalid objects, and the global section
// (external_labels) of the Prometheus it configures. kubeconfig_file is ours: the operator only
// emits api_server (a Prometheus outside the cluster needs one or the other).
// Debian's Prometheus (the one here) has no Kubernetes discovery at all: pod-sd.ts turns the SD
// entry into file SD fed from Pod objects, and keeps everything else of these configs as is.
import { stringify } from 'yaml';

export interface RelabelConfig {
  sourceLabels?: string[];
  separator?: string;
  targetLabel?: string;
  regex?: string;
  modulus?: number;
  replacement?: string;
  action?: string;
}

export interface PodMetricsEndpoint {
  port?: string;
  path?: string;
  interval?: string;
  scrapeTimeout?: string;
  scheme?: string;
  params?: Record<string, string[]>;
  honorLabels?: boolean;
  honorTimestamps?: boolean;
  filterRunning?: boolean;
  relabelings?: RelabelConfig[];
  metricRelabelings?: RelabelConfig[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }>;
}

export interface PodMonitor {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; uid?: string };
  spec: {
    selector: LabelSelector;
    namespaceSelector?: { any?: boolean; matchNames?: string[] };
    podMetricsEndpoints?: PodMetricsEndpoint[];
    jobLabel?: string;
    podTargetLabels?: string[];
  };
}

export interface PrometheusRule {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; uid?: string };
  spec: { groups?: Array<Record<string, unknown> & { name: string; rules?: Array<Record<string, unknown>> }> };
}

/** How Prometheus reaches the API server for discovery (kubernetes_sd_configs). */
export type ApiAccess =
  | { kubeconfigFile: string }
  | {
      apiServer: string;
      tlsConfig?: {
        ca_file?: string;
        cert_file?: string;
        key_file?: string;
        server_name?: string;
        insecure_skip_verify?: boolean;
      };
      /** Sent as `authorization: {type: Bearer, credentials_file}` (the operator's non-deprecated form). */
      bearerTokenFile?: string;
    };

export type ScrapeConfig = Record<string, unknown>;

/** The PodMonitor fields translated (anything else is refused); test/monitoring checks them against the CRD. */
export const MODELLED = {
  spec: new Set(['selector', 'namespaceSelector', 'podMetricsEndpoints', 'jobLabel', 'podTargetLabels']),
  endpoint: new Set([
    'port',
    'path',
    'interval',
    'scrapeTimeout',
    'scheme',
    'params',
    'honorLabels',
    'honorTimestamps',
    'filterRunning',
    'relabelings',
    'metricRelabelings',
  ]),
  relabel: new Set(['sourceLabels', 'separator', 'targetLabel', 'regex', 'modulus', 'replacement', 'action']),
};

function refuseUnmodelled(what: string, obj: object, allowed: Set<string>): void {
  const extra = Object.keys(obj).filter((k) => !allowed.has(k));
  if (extra.length > 0) throw new Error(`${what}: ${extra.join(', ')} not modelled by scrape-config.ts`);
}

/** Prometheus label names allow [a-zA-Z0-9_]; Kubernetes label keys also have '.', '/', '-'. */
export function sanitizeLabelName(name: string): string {
  return name.replace(/[^a-zA-Z0-9_]/g, '_');
}

const podLabel = (k: string) => `__meta_kubernetes_pod_label_${sanitizeLabelName(k)}`;
const podLabelPresent = (k: string) => `__meta_kubernetes_pod_labelpresent_${sanitizeLabelName(k)}`;

function relabel(rc: RelabelConfig, what: string): Record<string, unknown> {
  refuseUnmodelled(what, rc, MODELLED.relabel);
  const out: Record<string, unknown> = {};
  if (rc.sourceLabels && rc.sourceLabels.length > 0) out['source_labels'] = rc.sourceLabels;
  if (rc.separator !== undefined) out['separator'] = rc.separator;
  if (rc.targetLabel) out['target_label'] = rc.targetLabel;
  if (rc.regex) out['regex'] = rc.regex;
  if (rc.modulus) out['modulus'] = rc.modulus;
  if (rc.replacement !== undefined) out['replacement'] = rc.replacement;
  // The CRD allows Replace/replace alike; Prometheus only the lower case.
  if (rc.action) out['action'] = rc.action.toLowerCase();
  return out;
}

function selectorRelabelings(selector: LabelSelector, what: string): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  // Sorted keys, as the operator emits them (its config must not change with map order).
  for (const k of Object.keys(selector.matchLabels ?? {}).sort()) {
    out.push({
      action: 'keep',
      source_labels: [podLabel(k), podLabelPresent(k)],
      regex: `(${selector.matchLabels![k]});true`,
    });
  }
  for (const e of selector.matchExpressions ?? []) {
    const values = `(${(e.values ?? []).join('|')});true`;
    if (e.operator === 'In')
      out.push({ action: 'keep', source_labels: [podLabel(e.key), podLabelPresent(e.key)], regex: values });
    else if (e.operator === 'NotIn')
      out.push({ action: 'drop', source_labels: [podLabel(e.key), podLabelPresent(e.key)], regex: values });
    else if (e.operator === 'Exists')
      out.push({ action: 'keep', source_labels: [podLabelPresent(e.key)], regex: 'true' });
    else if (e.operator === 'DoesNotExist')
      out.push({ action: 'drop', source_labels: [podLabelPresent(e.key)], regex: 'true' });
    else throw new Error(`${what}: selector operator ${String(e.operator)} is not a label selector operator`);
  }
  return out;
}

function sdConfig(pm: PodMonitor, namespace: string, access: ApiAccess | undefined): Record<string, unknown> {
  const sd: Record<string, unknown> = { role: 'pod' };
  const nsel = pm.spec.namespaceSelector ?? {};
  // any: every namespace (no `namespaces` key); no matchNames: the PodMonitor's own namespace.
  const names = nsel.any ? [] : nsel.matchNames && nsel.matchNames.length > 0 ? nsel.matchNames : [namespace];
  if (names.length > 0) sd['namespaces'] = { names };
  if (access && 'kubeconfigFile' in access) sd['kubeconfig_file'] = access.kubeconfigFile;
  else if (access) {
    sd['api_server'] = access.apiServer;
    if (access.bearerTokenFile) sd['authorization'] = { type: 'Bearer', credentials_file: access.bearerTokenFile };
    if (access.tlsConfig) sd['tls_config'] = access.tlsConfig;
  }
  return sd;
}

/** One scrape config per podMetricsEndpoints entry, as the operator generates them. */
export function podMonitorScrapeConfigs(pm: PodMonitor, access?: ApiAccess): ScrapeConfig[] {
  const { name } = pm.metadata;
  const namespace = pm.metadata.namespace;
  const what = `PodMonitor ${namespace ?? '?'}/${name}`;
  if (!namespace) throw new Error(`${what}: metadata.namespace is required (a PodMonitor is namespaced)`);
  refuseUnmodelled(`${what} spec`, pm.spec, MODELLED.spec);
  return (pm.spec.podMetricsEndpoints ?? []).map((ep, i) => {
    const epWhat = `${what} podMetricsEndpoints[${i}]`;
    refuseUnmodelled(epWhat, ep, MODELLED.endpoint);
    const cfg: ScrapeConfig = {
      job_name: `podMonitor/${namespace}/${name}/${i}`,
      honor_labels: ep.honorLabels ?? false,
    };
    if (ep.honorTimestamps !== undefined) cfg['honor_timestamps'] = ep.honorTimestamps;
    cfg['kubernetes_sd_configs'] = [sdConfig(pm, namespace, access)];
    if (ep.interval) cfg['scrape_interval'] = ep.interval;
    if (ep.scrapeTimeout) cfg['scrape_timeout'] = ep.scrapeTimeout;
    if (ep.path) cfg['metrics_path'] = ep.path;
    if (ep.params) cfg['params'] = ep.params;
    // The CRD allows HTTP/HTTPS too; Prometheus only the lower case.
    if (ep.scheme) cfg['scheme'] = ep.scheme.toLowerCase();

    const relabelings: Array<Record<string, unknown>> = [
      { source_labels: ['job'], target_label: '__tmp_prometheus_job_name' },
    ];
    if (ep.filterRunning ?? true)
      relabelings.push({ action: 'drop', source_labels: ['__meta_kubernetes_pod_phase'], regex: '(Failed|Succeeded)' });
    relabelings.push(...selectorRelabelings(pm.spec.selector ?? {}, what));
    if (ep.port)
      relabelings.push({
        action: 'keep',
        source_labels: ['__meta_kubernetes_pod_container_port_name'],
        regex: ep.port,
      });
    relabelings.push(
      { source_labels: ['__meta_kubernetes_namespace'], target_label: 'namespace' },
      { source_labels: ['__meta_kubernetes_pod_container_name'], target_label: 'container' },
      { source_labels: ['__meta_kubernetes_pod_name'], target_label: 'pod' },
    );
    for (const l of pm.spec.podTargetLabels ?? []) {
      relabelings.push({
        source_labels: [podLabel(l)],
        target_label: sanitizeLabelName(l),
        regex: '(.+)',
        replacement: '${1}',
      });
    }
    // The default job stays when the jobLabel pod label is missing (regex (.+) does not match '').
    relabelings.push({ target_label: 'job', replacement: `${namespace}/${name}` });
    if (pm.spec.jobLabel)
      relabelings.push({
        source_labels: [podLabel(pm.spec.jobLabel)],
        target_label: 'job',
        regex: '(.+)',
        replacement: '${1}',
      });
    if (ep.port) relabelings.push({ target_label: 'endpoint', replacement: ep.port });
    relabelings.push(...(ep.relabelings ?? []).map((rc, j) => relabel(rc, `${epWhat} relabelings[${j}]`)));
    // Sharding, one shard: $(SHARD) is 0 after the config-reloader's substitution; keeps every target.
    relabelings.push(
      {
        source_labels: ['__address__', '__tmp_hash'],
        target_label: '__tmp_hash',
        regex: '(.+);',
        replacement: '$1',
        action: 'replace',
      },
      { source_labels: ['__tmp_hash'], target_label: '__tmp_hash', modulus: 1, action: 'hashmod' },
      { source_labels: ['__tmp_hash', '__tmp_disable_sharding'], regex: '0;|.+;.+', action: 'keep' },
    );
    cfg['relabel_configs'] = relabelings;
    const metric = (ep.metricRelabelings ?? []).map((rc, j) => relabel(rc, `${epWhat} metricRelabelings[${j}]`));
    if (metric.length > 0) cfg['metric_relabel_configs'] = metric;
    return cfg;
  });
}

/** Every PodMonitor's scrape configs, in the operator's order (by `<namespace>/<name>`). */
export function scrapeConfigs(podMonitors: PodMonitor[], access?: ApiAccess): ScrapeConfig[] {
  const key = (pm: PodMonitor) => `${pm.metadata.namespace ?? ''}/${pm.metadata.name}`;
  return [...podMonitors]
    .sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0))
    .flatMap((pm) => podMonitorScrapeConfigs(pm, access));
}

/**
 * A whole prometheus.yml for startPrometheus(): `global` (default 1 s intervals), rule_files rules/*, the scrape
 * configs.
 */
export function prometheusConfig(options: {
  podMonitors: PodMonitor[];
  access?: ApiAccess;
  global?: Record<string, unknown>;
  extra?: ScrapeConfig[];
}): object {
  return {
    global: options.global ?? { scrape_interval: '1s', evaluation_interval: '1s' },
    rule_files: ['rules/*'],
    scrape_configs: [...scrapeConfigs(options.podMonitors, options.access), ...(options.extra ?? [])],
  };
}

/** The operator's file name for a PrometheusRule's rules (the uid keeps foo-bar/x and foo/bar-x apart). */
export function ruleFileName(rule: PrometheusRule): string {
  const ns = rule.metadata.namespace ?? 'default';
  return `${ns}-${rule.metadata.name}${rule.metadata.uid ? `-${rule.metadata.uid}` : ''}.yaml`;
}

/**
 * A PrometheusRule's spec.groups as a rule file for Prometheus 2.42, as the operator sanitises it
 * for that version: partial_response_strategy (Thanos only), query_offset (2.53+) and group labels
 * (3.0+) dropped; empty `interval`/`for` omitted; an expr given as a number made a string.
 */
export function prometheusRuleFile(rule: PrometheusRule): string {
  const groups = (rule.spec.groups ?? []).map((g) => {
    const { partial_response_strategy: _p, query_offset: _q, labels: _l, ...rest } = g;
    if (rest['interval'] === '') delete rest['interval'];
    const rules = (g.rules ?? []).map((r) => {
      const out: Record<string, unknown> = { ...r };
      if (out['for'] === '') delete out['for'];
      if (typeof out['expr'] === 'number') out['expr'] = String(out['expr']);
      return out;
    });
    return { ...rest, rules };
  });
  return stringify({ groups });
}

/** name -> YAML for startPrometheus()'s ruleFiles. */
export function ruleFiles(rules: PrometheusRule[]): Record<string, string> {
  return Object.fromEntries(rules.map((r) => [ruleFileName(r), prometheusRuleFile(r)]));
}

// How the stand-in kubelet turns a pod's container spec into a host process: environment
// (values, $(VAR) expansion, downward API, Secret/ConfigMap references), argv (command/args or
// the image's defaults), volume mounts mapped to host directories, and the `redis-server` shim.
// Pure: no I/O; the kubelet passes in what it read from the store.
//
// The one rewrite (see README.md, "What the kubelet rewrites"): the container's command runs
// verbatim through `sh`, but `redis-server` on its PATH is a shim that (1) maps every argument
// that names a path under a volume mount to the host directory behind it (so
// `/etc/redis/redis.conf` is the ConfigMap volume's file), (2) maps the config file's `dir` and
// TLS file directives the same way (in a rewritten copy of the file), and (3) appends `--bind
// <pod IP> --bind-source-addr <pod IP>`: a pod has its own network namespace, these processes
// share one, so each must listen on, and connect from, its own address (the file's port stays:
// 6379, or 0 with TLS on 6379).
import type { V1Container, V1EnvVar, V1Pod } from '@kubernetes/client-node';
import { parseQuantity } from '../../../src/hook/quantity.ts';

export type Json = Record<string, unknown>;

export interface ObjectLookup {
  secret(name: string): Json | undefined;
  configMap(name: string): Json | undefined;
}

export interface PodNetwork {
  podIP: string;
  hostIP: string;
}

export type EnvResult = { ok: true; env: Array<[string, string]> } | { ok: false; message: string };

/**
 * Kubernetes' $(VAR) expansion (command, args and env values): $(NAME) is replaced when NAME is
 * defined, left as is otherwise; $$ is a literal $.
 */
export function expand(input: string, lookup: (name: string) => string | undefined): string {
  let out = '';
  for (let i = 0; i < input.length; i++) {
    const c = input[i]!;
    const next = input[i + 1];
    if (c !== '$' || next === undefined) {
      out += c;
    } else if (next === '$') {
      out += '$';
      i++;
    } else if (next === '(') {
      const close = input.indexOf(')', i + 2);
      if (close < 0) {
        out += input.slice(i);
        break;
      }
      const name = input.slice(i + 2, close);
      out += lookup(name) ?? `$(${name})`;
      i = close;
    } else {
      out += c + next;
      i++;
    }
  }
  return out;
}

function decodeSecret(secret: Json, key: string): string | undefined {
  const data = secret['data'] as Record<string, string> | undefined;
  const v = data?.[key];
  return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
}

function configMapValue(cm: Json, key: string): string | undefined {
  const data = cm['data'] as Record<string, string> | undefined;
  if (data?.[key] !== undefined) return data[key];
  const bin = cm['binaryData'] as Record<string, string> | undefined;
  return bin?.[key] === undefined ? undefined : Buffer.from(bin[key], 'base64').toString('utf8');
}

/** A downward API fieldPath, as the kubelet resolves it for env vars. */
export function fieldRefValue(pod: V1Pod, fieldPath: string, net: PodNetwork): string | { error: string } {
  const meta = pod.metadata ?? {};
  const keyed = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(fieldPath);
  if (keyed) {
    const map = (keyed[1] === 'labels' ? meta.labels : meta.annotations) ?? {};
    return map[keyed[2]!] ?? '';
  }
  switch (fieldPath) {
    case 'metadata.name':
      return meta.name ?? '';
    case 'metadata.namespace':
      return meta.namespace ?? '';
    case 'metadata.uid':
      return meta.uid ?? '';
    case 'spec.nodeName':
      return pod.spec?.nodeName ?? '';
    case 'spec.serviceAccountName':
      return pod.spec?.serviceAccountName ?? 'default';
    case 'status.podIP':
    case 'status.podIPs':
      return net.podIP;
    case 'status.hostIP':
    case 'status.hostIPs':
      return net.hostIP;
    default:
      return { error: `unsupported fieldPath: ${fieldPath}` };
  }
}

export function resourceFieldValue(
  container: V1Container,
  resource: string,
  divisor: unknown,
  node: { memoryBytes: number; cpus: number },
): string | { error: string } {
  const [kind, name] = resource.split('.') as [string, string | undefined];
  const source = kind === 'limits' ? container.resources?.limits : kind === 'requests' ? container.resources?.requests : undefined;
  if (source === undefined && kind !== 'limits' && kind !== 'requests') return { error: `unsupported resource: ${resource}` };
  const raw = parseQuantity(source?.[name ?? '']);
  // Unset limits default to the node's allocatable, as on a real node; unset requests to 0.
  const value = raw ?? (kind === 'limits' ? (name === 'memory' ? node.memoryBytes : name === 'cpu' ? node.cpus : undefined) : 0);
  if (value === undefined) return { error: `unsupported resource: ${resource}` };
  const d = parseQuantity(divisor ?? '1') ?? 1;
  return String(Math.ceil(value / d));
}

/**
 * The container's environment as the kubelet builds it: envFrom first, then env in order (later
 * entries win, values expanded against what came before). A missing Secret/ConfigMap or key that
 * is not optional is the error the kubelet reports as CreateContainerConfigError.
 */
export function resolveEnv(pod: V1Pod, container: V1Container, lookup: ObjectLookup, net: PodNetwork, node: { memoryBytes: number; cpus: number }): EnvResult {
  const ns = pod.metadata?.namespace ?? '';
  const env = new Map<string, string>();
  for (const from of container.envFrom ?? []) {
    const prefix = from.prefix ?? '';
    if (from.secretRef) {
      const s = lookup.secret(from.secretRef.name ?? '');
      if (!s) {
        if (from.secretRef.optional) continue;
        return { ok: false, message: `secret "${from.secretRef.name}" not found` };
      }
      for (const key of Object.keys((s['data'] as Json | undefined) ?? {})) env.set(prefix + key, decodeSecret(s, key) ?? '');
    } else if (from.configMapRef) {
      const cm = lookup.configMap(from.configMapRef.name ?? '');
      if (!cm) {
        if (from.configMapRef.optional) continue;
        return { ok: false, message: `configmap "${from.configMapRef.name}" not found` };
      }
      for (const key of [...Object.keys((cm['data'] as Json | undefined) ?? {}), ...Object.keys((cm['binaryData'] as Json | undefined) ?? {})]) {
        env.set(prefix + key, configMapValue(cm, key) ?? '');
      }
    }
  }
  for (const e of container.env ?? ([] as V1EnvVar[])) {
    const value = envValue(pod, container, e, lookup, net, node, env, ns);
    if (typeof value === 'object') {
      if (value.skip) continue;
      return { ok: false, message: value.error };
    }
    env.set(e.name, value);
  }
  return { ok: true, env: [...env.entries()] };
}

function envValue(
  pod: V1Pod,
  container: V1Container,
  e: V1EnvVar,
  lookup: ObjectLookup,
  net: PodNetwork,
  node: { memoryBytes: number; cpus: number },
  sofar: Map<string, string>,
  ns: string,
): string | { error: string; skip?: false } | { skip: true } {
  const from = e.valueFrom;
  if (!from) return expand(e.value ?? '', (n) => sofar.get(n));
  if (from.fieldRef) {
    const v = fieldRefValue(pod, from.fieldRef.fieldPath, net);
    return typeof v === 'string' ? v : { error: v.error };
  }
  if (from.resourceFieldRef) {
    const v = resourceFieldValue(container, from.resourceFieldRef.resource, from.resourceFieldRef.divisor, node);
    return typeof v === 'string' ? v : { error: v.error };
  }
  if (from.secretKeyRef) {
    const { name = '', key, optional } = from.secretKeyRef;
    const s = lookup.secret(name);
    if (!s) return optional ? { skip: true } : { error: `secret "${name}" not found` };
    const v = decodeSecret(s, key);
    if (v === undefined) return optional ? { skip: true } : { error: `couldn't find key ${key} in Secret ${ns}/${name}` };
    return v;
  }
  if (from.configMapKeyRef) {
    const { name = '', key, optional } = from.configMapKeyRef;
    const cm = lookup.configMap(name);
    if (!cm) return optional ? { skip: true } : { error: `configmap "${name}" not found` };
    const v = configMapValue(cm, key);
    if (v === undefined) return optional ? { skip: true } : { error: `couldn't find key ${key} in ConfigMap ${ns}/${name}` };
    return v;
  }
  return { error: `env ${e.name}: unsupported valueFrom` };
}

/** True for the official redis images (the only ones whose default entrypoint the stand-in knows). */
export function isRedisImage(image: string | undefined): boolean {
  return /^(?:(?:docker\.io\/)?(?:library\/)?|.*\/)redis(?::|@|$)/.test(image ?? '');
}

/**
 * True for the operator's own image (`redis-operator:<tag>`, from any registry): Node 24 with the
 * repository's `src/` in its WORKDIR /app (see the Dockerfile). The node agent runs it with this
 * machine's Node; the stand-in kubelet does not run it.
 */
export function isOperatorImage(image: string | undefined): boolean {
  return /^(?:.*\/)?redis-operator(?::|@|$)/.test(image ?? '');
}

/**
 * True for redis_exporter images (`oliver006/redis_exporter:v1.45.0`,
 * `quay.io/oliver006/redis_exporter@sha256:...`): the repository's last path component, from any
 * registry, with any tag or digest. The runners run Debian's build of it (exporter-image.ts).
 */
export function isExporterImage(image: string | undefined): boolean {
  return /^(?:.*\/)?redis_exporter(?::[^/@]+)?(?:@[^/]+)?$/.test(image ?? '');
}

/** The exporter image's ENTRYPOINT (it has no CMD); the runners map it to the host's binary. */
export const EXPORTER_ENTRYPOINT = '/redis_exporter';

/**
 * The argv a container runs: command + args, $(VAR)-expanded. Without a command, the redis
 * image's entrypoint (docker-entrypoint.sh) runs its CMD `redis-server`, and prepends
 * `redis-server` to args that are flags or a .conf file, as the entrypoint script does; the
 * exporter image's entrypoint gets the args as they are.
 */
export function containerArgv(container: V1Container, env: Array<[string, string]>): string[] | { error: string } {
  const vars = new Map(env);
  const ex = (s: string) => expand(s, (n) => vars.get(n));
  if (container.command && container.command.length > 0) return [...container.command.map(ex), ...(container.args ?? []).map(ex)];
  if (isExporterImage(container.image)) return [EXPORTER_ENTRYPOINT, ...(container.args ?? []).map(ex)];
  if (!isRedisImage(container.image)) return { error: `the stand-in cannot run image ${container.image ?? '(none)'} without an explicit command` };
  const args = (container.args ?? []).map(ex);
  if (args.length === 0) return ['redis-server'];
  const first = args[0]!;
  return first.startsWith('-') || first.endsWith('.conf') ? ['redis-server', ...args] : args;
}

export interface Mount {
  containerPath: string;
  hostPath: string;
}

function stripSlash(p: string): string {
  return p.length > 1 ? p.replace(/\/+$/, '') : p;
}

/** Longest mount first, so a nested mount wins over its parent. */
export function sortMounts(mounts: Mount[]): Mount[] {
  return mounts
    .map((m) => ({ containerPath: stripSlash(m.containerPath), hostPath: stripSlash(m.hostPath) }))
    .sort((a, b) => b.containerPath.length - a.containerPath.length);
}

/** A container path on the host, or undefined when no volume covers it (the image's own filesystem). */
export function mapPath(mounts: Mount[], containerPath: string): string | undefined {
  for (const m of sortMounts(mounts)) {
    if (containerPath === m.containerPath) return m.hostPath;
    if (m.containerPath === '/' || containerPath.startsWith(`${m.containerPath}/`)) {
      return m.hostPath + containerPath.slice(m.containerPath === '/' ? 0 : m.containerPath.length);
    }
  }
  return undefined;
}

/**
 * Container paths under a volume mount, inside a command's text (an exec probe's `sh -c` script),
 * rewritten to the host directories behind them: a path starts the text or follows a space, a
 * quote or `=`. The kubelet's exec probes run in the container's mount namespace; ours run here.
 */
export function mapPathsInText(mounts: Mount[], text: string): string {
  let out = text;
  for (const m of sortMounts(mounts)) {
    if (m.containerPath === '/' || m.containerPath === '') continue;
    const escaped = m.containerPath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    out = out.replace(new RegExp(`(^|[\\s"'=])${escaped}(?=/|$|[\\s"'])`, 'g'), (_all, before: string) => `${before}${m.hostPath}`);
  }
  return out;
}

function shQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * The `redis-server` shim put first on the container's PATH (see the header). `rewrittenConf` is
 * where it writes the config file with its `dir` mapped: Redis chdirs while it parses the file,
 * so a `dir /data` line fails before any command-line override could apply. `ownNetns`: the pod
 * has a network namespace of its own (the node agent's pod network), so Redis listens on its
 * loopback too, as the file's `bind 0.0.0.0` would in a container: the exporter beside it dials
 * 127.0.0.1.
 */
export function redisShim(options: { realBinary: string; mounts: Mount[]; podIP: string; rewrittenConf: string; ownNetns?: boolean }): string {
  const cases = sortMounts(options.mounts).flatMap((m) => [
    `    ${shQuote(m.containerPath)}) printf '%s' ${shQuote(m.hostPath)} ;;`,
    `    ${shQuote(m.containerPath)}/*) printf '%s%s' ${shQuote(m.hostPath)} "\${1#${m.containerPath}}" ;;`,
  ]);
  return [
    '#!/bin/sh',
    '# Written by the workloads stand-in kubelet (test/cluster/workloads/README.md). The container',
    '# command runs verbatim; this redis-server maps container paths to the volumes behind them,',
    "# rewrites the config file's dir the same way, and forces the pod's own address (each pod has",
    '# its own IP; here every pod shares one network namespace).',
    'map() {',
    '  case "$1" in',
    ...cases,
    '    *) printf \'%s\' "$1" ;;',
    '  esac',
    '}',
    'n=0',
    'stdin=',
    'for a in "$@"; do',
    '  [ "$n" = 0 ] && set --',
    '  n=$((n + 1))',
    // `-` (config lines on stdin) must stay the LAST argument for Redis: it goes after the overrides.
    '  if [ "$a" = - ]; then stdin=-; continue; fi',
    '  m=$(map "$a")',
    '  if [ "$n" = 1 ] && [ -f "$m" ]; then',
    '    while IFS= read -r line || [ -n "$line" ]; do',
    '      case "$line" in',
    // Directives whose value is a path: `dir` and the TLS files (the mounted Secret).
    '        [Dd][Ii][Rr][[:space:]]*|tls-cert-file[[:space:]]*|tls-key-file[[:space:]]*|tls-ca-cert-file[[:space:]]*|tls-dh-params-file[[:space:]]*)',
    '          k=${line%%[[:space:]]*}',
    '          d=${line#"$k"}',
    '          d=${d#"${d%%[![:space:]]*}"}; d=${d%"${d##*[![:space:]]}"}',
    '          d=${d#\\"}; d=${d%\\"}',
    '          case "$k" in [Dd][Ii][Rr]) k=dir ;; esac',
    '          printf \'%s "%s"\\n\' "$k" "$(map "$d")" ;;',
    '        *) printf \'%s\\n\' "$line" ;;',
    '      esac',
    `    done < "$m" > ${shQuote(options.rewrittenConf)}`,
    `    m=${shQuote(options.rewrittenConf)}`,
    '  fi',
    '  set -- "$@" "$m"',
    'done',
    `exec ${shQuote(options.realBinary)} "$@" --bind ${options.podIP}${options.ownNetns ? ' 127.0.0.1' : ''} --bind-source-addr ${options.podIP} $stdin`,
    '',
  ].join('\n');
}

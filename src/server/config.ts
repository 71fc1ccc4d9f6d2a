// Configuration of the hook service, read from the environment once at start-up.
// Invariants: loadConfig is a pure function of the env object it is given (no process.env
// access), never throws, and reports EVERY bad variable at once, each error naming the
// variable and the value it refused, so one restart of a broken Deployment shows all of them.
// An empty or blank variable counts as unset (Kubernetes renders an unset ConfigMap key as "").
import { isIP } from 'node:net';
import { DEFAULT_OPERATOR_NAMESPACE, DEFAULT_RUNBOOK_BASE_URL } from '../hook/common/options.ts';
import { integerIn, logLevel, present, refuse, type Env, type Field, type LogLevel } from '../runtime/env.ts';

export { LOG_LEVELS, type Env, type LogLevel } from '../runtime/env.ts';

export const DEFAULT_PORT = 8080;
export const DEFAULT_HOST = '0.0.0.0';
export const DEFAULT_LOG_LEVEL: LogLevel = 'info';
export const DEFAULT_BODY_LIMIT_BYTES = 4 * 1024 * 1024;
/** Below this a real sync request (parent + StatefulSets + pods) cannot fit. */
export const MIN_BODY_LIMIT_BYTES = 1024;
/** Far above any sync request (etcd caps one object at ~1.5 MiB); guards against typos like an extra digit group. */
export const MAX_BODY_LIMIT_BYTES = 1024 * 1024 * 1024;

export const DEFAULT_OPERATOR_IMAGE = 'redis-operator:0.1.0';
export { DEFAULT_OPERATOR_NAMESPACE, DEFAULT_RUNBOOK_BASE_URL } from '../hook/common/options.ts';

export interface ServerConfig {
  port: number;
  host: string;
  logLevel: LogLevel;
  bodyLimitBytes: number;
  /**
   * The image backup Jobs and restore init containers run: this operator's own (manifests set it to the Deployment's).
   */
  operatorImage: string;
  /** Where the alert runbooks are published (docs/monitoring.md); the alerts link to <this>#<alert>. */
  runbookBaseUrl: string;
  /**
   * The namespace the hook runs in (POD_NAMESPACE, from the downward API in both installs): the
   * operator's namespace wherever it is installed, which the hook's defaults then name. Unset
   * (`npm start` outside a cluster): redis-operator, where manifests/ installs it.
   */
  operatorNamespace: string;
}

export type ConfigResult = { ok: true; config: ServerConfig } | { ok: false; errors: string[] };

// RFC 1123 host name: dot-separated labels of letters, digits and inner hyphens.
const HOSTNAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/i;

function host(env: Env): Field<string> {
  const raw = present(env, 'HOST');
  if (raw === undefined) return { ok: true, value: DEFAULT_HOST };
  if (isIP(raw) !== 0 || HOSTNAME.test(raw)) return { ok: true, value: raw };
  return refuse('HOST', raw, 'must be an IP address (for example 0.0.0.0 or ::) or a host name');
}

// An image reference: [registry[:port]/]path[:tag][@digest], no spaces (what a pod's image field takes).
const IMAGE =
  /^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(\/[a-z0-9]+([._-]{1,2}[a-z0-9]+)*)*(:[\w][\w.-]{0,127})?(@sha256:[a-f0-9]{64})?$/;

function operatorImage(env: Env): Field<string> {
  const raw = present(env, 'OPERATOR_IMAGE');
  if (raw === undefined) return { ok: true, value: DEFAULT_OPERATOR_IMAGE };
  return IMAGE.test(raw)
    ? { ok: true, value: raw }
    : refuse(
        'OPERATOR_IMAGE',
        raw,
        'must be an image reference, for example registry.example.com/redis-operator:0.1.0',
      );
}

function runbookBaseUrl(env: Env): Field<string> {
  const raw = present(env, 'RUNBOOK_BASE_URL');
  if (raw === undefined) return { ok: true, value: DEFAULT_RUNBOOK_BASE_URL };
  return /^https?:\/\/[^\s#]+$/.test(raw)
    ? { ok: true, value: raw }
    : refuse(
        'RUNBOOK_BASE_URL',
        raw,
        'must be an http(s) URL without a #fragment, for example https://docs.example.com/redis-operator/monitoring.html',
      );
}

// A namespace is a DNS label (RFC 1123): what the API server accepts as metadata.namespace.
const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

function operatorNamespace(env: Env): Field<string> {
  const raw = present(env, 'POD_NAMESPACE');
  if (raw === undefined) return { ok: true, value: DEFAULT_OPERATOR_NAMESPACE };
  return NAMESPACE.test(raw)
    ? { ok: true, value: raw }
    : refuse('POD_NAMESPACE', raw, "must be a namespace name (the pod's metadata.namespace)");
}

export function loadConfig(env: Env): ConfigResult {
  // 0: the OS picks the port (main.ts logs which), for harnesses; a pod's Service needs a fixed one.
  const port = integerIn(env, 'PORT', DEFAULT_PORT, 0, 65535);
  const hostField = host(env);
  const level = logLevel(env, 'LOG_LEVEL', DEFAULT_LOG_LEVEL);
  const bodyLimit = integerIn(
    env,
    'BODY_LIMIT_BYTES',
    DEFAULT_BODY_LIMIT_BYTES,
    MIN_BODY_LIMIT_BYTES,
    MAX_BODY_LIMIT_BYTES,
  );
  const image = operatorImage(env);
  const runbook = runbookBaseUrl(env);
  const namespace = operatorNamespace(env);
  if (port.ok && hostField.ok && level.ok && bodyLimit.ok && image.ok && runbook.ok && namespace.ok) {
    return {
      ok: true,
      config: {
        port: port.value,
        host: hostField.value,
        logLevel: level.value,
        bodyLimitBytes: bodyLimit.value,
        operatorImage: image.value,
        runbookBaseUrl: runbook.value,
        operatorNamespace: namespace.value,
      },
    };
  }
  const errors: string[] = [];
  for (const field of [port, hostField, level, bodyLimit, image, runbook, namespace])
    if (!field.ok) errors.push(field.error);
  return { ok: false, errors };
}

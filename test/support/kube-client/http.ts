// One HTTP(S) request to a Kubernetes API server with a kubeconfig's credentials: the TLS
// material (CA, client certificate), the bearer token or basic auth and the agent all come from
// @kubernetes/client-node's KubeConfig.applyToHTTPSOptions, so whatever kubeconfig client-node
// understands (files, inline data, exec plugins) works here. JSON in, JSON out.
// Invariants: a non-2xx answer is thrown as KubeApiError carrying the server's own Status (or a
// Status synthesised from the code when the body is not one); a transport failure or timeout is a
// plain Error (no HTTP code: nothing was answered); every request has a deadline.
import http from 'node:http';
import https from 'node:https';
import { STATUS_CODES } from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';
import { failure, KubeApiError, type Status } from './objects.ts';

const REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  409: 'Conflict',
  410: 'Expired',
  413: 'RequestEntityTooLarge',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

export interface RequestSpec {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  /** Default application/json. */
  contentType?: string;
}

/** The error a failed answer becomes: the server's Status when it sent one. */
export function apiError(code: number, body: unknown, text: string): KubeApiError {
  if (typeof body === 'object' && body !== null && (body as Record<string, unknown>)['kind'] === 'Status') {
    const s = body as Status;
    return new KubeApiError({
      ...s,
      code: typeof s.code === 'number' && s.code > 0 ? s.code : code,
      metadata: s.metadata ?? {},
    });
  }
  const reason = REASONS[code] ?? (code >= 500 ? 'InternalError' : 'Unknown');
  return failure(code, reason, text.trim() !== '' ? text.trim().slice(0, 500) : (STATUS_CODES[code] ?? `HTTP ${code}`));
}

export class Transport {
  readonly kc: KubeConfig;
  readonly server: string;
  private readonly timeoutMs: number;

  constructor(kc: KubeConfig, timeoutMs: number) {
    const cluster = kc.getCurrentCluster();
    if (cluster === null) throw new Error('kube-client: the kubeconfig has no current cluster');
    this.kc = kc;
    this.server = cluster.server.replace(/\/+$/, '');
    this.timeoutMs = timeoutMs;
  }

  url(path: string, query: RequestSpec['query'] = {}): URL {
    const url = new URL(this.server + path);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
    return url;
  }

  /** Resolves with the parsed JSON body of a 2xx answer; throws KubeApiError otherwise. */
  async request(spec: RequestSpec): Promise<unknown> {
    const url = this.url(spec.path, spec.query);
    const payload = spec.body === undefined ? undefined : Buffer.from(JSON.stringify(spec.body));
    const options: https.RequestOptions = {
      method: spec.method,
      headers: {
        Accept: 'application/json',
        ...(payload
          ? { 'Content-Type': spec.contentType ?? 'application/json', 'Content-Length': String(payload.length) }
          : {}),
      },
      signal: AbortSignal.timeout(this.timeoutMs),
    };
    await this.kc.applyToHTTPSOptions(options);
    const { status, text } = await send(url, options, payload);
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (status < 200 || status > 299) throw apiError(status, body, text);
    if (body === undefined)
      throw new Error(
        `kube-client: ${spec.method} ${url.pathname}: answer ${status} is not JSON: ${text.slice(0, 200)}`,
      );
    return body;
  }
}

function send(
  url: URL,
  options: https.RequestOptions,
  payload: Buffer | undefined,
): Promise<{ status: number; text: string }> {
  const mod = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = mod.request(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', (err: Error) => {
      if (err.name === 'AbortError' || err.name === 'TimeoutError')
        reject(new Error(`kube-client: ${options.method} ${url.pathname}: no answer within the request timeout`));
      else reject(new Error(`kube-client: ${options.method} ${url.pathname}: ${err.message}`));
    });
    req.end(payload);
  });
}

/** `/api/v1/namespaces/ns/pods/name/status`, `/apis/apps/v1/statefulsets` (every namespace). */
export function resourcePath(
  res: { group: string; version: string; resource: string; namespaced: boolean },
  namespace?: string,
  name?: string,
  subresource?: string,
): string {
  const parts = [res.group === '' ? `/api/${res.version}` : `/apis/${res.group}/${res.version}`];
  if (res.namespaced && namespace) parts.push('namespaces', encodeURIComponent(namespace));
  parts.push(res.resource);
  if (name !== undefined) parts.push(encodeURIComponent(name));
  if (subresource !== undefined) parts.push(subresource);
  return parts.join('/');
}

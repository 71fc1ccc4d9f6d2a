// A minimal Kubernetes REST client for the volume provisioner: one kubeconfig (client certificate or
// bearer token), JSON requests, and watch streams. Owns nothing but its HTTPS agent.
// Why not @kubernetes/client-node's API classes: the provisioner needs exact control over patch content
// types (strategic merge), delete preconditions and watch restarts, and a 404 is an answer here,
// not an exception to unwrap.
// Invariants:
// - Only https:// servers on 127.0.0.0/8 or localhost are accepted (nothing leaves the machine).
// - Every request has a timeout; a watch stream ends (resolves) when the server closes it or
//   stop() aborts it, and never throws after it was aborted.
import https from 'node:https';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';

export type Json = Record<string, unknown>;

export class ApiError extends Error {
  readonly status: number;
  readonly reason: string;
  readonly body: unknown;

  constructor(method: string, urlPath: string, status: number, body: unknown) {
    const b = (body ?? {}) as Json;
    super(`${method} ${urlPath}: ${status} ${typeof b['message'] === 'string' ? b['message'] : JSON.stringify(body).slice(0, 300)}`);
    this.status = status;
    this.reason = typeof b['reason'] === 'string' ? b['reason'] : '';
    this.body = body;
  }
}

export const isStatus = (err: unknown, ...codes: number[]): boolean => err instanceof ApiError && codes.includes(err.status);

export interface RequestOptions {
  body?: unknown;
  /** Default application/json; patches name their strategy. */
  contentType?: string;
  query?: Record<string, string | number | boolean | undefined>;
  timeoutMs?: number;
}

export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: Json;
}

interface Credentials {
  server: URL;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  token?: string;
}

function fileOrData(base: string, entry: Json, key: string): Buffer | undefined {
  const data = entry[`${key}-data`];
  if (typeof data === 'string') return Buffer.from(data, 'base64');
  const file = entry[key];
  if (typeof file === 'string') return readFileSync(path.resolve(base, file));
  return undefined;
}

/** The current context of a kubeconfig file: server, CA, and a client certificate or token. */
export function readKubeconfig(file: string): Credentials {
  const doc = parseYaml(readFileSync(file, 'utf8')) as Json;
  const base = path.dirname(file);
  const named = (list: unknown, name: unknown, field: string): Json => {
    const hit = ((list ?? []) as Json[]).find((x) => x['name'] === name);
    if (!hit) throw new Error(`${file}: no ${field} named ${String(name)}`);
    return (hit[field] ?? {}) as Json;
  };
  const context = named(doc['contexts'], doc['current-context'], 'context');
  const cluster = named(doc['clusters'], context['cluster'], 'cluster');
  const user = named(doc['users'], context['user'], 'user');
  const server = new URL(String(cluster['server']));
  // Loopback, or the test range the real clusters' bridges use (198.18.0.0/15): nothing else.
  if (server.protocol !== 'https:' || !/^(127\.\d+\.\d+\.\d+|localhost|198\.1[89]\.\d+\.\d+)$/.test(server.hostname)) {
    throw new Error(`${file}: refusing API server ${server.href} (only https on loopback or 198.18.0.0/15)`);
  }
  const creds: Credentials = { server };
  const ca = fileOrData(base, cluster, 'certificate-authority');
  const cert = fileOrData(base, user, 'client-certificate');
  const key = fileOrData(base, user, 'client-key');
  if (ca) creds.ca = ca;
  if (cert) creds.cert = cert;
  if (key) creds.key = key;
  if (typeof user['token'] === 'string') creds.token = user['token'];
  return creds;
}

function queryString(query: RequestOptions['query']): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) params.set(k, String(v));
  const s = params.toString();
  return s ? `?${s}` : '';
}

export class KubeClient {
  readonly server: string;
  readonly #creds: Credentials;
  readonly #agent: https.Agent;
  readonly #streams = new Set<{ abort(): void }>();

  constructor(kubeconfig: string) {
    this.#creds = readKubeconfig(kubeconfig);
    this.server = this.#creds.server.origin;
    this.#agent = new https.Agent({
      keepAlive: true,
      maxSockets: 16,
      ...(this.#creds.ca ? { ca: this.#creds.ca } : {}),
      ...(this.#creds.cert ? { cert: this.#creds.cert } : {}),
      ...(this.#creds.key ? { key: this.#creds.key } : {}),
    });
  }

  #options(method: string, urlPath: string, headers: Record<string, string>): https.RequestOptions {
    const h: Record<string, string> = { accept: 'application/json', 'user-agent': 'volume-provisioner/0.1 (redis-operator tests)', ...headers };
    if (this.#creds.token) h['authorization'] = `Bearer ${this.#creds.token}`;
    return { method, host: this.#creds.server.hostname, port: this.#creds.server.port || 443, path: urlPath, agent: this.#agent, headers: h };
  }

  /** A JSON request; non-2xx answers reject with ApiError. */
  request<T = Json>(method: string, urlPath: string, options: RequestOptions = {}): Promise<T> {
    const full = urlPath + queryString(options.query);
    const body = options.body === undefined ? undefined : Buffer.from(JSON.stringify(options.body));
    const headers: Record<string, string> = body ? { 'content-type': options.contentType ?? 'application/json', 'content-length': String(body.length) } : {};
    return new Promise<T>((resolve, reject) => {
      const req = https.request(this.#options(method, full, headers), (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = text ? JSON.parse(text) : {};
          } catch {
            // not JSON (e.g. a proxied log); keep the text
          }
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) resolve(parsed as T);
          else reject(new ApiError(method, urlPath, status, parsed));
        });
      });
      req.setTimeout(options.timeoutMs ?? 30_000, () => req.destroy(new Error(`${method} ${urlPath}: timed out`)));
      req.on('error', reject);
      req.end(body);
    });
  }

  /** GET that answers undefined for 404. */
  async get<T = Json>(urlPath: string, query?: RequestOptions['query']): Promise<T | undefined> {
    try {
      return await this.request<T>('GET', urlPath, query ? { query } : {});
    } catch (err) {
      if (isStatus(err, 404)) return undefined;
      throw err;
    }
  }

  /**
   * One watch stream: resolves when the server ends it (e.g. timeoutSeconds) or it was aborted;
   * rejects on a non-200 answer or a broken connection.
   */
  watch(urlPath: string, query: RequestOptions['query'], onEvent: (ev: WatchEvent) => void): { done: Promise<void>; abort(): void } {
    let aborted = false;
    let req: ReturnType<typeof https.request> | undefined;
    const handle = {
      abort: () => {
        aborted = true;
        req?.destroy();
      },
      done: Promise.resolve(),
    };
    this.#streams.add(handle);
    handle.done = new Promise<void>((resolve, reject) => {
      const fail = (err: Error) => (aborted ? resolve() : reject(err));
      req = https.request(this.#options('GET', urlPath + queryString({ ...query, watch: 1 }), {}), (res) => {
        if (res.statusCode !== 200) {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            let body: unknown = Buffer.concat(chunks).toString('utf8');
            try {
              body = JSON.parse(body as string);
            } catch {
              // keep the text
            }
            fail(new ApiError('WATCH', urlPath, res.statusCode ?? 0, body));
          });
          return;
        }
        res.setEncoding('utf8');
        let partial = '';
        res.on('data', (chunk: string) => {
          const lines = (partial + chunk).split('\n');
          partial = lines.pop() ?? '';
          for (const line of lines) {
            if (!line.trim() || aborted) continue;
            let ev: WatchEvent;
            try {
              ev = JSON.parse(line) as WatchEvent;
            } catch (err) {
              req?.destroy();
              fail(err as Error);
              return;
            }
            onEvent(ev);
          }
        });
        res.on('error', fail);
        res.on('end', () => resolve());
        res.on('close', () => resolve());
      });
      req.on('error', fail);
      req.end();
    }).finally(() => this.#streams.delete(handle));
    return handle;
  }

  close(): void {
    for (const s of this.#streams) s.abort();
    this.#agent.destroy();
  }
}

// The HTTP face of the stand-in: Kubernetes REST paths, verbs, content types, watch streaming,
// discovery, and Status errors, on a node:http server on loopback. The store does the semantics;
// this file only translates requests and responses.
// Invariants: every error body is a metav1.Status; a watch is a 200 chunked stream of one JSON
// event per line (a too-old resourceVersion is an ERROR event carrying a 410 Expired Status, as
// kube-apiserver does); a PATCH must carry one of the patch media types or it is a 415.
// The parts: routes.ts (paths and discovery), http-io.ts (bodies, media types, responses),
// watch-stream.ts (watch streams); this file owns the listener, the fault injection and the verbs.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { errors, failure, KubeApiError, success } from './errors.ts';
import { Faults, type FaultAction } from './faults.ts';
import { clientOf, deleteOptions, isTrue, jsonBody, listItem, parseJson, patchType, readBody, send, sendError } from './http-io.ts';
import { apiVersionOf, type KubeObject } from './resources.ts';
import { routeOf, type Target } from './routes.ts';
import { ObjectStore, type StoreOptions } from './store.ts';
import { serveWatch, type OpenWatch } from './watch-stream.ts';

export interface KubeApiOptions extends StoreOptions {
  /** Loopback address to listen on (default 127.0.0.1). */
  host?: string;
  /** Default 0: a random free port. */
  port?: number;
  /** Interval of BOOKMARK events on watches that ask for them (allowWatchBookmarks=true). Default 1000 ms. */
  bookmarkIntervalMs?: number;
  /** Largest request body accepted (default 3 MiB, the real server's limit). */
  maxBodyBytes?: number;
  /** Use an existing store (e.g. to restart the HTTP side over the same data). */
  store?: ObjectStore;
}

export interface RequestRecord {
  at: number;
  method: string;
  path: string;
  query: string;
  client: string;
  contentType: string | undefined;
  watch: boolean;
  /** Undefined while in flight (or forever for a hung request). */
  status?: number;
}

export class KubeApiServer {
  readonly store: ObjectStore;
  readonly faults = new Faults();
  /** Every request seen, in arrival order (tests can assert on what a client did). */
  readonly requests: RequestRecord[] = [];
  private readonly server: Server;
  private readonly options: KubeApiOptions;
  private readonly watches = new Set<OpenWatch>();
  private readonly hung = new Set<ServerResponse>();
  private readonly sockets = new Set<Socket>();
  private address: AddressInfo | undefined;

  constructor(options: KubeApiOptions = {}) {
    this.options = options;
    this.store = options.store ?? new ObjectStore(options);
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => sendError(res, errors.internal(String(err))));
    });
    this.server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  async listen(): Promise<this> {
    const host = this.options.host ?? '127.0.0.1';
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.options.port ?? 0, host, () => resolve());
    });
    this.address = this.server.address() as AddressInfo;
    return this;
  }

  get host(): string {
    return this.address?.address ?? this.options.host ?? '127.0.0.1';
  }

  get port(): number {
    if (!this.address) throw new Error('kube-api stand-in is not listening');
    return this.address.port;
  }

  get url(): string {
    return `http://${this.host}:${this.port}`;
  }

  /** Options for KubeConfig.loadFromOptions; `token` identifies the client to fault rules and the request log. */
  kubeConfigOptions(token = 'test-client', namespace = 'default') {
    return {
      clusters: [{ name: 'stand-in', server: this.url, skipTLSVerify: true }],
      users: [{ name: token, token }],
      contexts: [{ name: 'stand-in', cluster: 'stand-in', user: token, namespace }],
      currentContext: 'stand-in',
    };
  }

  kubeConfig(token = 'test-client', namespace = 'default'): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions(this.kubeConfigOptions(token, namespace));
    return kc;
  }

  /** Ends every open watch stream (as an API server restart or a load balancer would); clients re-watch. */
  closeWatches(): void {
    for (const w of [...this.watches]) {
      w.stop();
      w.res.end();
    }
  }

  async close(): Promise<void> {
    this.closeWatches();
    for (const res of this.hung) res.destroy();
    this.hung.clear();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    for (const s of this.sockets) s.destroy();
    await closed;
  }

  // ---------------------------------------------------------------- request handling

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://stand-in');
    const method = (req.method ?? 'GET').toUpperCase();
    const client = clientOf(req);
    const watch = method === 'GET' && (isTrue(url.searchParams.get('watch')) || /\/watch\//.test(url.pathname));
    const record: RequestRecord = { at: Date.now(), method, path: url.pathname, query: url.search, client, contentType: req.headers['content-type'], watch };
    this.requests.push(record);
    res.on('finish', () => {
      record.status = res.statusCode;
    });

    const fault = this.faults.take({ method, path: url.pathname, client, watch });
    if (fault && (await this.applyFault(fault, req, res))) return;

    let body: Buffer;
    try {
      body = await readBody(req, this.options.maxBodyBytes ?? 3 * 1024 * 1024);
    } catch (e) {
      sendError(res, e instanceof KubeApiError ? e : errors.badRequest(String(e)));
      return;
    }

    try {
      const route = routeOf(url.pathname, this.store.resources, this);
      switch (route.kind) {
        case 'json':
          if (method !== 'GET') throw errors.methodNotAllowed();
          send(res, 200, route.body);
          return;
        case 'text':
          res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
          res.end(route.body);
          return;
        case 'missing':
          throw errors.notFoundPath();
        case 'resource':
          await this.serveResource(route.target, method, url, req, body, res, watch);
      }
    } catch (e) {
      if (e instanceof KubeApiError) sendError(res, e);
      else sendError(res, errors.internal(e instanceof Error ? e.message : String(e)));
    }
  }

  /** Returns true when the fault answered (or swallowed) the request. */
  private async applyFault(fault: FaultAction, req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    switch (fault.kind) {
      case 'status': {
        const reason =
          fault.reason ?? ({ 429: 'TooManyRequests', 503: 'ServiceUnavailable', 504: 'Timeout' } as Record<number, string>)[fault.code] ?? 'InternalError';
        sendError(res, failure(fault.code, reason, fault.message ?? `injected fault: ${fault.code} ${reason}`));
        return true;
      }
      case 'hang':
        this.hung.add(res);
        req.resume();
        res.on('close', () => this.hung.delete(res));
        return true;
      case 'reset':
        req.socket.destroy();
        return true;
      case 'delay':
        await new Promise((r) => setTimeout(r, fault.ms));
        return false;
    }
  }

  private async serveResource(t: Target, method: string, url: URL, req: IncomingMessage, raw: Buffer, res: ServerResponse, watch: boolean): Promise<void> {
    const { def, namespace, name, subresource } = t;
    const q = url.searchParams;
    const store = this.store;
    const dryRun = q.getAll('dryRun').includes('All');
    if (name === undefined) {
      if (method === 'GET' && (watch || t.legacyWatch))
        return serveWatch({ store: this.store, watches: this.watches, bookmarkIntervalMs: this.options.bookmarkIntervalMs }, def, namespace, q, req, res);
      if (method === 'GET') {
        const limit = q.get('limit');
        const page = store.listPage(def, {
          ...(namespace !== undefined ? { namespace } : {}),
          labelSelector: q.get('labelSelector') ?? '',
          fieldSelector: q.get('fieldSelector') ?? '',
          ...(limit ? { limit: Number(limit) } : {}),
          ...(q.get('continue') ? { continue: q.get('continue')! } : {}),
        });
        const metadata: Record<string, unknown> = { resourceVersion: page.resourceVersion };
        if (page.continue) metadata['continue'] = page.continue;
        if (page.remainingItemCount !== undefined) metadata['remainingItemCount'] = page.remainingItemCount;
        send(res, 200, { apiVersion: apiVersionOf(def), kind: def.listKind, metadata, items: page.items.map((o) => listItem(def, o)) });
        return;
      }
      if (method === 'POST') {
        if (def.namespaced && namespace === undefined) throw errors.methodNotAllowed();
        const body = jsonBody(req, raw);
        const created = store.create(def, body as KubeObject, { keepStatus: false, dryRun, ...(namespace !== undefined ? { namespace } : {}) });
        send(res, 201, created);
        return;
      }
      if (method === 'DELETE') {
        const opts = deleteOptions(q, raw);
        const victims = store.list(def, {
          ...(namespace !== undefined ? { namespace } : {}),
          labelSelector: q.get('labelSelector') ?? '',
          fieldSelector: q.get('fieldSelector') ?? '',
        });
        const items = victims.map((v) => store.delete(def, v.metadata.namespace, v.metadata.name, opts).object);
        send(res, 200, { apiVersion: apiVersionOf(def), kind: def.listKind, metadata: { resourceVersion: store.resourceVersion }, items });
        return;
      }
      throw errors.methodNotAllowed();
    }

    if (subresource === 'scale') {
      if (method === 'GET') return send(res, 200, store.getScale(def, namespace, name));
      if (method === 'PUT') return send(res, 200, store.updateScale(def, namespace, name, jsonBody(req, raw) as KubeObject));
      if (method === 'PATCH') return send(res, 200, store.patchScale(def, namespace, name, parseJson(raw), patchType(def, req)));
      throw errors.methodNotAllowed();
    }
    const writeOpts = { keepStatus: false, dryRun, ...(subresource === 'status' ? { subresource: 'status' as const } : {}) };
    switch (method) {
      case 'GET':
        return send(res, 200, store.read(def, namespace, name));
      case 'PUT': {
        const body = jsonBody(req, raw) as KubeObject;
        return send(res, 200, store.update(def, body, { ...writeOpts, name, ...(namespace !== undefined ? { namespace } : {}) }));
      }
      case 'PATCH': {
        const type = patchType(def, req);
        return send(res, 200, store.patch(def, namespace, name, parseJson(raw), { ...writeOpts, type }));
      }
      case 'DELETE': {
        if (subresource) throw errors.methodNotAllowed();
        const result = store.delete(def, namespace, name, deleteOptions(q, raw));
        if (result.deleted && !def.deleteReturnsObject) {
          return send(res, 200, success({ name, group: def.group, kind: def.resource, uid: result.object.metadata.uid }));
        }
        return send(res, 200, result.object);
      }
      default:
        throw errors.methodNotAllowed();
    }
  }
}

export async function startKubeApi(options: KubeApiOptions = {}): Promise<KubeApiServer> {
  return new KubeApiServer(options).listen();
}

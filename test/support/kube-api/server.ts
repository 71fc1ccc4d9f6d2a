// The HTTP face of the stand-in: Kubernetes REST paths, verbs, content types, watch streaming,
// discovery, and Status errors, on a node:http server on loopback. The store does the semantics;
// this file only translates requests and responses.
// Invariants: every error body is a metav1.Status; a watch is a 200 chunked stream of one JSON
// event per line (a too-old resourceVersion is an ERROR event carrying a 410 Expired Status, as
// kube-apiserver does); a PATCH must carry one of the patch media types or it is a 415.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { errors, failure, KubeApiError, success, type Status } from './errors.ts';
import { Faults, type FaultAction } from './faults.ts';
import { apiVersionOf, type KubeObject, type ResourceDef } from './resources.ts';
import { ObjectStore, type DeleteOptions, type PatchType, type StoreOptions, type WatchEvent, type WatchHandle } from './store.ts';

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

const JSON_TYPE = 'application/json';
const PATCH_TYPES: Record<string, PatchType> = {
  'application/json-patch+json': 'json',
  'application/merge-patch+json': 'merge',
  'application/strategic-merge-patch+json': 'strategic',
};

interface Target {
  def: ResourceDef;
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
  legacyWatch: boolean;
}

type Route = { kind: 'resource'; target: Target } | { kind: 'json'; body: unknown } | { kind: 'text'; body: string } | { kind: 'missing' };

function isTrue(v: string | null): boolean {
  return v === 'true' || v === '1';
}

export class KubeApiServer {
  readonly store: ObjectStore;
  readonly faults = new Faults();
  /** Every request seen, in arrival order (tests can assert on what a client did). */
  readonly requests: RequestRecord[] = [];
  private readonly server: Server;
  private readonly options: KubeApiOptions;
  private readonly watches = new Set<{ res: ServerResponse; stop: () => void }>();
  private readonly hung = new Set<ServerResponse>();
  private readonly sockets = new Set<Socket>();
  private address: AddressInfo | undefined;

  constructor(options: KubeApiOptions = {}) {
    this.options = options;
    this.store = options.store ?? new ObjectStore(options);
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => this.sendError(res, errors.internal(String(err))));
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
      this.sendError(res, e instanceof KubeApiError ? e : errors.badRequest(String(e)));
      return;
    }

    try {
      const route = this.route(url.pathname);
      switch (route.kind) {
        case 'json':
          if (method !== 'GET') throw errors.methodNotAllowed();
          this.send(res, 200, route.body);
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
      if (e instanceof KubeApiError) this.sendError(res, e);
      else this.sendError(res, errors.internal(e instanceof Error ? e.message : String(e)));
    }
  }

  /** Returns true when the fault answered (or swallowed) the request. */
  private async applyFault(fault: FaultAction, req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    switch (fault.kind) {
      case 'status': {
        const reason =
          fault.reason ?? ({ 429: 'TooManyRequests', 503: 'ServiceUnavailable', 504: 'Timeout' } as Record<number, string>)[fault.code] ?? 'InternalError';
        this.sendError(res, failure(fault.code, reason, fault.message ?? `injected fault: ${fault.code} ${reason}`));
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

  private route(pathname: string): Route {
    const seg = pathname.split('/').filter(Boolean).map(decodeURIComponent);
    const table = this.store.resources;
    if (seg.length === 0) return { kind: 'json', body: { paths: ['/api', '/api/v1', '/apis', '/version', '/healthz', '/readyz', '/livez'] } };
    if (seg.length === 1 && ['healthz', 'readyz', 'livez'].includes(seg[0]!)) return { kind: 'text', body: 'ok' };
    if (seg[0] === 'version' && seg.length === 1) {
      return {
        kind: 'json',
        body: { major: '1', minor: '33', gitVersion: 'v1.33.0-redis-operator-stand-in', platform: `${process.platform}/${process.arch}` },
      };
    }
    let group: string;
    let version: string | undefined;
    let rest: string[];
    if (seg[0] === 'api') {
      if (seg.length === 1)
        return {
          kind: 'json',
          body: {
            kind: 'APIVersions',
            versions: ['v1'],
            serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: `${this.host}:${this.port}` }],
          },
        };
      group = '';
      version = seg[1];
      rest = seg.slice(2);
    } else if (seg[0] === 'apis') {
      if (seg.length === 1) return { kind: 'json', body: this.groupList() };
      group = seg[1]!;
      if (seg.length === 2) {
        const g = this.groupList().groups.find((x) => x.name === group);
        return g ? { kind: 'json', body: { kind: 'APIGroup', apiVersion: 'v1', ...g } } : { kind: 'missing' };
      }
      version = seg[2];
      rest = seg.slice(3);
    } else {
      return { kind: 'missing' };
    }
    const defs = table.all.filter((d) => d.group === group && d.version === version);
    if (defs.length === 0) return { kind: 'missing' };
    if (rest.length === 0) return { kind: 'json', body: this.resourceList(group, version!, defs) };
    let legacyWatch = false;
    if (rest[0] === 'watch') {
      legacyWatch = true;
      rest = rest.slice(1);
    }
    let namespace: string | undefined;
    if (rest[0] === 'namespaces' && rest.length >= 3 && defs.some((d) => d.namespaced && d.resource === rest[2])) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    const def = defs.find((d) => d.resource === rest[0]);
    if (!def || rest.length > 3) return { kind: 'missing' };
    const name = rest[1];
    const subresource = rest[2];
    if (def.namespaced && name !== undefined && namespace === undefined) return { kind: 'missing' };
    if (!def.namespaced && namespace !== undefined) return { kind: 'missing' };
    if (subresource !== undefined && !((subresource === 'status' && def.statusSubresource) || (subresource === 'scale' && def.scale)))
      return { kind: 'missing' };
    return { kind: 'resource', target: { def, namespace, name, subresource, legacyWatch } };
  }

  private async serveResource(t: Target, method: string, url: URL, req: IncomingMessage, raw: Buffer, res: ServerResponse, watch: boolean): Promise<void> {
    const { def, namespace, name, subresource } = t;
    const q = url.searchParams;
    const store = this.store;
    const dryRun = q.getAll('dryRun').includes('All');
    if (name === undefined) {
      if (method === 'GET' && (watch || t.legacyWatch)) return this.serveWatch(def, namespace, q, req, res);
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
        this.send(res, 200, { apiVersion: apiVersionOf(def), kind: def.listKind, metadata, items: page.items.map((o) => listItem(def, o)) });
        return;
      }
      if (method === 'POST') {
        if (def.namespaced && namespace === undefined) throw errors.methodNotAllowed();
        const body = jsonBody(req, raw);
        const created = store.create(def, body as KubeObject, { keepStatus: false, dryRun, ...(namespace !== undefined ? { namespace } : {}) });
        this.send(res, 201, created);
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
        this.send(res, 200, { apiVersion: apiVersionOf(def), kind: def.listKind, metadata: { resourceVersion: store.resourceVersion }, items });
        return;
      }
      throw errors.methodNotAllowed();
    }

    if (subresource === 'scale') {
      if (method === 'GET') return this.send(res, 200, store.getScale(def, namespace, name));
      if (method === 'PUT') return this.send(res, 200, store.updateScale(def, namespace, name, jsonBody(req, raw) as KubeObject));
      if (method === 'PATCH') return this.send(res, 200, store.patchScale(def, namespace, name, parseJson(raw), patchType(def, req)));
      throw errors.methodNotAllowed();
    }
    const writeOpts = { keepStatus: false, dryRun, ...(subresource === 'status' ? { subresource: 'status' as const } : {}) };
    switch (method) {
      case 'GET':
        return this.send(res, 200, store.read(def, namespace, name));
      case 'PUT': {
        const body = jsonBody(req, raw) as KubeObject;
        return this.send(res, 200, store.update(def, body, { ...writeOpts, name, ...(namespace !== undefined ? { namespace } : {}) }));
      }
      case 'PATCH': {
        const type = patchType(def, req);
        return this.send(res, 200, store.patch(def, namespace, name, parseJson(raw), { ...writeOpts, type }));
      }
      case 'DELETE': {
        if (subresource) throw errors.methodNotAllowed();
        const result = store.delete(def, namespace, name, deleteOptions(q, raw));
        if (result.deleted && !def.deleteReturnsObject) {
          return this.send(res, 200, success({ name, group: def.group, kind: def.resource, uid: result.object.metadata.uid }));
        }
        return this.send(res, 200, result.object);
      }
      default:
        throw errors.methodNotAllowed();
    }
  }

  private serveWatch(def: ResourceDef, namespace: string | undefined, q: URLSearchParams, req: IncomingMessage, res: ServerResponse): void {
    const write = (ev: WatchEvent) => {
      if (!res.writableEnded) res.write(`${JSON.stringify({ type: ev.type, object: ev.object })}\n`);
    };
    const selectors = {
      ...(namespace !== undefined ? { namespace } : {}),
      labelSelector: q.get('labelSelector') ?? '',
      fieldSelector: q.get('fieldSelector') ?? '',
    };
    // Selector errors are a plain 400 before the stream starts, as on a real server.
    this.store.listPage(def, { ...selectors, limit: 1 });
    res.writeHead(200, { 'Content-Type': JSON_TYPE, 'Transfer-Encoding': 'chunked', 'Cache-Control': 'no-cache, private' });
    res.flushHeaders();
    let handle: WatchHandle | undefined;
    const timers: NodeJS.Timeout[] = [];
    const entry = {
      res,
      stop: () => {
        handle?.stop();
        for (const t of timers) clearTimeout(t);
        this.watches.delete(entry);
      },
    };
    try {
      handle = this.store.watch(def, { ...selectors, resourceVersion: q.get('resourceVersion') ?? '' }, write);
    } catch (e) {
      const status: Status = e instanceof KubeApiError ? e.status : errors.internal(String(e)).status;
      write({ type: 'ERROR', object: status });
      res.end();
      return;
    }
    this.watches.add(entry);
    res.on('close', entry.stop);
    req.on('close', entry.stop);
    if (isTrue(q.get('allowWatchBookmarks'))) {
      const interval = setInterval(() => {
        write({ type: 'BOOKMARK', object: { kind: def.kind, apiVersion: apiVersionOf(def), metadata: { resourceVersion: this.store.resourceVersion } } });
      }, this.options.bookmarkIntervalMs ?? 1000);
      timers.push(interval);
    }
    const timeout = Number(q.get('timeoutSeconds') ?? '0');
    if (timeout > 0) {
      timers.push(
        setTimeout(() => {
          entry.stop();
          res.end();
        }, timeout * 1000),
      );
    }
  }

  private groupList() {
    const groups = new Map<string, string[]>();
    for (const d of this.store.resources.all) {
      if (!d.group) continue;
      const versions = groups.get(d.group) ?? [];
      if (!versions.includes(d.version)) versions.push(d.version);
      groups.set(d.group, versions);
    }
    return {
      kind: 'APIGroupList',
      apiVersion: 'v1',
      groups: [...groups].map(([name, versions]) => ({
        name,
        versions: versions.map((v) => ({ groupVersion: `${name}/${v}`, version: v })),
        preferredVersion: { groupVersion: `${name}/${versions[0]}`, version: versions[0] },
      })),
    };
  }

  private resourceList(group: string, version: string, defs: ResourceDef[]) {
    const verbs = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
    const resources: Record<string, unknown>[] = [];
    for (const d of defs) {
      resources.push({
        name: d.resource,
        singularName: d.singular,
        namespaced: d.namespaced,
        kind: d.kind,
        verbs,
        ...(d.shortNames ? { shortNames: d.shortNames } : {}),
      });
      if (d.statusSubresource)
        resources.push({ name: `${d.resource}/status`, singularName: '', namespaced: d.namespaced, kind: d.kind, verbs: ['get', 'patch', 'update'] });
      if (d.scale)
        resources.push({
          name: `${d.resource}/scale`,
          singularName: '',
          namespaced: d.namespaced,
          group: 'autoscaling',
          version: 'v1',
          kind: 'Scale',
          verbs: ['get', 'patch', 'update'],
        });
    }
    return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: group ? `${group}/${version}` : version, resources };
  }

  private send(res: ServerResponse, code: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(code, { 'Content-Type': JSON_TYPE, 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  }

  private sendError(res: ServerResponse, err: KubeApiError): void {
    if (res.headersSent) {
      res.end();
      return;
    }
    this.send(res, err.status.code, err.status);
  }
}

function clientOf(req: IncomingMessage): string {
  const auth = req.headers.authorization ?? '';
  const bearer = /^Bearer\s+(.+)$/i.exec(auth);
  if (bearer) return bearer[1]!.trim();
  const basic = /^Basic\s+(.+)$/i.exec(auth);
  if (basic) return Buffer.from(basic[1]!, 'base64').toString('utf8').split(':')[0] ?? 'anonymous';
  return 'anonymous';
}

async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw errors.tooLarge('the request body is too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function mediaType(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

/** POST/PUT bodies must be JSON (this stand-in speaks no YAML or protobuf). */
function requireJson(req: IncomingMessage): void {
  const type = mediaType(req);
  if (type !== '' && type !== JSON_TYPE && type !== '*/*') {
    throw errors.unsupportedMediaType(
      `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf`,
    );
  }
}

function patchType(def: ResourceDef, req: IncomingMessage): PatchType {
  const type = mediaType(req);
  const accepted = def.custom
    ? 'application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml'
    : 'application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml';
  if (type === 'application/apply-patch+yaml' || type === 'application/apply-patch+cbor') {
    throw errors.unsupportedMediaType(
      `server-side apply is not implemented by the test stand-in (accepted here: ${accepted.replace(', application/apply-patch+yaml', '')})`,
    );
  }
  const found = PATCH_TYPES[type];
  if (!found || (found === 'strategic' && def.custom)) {
    throw errors.unsupportedMediaType(`the body of the request was in an unknown format - accepted media types include: ${accepted}`);
  }
  return found;
}

function jsonBody(req: IncomingMessage, raw: Buffer): unknown {
  requireJson(req);
  return parseJson(raw);
}

function parseJson(raw: Buffer): unknown {
  if (raw.length === 0) throw errors.badRequest('the request body is empty');
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch (e) {
    throw errors.badRequest(`couldn't get version/kind; json parse error: ${(e as Error).message}`);
  }
}

function deleteOptions(q: URLSearchParams, raw: Buffer): DeleteOptions {
  let body: Record<string, unknown> = {};
  if (raw.length > 0) {
    try {
      body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
    } catch (e) {
      throw errors.badRequest(`couldn't get version/kind; json parse error: ${(e as Error).message}`);
    }
  }
  const policy = (q.get('propagationPolicy') ?? body['propagationPolicy']) as DeleteOptions['propagationPolicy'] | undefined;
  const orphan = q.get('orphanDependents') ?? body['orphanDependents'];
  const opts: DeleteOptions = {};
  if (policy) {
    if (!['Background', 'Foreground', 'Orphan'].includes(policy)) throw errors.badRequest(`propagationPolicy: Unsupported value: "${policy}"`);
    opts.propagationPolicy = policy;
  } else if (orphan === true || orphan === 'true') opts.propagationPolicy = 'Orphan';
  const pre = body['preconditions'] as DeleteOptions['preconditions'] | undefined;
  if (pre) opts.preconditions = pre;
  const dry = q.getAll('dryRun').concat((body['dryRun'] as string[] | undefined) ?? []);
  if (dry.includes('All')) opts.dryRun = true;
  return opts;
}

/** Built-in kinds' list items carry no kind/apiVersion on a real server; custom resources do. */
function listItem(def: ResourceDef, obj: KubeObject): KubeObject {
  if (def.custom) return obj;
  const { apiVersion: _a, kind: _k, ...rest } = obj;
  return rest;
}

export async function startKubeApi(options: KubeApiOptions = {}): Promise<KubeApiServer> {
  return new KubeApiServer(options).listen();
}

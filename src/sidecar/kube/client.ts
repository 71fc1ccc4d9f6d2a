// The sidecar's Kubernetes adapter: a KubeConfig, informers for Redis resources and their pods,
// and the few writes the sidecar makes (pod role labels and link annotations as JSON merge
// patches, Events on the Redis, the generated auth Secret, the Lease). Decides nothing.
// Invariants:
// - Every request is bounded by a timeout (client-node has none by default), so a hung API
//   server never stalls a caller forever.
// - Patches carry an explicit patch content type: client-node 2.x defaults to
//   application/json-patch+json, which a real server refuses for a merge-style body.
// - metav1.MicroTime fields are written with V1MicroTime (six fractional digits); a plain Date
//   (three) is refused by the API server.
// - Events are best effort: emitEvent never throws.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import {
  ApiException, CoordinationV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, makeInformer, Observable, PatchStrategy, setHeaderOptions, V1MicroTime,
  type ConfigurationOptions, type Informer, type KubernetesObject, type ObjectCache, type ObservableMiddleware, type RequestContext, type ResponseContext,
  type V1Lease, type V1Pod, type V1Secret,
} from '@kubernetes/client-node';
import { pino, type Logger } from 'pino';
import { API_VERSION, childNames, DEFAULT_PASSWORD_KEY, GROUP, INSTANCE_LABEL, KIND, MANAGED_BY, MANAGED_BY_LABEL, NAME_LABEL, APP_NAME, PLURAL, VERSION } from '../../api/labels.ts';
import type { RedisObject } from '../../api/schema.ts';
import type { LeaseSpecPlan, LeaseState } from './lease-decision.ts';

/** The pods the sidecar watches: every pod of every Redis carries this label. */
export const POD_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY}`;
/** reportingComponent / source.component of our Events. */
export const REPORTING_CONTROLLER = 'redis-operator';
export const DEFAULT_REQUEST_TIMEOUT_MS = 5000;

// ------------------------------------------------------------------ configuration

export interface KubeConfigSource {
  /** Use this KubeConfig as is (tests). */
  kubeConfig?: KubeConfig;
  /** Options for KubeConfig.loadFromOptions (tests: the stand-in's kubeConfigOptions()). */
  options?: Parameters<KubeConfig['loadFromOptions']>[0];
  /** Environment to read KUBECONFIG and KUBERNETES_SERVICE_HOST from (default process.env). */
  env?: NodeJS.ProcessEnv;
}

/** In-cluster by default; KUBECONFIG (one path or a path list) when set; injected options for tests. */
export function loadKubeConfig(source: KubeConfigSource = {}): KubeConfig {
  if (source.kubeConfig) return source.kubeConfig;
  const kc = new KubeConfig();
  if (source.options) {
    kc.loadFromOptions(source.options);
    return kc;
  }
  const env = source.env ?? process.env;
  const files = (env['KUBECONFIG'] ?? '').split(path.delimiter).filter(Boolean);
  if (files.length > 0) {
    kc.loadFromFile(files[0]!);
    for (const file of files.slice(1)) {
      const extra = new KubeConfig();
      extra.loadFromFile(file);
      kc.mergeConfig(extra);
    }
    return kc;
  }
  if (!env['KUBERNETES_SERVICE_HOST'] || !env['KUBERNETES_SERVICE_PORT']) {
    throw new Error('no Kubernetes configuration: KUBECONFIG is not set and KUBERNETES_SERVICE_HOST/PORT are absent (not running in a pod)');
  }
  kc.loadFromCluster();
  return kc;
}

// ------------------------------------------------------------------ errors

export interface KubeFailure {
  /** HTTP status, or undefined for a network error / timeout. */
  code: number | undefined;
  /** The Status reason (NotFound, Conflict, AlreadyExists, ...), when the server sent one. */
  reason: string | undefined;
  message: string;
}

/** What went wrong with a client-node call, from its ApiException (whose body is the Status as text). */
export function kubeFailure(err: unknown): KubeFailure {
  if (err instanceof ApiException) {
    let body: unknown = err.body;
    if (typeof body === 'string') {
      try {
        body = JSON.parse(body);
      } catch {
        // not JSON: keep the text
      }
    }
    const status = typeof body === 'object' && body !== null ? (body as { reason?: string; message?: string }) : {};
    return { code: err.code, reason: status.reason, message: status.message ?? (typeof body === 'string' ? body : `HTTP ${err.code}`) };
  }
  const e = err as { name?: string; message?: string };
  const timeout = e?.name === 'TimeoutError' || e?.name === 'AbortError';
  return { code: undefined, reason: timeout ? 'Timeout' : undefined, message: e?.message ?? String(err) };
}

export const isNotFound = (err: unknown) => kubeFailure(err).code === 404;
export const isConflict = (err: unknown) => kubeFailure(err).code === 409;
/**
 * A write carrying metadata.uid as a precondition met another incarnation of the object (deleted
 * and recreated under the same name): kube-apiserver answers 422, metadata.uid is immutable.
 */
export const isReplaced = (err: unknown) => {
  const f = kubeFailure(err);
  return f.code === 422 && /metadata\.uid/.test(f.message);
};

// ------------------------------------------------------------------ request options

function passThrough<T>(value: T): Observable<T> {
  return new Observable(Promise.resolve(value));
}

/** ConfigurationOptions that abort a call after `ms` (client-node has no default timeout). */
export function timeoutOptions(ms: number): ConfigurationOptions<ObservableMiddleware> {
  const middleware: ObservableMiddleware = {
    pre: (ctx: RequestContext) => {
      ctx.setSignal(AbortSignal.timeout(ms));
      return passThrough(ctx);
    },
    post: (rsp: ResponseContext) => passThrough(rsp),
  };
  return { middleware: [middleware], middlewareMergeStrategy: 'append' };
}

/** A JSON merge patch with the right content type, bounded by `ms`. */
export function mergePatchOptions(ms: number): ConfigurationOptions<ObservableMiddleware> {
  return setHeaderOptions('Content-Type', PatchStrategy.MergePatch, timeoutOptions(ms));
}

// ------------------------------------------------------------------ informers

export type WatchVerb = 'add' | 'update' | 'delete';

/** Several informers (one per namespace, or one for all) behind one cache and one set of callbacks. */
export interface MultiInformer<T extends KubernetesObject> {
  on(verb: WatchVerb, cb: (obj: T) => void): void;
  /** Called when a list/watch fails; the informer restarts itself after `restartDelayMs`. */
  onError(cb: (err: unknown) => void): void;
  list(namespace?: string): T[];
  get(name: string, namespace: string): T | undefined;
  start(): Promise<void>;
  stop(): Promise<void>;
}

interface InformerSpec<T extends KubernetesObject> {
  path: string;
  list: () => Promise<{ items: T[]; metadata?: { resourceVersion?: string } }>;
  labelSelector?: string;
}

function multiInformer<T extends KubernetesObject>(kc: KubeConfig, specs: InformerSpec<T>[], restartDelayMs: number, logger: Logger): MultiInformer<T> {
  const informers: Array<Informer<T> & ObjectCache<T>> = specs.map((s) =>
    makeInformer<T>(kc, s.path, s.list as () => Promise<never>, s.labelSelector),
  );
  const errorCbs: Array<(err: unknown) => void> = [];
  let stopped = true;
  const timers = new Set<NodeJS.Timeout>();
  informers.forEach((inf, i) => {
    inf.on('error', (err: unknown) => {
      const f = kubeFailure(err);
      logger.warn({ path: specs[i]!.path, code: f.code, reason: f.reason, err: f.message }, 'informer failed; restarting');
      for (const cb of errorCbs) cb(err);
      if (stopped) return;
      const t = setTimeout(() => {
        timers.delete(t);
        if (!stopped) inf.start().catch(() => undefined);
      }, restartDelayMs);
      timers.add(t);
    });
  });
  return {
    on: (verb, cb) => informers.forEach((inf) => inf.on(verb, cb)),
    onError: (cb) => {
      errorCbs.push(cb);
    },
    list: (namespace) => informers.flatMap((inf) => inf.list(namespace)),
    get: (name, namespace) => {
      for (const inf of informers) {
        const found = inf.get(name, namespace);
        if (found) return found;
      }
      return undefined;
    },
    start: async () => {
      stopped = false;
      await Promise.all(informers.map((inf) => inf.start()));
    },
    stop: async () => {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      await Promise.all(informers.map((inf) => inf.stop()));
    },
  };
}

// ------------------------------------------------------------------ the client

export interface RedisRef {
  namespace: string;
  name: string;
  uid?: string;
}

export interface KubeClientOptions {
  /** Namespaces to watch; empty = all namespaces. */
  namespaces?: string[];
  /** POD_NAME of this sidecar: the reportingInstance of its Events. */
  identity: string;
  requestTimeoutMs?: number;
  /** Delay before an informer that failed restarts (default 1000 ms). */
  informerRestartDelayMs?: number;
  logger?: Logger;
}

export type GeneratedSecret = { password: string; created: boolean };

export class KubeClient {
  readonly kc: KubeConfig;
  readonly core: CoreV1Api;
  readonly custom: CustomObjectsApi;
  readonly coordination: CoordinationV1Api;
  private readonly namespaces: string[];
  private readonly identity: string;
  private readonly timeoutMs: number;
  private readonly restartDelayMs: number;
  private readonly logger: Logger;

  constructor(kc: KubeConfig, options: KubeClientOptions) {
    this.kc = kc;
    this.core = kc.makeApiClient(CoreV1Api);
    this.custom = kc.makeApiClient(CustomObjectsApi);
    this.coordination = kc.makeApiClient(CoordinationV1Api);
    this.namespaces = [...new Set((options.namespaces ?? []).filter(Boolean))];
    this.identity = options.identity;
    this.timeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.restartDelayMs = options.informerRestartDelayMs ?? 1000;
    this.logger = options.logger ?? pino({ level: 'silent' });
  }

  private get t() {
    return timeoutOptions(this.timeoutMs);
  }

  /** Redis resources in the watched namespaces (all when none configured). */
  async listRedis(): Promise<RedisObject[]> {
    const crd = { group: GROUP, version: VERSION, plural: PLURAL };
    if (this.namespaces.length === 0) {
      const list = (await this.custom.listClusterCustomObject(crd, this.t)) as { items: RedisObject[] };
      return list.items;
    }
    const lists = await Promise.all(this.namespaces.map((namespace) => this.custom.listNamespacedCustomObject({ ...crd, namespace }, this.t) as Promise<{ items: RedisObject[] }>));
    return lists.flatMap((l) => l.items);
  }

  /** An informer over Redis resources (one watch per namespace, or one for all). Call start(). */
  redisInformer(): MultiInformer<RedisObject & KubernetesObject> {
    const crd = { group: GROUP, version: VERSION, plural: PLURAL };
    type R = RedisObject & KubernetesObject;
    const specs: InformerSpec<R>[] =
      this.namespaces.length === 0
        ? [{ path: `/apis/${GROUP}/${VERSION}/${PLURAL}`, list: () => this.custom.listClusterCustomObject(crd, this.t) as Promise<{ items: R[] }> }]
        : this.namespaces.map((namespace) => ({
            path: `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}`,
            list: () => this.custom.listNamespacedCustomObject({ ...crd, namespace }, this.t) as Promise<{ items: R[] }>,
          }));
    return multiInformer(this.kc, specs, this.restartDelayMs, this.logger);
  }

  /** An informer over every pod managed by the operator (label app.kubernetes.io/managed-by=redis-operator). */
  podInformer(): MultiInformer<V1Pod> {
    const labelSelector = POD_SELECTOR;
    const specs: InformerSpec<V1Pod>[] =
      this.namespaces.length === 0
        ? [{ path: '/api/v1/pods', labelSelector, list: () => this.core.listPodForAllNamespaces({ labelSelector }, this.t) }]
        : this.namespaces.map((namespace) => ({
            path: `/api/v1/namespaces/${namespace}/pods`,
            labelSelector,
            list: () => this.core.listNamespacedPod({ namespace, labelSelector }, this.t),
          }));
    return multiInformer(this.kc, specs, this.restartDelayMs, this.logger);
  }

  /**
   * Sets (string) or removes (null) pod labels and annotations with one JSON merge patch. Keys not
   * mentioned are left alone. Callers patch only on transitions: every write wakes Metacontroller.
   * With `uid`, the patch carries metadata.uid as a precondition: the API server refuses it
   * (isReplaced: a 422, not the 409 of a stale resourceVersion) when the pod was deleted and
   * recreated under the same name since the caller looked, so a
   * master label meant for one incarnation never lands on the next (empty) one.
   */
  async patchPodMetadata(namespace: string, name: string, changes: { labels?: Record<string, string | null>; annotations?: Record<string, string | null>; uid?: string }): Promise<V1Pod> {
    const metadata: Record<string, unknown> = {};
    if (changes.uid) metadata['uid'] = changes.uid;
    if (changes.labels && Object.keys(changes.labels).length > 0) metadata['labels'] = changes.labels;
    if (changes.annotations && Object.keys(changes.annotations).length > 0) metadata['annotations'] = changes.annotations;
    return this.core.patchNamespacedPod({ namespace, name, body: { metadata } }, mergePatchOptions(this.timeoutMs));
  }

  /**
   * Records a core/v1 Event on the Redis (new-style fields: eventTime, action, reportingComponent,
   * reportingInstance). Best effort: returns false (and logs) instead of throwing.
   */
  async emitEvent(redis: RedisRef, type: 'Normal' | 'Warning', reason: string, message: string): Promise<boolean> {
    const now = new Date();
    const involvedObject: Record<string, string> = { apiVersion: API_VERSION, kind: KIND, name: redis.name, namespace: redis.namespace };
    if (redis.uid) involvedObject['uid'] = redis.uid;
    try {
      await this.core.createNamespacedEvent(
        {
          namespace: redis.namespace,
          body: {
            metadata: { generateName: `${redis.name}.` },
            involvedObject,
            type,
            reason,
            message: message.length > 1024 ? `${message.slice(0, 1021)}...` : message,
            action: reason,
            eventTime: new V1MicroTime(now.getTime()),
            firstTimestamp: now,
            lastTimestamp: now,
            count: 1,
            reportingComponent: REPORTING_CONTROLLER,
            reportingInstance: this.identity,
            source: { component: REPORTING_CONTROLLER },
          },
        },
        this.t,
      );
      return true;
    } catch (err) {
      const f = kubeFailure(err);
      this.logger.warn({ namespace: redis.namespace, name: redis.name, reason, code: f.code, err: f.message }, 'could not record event');
      return false;
    }
  }

  /** The Secret, or null when it does not exist. */
  async getSecret(namespace: string, name: string): Promise<V1Secret | null> {
    try {
      return await this.core.readNamespacedSecret({ namespace, name }, this.t);
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  /** The decoded value of one key of a Secret; null when the Secret or the key is missing. */
  async readSecretValue(namespace: string, name: string, key: string): Promise<string | null> {
    const secret = await this.getSecret(namespace, name);
    return secretValue(secret, key);
  }

  /**
   * Creates `<name>-auth` with a random 32-byte password (hex) owned by the Redis (controller
   * reference, so deleting the Redis deletes it). AlreadyExists means another sidecar (or an
   * earlier run) made it: its password is the one to use.
   */
  async createAuthSecret(redis: RedisRef & { uid: string }): Promise<GeneratedSecret> {
    const name = childNames(redis.name).generatedAuthSecret;
    const password = randomBytes(32).toString('hex');
    const body: V1Secret = {
      metadata: {
        name,
        namespace: redis.namespace,
        labels: { [NAME_LABEL]: APP_NAME, [INSTANCE_LABEL]: redis.name, [MANAGED_BY_LABEL]: MANAGED_BY },
        // No blockOwnerDeletion: setting it needs update rights on redises/finalizers, which the sidecar does not have.
        ownerReferences: [{ apiVersion: API_VERSION, kind: KIND, name: redis.name, uid: redis.uid, controller: true }],
      },
      type: 'Opaque',
      data: { [DEFAULT_PASSWORD_KEY]: Buffer.from(password, 'utf8').toString('base64') },
    };
    try {
      await this.core.createNamespacedSecret({ namespace: redis.namespace, body }, this.t);
      this.logger.info({ namespace: redis.namespace, name: redis.name, secret: name }, 'created the generated auth secret');
      return { password, created: true };
    } catch (err) {
      if (!isConflict(err)) throw err;
    }
    const existing = await this.readSecretValue(redis.namespace, name, DEFAULT_PASSWORD_KEY);
    if (existing === null) throw new Error(`secret ${redis.namespace}/${name} exists but has no "${DEFAULT_PASSWORD_KEY}" key`);
    return { password: existing, created: false };
  }

  /** Reads the generated Secret, creating it when absent (idempotent; safe to race). */
  async ensureAuthSecret(redis: RedisRef & { uid: string }): Promise<GeneratedSecret> {
    const existing = await this.readSecretValue(redis.namespace, childNames(redis.name).generatedAuthSecret, DEFAULT_PASSWORD_KEY);
    if (existing !== null) return { password: existing, created: false };
    return this.createAuthSecret(redis);
  }

  /** A LeaseClient (for LeaderElector) on namespace/name with its own request timeout. */
  leaseClient(namespace: string, name: string, requestTimeoutMs: number): LeaseClient {
    return new KubeLeaseClient(this.coordination, namespace, name, requestTimeoutMs);
  }
}

export function secretValue(secret: V1Secret | null, key: string): string | null {
  const b64 = secret?.data?.[key];
  if (b64 === undefined) return null;
  return Buffer.from(b64, 'base64').toString('utf8');
}

// ------------------------------------------------------------------ Lease access

export class LeaseConflictError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LeaseConflictError';
  }
}

/** The three Lease calls leader election makes. Writes throw LeaseConflictError on 409. */
export interface LeaseClient {
  readonly namespace: string;
  readonly name: string;
  get(): Promise<LeaseState | null>;
  create(spec: LeaseSpecPlan): Promise<LeaseState>;
  replace(spec: LeaseSpecPlan, resourceVersion: string): Promise<LeaseState>;
}

function leaseState(lease: V1Lease): LeaseState {
  const spec = lease.spec ?? {};
  return {
    resourceVersion: lease.metadata?.resourceVersion ?? '',
    holderIdentity: spec.holderIdentity ?? null,
    leaseDurationSeconds: spec.leaseDurationSeconds ?? null,
    acquireTime: (spec.acquireTime as unknown as string | Date | undefined) ?? null,
    renewTime: (spec.renewTime as unknown as string | Date | undefined) ?? null,
    leaseTransitions: spec.leaseTransitions ?? null,
  };
}

function leaseBody(namespace: string, name: string, spec: LeaseSpecPlan, resourceVersion?: string): V1Lease {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name, namespace, ...(resourceVersion ? { resourceVersion } : {}) },
    spec: {
      holderIdentity: spec.holderIdentity,
      leaseDurationSeconds: spec.leaseDurationSeconds,
      acquireTime: new V1MicroTime(spec.acquireTime),
      renewTime: new V1MicroTime(spec.renewTime),
      leaseTransitions: spec.leaseTransitions,
    },
  };
}

export class KubeLeaseClient implements LeaseClient {
  readonly namespace: string;
  readonly name: string;
  private readonly api: CoordinationV1Api;
  private readonly timeoutMs: number;

  constructor(api: CoordinationV1Api, namespace: string, name: string, timeoutMs: number) {
    this.api = api;
    this.namespace = namespace;
    this.name = name;
    this.timeoutMs = timeoutMs;
  }

  async get(): Promise<LeaseState | null> {
    try {
      return leaseState(await this.api.readNamespacedLease({ namespace: this.namespace, name: this.name }, timeoutOptions(this.timeoutMs)));
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  async create(spec: LeaseSpecPlan): Promise<LeaseState> {
    try {
      return leaseState(await this.api.createNamespacedLease({ namespace: this.namespace, body: leaseBody(this.namespace, this.name, spec) }, timeoutOptions(this.timeoutMs)));
    } catch (err) {
      if (isConflict(err)) throw new LeaseConflictError(kubeFailure(err).message);
      throw err;
    }
  }

  async replace(spec: LeaseSpecPlan, resourceVersion: string): Promise<LeaseState> {
    try {
      const body = leaseBody(this.namespace, this.name, spec, resourceVersion);
      return leaseState(await this.api.replaceNamespacedLease({ namespace: this.namespace, name: this.name, body }, timeoutOptions(this.timeoutMs)));
    } catch (err) {
      if (isConflict(err)) throw new LeaseConflictError(kubeFailure(err).message);
      throw err;
    }
  }
}

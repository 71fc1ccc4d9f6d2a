// A REAL kube-apiserver (with etcd; no controllers, no nodes) for the sidecar's tests, in place of
// an in-process stand-in: the project's CRDs and manifests/rbac.yaml applied, every client the
// sidecar makes going through the fault proxy (fault-proxy.ts) as a ServiceAccount of the
// operator's namespace, bound to the operator's own roles, so a call they do not allow fails here
// as in a cluster. Tests write as admin, straight to the API server (never faulted or logged).
//
//   const api = await startApiServer();                 // ~3 s
//   const kc = await api.kubeConfig('sidecar-a');        // a client named sidecar-a (faults, requests)
//   await api.store.create('pods', {...});               // writes resolve once the cache shows them
//   api.store.get('pods', 'ns', 'p');                    // reads are synchronous, from watches
//   api.faults.add({ client: 'sidecar-a', path: /\/leases/, action: { kind: 'hang' } });
//   api.closeWatches();                                  // the proxied clients' watch streams end; they re-watch
//   await api.close();
//
// Not modelled (no controller runs): garbage collection by owner, the ServiceAccount controller
// (startApiServer and namespace() make `default` in each namespace they create), StatefulSet and
// Deployment controllers, scheduling. Pods are never scheduled: their status is what a test writes.
// Invariants: everything listens on 127.0.0.1; the Service range is never routed (no kube-proxy),
// so every such server may share one; close() stops the proxy, the informers and the server, and
// removes its directory.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import type { KubeObject, StoredObject } from '../support/kube-client/objects.ts';
import { selectorMatcher } from '../support/kube-client/selectors.ts';
import {
  httpClient,
  type DeleteOptions,
  type HttpKubeClient,
  type PatchOptions,
  type ResourceRef,
  type WatchHandle,
} from '../support/kube-client/index.ts';
import { startControlPlane, type ControlPlane } from './control-plane.ts';
import { startFaultProxy, type FaultProxy } from './fault-proxy.ts';
import { OPERATOR_NAMESPACE, REPO_ROOT } from './operator.ts';

/** Third octet of every bare API server's Service range: no Service address is ever routed. */
export const BARE_SUBNET = 250;

/** The resources tests read and write, by the plural they use. */
const RESOURCES: Record<string, string> = {
  pods: 'v1',
  secrets: 'v1',
  events: 'v1',
  configmaps: 'v1',
  persistentvolumeclaims: 'v1',
  namespaces: 'v1',
  serviceaccounts: 'v1',
  statefulsets: 'apps/v1',
  storageclasses: 'storage.k8s.io/v1',
  leases: 'coordination.k8s.io/v1',
  redises: 'redis.example.com/v1',
  redisclusters: 'redis.example.com/v1',
  redisbackups: 'redis.example.com/v1',
};

const CRDS = ['crd.yaml', 'rediscluster-crd.yaml', 'redisbackup-crd.yaml'].map((f) =>
  path.join(REPO_ROOT, 'manifests', f),
);

/** Every ServiceAccount of the operator's namespace gets the operator's rights, as its own does. */
const bindings = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: test-sidecars}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: redis-operator-sidecar}
subjects: [{kind: Group, apiGroup: rbac.authorization.k8s.io, name: "system:serviceaccounts:${OPERATOR_NAMESPACE}"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: test-sidecars-cluster-scoped}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: redis-operator-sidecar-cluster-scoped}
subjects: [{kind: Group, apiGroup: rbac.authorization.k8s.io, name: "system:serviceaccounts:${OPERATOR_NAMESPACE}"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: test-sidecars, namespace: ${OPERATOR_NAMESPACE}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: redis-operator-leader-election}
subjects: [{kind: Group, apiGroup: rbac.authorization.k8s.io, name: "system:serviceaccounts:${OPERATOR_NAMESPACE}"}]
`;

/** The types the store reads and writes, so tests need not import them from elsewhere. */
export type { KubeObject, StoredObject, WatchHandle };

export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
}

/** The API as tests use it: synchronous reads from watches, writes that resolve once those show them. */
export interface ApiStore {
  get(resource: string, namespace: string | undefined, name: string): StoredObject | undefined;
  /** As get, but a missing object throws. */
  read(resource: string, namespace: string | undefined, name: string): StoredObject;
  list(resource: string, options?: ListOptions): StoredObject[];
  /** Every change of the matching objects, in the order the API server made them. */
  watch(resource: string, options: ListOptions, cb: (ev: { type: string; object: StoredObject }) => void): WatchHandle;
  /**
   * Creates the object; a `status` it carries is then written through the status subresource (what a controller would
   * write).
   */
  create(resource: string, obj: KubeObject): Promise<StoredObject>;
  patch(
    resource: string,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    options: PatchOptions,
  ): Promise<StoredObject>;
  /** Read-modify-write of the object and then of its status (a 409 on a concurrent write is retried). */
  mutate(
    resource: string,
    namespace: string | undefined,
    name: string,
    fn: (obj: StoredObject) => void,
  ): Promise<StoredObject>;
  /** Resolves once the object is gone, or deleting but held by a finalizer. */
  delete(resource: string, namespace: string | undefined, name: string, options?: DeleteOptions): Promise<void>;
}

export interface ApiServer {
  readonly controlPlane: ControlPlane;
  readonly store: ApiStore;
  readonly faults: FaultProxy['faults'];
  /** Every request the sidecar's clients made, in arrival order. */
  readonly requests: FaultProxy['requests'];
  /**
   * Ends every watch stream open through the fault proxy (cleanly, as at the server's watch timeout); returns how many.
   */
  closeWatches(): number;
  /** A client named `name`: a ServiceAccount of the operator's namespace, reaching the API through the fault proxy. */
  kubeConfig(name: string): Promise<KubeConfig>;
  /** Creates the namespace (and its `default` ServiceAccount, which no controller makes here) unless it exists. */
  namespace(name: string): Promise<void>;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function startApiServer(options: { namespaces?: string[] } = {}): Promise<ApiServer> {
  const cp = await startControlPlane({ subnet: BARE_SUBNET, controllers: false });
  let proxy: FaultProxy | undefined;
  let admin: HttpKubeClient | undefined;
  try {
    await cp.kubectl([
      'apply',
      ...CRDS.flatMap((f) => ['-f', f]),
      '-f',
      path.join(REPO_ROOT, 'manifests/namespace.yaml'),
      '-f',
      path.join(REPO_ROOT, 'manifests/rbac.yaml'),
    ]);
    await cp.kubectl(['apply', '-f', '-'], bindings);
    await cp.kubectl(['wait', '--for=condition=Established', '--timeout=60s', ...CRDS.flatMap((f) => ['-f', f])]);
    const cert = cp.pki.serving('api-fault-proxy', ['127.0.0.1'], ['localhost']);
    proxy = await startFaultProxy({
      server: cp.server,
      caFile: cp.pki.ca.cert,
      listen: { host: '127.0.0.1', ...cert },
    });
    admin = httpClient(cp.adminKubeconfig);
    const refs = new Map<string, ResourceRef>();
    for (const [plural, apiVersion] of Object.entries(RESOURCES)) {
      const r = await admin.resource(apiVersion, plural);
      await admin.inform(r);
      refs.set(plural, r);
    }
    const server = apiServer(cp, proxy, admin, refs);
    for (const ns of ['default', OPERATOR_NAMESPACE, ...(options.namespaces ?? [])]) await server.namespace(ns);
    return server;
  } catch (err) {
    await admin?.close();
    await proxy?.close();
    await cp.stop();
    throw err;
  }
}

function apiServer(
  cp: ControlPlane,
  proxy: FaultProxy,
  admin: HttpKubeClient,
  refs: Map<string, ResourceRef>,
): ApiServer {
  const ca = readFileSync(cp.pki.ca.cert, 'utf8');
  const ref = (resource: string): ResourceRef => {
    const r = refs.get(resource);
    if (!r) throw new Error(`api-server: ${resource} is not one of ${[...refs.keys()].join(', ')}`);
    return r;
  };
  const ns = (resource: string, namespace: string | undefined) => (ref(resource).namespaced ? namespace : undefined);

  /**
   * Resolves once the cache holds this write (or a later one), or no longer holds a deleted object;
   * a deleted object that still has finalizers counts as deleted once the cache shows it marked
   * (no controller here removes them). A write that removed a deleted object's last finalizer
   * removed the object. Throws when the cache has not caught up within 5 s.
   */
  async function caughtUp(
    res: ResourceRef,
    namespace: string | undefined,
    written: StoredObject | undefined,
    name: string,
    deleted = false,
  ) {
    const want = Number(written?.metadata.resourceVersion ?? 0);
    const gone = deleted || (written?.metadata.deletionTimestamp !== undefined && !written.metadata.finalizers?.length);
    for (let i = 0; i < 1000; i++) {
      const cached = admin.get(res, namespace, name);
      if (
        gone
          ? !cached || (deleted && cached.metadata.deletionTimestamp !== undefined)
          : cached && Number(cached.metadata.resourceVersion) >= want
      )
        return;
      await sleep(5);
    }
    throw new Error(
      `api-server: the watch cache of ${res.resource} did not show the write to ${namespace ?? ''}/${name} within 5 s`,
    );
  }

  const store: ApiStore = {
    get: (resource, namespace, name) => admin.get(ref(resource), ns(resource, namespace), name),
    read(resource, namespace, name) {
      const o = store.get(resource, namespace, name);
      if (!o) throw new Error(`api-server: ${resource} ${namespace ?? ''}/${name} not found`);
      return o;
    },
    list(resource, o = {}) {
      return admin.list(ref(resource), {
        ...(o.namespace ? { namespace: o.namespace } : {}),
        ...(o.labelSelector ? { labelSelector: o.labelSelector } : {}),
      });
    },
    watch(resource, o, cb) {
      const matches = selectorMatcher(o.labelSelector);
      return admin.watch(ref(resource), (ev) => {
        if ((!o.namespace || ev.object.metadata.namespace === o.namespace) && matches(ev.object)) cb(ev);
      });
    },
    async create(resource, obj) {
      const res = ref(resource);
      const { status, ...rest } = obj as KubeObject & { status?: unknown };
      let written = await admin.create(res, rest as KubeObject);
      if (status !== undefined && res.statusSubresource)
        written = await admin.patch(
          res,
          written.metadata.namespace,
          written.metadata.name,
          { status },
          { type: 'merge', subresource: 'status' },
        );
      await caughtUp(res, written.metadata.namespace, written, written.metadata.name);
      return written;
    },
    async patch(resource, namespace, name, patch, options) {
      const res = ref(resource);
      const written = await admin.patch(res, ns(resource, namespace), name, patch, options);
      await caughtUp(res, ns(resource, namespace), written, name);
      return written;
    },
    async mutate(resource, namespace, name, fn) {
      const res = ref(resource);
      const where = ns(resource, namespace);
      for (let attempt = 0; ; attempt++) {
        const current = await admin.read(res, where, name);
        if (!current) throw new Error(`api-server: ${resource} ${namespace ?? ''}/${name} not found`);
        const next = structuredClone(current);
        fn(next);
        try {
          let written = await admin.update(res, next as KubeObject);
          if (res.statusSubresource && JSON.stringify(next['status']) !== JSON.stringify(current['status']))
            written = await admin.update(
              res,
              {
                ...(next as KubeObject),
                metadata: { ...next.metadata, resourceVersion: written.metadata.resourceVersion },
              },
              { subresource: 'status' },
            );
          await caughtUp(res, where, written, name);
          return written;
        } catch (err) {
          if ((err as { code?: number }).code !== 409 || attempt >= 5) throw err;
        }
      }
    },
    async delete(resource, namespace, name, options) {
      const res = ref(resource);
      await admin.delete(res, ns(resource, namespace), name, options);
      await caughtUp(res, ns(resource, namespace), undefined, name, true);
    },
  };

  return {
    controlPlane: cp,
    store,
    faults: proxy.faults,
    requests: proxy.requests,
    closeWatches: () => proxy.closeWatches(),
    async kubeConfig(name) {
      if (!store.get('serviceaccounts', OPERATOR_NAMESPACE, name))
        await store.create('serviceaccounts', {
          apiVersion: 'v1',
          kind: 'ServiceAccount',
          metadata: { name, namespace: OPERATOR_NAMESPACE },
        });
      const token = await cp.tokenFor(OPERATOR_NAMESPACE, name);
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: 'test', server: proxy.url, caData: Buffer.from(ca).toString('base64') }],
        users: [{ name, token }],
        contexts: [{ name: 'test', cluster: 'test', user: name }],
        currentContext: 'test',
      });
      return kc;
    },
    async namespace(name) {
      if (!store.get('namespaces', undefined, name))
        await store.create('namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
      if (!store.get('serviceaccounts', name, 'default'))
        await store.create('serviceaccounts', {
          apiVersion: 'v1',
          kind: 'ServiceAccount',
          metadata: { name: 'default', namespace: name },
        });
    },
    async close() {
      await admin.close();
      await proxy.close();
      await cp.stop();
    },
  };
}

// The plugin's Kubernetes adapter: the user's kubeconfig (KUBECONFIG, --kubeconfig, --context,
// -n as kubectl passes them) and the few reads and documented writes the commands need.
// Without --operator-namespace, the operator's namespace is found (discover.ts decides, from the
// CompositeController and the Deployments it may read).
// Invariant: only the API server is contacted, never a Redis pod; every failure is thrown as a
// Failure with the call's verb and resource so ops.explain can name it.
import {
  ApiException,
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import {
  REDIS_CLUSTER_PLURAL as CLUSTER_PLURAL,
  redisClusterPodSelectorLabels as clusterPodSelectorLabels,
} from '../api/rediscluster-names.ts';
import type { RedisClusterStatus } from '../api/rediscluster-schema.ts';
import { GROUP, PLURAL, VERSION, podSelectorLabels } from '../api/labels.ts';
import { REDISBACKUP_PLURAL, type RedisBackupStatus } from '../api/redisbackup-schema.ts';
import type { RedisStatus } from '../api/schema.ts';
import type { Failure, Target } from './ops.ts';
import {
  COMPOSITE_CONTROLLER,
  fromController,
  fromDeployments,
  fromFlag,
  OPERATOR_SELECTOR,
  type ControllerLike,
  type Located,
} from './discover.ts';

export class KubeError extends Error {
  readonly failure: Failure;
  readonly target: Target;
  constructor(failure: Failure, target: Target) {
    super(failure.message);
    this.failure = failure;
    this.target = target;
  }
}

function failure(err: unknown): Failure {
  if (err instanceof ApiException) {
    let message = `HTTP ${err.code}`;
    try {
      message = (JSON.parse(String(err.body)) as { message?: string }).message ?? message;
    } catch {
      // not a Status: keep the code
    }
    return { code: err.code, message };
  }
  const e = err as { message?: string; code?: string; cause?: { code?: string; message?: string } };
  return {
    code: undefined,
    errno: e?.cause?.code ?? e?.code,
    message: [e?.message, e?.cause?.message].filter(Boolean).join(': '),
  };
}

export interface KubeOptions {
  kubeconfig?: string | undefined;
  context?: string | undefined;
  namespace?: string | undefined;
  /** --operator-namespace; unset: found (discover.ts). */
  operatorNamespace?: string | undefined;
}

const selector = (labels: Record<string, string>) =>
  Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');

export function connect(o: KubeOptions) {
  const kc = new KubeConfig();
  if (o.kubeconfig) kc.loadFromFile(o.kubeconfig);
  else kc.loadFromDefault();
  if (o.context) kc.setCurrentContext(o.context);
  const namespace = o.namespace ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const coord = kc.makeApiClient(CoordinationV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  const call = async <T>(t: Omit<Target, 'namespace'> & { namespace?: string }, f: () => Promise<T>): Promise<T> => {
    try {
      return await f();
    } catch (err) {
      throw new KubeError(failure(err), { namespace, ...t });
    }
  };
  const optional = async <T>(f: () => Promise<T>): Promise<T | null> => {
    try {
      return await f();
    } catch {
      return null; // not found or not readable: the caller says "could not be checked"
    }
  };
  const redisRef = (name: string) => ({ group: GROUP, version: VERSION, namespace, plural: PLURAL, name });
  /** The operator's namespace: the flag, else found (discover.ts), each read skipped when not allowed. */
  const locateOperator = async (): Promise<Located> =>
    fromFlag(o.operatorNamespace) ??
    fromController(
      (await optional(() =>
        custom.getClusterCustomObject({
          group: 'metacontroller.k8s.io',
          version: 'v1alpha1',
          plural: 'compositecontrollers',
          name: COMPOSITE_CONTROLLER,
        }),
      )) as ControllerLike | null,
    ) ??
    fromDeployments(
      (await optional(() => apps.listDeploymentForAllNamespaces({ labelSelector: OPERATOR_SELECTOR })))?.items ?? null,
    );
  return {
    namespace,
    /** Where the operator's Deployment and Leases are read. */
    operatorNamespace: o.operatorNamespace,
    getRedis: (name: string) =>
      call({ verb: 'get', resource: 'redises', name }, () =>
        custom.getNamespacedCustomObject(redisRef(name)),
      ) as Promise<RedisLike>,
    patchRedis: (name: string, body: object) =>
      call({ verb: 'patch', resource: 'redises', name }, () =>
        custom.patchNamespacedCustomObject({ ...redisRef(name), body }, merge),
      ) as Promise<RedisLike>,
    createRedis: (body: object) =>
      call({ verb: 'create', resource: 'redises' }, () =>
        custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, body }),
      ),
    /** The Redis's own pods: its StatefulSets' pod selector (a backup Job's pod shares only the instance label). */
    pods: (name: string) =>
      call(
        { verb: 'list', resource: 'pods' },
        async () =>
          (await core.listNamespacedPod({ namespace, labelSelector: selector(podSelectorLabels(name)) })).items,
      ),
    clusterPods: (name: string) =>
      call(
        { verb: 'list', resource: 'pods' },
        async () =>
          (await core.listNamespacedPod({ namespace, labelSelector: selector(clusterPodSelectorLabels(name)) })).items,
      ),
    patchCluster: (name: string, body: object) =>
      call({ verb: 'patch', resource: CLUSTER_PLURAL, name }, () =>
        custom.patchNamespacedCustomObject(
          { group: GROUP, version: VERSION, namespace, plural: CLUSTER_PLURAL, name, body },
          merge,
        ),
      ) as Promise<ClusterLike>,
    getCluster: (name: string) =>
      call({ verb: 'get', resource: CLUSTER_PLURAL, name }, () =>
        custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: CLUSTER_PLURAL, name }),
      ) as Promise<ClusterLike>,
    createCluster: (body: object) =>
      call({ verb: 'create', resource: CLUSTER_PLURAL }, () =>
        custom.createNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace,
          plural: CLUSTER_PLURAL,
          body,
        }),
      ),
    events: (name: string, kind: 'Redis' | 'RedisCluster' = 'Redis') =>
      call(
        { verb: 'list', resource: 'events' },
        async () =>
          (
            await core.listNamespacedEvent({
              namespace,
              fieldSelector: `involvedObject.kind=${kind},involvedObject.name=${name}`,
            })
          ).items,
      ),
    backups: async () =>
      (
        (await call({ verb: 'list', resource: 'redisbackups' }, () =>
          custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: REDISBACKUP_PLURAL }),
        )) as { items: BackupLike[] }
      ).items,
    getBackup: (name: string) =>
      call({ verb: 'get', resource: 'redisbackups', name }, () =>
        custom.getNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace,
          plural: REDISBACKUP_PLURAL,
          name,
        }),
      ) as Promise<BackupLike>,
    createBackup: (body: object) =>
      call({ verb: 'create', resource: 'redisbackups' }, () =>
        custom.createNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace,
          plural: REDISBACKUP_PLURAL,
          body,
        }),
      ),
    locateOperator,
    /** The pods matching a label selector (`kubectl redis cli` picks its node among them). */
    podsSelected: (labelSelector: string) =>
      call(
        { verb: 'list', resource: 'pods' },
        async () => (await core.listNamespacedPod({ namespace, labelSelector })).items,
      ),
    operator: async () => {
      const located = await locateOperator();
      const leases = await optional(() => coord.listNamespacedLeaseWithHttpInfo({ namespace: located.namespace }));
      return {
        located,
        deployment: await optional(() =>
          apps.readNamespacedDeployment({ name: 'redis-operator', namespace: located.namespace }),
        ),
        leases: leases?.data.items ?? null,
        /** The API server's Date header of that read: the cluster's clock, which the Leases' renewTime is on. */
        serverDate: leases?.headers['date'],
      };
    },
  };
}

export type Kube = ReturnType<typeof connect>;
export interface RedisLike {
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  status?: RedisStatus;
}
export interface ClusterLike {
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  status?: RedisClusterStatus;
}
export interface BackupLike {
  metadata?: { name?: string };
  spec?: { redis?: string; redisCluster?: string };
  status?: RedisBackupStatus;
}

// Every Kubernetes API call the sidecar makes, one row per client-node method and resource: the
// audit the operator's RBAC is cut from (manifests/rbac.yaml, the chart's templates/rbac.yaml).
// Nothing at run time reads this table; the tests do, in both directions:
// - test/manifests/rbac.test.ts: every client-node API method called anywhere in
//   src/sidecar has a row, every row's method is still called, and the roles grant exactly the
//   verbs of the rows (a grant without a call, or a call without a grant, fails);
// - test/k8s/rbac.test.ts: on the real kube-apiserver, as the operator's ServiceAccount, every row
//   is allowed where it must be (the watched namespaces, the operator's own, cluster-scoped) and
//   every other verb on those resources, and every row outside its scope, is refused.
// Invariant: a new call here comes with its grant and the comment saying why, in both RBAC files.
// The sync hook calls nothing (Metacontroller calls it); the backup Jobs and the Redis pods run
// without a ServiceAccount token (automountServiceAccountToken: false), so only the sidecar is here.

/** The verbs RBAC knows for a resource (the sidecar uses a few). */
export const RESOURCE_VERBS = [
  'get',
  'list',
  'watch',
  'create',
  'update',
  'patch',
  'delete',
  'deletecollection',
] as const;
export type Verb = (typeof RESOURCE_VERBS)[number];

/**
 * Where a call lands:
 * - `watched`: a namespaced resource in the namespaces the sidecar watches (WATCH_NAMESPACES;
 *   empty: every namespace, and then its lists and watches span all namespaces at once);
 * - `operator`: the operator's own namespace (POD_NAMESPACE: its Leases);
 * - `cluster`: a cluster-scoped resource.
 */
export type ApiScope = 'watched' | 'operator' | 'cluster';

export interface ApiCall {
  /**
   * The client-node method the adapter calls (CoreV1Api, AppsV1Api, StorageV1Api, CoordinationV1Api, CustomObjectsApi).
   */
  method: string;
  /** The API group ('' for core). */
  group: string;
  /** The plural, with `/subresource` when the call is on one. */
  resource: string;
  /** The verbs the call needs: an informer's list is followed by a watch on the same resource. */
  verbs: readonly Verb[];
  scope: ApiScope;
  /** The file (from src/sidecar: the test checks the method is called there), the function, and why. */
  caller: string;
}

const REDIS_GROUP = 'redis.example.com';

export const SIDECAR_API_CALLS: readonly ApiCall[] = [
  // ---- the Redis and RedisCluster resources
  {
    method: 'listClusterCustomObject',
    group: REDIS_GROUP,
    resource: 'redises',
    verbs: ['list', 'watch'],
    scope: 'watched',
    caller:
      'adapters/kube/informers.ts redisInformer (and listRedis), WATCH_NAMESPACES empty: every Redis, then watched',
  },
  {
    method: 'listNamespacedCustomObject',
    group: REDIS_GROUP,
    resource: 'redises',
    verbs: ['list', 'watch'],
    scope: 'watched',
    caller: 'adapters/kube/informers.ts redisInformer (and listRedis), one list and watch per watched namespace',
  },
  {
    method: 'patchNamespacedCustomObject',
    group: REDIS_GROUP,
    resource: 'redises',
    verbs: ['patch'],
    scope: 'watched',
    caller:
      'adapters/kube/redis-object.ts patchRedisAnnotations: the switchover-status annotation (metadata only, uid precondition)',
  },
  {
    method: 'listClusterCustomObject',
    group: REDIS_GROUP,
    resource: 'redisclusters',
    verbs: ['list', 'watch'],
    scope: 'watched',
    caller: 'adapters/kube/informers.ts redisClusterInformer, WATCH_NAMESPACES empty',
  },
  {
    method: 'listNamespacedCustomObject',
    group: REDIS_GROUP,
    resource: 'redisclusters',
    verbs: ['list', 'watch'],
    scope: 'watched',
    caller: 'adapters/kube/informers.ts redisClusterInformer, per watched namespace',
  },
  {
    method: 'patchNamespacedCustomObject',
    group: REDIS_GROUP,
    resource: 'redisclusters',
    verbs: ['patch'],
    scope: 'watched',
    caller:
      'adapters/kube/redis-object.ts patchRedisAnnotations (client.ts patchClusterAnnotations): the reshard record annotation',
  },
  {
    method: 'patchNamespacedCustomObjectScale',
    group: REDIS_GROUP,
    resource: 'redisclusters/scale',
    verbs: ['patch'],
    scope: 'watched',
    caller: 'adapters/kube/client.ts scaleCluster: the memory autoscaler sets the shard count, as an HPA does',
  },
  // ---- pods
  {
    method: 'listPodForAllNamespaces',
    group: '',
    resource: 'pods',
    verbs: ['list', 'watch'],
    scope: 'watched',
    caller: 'adapters/kube/informers.ts podInformer / clusterPodInformer (label-selected), WATCH_NAMESPACES empty',
  },
  {
    method: 'listNamespacedPod',
    group: '',
    resource: 'pods',
    verbs: ['list', 'watch'],
    scope: 'watched',
    caller: 'adapters/kube/informers.ts podInformer / clusterPodInformer, per watched namespace',
  },
  {
    method: 'patchNamespacedPod',
    group: '',
    resource: 'pods',
    verbs: ['patch'],
    scope: 'watched',
    caller:
      'adapters/kube/pods.ts patchPodMetadata: the role label, link and replication annotations (uid precondition)',
  },
  {
    method: 'deleteNamespacedPod',
    group: '',
    resource: 'pods',
    verbs: ['delete'],
    scope: 'watched',
    caller:
      'adapters/kube/pods.ts deletePod: a rollout replaces one pod at a time (OnDelete StatefulSets, uid precondition)',
  },
  // ---- Secrets: by name only, never listed or watched
  {
    method: 'readNamespacedSecret',
    group: '',
    resource: 'secrets',
    verbs: ['get'],
    scope: 'watched',
    caller: 'adapters/kube/secrets.ts getSecret: the passwords, user and TLS Secrets a Redis names',
  },
  {
    method: 'createNamespacedSecret',
    group: '',
    resource: 'secrets',
    verbs: ['create'],
    scope: 'watched',
    caller:
      "adapters/kube/secrets.ts createAuthSecret: the generated Secrets (<name>-auth without spec.auth, the operator user's), owned by the Redis",
  },
  // ---- Events
  {
    method: 'createNamespacedEvent',
    group: '',
    resource: 'events',
    verbs: ['create'],
    scope: 'watched',
    caller: 'adapters/kube/events.ts emitEvent: one core/v1 Event per transition on the Redis or RedisCluster',
  },
  // ---- volume expansion
  {
    method: 'listNamespacedPersistentVolumeClaim',
    group: '',
    resource: 'persistentvolumeclaims',
    verbs: ['list'],
    scope: 'watched',
    caller: "adapters/kube/volumes.ts listRedisClaims: a Redis' claims, by its pod selector labels",
  },
  {
    method: 'patchNamespacedPersistentVolumeClaim',
    group: '',
    resource: 'persistentvolumeclaims',
    verbs: ['patch'],
    scope: 'watched',
    caller:
      'adapters/kube/volumes.ts patchClaim: the storage request, the resize-refused annotation (uid precondition)',
  },
  {
    method: 'listStorageClass',
    group: 'storage.k8s.io',
    resource: 'storageclasses',
    verbs: ['list'],
    scope: 'cluster',
    caller: "adapters/kube/volumes.ts listStorageClasses: whether a claim's class allows expansion",
  },
  // ---- StatefulSets: read and, for volume expansion only, deleted with their pods orphaned
  {
    method: 'listStatefulSetForAllNamespaces',
    group: 'apps',
    resource: 'statefulsets',
    verbs: ['list', 'watch'],
    scope: 'watched',
    caller: 'adapters/kube/informers.ts statefulSetInformer (update revisions drive rollouts), WATCH_NAMESPACES empty',
  },
  {
    method: 'listNamespacedStatefulSet',
    group: 'apps',
    resource: 'statefulsets',
    verbs: ['list', 'watch'],
    scope: 'watched',
    caller: 'adapters/kube/informers.ts statefulSetInformer, per watched namespace',
  },
  {
    method: 'readNamespacedStatefulSet',
    group: 'apps',
    resource: 'statefulsets',
    verbs: ['get'],
    scope: 'watched',
    caller: "adapters/kube/volumes.ts getStatefulSet: a set's claim templates before replacing it",
  },
  {
    method: 'deleteNamespacedStatefulSet',
    group: 'apps',
    resource: 'statefulsets',
    verbs: ['delete'],
    scope: 'watched',
    caller:
      'adapters/kube/volumes.ts deleteStatefulSetOrphan: propagationPolicy Orphan, uid precondition; Metacontroller recreates it',
  },
  // ---- leader election, in the operator's namespace
  {
    method: 'listNamespacedLease',
    group: 'coordination.k8s.io',
    resource: 'leases',
    verbs: ['list', 'watch'],
    scope: 'operator',
    caller:
      "adapters/kube/informers.ts leaseInformer: with SHARDS > 1, which instances are alive and when each shard's Lease changed",
  },
  {
    method: 'readNamespacedLease',
    group: 'coordination.k8s.io',
    resource: 'leases',
    verbs: ['get'],
    scope: 'operator',
    caller: 'adapters/kube/leases.ts KubeLeaseClient.get',
  },
  {
    method: 'createNamespacedLease',
    group: 'coordination.k8s.io',
    resource: 'leases',
    verbs: ['create'],
    scope: 'operator',
    caller: 'adapters/kube/leases.ts KubeLeaseClient.create: the first holder of a Lease',
  },
  {
    method: 'replaceNamespacedLease',
    group: 'coordination.k8s.io',
    resource: 'leases',
    verbs: ['update'],
    scope: 'operator',
    caller: 'adapters/kube/leases.ts KubeLeaseClient.replace: renew or take over, with the resourceVersion read',
  },
];

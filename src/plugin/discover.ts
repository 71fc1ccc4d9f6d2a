// Where the operator runs, for the plugin's checks that it is running, when --operator-namespace
// is not given. Its namespace is whatever it was installed in (an overlay's `namespace:`, `helm
// install -n`), so no fixed default can be right everywhere. In this order:
// 1. the namespace of the Service the Redis CompositeController calls: by definition the operator
//    that serves every Redis;
// 2. the namespaces holding a Deployment labelled as the operator (OPERATOR_SELECTOR, in both
//    installs): one namespace, that one; several, redis-operator if among them, else the first;
// 3. redis-operator, where manifests/ installs it.
// A source the user may not read (RBAC) or that is absent is null and skipped: a user with rights
// in a few namespaces only still gets the plugin's commands, with the check saying what it could see.
// Invariant: pure (the reads are kube.ts's); the answer says which source decided, for messages.

/** The operator's pods and Deployment carry these labels in manifests/ and in the chart. */
export const OPERATOR_SELECTOR = 'app.kubernetes.io/name=redis-operator,app.kubernetes.io/component=operator';
/** The Redis CompositeController (metacontroller/composite-controller.yaml, the chart's). */
export const COMPOSITE_CONTROLLER = 'redis-operator';
export const DEFAULT_OPERATOR_NAMESPACE = 'redis-operator';

export interface ControllerLike {
  spec?: { hooks?: { sync?: { webhook?: { service?: { namespace?: string } } } } };
}
export interface DeploymentLike {
  metadata?: { namespace?: string };
}

export interface Located {
  namespace: string;
  /** Which source decided, in words: "the flag", "the CompositeController's hook Service", ... */
  from: string;
}

export function fromFlag(flag: string | undefined): Located | undefined {
  return flag === undefined || flag === '' ? undefined : { namespace: flag, from: '--operator-namespace' };
}

export function fromController(controller: ControllerLike | null): Located | undefined {
  const namespace = controller?.spec?.hooks?.sync?.webhook?.service?.namespace;
  return namespace ? { namespace, from: `the Service CompositeController ${COMPOSITE_CONTROLLER} calls` } : undefined;
}

export function fromDeployments(deployments: readonly DeploymentLike[] | null): Located {
  const namespaces = [
    ...new Set((deployments ?? []).map((d) => d.metadata?.namespace).filter((n): n is string => !!n)),
  ].sort();
  if (namespaces.length === 1) return { namespace: namespaces[0]!, from: 'the operator Deployment found there' };
  if (namespaces.length > 1) {
    const namespace = namespaces.includes(DEFAULT_OPERATOR_NAMESPACE) ? DEFAULT_OPERATOR_NAMESPACE : namespaces[0]!;
    return {
      namespace,
      from: `one of several operator Deployments (${namespaces.join(', ')}); pass --operator-namespace`,
    };
  }
  return {
    namespace: DEFAULT_OPERATOR_NAMESPACE,
    from: 'the default: no operator Deployment or CompositeController readable',
  };
}

// What every child builder needs to know about the parent: its identity and validated spec.
import type { RedisSpec } from '../../api/schema.ts';

export interface HookContext {
  name: string;
  namespace: string;
  /** The parent's uid: Metacontroller's generateSelector selects children by `controller-uid`. */
  uid: string | undefined;
  /** Validated and defaulted (validateSpec's copy, never the request's object). */
  spec: RedisSpec;
  /** The operator's image: backup Jobs and restore init containers run it (HookOptions). */
  operatorImage: string;
  /** Where the operator runs (HookOptions): the NetworkPolicy's operator peer when the spec names none. */
  operatorNamespace: string;
}

/** What the hook service is configured with (src/server/config.ts reads it from the environment). */
export interface HookOptions {
  /** The image of backup Jobs and restore init containers: the operator's own. */
  operatorImage: string;
  /** Where the alerts' runbooks are (docs/monitoring.md as published); each alert's runbook_url is this plus #<alert>. */
  runbookBaseUrl: string;
  /**
   * The namespace the operator is installed in (the hook's own, from the downward API): every
   * default that names the operator's namespace follows it, so an install elsewhere than
   * `redis-operator` needs no value repeated in each Redis.
   */
  operatorNamespace: string;
}

/** The runbooks as this repository holds them; a deployment points RUNBOOK_BASE_URL at where it publishes them. */
export const DEFAULT_RUNBOOK_BASE_URL = 'docs/monitoring.md';

/** Where manifests/ installs the operator; the hook service uses it only when it is not told its own namespace. */
export const DEFAULT_OPERATOR_NAMESPACE = 'redis-operator';

export const DEFAULT_HOOK_OPTIONS: HookOptions = {
  operatorImage: 'redis-operator:0.1.0',
  runbookBaseUrl: DEFAULT_RUNBOOK_BASE_URL,
  operatorNamespace: DEFAULT_OPERATOR_NAMESPACE,
};

// What the hook service is configured with, for every kind: the operator's image, the runbooks'
// address, the operator's namespace; and the defaults a deployment that says nothing gets.
/** What the hook service is configured with (src/server/config.ts reads it from the environment). */
export interface HookOptions {
  /** The image of backup Jobs and restore init containers: the operator's own. */
  operatorImage: string;
  /**
   * Where the alerts' runbooks are (docs/monitoring.md as published); each alert's runbook_url is this plus #<alert>.
   */
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

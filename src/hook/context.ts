// What every child builder needs to know about the parent: its identity and validated spec.
import type { RedisSpec } from '../api/schema.ts';

export interface HookContext {
  name: string;
  namespace: string;
  /** The parent's uid: Metacontroller's generateSelector selects children by `controller-uid`. */
  uid: string | undefined;
  /** Validated and defaulted (validateSpec's copy, never the request's object). */
  spec: RedisSpec;
  /** The operator's image: backup Jobs and restore init containers run it (HookOptions). */
  operatorImage: string;
}

/** What the hook service is configured with (src/server/config.ts reads it from the environment). */
export interface HookOptions {
  /** The image of backup Jobs and restore init containers: the operator's own. */
  operatorImage: string;
  /** Where the alerts' runbooks are (docs/monitoring.md as published); each alert's runbook_url is this plus #<alert>. */
  runbookBaseUrl: string;
}

/** The runbooks as this repository holds them; a deployment points RUNBOOK_BASE_URL at where it publishes them. */
export const DEFAULT_RUNBOOK_BASE_URL = 'docs/monitoring.md';

export const DEFAULT_HOOK_OPTIONS: HookOptions = { operatorImage: 'redis-operator:0.1.0', runbookBaseUrl: DEFAULT_RUNBOOK_BASE_URL };

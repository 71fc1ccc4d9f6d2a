// What every child builder needs to know about the parent: its identity and validated spec.
import type { RedisSpec } from '../api/schema.ts';

export interface HookContext {
  name: string;
  namespace: string;
  /** The parent's uid: Metacontroller's generateSelector selects children by `controller-uid`. */
  uid: string | undefined;
  /** Validated and defaulted (validateSpec's copy, never the request's object). */
  spec: RedisSpec;
}

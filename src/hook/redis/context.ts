// What every child builder of a Redis needs to know about the parent: its identity and validated spec.
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

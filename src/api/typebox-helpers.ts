// TypeBox builders for schemas a Kubernetes API server accepts as structural: maps as
// additionalProperties and enums as `enum` (TypeBox's own Record and Union of Literals emit
// patternProperties and anyOf of consts, which a CRD refuses). Shared by the schema modules.
import { Type, type Static, type TSchema } from '@sinclair/typebox';

/** A map of string to T, emitted as additionalProperties (TypeBox's Record would emit patternProperties). */
export function StringMap<T extends TSchema>(value: T, description: string) {
  return Type.Unsafe<Record<string, Static<T>>>({ type: 'object', additionalProperties: value, description });
}

/** A string restricted to a fixed set, emitted as `enum` (TypeBox's Union of Literals is an anyOf of consts). */
export function StringEnum<const V extends readonly string[]>(
  values: V,
  options: { description: string; default?: V[number] },
) {
  return Type.Unsafe<V[number]>({ type: 'string', enum: [...values], ...options });
}

/** Kubernetes' resource.Quantity pattern (as in the apimachinery OpenAPI), written out for CRDs. */
export const QUANTITY_PATTERN =
  '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$';

/** An int-or-string quantity as Kubernetes declares it for resources. */
export const Quantity = Type.Unsafe<string | number>({
  'x-kubernetes-int-or-string': true,
  anyOf: [{ type: 'integer' }, { type: 'string', pattern: QUANTITY_PATTERN }],
  description: 'A Kubernetes quantity, for example 256Mi or 500m.',
});

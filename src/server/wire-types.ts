// The hook routes' fastify type provider: a route's request body (and 200 answer) has the Static
// type of its TypeBox schema, the schema the route's validator checks with (hook-scope.ts). So a
// handler gets the body it was handed already typed and passes it on to the hook with no cast and
// no second check. Invariant: types only; nothing here runs or checks anything.
import type { Static, TSchema } from '@sinclair/typebox';
import type { FastifyTypeProvider } from 'fastify';

/** Use as `app.withTypeProvider<WireTypes>()`. A schema that is not TypeBox's types as unknown. */
export interface WireTypes extends FastifyTypeProvider {
  readonly validator: this['schema'] extends TSchema ? Static<this['schema']> : unknown;
  readonly serializer: this['schema'] extends TSchema ? Static<this['schema']> : unknown;
}

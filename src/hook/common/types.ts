// The hook's types. Every type of the wire is Static of its schema in wire.ts, the one place the
// wire format is written; this module only gathers them (all of wire.ts's, as types) for the
// hook's modules and adds the parse result. Invariant: nothing here describes JSON that wire.ts
// does not.
export type * from './wire.ts';

export type ParseResult<T> = { ok: true; request: T } | { ok: false; message: string };

// Structural checks of hook request bodies: enough for sync/finalize/customize never to throw,
// nothing about the spec (an invalid spec is a 200 with InvalidSpec, not a parse failure).
// Invariant: an accepted body is returned as is (not copied); rejected bodies get one message
// naming the offending path.
import type { RedisObject } from '../api/schema.ts';
import type { CustomizeRequest, HookRequest, ObjectMap, ParseResult } from './types.ts';
import { isRecord } from './util.ts';

function parentProblem(parent: unknown): string | undefined {
  if (!isRecord(parent)) return 'parent must be an object (is this a Metacontroller hook request?)';
  const metadata = parent['metadata'];
  if (!isRecord(metadata)) return 'parent.metadata must be an object';
  for (const field of ['name', 'namespace'] as const) {
    const value = metadata[field];
    if (typeof value !== 'string' || value === '') return `parent.metadata.${field} must be a non-empty string`;
  }
  if (metadata['uid'] !== undefined && (typeof metadata['uid'] !== 'string' || metadata['uid'] === '')) return 'parent.metadata.uid must be a non-empty string (children are selected by controller-uid)';
  return undefined;
}

function objectMap(value: unknown, field: string): { ok: true; map: ObjectMap } | { ok: false; message: string } {
  if (value === undefined || value === null) return { ok: true, map: {} };
  if (!isRecord(value)) return { ok: false, message: `${field} must be an object (a map of maps)` };
  for (const [group, members] of Object.entries(value)) {
    if (!isRecord(members)) return { ok: false, message: `${field}[${JSON.stringify(group)}] must be an object` };
    for (const [key, object] of Object.entries(members)) {
      const path = `${field}[${JSON.stringify(group)}][${JSON.stringify(key)}]`;
      if (!isRecord(object)) return { ok: false, message: `${path} must be an object` };
      if (typeof object['apiVersion'] !== 'string' || typeof object['kind'] !== 'string') {
        return { ok: false, message: `${path} must have string apiVersion and kind` };
      }
      const metadata = object['metadata'];
      if (!isRecord(metadata) || typeof metadata['name'] !== 'string') return { ok: false, message: `${path}.metadata.name must be a string` };
      if (metadata['namespace'] !== undefined && typeof metadata['namespace'] !== 'string') {
        return { ok: false, message: `${path}.metadata.namespace must be a string` };
      }
    }
  }
  return { ok: true, map: value as ObjectMap };
}

export function parseHookRequest(body: unknown): ParseResult<HookRequest> {
  if (!isRecord(body)) return { ok: false, message: 'request body must be a JSON object' };
  const problem = parentProblem(body['parent']);
  if (problem !== undefined) return { ok: false, message: problem };
  const children = objectMap(body['children'], 'children');
  if (!children.ok) return children;
  const related = objectMap(body['related'], 'related');
  if (!related.ok) return related;
  const finalizing = body['finalizing'] ?? false;
  if (typeof finalizing !== 'boolean') return { ok: false, message: 'finalizing must be a boolean' };
  return {
    ok: true,
    request: {
      ...(body['controller'] !== undefined ? { controller: body['controller'] } : {}),
      parent: body['parent'] as RedisObject,
      children: children.map,
      related: related.map,
      finalizing,
    },
  };
}

export function parseCustomizeRequest(body: unknown): ParseResult<CustomizeRequest> {
  if (!isRecord(body)) return { ok: false, message: 'request body must be a JSON object' };
  const problem = parentProblem(body['parent']);
  if (problem !== undefined) return { ok: false, message: problem };
  return {
    ok: true,
    request: {
      ...(body['controller'] !== undefined ? { controller: body['controller'] } : {}),
      parent: body['parent'] as RedisObject,
    },
  };
}

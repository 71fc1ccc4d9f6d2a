// The wire, in and out: who the client is (its bearer token), the request body (size-limited,
// JSON only), the patch media types, DeleteOptions from the query and the body, and JSON responses
// (every error a metav1.Status). No semantics here: the store decides, this only translates.
// Invariant: a body or media type the real server would refuse is a KubeApiError with the real
// server's code (400, 413, 415) before anything reaches the store.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { errors, type KubeApiError } from './errors.ts';
import type { KubeObject, ResourceDef } from './resources.ts';
import type { DeleteOptions, PatchType } from './store.ts';

export const JSON_TYPE = 'application/json';
export const PATCH_TYPES: Record<string, PatchType> = {
  'application/json-patch+json': 'json',
  'application/merge-patch+json': 'merge',
  'application/strategic-merge-patch+json': 'strategic',
};

export function isTrue(v: string | null): boolean {
  return v === 'true' || v === '1';
}

export function clientOf(req: IncomingMessage): string {
  const auth = req.headers.authorization ?? '';
  const bearer = /^Bearer\s+(.+)$/i.exec(auth);
  if (bearer) return bearer[1]!.trim();
  const basic = /^Basic\s+(.+)$/i.exec(auth);
  if (basic) return Buffer.from(basic[1]!, 'base64').toString('utf8').split(':')[0] ?? 'anonymous';
  return 'anonymous';
}

export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw errors.tooLarge('the request body is too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function mediaType(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

/** POST/PUT bodies must be JSON (this stand-in speaks no YAML or protobuf). */
function requireJson(req: IncomingMessage): void {
  const type = mediaType(req);
  if (type !== '' && type !== JSON_TYPE && type !== '*/*') {
    throw errors.unsupportedMediaType(
      `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf`,
    );
  }
}

export function patchType(def: ResourceDef, req: IncomingMessage): PatchType {
  const type = mediaType(req);
  const accepted = def.custom
    ? 'application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml'
    : 'application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml';
  if (type === 'application/apply-patch+yaml' || type === 'application/apply-patch+cbor') {
    throw errors.unsupportedMediaType(
      `server-side apply is not implemented by the test stand-in (accepted here: ${accepted.replace(', application/apply-patch+yaml', '')})`,
    );
  }
  const found = PATCH_TYPES[type];
  if (!found || (found === 'strategic' && def.custom)) {
    throw errors.unsupportedMediaType(`the body of the request was in an unknown format - accepted media types include: ${accepted}`);
  }
  return found;
}

export function jsonBody(req: IncomingMessage, raw: Buffer): unknown {
  requireJson(req);
  return parseJson(raw);
}

export function parseJson(raw: Buffer): unknown {
  if (raw.length === 0) throw errors.badRequest('the request body is empty');
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch (e) {
    throw errors.badRequest(`couldn't get version/kind; json parse error: ${(e as Error).message}`);
  }
}

export function deleteOptions(q: URLSearchParams, raw: Buffer): DeleteOptions {
  let body: Record<string, unknown> = {};
  if (raw.length > 0) {
    try {
      body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
    } catch (e) {
      throw errors.badRequest(`couldn't get version/kind; json parse error: ${(e as Error).message}`);
    }
  }
  const policy = (q.get('propagationPolicy') ?? body['propagationPolicy']) as DeleteOptions['propagationPolicy'] | undefined;
  const orphan = q.get('orphanDependents') ?? body['orphanDependents'];
  const opts: DeleteOptions = {};
  if (policy) {
    if (!['Background', 'Foreground', 'Orphan'].includes(policy)) throw errors.badRequest(`propagationPolicy: Unsupported value: "${policy}"`);
    opts.propagationPolicy = policy;
  } else if (orphan === true || orphan === 'true') opts.propagationPolicy = 'Orphan';
  const pre = body['preconditions'] as DeleteOptions['preconditions'] | undefined;
  if (pre) opts.preconditions = pre;
  const dry = q.getAll('dryRun').concat((body['dryRun'] as string[] | undefined) ?? []);
  if (dry.includes('All')) opts.dryRun = true;
  return opts;
}

/** Built-in kinds' list items carry no kind/apiVersion on a real server; custom resources do. */
export function listItem(def: ResourceDef, obj: KubeObject): KubeObject {
  if (def.custom) return obj;
  const { apiVersion: _a, kind: _k, ...rest } = obj;
  return rest;
}

export function send(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'Content-Type': JSON_TYPE, 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

export function sendError(res: ServerResponse, err: KubeApiError): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  send(res, err.status.code, err.status);
}

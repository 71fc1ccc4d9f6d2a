// Kubernetes `Status` failures as the API server writes them, and the error the stand-in throws
// internally (the HTTP layer serialises it; in-process callers catch it).
// Invariant: every failure that leaves the stand-in is a real metav1.Status (kind Status,
// apiVersion v1, status Failure, reason, code), so clients parse it as they would in a cluster.

export interface StatusCause {
  reason: string;
  message: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, unknown>;
  status: 'Failure' | 'Success';
  message?: string;
  reason?: string;
  details?: StatusDetails;
  code: number;
}

export class KubeApiError extends Error {
  readonly status: Status;
  constructor(status: Status) {
    super(status.message ?? status.reason ?? `HTTP ${status.code}`);
    this.name = 'KubeApiError';
    this.status = status;
  }
  get code(): number {
    return this.status.code;
  }
  get reason(): string | undefined {
    return this.status.reason;
  }
}

export function failure(code: number, reason: string, message: string, details?: StatusDetails): KubeApiError {
  const status: Status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
  if (details) status.details = details;
  return new KubeApiError(status);
}

export function success(details?: StatusDetails): Status {
  const status: Status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 200 };
  if (details) status.details = details;
  return status;
}

/** What the server names a resource in messages: `pods`, `redises.redis.example.com`. */
export interface Qualified {
  group: string;
  resource: string;
  kind: string;
}

function qualifiedName(r: Qualified): string {
  return r.group ? `${r.resource}.${r.group}` : r.resource;
}

export const errors = {
  notFound: (r: Qualified, name: string) => failure(404, 'NotFound', `${qualifiedName(r)} "${name}" not found`, { name, group: r.group, kind: r.resource }),
  alreadyExists: (r: Qualified, name: string) =>
    failure(409, 'AlreadyExists', `${qualifiedName(r)} "${name}" already exists`, { name, group: r.group, kind: r.resource }),
  conflict: (r: Qualified, name: string, why = 'the object has been modified; please apply your changes to the latest version and try again') =>
    failure(409, 'Conflict', `Operation cannot be fulfilled on ${qualifiedName(r)} "${name}": ${why}`, { name, group: r.group, kind: r.resource }),
  invalid: (r: Qualified, name: string, causes: StatusCause[]) =>
    failure(422, 'Invalid', `${r.kind} "${name}" is invalid: ${causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message)).join(', ')}`, {
      name,
      group: r.group,
      kind: r.kind,
      causes,
    }),
  badRequest: (message: string) => failure(400, 'BadRequest', message),
  unsupportedMediaType: (message: string) => failure(415, 'UnsupportedMediaType', message),
  methodNotAllowed: (message = 'the server does not allow this method on the requested resource') => failure(405, 'MethodNotAllowed', message),
  gone: (message: string) => failure(410, 'Expired', message),
  internal: (message: string) =>
    failure(500, 'InternalError', `Internal error occurred: ${message}`, { causes: [{ reason: 'UnexpectedServerResponse', message }] }),
  notFoundPath: () => failure(404, 'NotFound', 'the server could not find the requested resource'),
  tooLarge: (message: string) => failure(413, 'RequestEntityTooLarge', message),
};

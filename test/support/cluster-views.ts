// Pieces of the system tests' view of a cluster (test/k8s/system-cluster.ts): polling a check with a self-explaining
// timeout, core Events as the flat records the scenarios filter, a Redis's password and a client
// of one of its nodes.
import type { ConnectionOptions } from 'node:tls';
import { Redis } from 'ioredis';
import { authSecretRef } from '../../src/api/auth.ts';
import { DEFAULT_PASSWORD_KEY, REDIS_PORT } from '../../src/api/labels.ts';
import { asRecord as rec } from './records.ts';
import { until, type Polled } from './until.ts';

type Json = Record<string, unknown>;

export interface EventRecord {
  namespace: string;
  object: string;
  type: string;
  reason: string;
  message: string;
  source: string;
  count: number;
  resourceVersion: number;
}

export interface EventFilter {
  namespace?: string;
  name?: string;
  reason?: string;
}

/** core/v1 Events as records, oldest first, optionally only those about `name` / with `reason`. */
export function eventRecords(
  events: ReadonlyArray<{ metadata: { namespace?: string; resourceVersion?: string } } & Json>,
  filter: EventFilter = {},
): EventRecord[] {
  return events
    .map((e) => {
      const involved = rec(e['involvedObject']);
      return {
        namespace: e.metadata.namespace ?? '',
        object: `${String(involved['kind'] ?? '')}/${String(involved['name'] ?? '')}`,
        name: String(involved['name'] ?? ''),
        type: String(e['type'] ?? ''),
        reason: String(e['reason'] ?? ''),
        message: String(e['message'] ?? ''),
        source: String(e['reportingInstance'] ?? rec(e['source'])['component'] ?? ''),
        count: typeof e['count'] === 'number' ? e['count'] : 1,
        resourceVersion: Number(e.metadata.resourceVersion),
      };
    })
    .filter(
      (e) =>
        (filter.name === undefined || e.name === filter.name) &&
        (filter.reason === undefined || e.reason === filter.reason),
    )
    .sort((a, b) => a.resourceVersion - b.resourceVersion)
    .map(({ name: _n, ...e }) => e);
}

/**
 * `until` every 25 ms, with `dump()` in the timeout message; unlike a bare `until`, an error the
 * check throws is retried (a real cluster answers with transient errors) and named in the
 * timeout message if it was the last answer.
 */
export function pollUntil<T>(
  check: () => Polled<T> | Promise<Polled<T>>,
  timeoutMs: number,
  description: string,
  dump: () => string,
): Promise<T> {
  let lastError: unknown;
  const tolerant = async (): Promise<Polled<T>> => {
    try {
      const v = await check();
      lastError = undefined;
      return v;
    } catch (err) {
      lastError = err;
      return undefined;
    }
  };
  const why = () => (lastError instanceof Error ? `(last check threw: ${lastError.message})\n` : '');
  return until(description, tolerant, timeoutMs, { everyMs: 25, dump: () => `${why()}\n${dump()}` });
}

/**
 * The password Redis `name` runs with, from its stored object and a Secret lookup, by the
 * operator's own rule (src/api/auth.ts); undefined while the Secret or its key is missing.
 */
export function redisPassword(
  name: string,
  redis: unknown,
  secret: (secretName: string) => unknown,
): string | undefined {
  const auth = rec(rec(rec(redis)['spec'])['auth']);
  // The stored object is not validated: default the key as validation would.
  const given =
    typeof auth['secretName'] === 'string'
      ? { secretName: auth['secretName'], key: typeof auth['key'] === 'string' ? auth['key'] : DEFAULT_PASSWORD_KEY }
      : undefined;
  const ref = authSecretRef(name, given ? { auth: given } : {});
  const data = rec(rec(secret(ref.secretName))['data']);
  const value = data[ref.key];
  return typeof value === 'string' ? Buffer.from(value, 'base64').toString('utf8') : undefined;
}

/**
 * With spec.tls: how a client trusts Redis `name` (its TLS Secret's CA; names unchecked, since
 * checks dial pod IPs); undefined without TLS or while the Secret is missing.
 */
export function redisTls(
  name: string,
  redis: unknown,
  secret: (secretName: string) => unknown,
): ConnectionOptions | undefined {
  const tls = rec(rec(redis)['spec'])['tls'];
  if (tls === undefined || tls === null) return undefined;
  const secretName = typeof rec(tls)['secretName'] === 'string' ? String(rec(tls)['secretName']) : `${name}-tls`;
  const ca = rec(rec(secret(secretName))['data'])['ca.crt'];
  return typeof ca === 'string'
    ? { ca: Buffer.from(ca, 'base64').toString('utf8'), checkServerIdentity: () => undefined }
    : undefined;
}

/** A client of one Redis node that fails fast (no retries, no offline queue): what a check wants. */
export function nodeClient(ip: string, password: string | undefined, tls?: ConnectionOptions): Redis {
  return new Redis({
    host: ip,
    port: REDIS_PORT,
    ...(password !== undefined ? { password } : {}),
    ...(tls ? { tls } : {}),
    lazyConnect: true,
    connectTimeout: 500,
    commandTimeout: 2000,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
    enableReadyCheck: false,
  });
}

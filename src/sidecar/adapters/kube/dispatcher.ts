// Connection reuse for client-node's API calls. client-node 2.0 builds a new undici Agent, and so
// a new TCP connection and TLS handshake, for every request it sends with TLS options (any real
// cluster: a CA at least); the Lease renewals alone are a few per second, the handshakes were most
// of an idle sidecar's CPU, and each abandoned Agent kept its socket until its keep-alive timeout.
// This keeps one dispatcher per distinct TLS material, so a rotated CA or client certificate still
// gets a fresh one, and bounds its connections: a start-up storm (hundreds of Redis reading their
// Secrets and labelling their pods at once) queues in the client instead of opening a connection
// and a TLS handshake per request. Unbounded, a shared pool in that storm grew to GBs and the
// kernel killed the process (bench:scale, 200 Redis).
// Invariant: if client-node no longer has the methods (a later release), nothing is changed.
import { createHash } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { Agent } from 'undici';

type CreateDispatcher = (cluster: unknown, agentOptions: Record<string, unknown>) => unknown;

/** How many distinct TLS materials are remembered (a rotation adds one; older ones are dropped). */
const MAX_DISPATCHERS = 4;

/** Connections to the API server per dispatcher; further requests wait (their timeouts still run). */
export const MAX_API_CONNECTIONS = 16;

type DispatcherOptions = { type: string; connect?: Record<string, unknown> };

function materialKey(cluster: unknown, options: Record<string, unknown>): string {
  const h = createHash('sha256');
  h.update(JSON.stringify({ server: (cluster as { server?: string } | null)?.server ?? '' }));
  for (const k of Object.keys(options).sort()) {
    const v = options[k];
    if (v === undefined) continue;
    h.update(`\0${k}=`);
    if (Buffer.isBuffer(v) || typeof v === 'string') h.update(v);
    else h.update(JSON.stringify(v) ?? '');
  }
  return h.digest('hex');
}

const PATCHED = Symbol('redis-operator.reuseDispatchers');

export function reuseDispatchers(kc: KubeConfig): KubeConfig {
  const target = kc as unknown as {
    createDispatcher?: CreateDispatcher;
    createDispatcherOptions?: (cluster: unknown, agentOptions: Record<string, unknown>) => DispatcherOptions;
    [PATCHED]?: true;
  };
  const original = target.createDispatcher;
  const optionsOf = target.createDispatcherOptions;
  if (typeof original !== 'function' || typeof optionsOf !== 'function' || target[PATCHED]) return kc;
  target[PATCHED] = true;
  const cache = new Map<string, unknown>();
  target.createDispatcher = (cluster, agentOptions) => {
    const key = materialKey(cluster, agentOptions);
    if (cache.has(key)) return cache.get(key);
    // client-node's own choice (no TLS material, a proxy) unless it is the plain Agent it would build.
    const o = optionsOf.call(kc, cluster, agentOptions);
    const dispatcher =
      o.type === 'agent' && o.connect
        ? new Agent({ connect: o.connect, connections: MAX_API_CONNECTIONS })
        : original.call(kc, cluster, agentOptions);
    cache.set(key, dispatcher);
    if (cache.size > MAX_DISPATCHERS) cache.delete(cache.keys().next().value!);
    return dispatcher;
  };
  return kc;
}

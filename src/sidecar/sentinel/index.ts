// The Sentinel endpoint as the sidecar runs it: the feed from this instance's informers, then the TCP server, which
// listens only once the feed has its first view with the passwords read (an instance that answered "no such master"
// while starting would send clients away from a Redis that is fine).
// Invariants: off unless configured (SENTINEL_PORT); the instance's Sentinel id is derived from its pod name, so it
// is stable for the pod's life and differs between instances.
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { SentinelFeed, type SentinelSources } from './feed.ts';
import { startSentinelServer, type SentinelServer } from './server.ts';

export interface SentinelEndpoint {
  /** Informer events: the feed rebuilds its view. */
  changed(): void;
  /** True once listening. */
  readonly listening: boolean;
  /** The port it listens on, once listening (the configured one; tests ask for any free one). */
  readonly port: number | undefined;
  close(): Promise<void>;
}

export interface SentinelEndpointOptions {
  host: string;
  port: number;
  podName: string;
  sources: SentinelSources;
  readSecretValue(namespace: string, name: string, key: string): Promise<string | null>;
  secretRefreshMs: number;
  logger: Logger;
}

export function sentinelId(podName: string): string {
  return createHash('sha1').update(`redis-operator-sentinel:${podName}`).digest('hex');
}

/** Builds the endpoint; `start()` (once the informers have listed) reads the passwords, then listens. */
export function sentinelEndpoint(o: SentinelEndpointOptions): SentinelEndpoint & { start(): Promise<void> } {
  let server: SentinelServer | null = null;
  let closed = false;
  const feed = new SentinelFeed({
    sources: o.sources,
    readSecretValue: o.readSecretValue,
    server: { update: (view) => server?.update(view) },
    logger: o.logger,
    secretRefreshMs: o.secretRefreshMs,
  });
  return {
    changed: () => feed.changed(),
    get listening() {
      return server !== null;
    },
    get port() {
      return server?.port;
    },
    async start() {
      await feed.start();
      if (closed) return;
      const s = await startSentinelServer({
        host: o.host,
        port: o.port,
        myid: sentinelId(o.podName),
        logger: o.logger,
      });
      s.update(feed.view);
      server = s;
    },
    async close() {
      closed = true;
      feed.stop();
      await server?.close();
    },
  };
}

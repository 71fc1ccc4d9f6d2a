// A watch over HTTP: a 200 chunked stream of one JSON event per line, BOOKMARKs when asked for,
// ended by timeoutSeconds, by the client, or by the server's closeWatches().
// Invariants: a bad selector is a plain 400 before the stream starts; a too-old resourceVersion is
// an ERROR event carrying a 410 Expired Status inside a 200 stream, as kube-apiserver does; an
// open stream is in `watches` until it ends, so closing the server ends it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { errors, KubeApiError, type Status } from './errors.ts';
import { isTrue, JSON_TYPE } from './http-io.ts';
import { apiVersionOf, type ResourceDef } from './resources.ts';
import type { ObjectStore, WatchEvent, WatchHandle } from './store.ts';

/** An open watch stream, as the server tracks it to end it. */
export interface OpenWatch {
  res: ServerResponse;
  stop: () => void;
}

/** What a watch stream needs from the server that serves it. */
export interface WatchHost {
  readonly store: ObjectStore;
  readonly watches: Set<OpenWatch>;
  readonly bookmarkIntervalMs: number | undefined;
}

export function serveWatch(
  host: WatchHost,
  def: ResourceDef,
  namespace: string | undefined,
  q: URLSearchParams,
  req: IncomingMessage,
  res: ServerResponse,
): void {
  const write = (ev: WatchEvent) => {
    if (!res.writableEnded) res.write(`${JSON.stringify({ type: ev.type, object: ev.object })}\n`);
  };
  const selectors = {
    ...(namespace !== undefined ? { namespace } : {}),
    labelSelector: q.get('labelSelector') ?? '',
    fieldSelector: q.get('fieldSelector') ?? '',
  };
  // Selector errors are a plain 400 before the stream starts, as on a real server.
  host.store.listPage(def, { ...selectors, limit: 1 });
  res.writeHead(200, { 'Content-Type': JSON_TYPE, 'Transfer-Encoding': 'chunked', 'Cache-Control': 'no-cache, private' });
  res.flushHeaders();
  let handle: WatchHandle | undefined;
  const timers: NodeJS.Timeout[] = [];
  const entry = {
    res,
    stop: () => {
      handle?.stop();
      for (const t of timers) clearTimeout(t);
      host.watches.delete(entry);
    },
  };
  try {
    handle = host.store.watch(def, { ...selectors, resourceVersion: q.get('resourceVersion') ?? '' }, write);
  } catch (e) {
    const status: Status = e instanceof KubeApiError ? e.status : errors.internal(String(e)).status;
    write({ type: 'ERROR', object: status });
    res.end();
    return;
  }
  host.watches.add(entry);
  res.on('close', entry.stop);
  req.on('close', entry.stop);
  if (isTrue(q.get('allowWatchBookmarks'))) {
    const interval = setInterval(() => {
      write({ type: 'BOOKMARK', object: { kind: def.kind, apiVersion: apiVersionOf(def), metadata: { resourceVersion: host.store.resourceVersion } } });
    }, host.bookmarkIntervalMs ?? 1000);
    timers.push(interval);
  }
  const timeout = Number(q.get('timeoutSeconds') ?? '0');
  if (timeout > 0) {
    timers.push(
      setTimeout(() => {
        entry.stop();
        res.end();
      }, timeout * 1000),
    );
  }
}

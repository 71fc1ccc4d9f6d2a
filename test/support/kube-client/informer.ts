// One informer: list + watch of every object of one resource over HTTP into a ResourceCache, as
// client-go's Reflector does. The initial list is paginated; then a watch from the list's
// resourceVersion (with bookmarks) keeps the cache current. client-node's Watch does the
// streaming; the reconnect policy is ours, because client-node's ListWatch backs off up to ~30 s
// before re-watching after a quiet close and a test cluster cannot wait that long.
// Reconnect policy:
// - the watch ended cleanly (server timeout, closed stream, client-node's 30 s idle timeout):
//   re-watch at once from the last resourceVersion seen (events or bookmarks);
// - 410 Gone / Expired (an ERROR event or the HTTP status): relist at once, then watch again;
//   the relist emits exactly the differences, so listeners see deletions they missed;
// - any other failure: retry after a backoff (initial doubling up to max), reset on success.
// Invariants: start() resolves only once the initial list is in the cache and rejects if that
// list fails; after stop() no event is delivered and nothing reconnects (a watch still
// connecting is aborted as soon as it connects).
import { Watch } from '@kubernetes/client-node';
import type { StoredObject } from './objects.ts';
import { ResourceCache } from './cache.ts';
import { resourcePath, type Transport } from './http.ts';
import { apiVersionOfRef, type ResourceRef } from './types.ts';

export interface InformerOptions {
  /** Retry delays after a failed list or watch (default 50 ms doubling up to 1000 ms). */
  backoff?: { initialMs?: number; maxMs?: number };
  /** List page size (default 500, client-go's). */
  pageSize?: number;
  /** Told about list/watch failures (they are retried regardless). */
  onError?: (error: unknown) => void;
}

type Outcome = 'closed' | 'expired' | 'error';

interface ListPage {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: StoredObject[];
}

export class Informer {
  readonly cache = new ResourceCache();
  /** Lists done (the initial one included) and watches opened: tests assert on reconnects. */
  readonly counts = { lists: 0, watches: 0 };
  private readonly transport: Transport;
  private readonly watcher: Watch;
  private readonly res: ResourceRef;
  private readonly options: InformerOptions;
  private rv = '';
  private stopped = false;
  private abort: AbortController | undefined;
  private wake: (() => void) | undefined;
  private loopDone: Promise<void> = Promise.resolve();

  constructor(transport: Transport, res: ResourceRef, options: InformerOptions = {}) {
    this.transport = transport;
    this.watcher = new Watch(transport.kc);
    this.res = res;
    this.options = options;
  }

  async start(): Promise<void> {
    await this.relist();
    this.loopDone = this.loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort?.abort();
    this.wake?.();
    this.cache.clearListeners();
    // A watch still connecting cannot be aborted until its headers arrive (client-node hands out
    // its AbortController only then); it aborts itself on arrival, so do not wait for it forever.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.loopDone, new Promise<void>((resolve) => (timer = setTimeout(resolve, 2000)))]);
    clearTimeout(timer);
  }

  private normalize(obj: StoredObject): StoredObject {
    // Lists of built-in kinds carry no kind/apiVersion per item; the cache always does.
    obj.apiVersion ??= apiVersionOfRef(this.res);
    obj.kind ??= this.res.kind;
    return obj;
  }

  private async relist(): Promise<void> {
    const items: StoredObject[] = [];
    let cont: string | undefined;
    let rv = '';
    do {
      const page = (await this.transport.request({
        method: 'GET',
        path: resourcePath(this.res),
        query: { limit: this.options.pageSize ?? 500, continue: cont },
      })) as ListPage;
      for (const item of page.items ?? []) items.push(this.normalize(item));
      cont = page.metadata?.continue || undefined;
      rv = page.metadata?.resourceVersion ?? '';
    } while (cont !== undefined && !this.stopped);
    if (this.stopped) return;
    this.counts.lists += 1;
    this.cache.replace(items);
    this.rv = rv;
  }

  private async loop(): Promise<void> {
    const initial = this.options.backoff?.initialMs ?? 50;
    const max = this.options.backoff?.maxMs ?? 1000;
    let delay = 0;
    const failed = async (error: unknown) => {
      this.options.onError?.(error);
      delay = Math.min(max, delay === 0 ? initial : delay * 2);
      await this.sleep(delay);
    };
    while (!this.stopped) {
      if (this.rv === '') {
        try {
          await this.relist();
        } catch (error) {
          await failed(error);
          continue;
        }
      }
      const outcome = await this.watchOnce();
      if (this.stopped) return;
      if (outcome === 'expired') this.rv = '';
      if (outcome === 'error') await failed(new Error(`watch of ${this.res.resource} failed`));
      else delay = 0;
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }

  /** One watch from this.rv; resolves with how it ended. */
  private watchOnce(): Promise<Outcome> {
    return new Promise<Outcome>((resolve) => {
      let expired = false;
      let ended = false;
      let failure: unknown;
      const onEvent = (type: string, obj: unknown) => {
        if (this.stopped) return;
        const o = obj as StoredObject;
        switch (type) {
          case 'ADDED':
          case 'MODIFIED':
            this.cache.upsert(this.normalize(o));
            break;
          case 'DELETED':
            this.cache.remove(this.normalize(o));
            break;
          case 'BOOKMARK':
            break;
          case 'ERROR':
            if ((obj as { code?: number }).code === 410) expired = true;
            else failure = obj;
            return;
          default:
            return;
        }
        const rv = o.metadata?.resourceVersion;
        if (rv) this.rv = rv;
      };
      const done = (err: unknown) => {
        if (ended) return;
        ended = true;
        this.abort = undefined;
        const code =
          (err as { statusCode?: number; code?: number } | null)?.statusCode ?? (err as { code?: number } | null)?.code;
        if (expired || code === 410) resolve('expired');
        else if (this.stopped || err === null || err === undefined || (err as Error).name === 'TimeoutError') {
          if (failure !== undefined) {
            this.options.onError?.(failure);
            resolve('error');
          } else resolve('closed');
        } else {
          this.options.onError?.(err);
          resolve('error');
        }
      };
      this.counts.watches += 1;
      // client-go's watch timeout: 5 to 10 minutes, so that not every watch ends at once.
      const timeoutSeconds = 300 + Math.floor(Math.random() * 300);
      this.watcher
        .watch(
          resourcePath(this.res),
          { resourceVersion: this.rv, allowWatchBookmarks: true, timeoutSeconds },
          onEvent,
          done,
        )
        .then((controller) => {
          if (ended || this.stopped) controller.abort();
          else this.abort = controller;
        }, done);
    });
  }
}

// List + watch into a local cache (client-go's Reflector + Store in miniature), for one resource
// path and optional field/label selectors.
// Invariants:
// - The cache holds what the API server last said; every change reaches `onEvent` exactly once,
//   in order, after the cache already reflects it (a relist that finds an object gone reports it
//   DELETED with its last known state).
// - A watch resumes from the last resourceVersion seen (bookmarks included), also after an error
//   (after a short pause); only 410 Gone, or no version yet, relists. Nothing throws out of the
//   loop; stop() ends it.
import type { Logger } from 'pino';
import { isStatus, type Json, type KubeClient, type WatchEvent } from './api-client.ts';

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface Meta {
  name: string;
  namespace?: string;
  uid: string;
  resourceVersion?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  generation?: number;
}

export type KubeObject = Json & { metadata: Meta };

export interface ReflectorOptions {
  client: KubeClient;
  /** A collection path, e.g. /api/v1/pods. */
  path: string;
  fieldSelector?: string;
  labelSelector?: string;
  onEvent: (type: EventType, object: KubeObject) => void;
  logger: Logger;
  /** Pause before a relist after an error. */
  retryMs?: number;
}

export const objectKey = (o: { metadata: { namespace?: string; name: string } }): string =>
  o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class Reflector {
  readonly #o: ReflectorOptions;
  readonly #cache = new Map<string, KubeObject>();
  #rv = '';
  #stopped = false;
  /** The server ended the watch with an ERROR event (usually 410 Gone): relist. */
  #expired = false;
  #current: { abort(): void } | undefined;
  #loop: Promise<void> | undefined;
  #markSynced: (() => void) | undefined;
  /** Resolves after the first successful list. */
  readonly synced: Promise<void>;

  constructor(options: ReflectorOptions) {
    this.#o = options;
    this.synced = new Promise((r) => {
      this.#markSynced = r;
    });
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /** Resolves after the first successful list; rejects after timeoutMs (e.g. no permission to list). */
  async waitSynced(timeoutMs = 30_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`could not list ${this.#o.path} within ${timeoutMs} ms (see the warnings logged)`)), timeoutMs);
    });
    try {
      await Promise.race([this.synced, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#current?.abort();
    await this.#loop;
  }

  get(key: string): KubeObject | undefined {
    return this.#cache.get(key);
  }

  list(): KubeObject[] {
    return [...this.#cache.values()];
  }

  #selectors(): Record<string, string | undefined> {
    return { fieldSelector: this.#o.fieldSelector, labelSelector: this.#o.labelSelector };
  }

  async #run(): Promise<void> {
    const retry = this.#o.retryMs ?? 1000;
    let needList = true;
    while (!this.#stopped) {
      try {
        if (needList) {
          await this.#relist();
          needList = false;
        }
        const w = this.#o.client.watch(
          this.#o.path,
          { ...this.#selectors(), resourceVersion: this.#rv, allowWatchBookmarks: true, timeoutSeconds: 240 },
          (ev) => this.#apply(ev),
        );
        this.#current = w;
        await w.done;
        if (this.#expired) {
          this.#expired = false;
          needList = true;
        }
      } catch (err) {
        if (this.#stopped) return;
        // As client-go's reflector: a broken watch resumes from the last resourceVersion seen, so
        // no event in between is lost (a relist would fold them into one state); only an expired
        // version (410) or none at all needs a list.
        needList = isStatus(err, 410) || this.#rv === '';
        if (!isStatus(err, 410)) this.#o.logger.warn({ err: (err as Error).message, path: this.#o.path }, 'watch failed; relisting');
        await sleep(isStatus(err, 410) ? 0 : retry);
      } finally {
        this.#current = undefined;
      }
    }
  }

  async #relist(): Promise<void> {
    const list = await this.#o.client.request<{ metadata?: { resourceVersion?: string }; items?: KubeObject[] }>('GET', this.#o.path, {
      query: this.#selectors(),
    });
    if (this.#stopped) return;
    const seen = new Set<string>();
    for (const item of list.items ?? []) {
      const key = objectKey(item);
      seen.add(key);
      const old = this.#cache.get(key);
      this.#cache.set(key, item);
      if (!old) this.#emit('ADDED', item);
      else if (old.metadata.resourceVersion !== item.metadata.resourceVersion) this.#emit('MODIFIED', item);
    }
    for (const [key, old] of this.#cache) {
      if (seen.has(key)) continue;
      this.#cache.delete(key);
      this.#emit('DELETED', old);
    }
    this.#rv = list.metadata?.resourceVersion ?? '';
    this.#markSynced?.();
  }

  #apply(ev: WatchEvent): void {
    if (this.#stopped) return;
    const o = ev.object as KubeObject;
    if (ev.type === 'ERROR') {
      // Usually 410 Gone: our resourceVersion is too old. Called from a stream callback, so no throw.
      this.#o.logger.debug({ path: this.#o.path, status: ev.object }, 'watch expired; relisting');
      this.#expired = true;
      this.#current?.abort();
      return;
    }
    if (o.metadata?.resourceVersion) this.#rv = o.metadata.resourceVersion;
    if (ev.type === 'BOOKMARK') return;
    const key = objectKey(o);
    if (ev.type === 'DELETED') {
      this.#cache.delete(key);
      this.#emit('DELETED', o);
      return;
    }
    const type = this.#cache.has(key) ? 'MODIFIED' : 'ADDED';
    this.#cache.set(key, o);
    this.#emit(type, o);
  }

  /** A handler's fault must not break the stream (it runs inside a socket callback). */
  #emit(type: EventType, o: KubeObject): void {
    try {
      this.#o.onEvent(type, o);
    } catch (err) {
      this.#o.logger.error({ err, path: this.#o.path }, 'event handler failed');
    }
  }
}

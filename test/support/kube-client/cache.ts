// The object cache of one informed resource (what client-go's indexer + shared informer handlers
// are): objects by namespace/name, the selector filtering of list(), and the listeners.
// Invariants: objects go in and out as copies; the map is updated before listeners run; a
// listener that throws never breaks the cache or the other listeners; `replace` (a relist)
// emits exactly the differences: DELETED for what is gone, ADDED for what is new, MODIFIED for
// what changed resourceVersion.
import type { StoredObject } from './objects.ts';
import { selectorMatcher } from './selectors.ts';
import type { CacheEvent, SelectorOptions, WatchHandle } from './types.ts';

type Listener = (event: CacheEvent) => void;

function keyOf(obj: StoredObject): string {
  return `${obj.metadata.namespace ?? ''}/${obj.metadata.name}`;
}

export class ResourceCache {
  private readonly objects = new Map<string, StoredObject>();
  private readonly listeners = new Set<Listener>();

  get size(): number {
    return this.objects.size;
  }

  get(namespace: string, name: string): StoredObject | undefined {
    const obj = this.objects.get(`${namespace}/${name}`);
    return obj ? structuredClone(obj) : undefined;
  }

  list(options: SelectorOptions = {}): StoredObject[] {
    const matches = selectorMatcher(options.labelSelector, options.fieldSelector);
    const ns = options.namespace ?? '';
    const out: StoredObject[] = [];
    const keys = [...this.objects.keys()].sort();
    for (const key of keys) {
      const obj = this.objects.get(key)!;
      if (ns !== '' && (obj.metadata.namespace ?? '') !== ns) continue;
      if (!matches(obj)) continue;
      out.push(structuredClone(obj));
    }
    return out;
  }

  /** ADDED or MODIFIED, whichever it is for the cache. */
  upsert(obj: StoredObject): void {
    const key = keyOf(obj);
    const type = this.objects.has(key) ? 'MODIFIED' : 'ADDED';
    this.objects.set(key, structuredClone(obj));
    this.emit(type, obj);
  }

  remove(obj: StoredObject): void {
    // The DELETED event carries the final state the watch sent, as a watch does.
    this.objects.delete(keyOf(obj));
    this.emit('DELETED', obj);
  }

  /** A relist: the cache becomes exactly `items`. */
  replace(items: StoredObject[]): void {
    const fresh = new Map(items.map((o) => [keyOf(o), o]));
    for (const [key, old] of [...this.objects]) {
      if (!fresh.has(key)) {
        this.objects.delete(key);
        this.emit('DELETED', old);
      }
    }
    for (const [key, obj] of fresh) {
      const old = this.objects.get(key);
      if (
        old !== undefined &&
        old.metadata.resourceVersion === obj.metadata.resourceVersion &&
        old.metadata.uid === obj.metadata.uid
      )
        continue;
      if (old !== undefined && old.metadata.uid !== obj.metadata.uid) {
        // Deleted and re-created while the watch was down: tell listeners both halves.
        this.objects.delete(key);
        this.emit('DELETED', old);
      }
      this.upsert(obj);
    }
  }

  /** Replays the cached objects as ADDED (synchronously), then delivers every change. */
  addListener(listener: Listener): WatchHandle {
    for (const obj of this.list()) this.deliver(listener, { type: 'ADDED', object: obj });
    this.listeners.add(listener);
    return { stop: () => this.listeners.delete(listener) };
  }

  clearListeners(): void {
    this.listeners.clear();
  }

  private emit(type: CacheEvent['type'], obj: StoredObject): void {
    for (const listener of [...this.listeners]) this.deliver(listener, { type, object: structuredClone(obj) });
  }

  private deliver(listener: Listener, event: CacheEvent): void {
    try {
      listener(event);
    } catch {
      // A listener's bug must not break the informer (client-go's handlers are isolated too).
    }
  }
}

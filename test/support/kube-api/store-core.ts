// The etcd half of the store: objects keyed by resource and namespace/name, the one global
// resourceVersion counter, the uid index, and the event history that reads, lists and watches are
// served from. The layers above (store-deletion.ts, store.ts) decide what a write means; they
// change state here only through commit (and, for a removal, the same counter and record).
// Invariants:
// - Objects never leak by reference: everything going in or out is cloned.
// - Every committed change gets a fresh resourceVersion and exactly one history entry, which is
//   dispatched to the watchers of its resource as it is recorded.
// - History is kept up to historyLimit entries; a watch or continue token from before the kept
//   history answers 410 Expired.
import { errors } from './errors.ts';
import { DEFAULT_RESOURCES, getPath, keyOf, ResourceTable, type ResourceDef, type StoredObject } from './resources.ts';
import {
  matchesFields,
  matchesLabels,
  parseFieldSelector,
  parseLabelSelector,
  SelectorError,
  type FieldRequirement,
  type LabelRequirement,
} from './selectors.ts';
import { clone, nsName } from './store-codec.ts';
import type {
  HistoryEntry,
  ListOptions,
  ListResult,
  ResourceId,
  SelectorOptions,
  StoreOptions,
  WatchEvent,
  WatchEventType,
  WatchHandle,
  WatchOptions,
  Watcher,
} from './store-types.ts';

export abstract class StoreCore {
  readonly resources: ResourceTable;
  protected readonly objects = new Map<string, Map<string, StoredObject>>();
  protected readonly uids = new Map<string, { key: string; id: string }>();
  private readonly history: HistoryEntry[] = [];
  private readonly historyLimit: number;
  private compactedRv = 0;
  protected rv = 1;
  private readonly watchers = new Set<Watcher>();

  constructor(options: StoreOptions = {}) {
    this.resources = new ResourceTable(options.resources ?? DEFAULT_RESOURCES);
    this.historyLimit = options.historyLimit ?? 10_000;
    for (const def of this.resources.all) this.objects.set(keyOf(def), new Map());
  }

  /** The current (latest) resourceVersion, as a list would report it. */
  get resourceVersion(): string {
    return String(this.rv);
  }

  def(res: ResourceId): ResourceDef {
    return this.resources.resolve(res);
  }

  // ---------------------------------------------------------------- reads

  get(res: ResourceId, namespace: string | undefined, name: string): StoredObject | undefined {
    const def = this.def(res);
    const obj = this.bucket(def).get(nsName(def.namespaced ? (namespace ?? '') : '', name));
    return obj ? clone(obj) : undefined;
  }

  /** Like get, but a missing object is a NotFound KubeApiError. */
  read(res: ResourceId, namespace: string | undefined, name: string): StoredObject {
    const def = this.def(res);
    const obj = this.get(def, namespace, name);
    if (!obj) throw errors.notFound(def, name);
    return obj;
  }

  list(res: ResourceId, options: SelectorOptions = {}): StoredObject[] {
    return this.listPage(res, options).items;
  }

  listPage(res: ResourceId, options: ListOptions = {}): ListResult {
    const def = this.def(res);
    const { labels, fields } = this.parseSelectors(def, options);
    let start = '';
    if (options.continue) {
      let token: { rv: number; start: string };
      try {
        token = JSON.parse(Buffer.from(options.continue, 'base64url').toString('utf8')) as { rv: number; start: string };
      } catch {
        throw errors.badRequest('continue key is not valid: illegal base64 data');
      }
      if (token.rv < this.compactedRv)
        throw errors.gone(
          'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.',
        );
      start = token.start;
    }
    const all = [...this.bucket(def).entries()]
      .filter(([id, obj]) => id > start && this.matches(def, obj, options.namespace ?? '', labels, fields))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const limit = options.limit && options.limit > 0 ? options.limit : all.length;
    const page = all.slice(0, limit);
    const result: ListResult = { items: page.map(([, o]) => clone(o)), resourceVersion: this.resourceVersion };
    if (all.length > limit) {
      result.continue = Buffer.from(JSON.stringify({ rv: this.rv, start: page[page.length - 1]![0] })).toString('base64url');
      result.remainingItemCount = all.length - limit;
    }
    return result;
  }

  // ---------------------------------------------------------------- watch

  /**
   * Streams events for one resource. Replays history after options.resourceVersion, or sends the
   * current state as ADDED when it is ''/'0'/omitted. Throws 410 Expired (KubeApiError) when the
   * version is older than the kept history, and 400 for a bad selector.
   */
  watch(res: ResourceId, options: WatchOptions, listener: (ev: WatchEvent) => void): WatchHandle {
    const def = this.def(res);
    const { labels, fields } = this.parseSelectors(def, options);
    const w: Watcher = { key: keyOf(def), namespace: options.namespace ?? '', labels, fields, def, listener };
    const from = options.resourceVersion;
    if (from === undefined || from === '' || from === '0') {
      for (const obj of this.listPage(def, options).items) this.deliver(w, { type: 'ADDED', object: obj });
    } else {
      if (!/^\d+$/.test(from)) throw errors.badRequest(`resourceVersion: Invalid value: "${from}": must be a number`);
      const n = Number(from);
      if (n < this.compactedRv) throw errors.gone(`too old resource version: ${n} (${this.compactedRv + 1})`);
      for (const entry of this.history) if (entry.rv > n && entry.key === w.key) this.dispatch(w, entry);
    }
    this.watchers.add(w);
    return { stop: () => this.watchers.delete(w) };
  }

  /** Forgets history up to `upToRv` (default: all): watches from older versions then get 410 Expired. */
  compact(upToRv: number = this.rv): void {
    while (this.history.length > 0 && this.history[0]!.rv <= upToRv) this.history.shift();
    this.compactedRv = Math.max(this.compactedRv, upToRv);
  }

  // ---------------------------------------------------------------- internals

  protected bucket(def: ResourceDef): Map<string, StoredObject> {
    const key = keyOf(def);
    let b = this.objects.get(key);
    if (!b) {
      b = new Map();
      this.objects.set(key, b);
    }
    return b;
  }

  private parseSelectors(def: ResourceDef, options: SelectorOptions): { labels: LabelRequirement[]; fields: FieldRequirement[] } {
    try {
      return {
        labels: parseLabelSelector(options.labelSelector ?? ''),
        fields: parseFieldSelector(options.fieldSelector ?? '', ['metadata.name', 'metadata.namespace', ...(def.fieldSelectors ?? [])]),
      };
    } catch (e) {
      if (e instanceof SelectorError) throw errors.badRequest(e.message);
      throw e;
    }
  }

  private matches(def: ResourceDef, obj: StoredObject, namespace: string, labels: LabelRequirement[], fields: FieldRequirement[]): boolean {
    if (def.namespaced && namespace && obj.metadata.namespace !== namespace) return false;
    return matchesLabels(labels, obj.metadata.labels) && matchesFields(fields, (f) => getPath(obj, f));
  }

  protected commit(def: ResourceDef, id: string, type: WatchEventType, obj: StoredObject, old?: StoredObject): void {
    this.rv += 1;
    obj.metadata.resourceVersion = String(this.rv);
    const key = keyOf(def);
    this.bucket(def).set(id, obj);
    this.uids.set(obj.metadata.uid, { key, id });
    this.record({ rv: this.rv, key, type, object: clone(obj), ...(old ? { old: clone(old) } : {}) });
  }

  protected record(entry: HistoryEntry): void {
    this.history.push(entry);
    while (this.history.length > this.historyLimit) this.compactedRv = this.history.shift()!.rv;
    for (const w of [...this.watchers]) if (w.key === entry.key) this.dispatch(w, entry);
  }

  private dispatch(w: Watcher, entry: HistoryEntry): void {
    const pass = (o: StoredObject | undefined) => o !== undefined && this.matches(w.def, o, w.namespace, w.labels, w.fields);
    const now = pass(entry.object);
    if (entry.type === 'MODIFIED') {
      const before = pass(entry.old);
      if (now && before) this.deliver(w, { type: 'MODIFIED', object: clone(entry.object) });
      else if (now) this.deliver(w, { type: 'ADDED', object: clone(entry.object) });
      else if (before) {
        const old = clone(entry.old!);
        old.metadata.resourceVersion = String(entry.rv);
        this.deliver(w, { type: 'DELETED', object: old });
      }
    } else if (now) {
      this.deliver(w, { type: entry.type, object: clone(entry.object) });
    }
  }

  private deliver(w: Watcher, ev: WatchEvent): void {
    try {
      w.listener(ev);
    } catch {
      // A misbehaving listener must never break the store (a real etcd does not care about its watchers).
    }
  }
}

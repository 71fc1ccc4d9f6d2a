// Follows what a failover moves on the real cluster: the Redis's pods, the EndpointSlices of its
// master Service, the Redis itself and its Events, by watching each (the API server pushes every
// change), and prints what changed, stamped with ms since a phase began. Watches rather than
// polling kubectl: a kubectl call takes a few hundred ms on 2 busy cores, which would be most of
// the failover time measured.
// Invariant: the view is the API server's state as of the last event of each watch; a watch that
// ends (client-node drops one idle for 30 s) resumes from the last resourceVersion it saw, so no
// change is missed or replayed.
import { KubeConfig, Watch } from '@kubernetes/client-node';
import { performance } from 'node:perf_hooks';
import { LINK_ANNOTATION, ROLE_LABEL } from '../src/api/labels.ts';
import { isPodReady, loadPrinterColumns, podStatus, printedRow } from '../test/support/kubectl-tables.ts';
import { dim, say } from './ui.ts';

interface Item {
  metadata: {
    name: string;
    uid: string;
    resourceVersion: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
  };
}
export interface Pod extends Item {
  spec: { nodeName?: string };
  status?: { podIP?: string };
}
interface Slice extends Item {
  endpoints?: Array<{
    addresses: string[];
    conditions?: { ready?: boolean };
    targetRef?: { name: string; uid: string };
  }> | null;
}
interface KubeEvent extends Item {
  reason: string;
  message: string;
  involvedObject: { kind: string };
  reportingInstance?: string;
  source?: { component?: string };
}
export interface Endpoint {
  pod: string;
  uid: string;
  ip: string;
}
export interface View {
  pods: Pod[];
  /** The ready endpoints of the master Service. */
  master: Endpoint[];
  /** `my-redis 7.2 my-redis-master-0 2/2 Running`: the Redis's printer columns but AGE, or `gone`. */
  row: string;
}

export interface Follower {
  view(): View;
  /**
   * From now on, stamps are ms since t0 and printed lines go through style; lines are held until
   * release(), so that what a command prints comes before what the watches saw meanwhile.
   */
  phase(t0: number, style?: (s: string) => string): void;
  release(): void;
  /** Resolves once done(view) holds (checked on every change, at the moment it arrives). */
  until(done: (v: View) => boolean, ms: number, what: string): Promise<View>;
  stop(): void;
}

export async function follow(kubeconfig: string, namespace: string, name: string): Promise<Follower> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const columns = loadPrinterColumns();
  const ns = `namespaces/${namespace}`;
  const watches = {
    pods: { path: `/api/v1/${ns}/pods`, query: {} },
    slices: {
      path: `/apis/discovery.k8s.io/v1/${ns}/endpointslices`,
      query: { labelSelector: `kubernetes.io/service-name=${name}-master` },
    },
    redis: { path: `/apis/redis.example.com/v1/${ns}/redises`, query: { fieldSelector: `metadata.name=${name}` } },
    events: { path: `/api/v1/${ns}/events`, query: { fieldSelector: `involvedObject.name=${name}` } },
  };
  type Kind = keyof typeof watches;
  const store = Object.fromEntries(Object.keys(watches).map((k) => [k, new Map<string, Item>()])) as Record<
    Kind,
    Map<string, Item>
  >;
  const aborts = new Map<Kind, AbortController>();
  const waiters = new Set<() => void>();
  let stopped = false;
  let t0 = performance.now();
  let style = (s: string) => s;
  let printed = new Map<string, string>();
  const seenEvents = new Set<string>();
  let held: string[] | undefined;
  const out = (line: string) => (held ? held.push(line) : say(line));

  const view = (): View => {
    const all = <T extends Item>(k: Kind) => [...store[k].values()] as T[];
    const redis = all<Item>('redis')[0];
    return {
      pods: all<Pod>('pods')
        .filter((p) => p.metadata.name.startsWith(`${name}-`))
        .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name)),
      master: all<Slice>('slices')
        .flatMap((s) => s.endpoints ?? [])
        .flatMap((e) =>
          e.conditions?.ready && e.targetRef
            ? [{ pod: e.targetRef.name, uid: e.targetRef.uid, ip: e.addresses[0] ?? '' }]
            : [],
        ),
      row: redis ? printedRow(redis, columns) : 'gone',
    };
  };

  const lines = (v: View): Map<string, string> => {
    const out = new Map<string, string>();
    for (const p of v.pods) {
      const m = p.metadata;
      const state = `${podStatus(p)} ${isPodReady(p) ? 'ready' : 'not-ready'} ip=${p.status?.podIP ?? '<none>'}`;
      out.set(
        `pod ${m.name}`,
        `${state} role=${m.labels?.[ROLE_LABEL] ?? '-'} link=${m.annotations?.[LINK_ANNOTATION] ?? '-'} ${p.spec.nodeName ?? ''}`.trim(),
      );
    }
    out.set(
      `service ${name}-master`,
      v.master.length > 0 ? `-> ${v.master.map((e) => `${e.pod} (${e.ip})`).join(', ')}` : '-> no endpoint',
    );
    out.set(`redis ${name}`, v.row);
    return out;
  };

  const changed = (kind: Kind, item: Item) => {
    const stamp = `+${String(Math.round(performance.now() - t0)).padStart(6)} ms`;
    const next = lines(view());
    for (const [key, value] of next) if (printed.get(key) !== value) out(style(`${stamp}  ${key.padEnd(28)} ${value}`));
    for (const key of printed.keys()) if (!next.has(key)) out(style(`${stamp}  ${key.padEnd(28)} gone`));
    printed = next;
    const e = item as KubeEvent;
    if (kind === 'events' && e.involvedObject.kind === 'Redis' && !seenEvents.has(e.metadata.uid)) {
      seenEvents.add(e.metadata.uid);
      out(
        style(
          `${stamp}  ${`event ${e.reason}`.padEnd(28)} ${e.message} ${dim(`(${e.reportingInstance ?? e.source?.component ?? '?'})`)}`,
        ),
      );
    }
    for (const w of [...waiters]) w();
  };

  const start = async (kind: Kind, resourceVersion?: string): Promise<void> => {
    let rv = resourceVersion;
    const { path, query } = watches[kind];
    const abort = await new Watch(kc).watch(
      path,
      { ...query, allowWatchBookmarks: true, resourceVersion: rv },
      (type: string, obj: Item) => {
        // 410 Gone (the version was compacted away): the watch ends; resume from the current state.
        if (type === 'ERROR') {
          rv = undefined;
          return;
        }
        rv = obj.metadata.resourceVersion;
        if (type === 'BOOKMARK') return;
        if (type === 'DELETED') store[kind].delete(obj.metadata.uid);
        else store[kind].set(obj.metadata.uid, obj);
        changed(kind, obj);
      },
      () => {
        if (!stopped) setTimeout(() => void start(kind, rv).catch(() => undefined), 100);
      },
    );
    aborts.set(kind, abort);
  };
  for (const kind of Object.keys(watches) as Kind[]) await start(kind);

  return {
    view,
    phase(at, s = (x) => x) {
      t0 = at;
      style = s;
      held ??= [];
    },
    release() {
      for (const line of held?.splice(0) ?? []) say(line);
      held = undefined;
    },
    until(done, ms, what) {
      return new Promise<View>((resolve, reject) => {
        const check = () => {
          const v = view();
          if (!done(v)) return;
          finish();
          resolve(v);
        };
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`not within ${ms / 1000} s: ${what}`));
        }, ms);
        const finish = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    stop() {
      stopped = true;
      for (const a of aborts.values()) a.abort();
    },
  };
}

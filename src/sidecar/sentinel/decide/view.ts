// What the Sentinel endpoint answers from: one instance's view of the Redises it serves, built from the informer's
// objects (pure: the same inputs give the same view on every sidecar instance, so each serves alone and losing one
// operator pod loses no endpoint).
// Invariants:
// - The master published is only ever a pod the sidecar itself labelled master (the role label has one writer, the
//   sidecar, which sets it after promotion), never a pod the hook or anyone else chose. When no pod, or more than one,
//   carries the label (a failover between demotion and promotion), the previous master stays published, marked down:
//   Sentinel answers the old address until the switch, then the new one, never a half-promoted one.
// - A master name is served under `<namespace>/<masterName>` always, and under the bare `<masterName>` only when no
//   other Redis in the view claims it: a client asking an ambiguous name gets no address rather than another
//   Redis's. The choice never depends on the order the objects arrive in.
// - A Redis whose Sentinel password is not known yet (its Secret unread) is not served: secure by default.

export interface SentinelPodInput {
  name: string;
  /** Pod IP; empty while it has none. */
  ip: string;
  ready: boolean;
  /** The sidecar's role label, when set. */
  role: 'master' | 'replica' | undefined;
}

export interface SentinelRedisInput {
  namespace: string;
  name: string;
  /** spec.sentinel.masterName; default the Redis's name. */
  masterName: string | undefined;
  /** The password a Sentinel client must give; null: none is required; undefined: not read yet (not served). */
  password: string | null | undefined;
  port: number;
  pods: readonly SentinelPodInput[];
}

export interface Instance {
  pod: string;
  ip: string;
  port: number;
  up: boolean;
}

export interface MonitoredMaster {
  /** The name as the Redis gives it; clients ask by `servedAs`. */
  masterName: string;
  namespace: string;
  redis: string;
  /** The names it answers to, bare name first when unambiguous. */
  servedAs: readonly string[];
  master: Instance | undefined;
  replicas: readonly Instance[];
  password: string | null;
  /** Times the published master changed in this instance's life (Sentinel's config-epoch, for clients that show it). */
  epoch: number;
}

export interface SentinelPeer {
  ip: string;
  port: number;
  runid: string;
}

export interface SentinelView {
  masters: readonly MonitoredMaster[];
  /** The other sidecar instances serving the same endpoint. */
  peers: readonly SentinelPeer[];
}

export const EMPTY_VIEW: SentinelView = { masters: [], peers: [] };

export const qualified = (namespace: string, masterName: string): string => `${namespace}/${masterName}`;
const key = (m: { namespace: string; redis: string }): string => `${m.namespace}/${m.redis}`;

function publishedMaster(redis: SentinelRedisInput, prev: MonitoredMaster | undefined): Instance | undefined {
  const labelled = redis.pods.filter((p) => p.role === 'master' && p.ip !== '');
  if (labelled.length === 1) {
    const p = labelled[0]!;
    return { pod: p.name, ip: p.ip, port: redis.port, up: p.ready };
  }
  return prev?.master === undefined ? undefined : { ...prev.master, up: false };
}

/** The next view: `prev` carries what was published, so a master between two labels keeps its old address. */
export function buildView(
  redises: readonly SentinelRedisInput[],
  peers: readonly SentinelPeer[],
  prev: SentinelView,
): SentinelView {
  const before = new Map(prev.masters.map((m) => [key(m), m]));
  const served = redises.filter((r) => r.password !== undefined);
  const claims = new Map<string, number>();
  for (const r of served) {
    const n = r.masterName ?? r.name;
    claims.set(n, (claims.get(n) ?? 0) + 1);
  }
  const masters = served.map((r): MonitoredMaster => {
    const masterName = r.masterName ?? r.name;
    const old = before.get(key({ namespace: r.namespace, redis: r.name }));
    const master = publishedMaster(r, old?.masterName === masterName ? old : undefined);
    const moved = old?.master !== undefined && master !== undefined && old.master.ip !== master.ip;
    const replicas = r.pods
      .filter((p) => p.role === 'replica' && p.ip !== '')
      .map((p) => ({ pod: p.name, ip: p.ip, port: r.port, up: p.ready }))
      .sort((a, b) => a.pod.localeCompare(b.pod));
    const q = qualified(r.namespace, masterName);
    return {
      masterName,
      namespace: r.namespace,
      redis: r.name,
      servedAs: claims.get(masterName) === 1 ? [masterName, q] : [q],
      master,
      replicas,
      password: r.password ?? null,
      epoch: (old?.epoch ?? 0) + (moved ? 1 : 0),
    };
  });
  masters.sort((a, b) => key(a).localeCompare(key(b)));
  return { masters, peers: [...peers].sort((a, b) => a.runid.localeCompare(b.runid)) };
}

/** The Redis a client means by `name`, if exactly one answers to it. */
export function lookup(view: SentinelView, name: string): MonitoredMaster | undefined {
  return view.masters.find((m) => m.servedAs.includes(name));
}

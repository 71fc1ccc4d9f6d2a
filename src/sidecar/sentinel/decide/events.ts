// The Pub/Sub messages a Sentinel publishes, derived from two successive views, and who receives them.
// Invariants: pure; one change of the published master gives exactly one `+switch-master` per name the Redis is
// served under (clients such as go-redis and Lettuce match the name), old address first, and only when both
// addresses are known (a Redis seen for the first time switches nothing); a master going down gives `+sdown` then
// `+odown` (the operator is the only judge, so subjective and objective agree), coming back `-sdown` then `-odown`;
// a replica at the same address going down or up gives `+sdown`/`-sdown slave ...`. A message about a Redis reaches
// only sessions that may see that Redis (its password), whatever channel or pattern they subscribed to.
import { globMatch } from './glob.ts';
import { array, bulk, type Reply } from './resp.ts';
import { maySee, type Session } from './session.ts';
import type { Instance, MonitoredMaster, SentinelView } from './view.ts';

export interface Published {
  channel: string;
  message: string;
  /** The Redis it is about (for logs); its Sentinel password decides who hears it. */
  namespace: string;
  redis: string;
  password: string | null;
}

const key = (m: MonitoredMaster): string => `${m.namespace}/${m.redis}`;
const at = (i: Instance): string => `${i.ip} ${i.port}`;

function masterEvents(before: MonitoredMaster, after: MonitoredMaster): Published[] {
  const out: Published[] = [];
  const say = (channel: string, message: string): void =>
    void out.push({ channel, message, namespace: after.namespace, redis: after.redis, password: after.password });
  const [was, now] = [before.master, after.master];
  if (was === undefined || now === undefined) return out;
  for (const name of after.servedAs) {
    if (was.ip !== now.ip || was.port !== now.port) {
      say('+switch-master', `${name} ${at(was)} ${at(now)}`);
      if (!now.up) {
        say('+sdown', `master ${name} ${at(now)}`);
        say('+odown', `master ${name} ${at(now)} #quorum 1/1`);
      }
      continue;
    }
    if (was.up && !now.up) {
      say('+sdown', `master ${name} ${at(now)}`);
      say('+odown', `master ${name} ${at(now)} #quorum 1/1`);
    } else if (!was.up && now.up) {
      say('-sdown', `master ${name} ${at(now)}`);
      say('-odown', `master ${name} ${at(now)}`);
    }
    const old = new Map(before.replicas.map((r) => [`${r.ip}:${r.port}`, r]));
    for (const r of after.replicas) {
      const prev = old.get(`${r.ip}:${r.port}`);
      if (prev === undefined || prev.up === r.up) continue;
      say(r.up ? '-sdown' : '+sdown', `slave ${r.ip}:${r.port} ${at(r)} @ ${name} ${at(now)}`);
    }
  }
  return out;
}

export function viewEvents(prev: SentinelView, next: SentinelView): Published[] {
  const before = new Map(prev.masters.map((m) => [key(m), m]));
  return next.masters.flatMap((m) => {
    const b = before.get(key(m));
    return b === undefined ? [] : masterEvents(b, m);
  });
}

/** What one session receives of the published messages, as Redis pushes them (message or pmessage). */
export function deliveries(session: Session, events: readonly Published[]): Reply[] {
  const out: Reply[] = [];
  for (const e of events) {
    if (!maySee(session, e)) continue;
    if (session.channels.has(e.channel)) out.push(array([bulk('message'), bulk(e.channel), bulk(e.message)]));
    for (const p of session.patterns) {
      if (globMatch(p, e.channel)) out.push(array([bulk('pmessage'), bulk(p), bulk(e.channel), bulk(e.message)]));
    }
  }
  return out;
}

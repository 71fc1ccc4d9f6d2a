// One client connection's state on the Sentinel endpoint, and who may see what.
// Invariants: a session sees a Redis only when that Redis needs no Sentinel password or the session gave exactly its
// password (AUTH or HELLO ... AUTH); the password is checked against the view at every command, so a rotated Secret
// takes effect at once, also on open connections. Passwords are compared through a hash and in constant time, and
// never leave this module in a reply.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { MonitoredMaster, SentinelView } from './view.ts';

export interface Session {
  /** Client id (CLIENT ID), given by the adapter in connection order. */
  id: number;
  /** The password the client authenticated with; null: none given. */
  password: string | null;
  /** CLIENT SETNAME. */
  name: string | null;
  channels: ReadonlySet<string>;
  patterns: ReadonlySet<string>;
}

export function newSession(id: number): Session {
  return { id, password: null, name: null, channels: new Set(), patterns: new Set() };
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

export function samePassword(given: string, wanted: string): boolean {
  return timingSafeEqual(digest(given), digest(wanted));
}

export function maySee(session: Pick<Session, 'password'>, master: Pick<MonitoredMaster, 'password'>): boolean {
  if (master.password === null) return true;
  return session.password !== null && samePassword(session.password, master.password);
}

/** Whether some Redis in the view takes this password (AUTH is refused otherwise, as a wrong password is). */
export function passwordKnown(view: SentinelView, password: string): boolean {
  return view.masters.some((m) => m.password !== null && samePassword(password, m.password));
}

export const subscriptions = (s: Session): number => s.channels.size + s.patterns.size;

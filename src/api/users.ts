// Application users (spec.users): which ACL rule tokens a user may write, and the ACL SETUSER
// arguments the sidecar applies for one. Pure. Invariants: the operator alone decides a user's
// password (from its Secret, as a SHA-256 hash: the password itself never reaches a command
// line or a log) and that it is on; a rule that would set or drop passwords, switch the user
// off or reset it is refused in the spec, naming it.
import { createHash } from 'node:crypto';

/** Names the operator keeps for itself: the Redis password's user, and the operator's own (to come). */
export const RESERVED_USER_NAMES = ['default', 'redis-operator'] as const;

/** Why a rule token may not be written in spec.users[].rules, or undefined when it may. */
export function ruleTokenProblem(token: string): string | undefined {
  if (/^[><#!]/.test(token)) return `"${token}" sets or removes a password: passwords come from passwordSecret`;
  if (/^(on|off|nopass|resetpass|reset)$/i.test(token)) return `"${token}" is the operator's: it keeps every listed user on, with its Secret's password`;
  return undefined;
}

export function ruleTokens(rules: string): string[] {
  return rules.split(/\s+/).filter((t) => t !== '');
}

export function passwordHash(password: string): string {
  return createHash('sha256').update(password).digest('hex');
}

/** ACL SETUSER arguments after the name: start from nothing, on, the password's hash, the rules. */
export function setUserArgs(rules: string, password: string): string[] {
  return ['reset', 'on', `#${passwordHash(password)}`, ...ruleTokens(rules)];
}

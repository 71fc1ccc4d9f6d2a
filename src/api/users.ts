// Application users (spec.users): which ACL rule tokens a user may write, and the ACL SETUSER
// arguments the sidecar applies for one. Pure. Invariants: the operator alone decides a user's
// password (from its Secret, as a SHA-256 hash: the password itself never reaches a command
// line or a log) and that it is on; a rule that would set or drop passwords, switch the user
// off or reset it is refused in the spec, naming it.
import { createHash } from 'node:crypto';
import { EXPORTER_USER, OPERATOR_USER } from './auth.ts';

/** Names the operator keeps for itself: the Redis password's user, the operator's own and the exporter's. */
export const RESERVED_USER_NAMES = ['default', OPERATOR_USER, EXPORTER_USER] as const;

/** Why a rule token may not be written in spec.users[].rules, or undefined when it may. */
export function ruleTokenProblem(token: string): string | undefined {
  if (/^[><#!]/.test(token)) return `"${token}" sets or removes a password: passwords come from passwordSecret`;
  if (/^(on|off|nopass|resetpass|reset)$/i.test(token))
    return `"${token}" is the operator's: it keeps every listed user on, with its Secret's password`;
  return undefined;
}

export function ruleTokens(rules: string): string[] {
  return rules.split(/\s+/).filter((t) => t !== '');
}

export function passwordHash(password: string): string {
  return createHash('sha256').update(password).digest('hex');
}

/**
 * ACL SETUSER arguments after the name: start from nothing, on, the passwords' hashes (two during
 * a rotation's grace period), the rules.
 */
export function setUserArgs(rules: string, hashes: readonly string[]): string[] {
  return ['reset', 'on', ...hashes.map((h) => `#${h}`), ...ruleTokens(rules)];
}

/** ACL SETUSER arguments that make exactly `hashes` the passwords of a user whose rules are not ours (`default`). */
export function setPasswordsArgs(hashes: readonly string[]): string[] {
  return ['resetpass', ...hashes.map((h) => `#${h}`)];
}

// Application users (spec.users) on every node: ACLs do not replicate, so the leader applies them
// to each node that answers, again whenever a node restarts (a new run_id) or the users change.
// Invariants:
// - A user's password comes from its Secret and reaches Redis only as a SHA-256 hash.
// - The users the operator manages are recorded on the Redis (MANAGED_USERS_ANNOTATION) BEFORE
//   they are created, so a user removed from the spec is deleted from every node even after a
//   leader change; users never listed there (made by hand) are left alone.
// - A user whose Secret is missing is left as it is on the nodes (never created without a
//   password, never deleted for it), with one Warning.
// - Leader only; a failed node is retried next round, told once per node and change.
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { MANAGED_USERS_ANNOTATION } from '../../api/labels.ts';
import type { RedisSpec } from '../../api/schema.ts';
import { setUserArgs } from '../../api/users.ts';
import type { DecideInput } from '../decide/index.ts';
import { currentFacts, endpointOf } from '../decide/index.ts';
import type { RedisRef } from '../kube/client.ts';
import type { Endpoint } from '../redis/index.ts';
import type { ActionResult } from '../redis/types.ts';
import type { EventToSend } from './events.ts';

export interface UsersOptions {
  ref: RedisRef;
  log: Logger;
  isLeader: () => boolean;
  event: (e: EventToSend) => void;
  now: () => number;
  readSecret: (namespace: string, name: string, key: string) => Promise<string | null>;
  patchAnnotations: ((redis: RedisRef, annotations: Record<string, string | null>) => Promise<void>) | undefined;
  applyUsers: (endpoint: Endpoint, users: ReadonlyArray<{ name: string; args: readonly string[] }>, removed: readonly string[]) => Promise<ActionResult>;
  refreshMs: number;
}

const parseNames = (value: string | undefined) => (value ?? '').split(',').filter((n) => n !== '');

export class UsersApplier {
  readonly #o: UsersOptions;
  #users: NonNullable<RedisSpec['users']> = [];
  #managed: string[] = [];
  readonly #passwords = new Map<string, { value: string | null; at: number }>();
  /** Per pod name: `<run_id>:<fingerprint>` last applied there. */
  readonly #applied = new Map<string, string>();
  readonly #told = new Set<string>();

  constructor(options: UsersOptions) {
    this.#o = options;
  }

  update(annotations: Record<string, string> | undefined, spec: RedisSpec): void {
    this.#users = spec.users ?? [];
    this.#managed = parseNames(annotations?.[MANAGED_USERS_ANNOTATION]);
  }

  async reconcile(input: DecideInput): Promise<void> {
    if ((this.#users.length === 0 && this.#managed.length === 0) || !this.#o.isLeader()) return;
    const wanted = this.#users.map((u) => u.name);
    const removed = this.#managed.filter((n) => !wanted.includes(n));
    if (wanted.some((n) => !this.#managed.includes(n)) && !(await this.#record([...new Set([...this.#managed, ...wanted])].sort()))) return;

    const desired: Array<{ name: string; args: string[] }> = [];
    for (const user of this.#users) {
      const password = await this.#password(user.passwordSecret.name, user.passwordSecret.key);
      if (password === null) {
        this.#tellOnce(`secret/${user.name}/${user.passwordSecret.name}`, {
          type: 'Warning',
          reason: 'UserSecretMissing',
          message: `user ${user.name}: Secret ${user.passwordSecret.name} (key ${user.passwordSecret.key}) not found; the user is left as it is on the nodes`,
        });
        continue;
      }
      desired.push({ name: user.name, args: setUserArgs(user.rules, password) });
    }
    const fingerprint = createHash('sha256').update(JSON.stringify({ desired, removed })).digest('hex').slice(0, 16);

    let pending = 0;
    const done: string[] = [];
    for (const pod of input.pods) {
      const facts = currentFacts(pod, input.now, input.config);
      if (!facts || facts.loading || pod.deleting || pod.ip === null) {
        pending++;
        continue;
      }
      const key = `${facts.runId}:${fingerprint}`;
      if (this.#applied.get(pod.name) === key) continue;
      if (!this.#o.isLeader()) return;
      const result = await this.#o.applyUsers(endpointOf(pod.ip), desired, removed);
      if (result.ok) {
        this.#applied.set(pod.name, key);
        done.push(pod.name);
      } else {
        pending++;
        this.#tellOnce(`fail/${pod.name}/${key}`, {
          type: 'Warning',
          reason: 'StepFailed',
          message: `applying users (${desired.map((d) => d.name).join(', ') || 'none'}${removed.length ? `; removing ${removed.join(', ')}` : ''}) on ${pod.name} failed (${result.error.kind}): ${result.error.message}; retried next round`,
        });
      }
    }
    if (done.length > 0) {
      this.#o.log.info({ pods: done, users: desired.map((d) => d.name), removed }, 'users applied');
      this.#tellOnce(`applied/${fingerprint}/${done.join(',')}`, {
        type: 'Normal',
        reason: 'UsersApplied',
        message: `users ${desired.map((d) => d.name).join(', ') || '(none)'}${removed.length ? `, removed ${removed.join(', ')}` : ''} applied on ${done.join(', ')}`,
      });
    }
    // Every node has them: the removed ones are gone everywhere, so stop managing them.
    if (pending === 0 && removed.length > 0) await this.#record(wanted.sort());
  }

  async #record(names: string[]): Promise<boolean> {
    if (!this.#o.patchAnnotations || !this.#o.isLeader()) return false;
    try {
      await this.#o.patchAnnotations(this.#o.ref, { [MANAGED_USERS_ANNOTATION]: names.length > 0 ? names.join(',') : null });
      this.#managed = names;
      return true;
    } catch (err) {
      this.#o.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'recording the managed users on the Redis failed');
      return false;
    }
  }

  async #password(name: string, key: string): Promise<string | null> {
    const id = `${name}/${key}`;
    const cached = this.#passwords.get(id);
    const now = this.#o.now();
    if (cached && cached.value !== null && now - cached.at < this.#o.refreshMs) return cached.value;
    if (cached && cached.value === null && now - cached.at < 1000) return null;
    try {
      const value = await this.#o.readSecret(this.#o.ref.namespace, name, key);
      this.#passwords.set(id, { value, at: now });
      return value;
    } catch {
      return cached?.value ?? null;
    }
  }

  #tellOnce(key: string, e: EventToSend): void {
    if (this.#told.has(key)) return;
    this.#told.add(key);
    this.#o.event(e);
  }
}

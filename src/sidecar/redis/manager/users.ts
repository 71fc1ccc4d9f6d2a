// ACL users on every node: the application users of spec.users and the `default` user's passwords.
// ACLs do not replicate, so the leader applies them to each node that answers, again whenever a
// node restarts (a new run_id), a Secret or the users change, a grace period ends, and at least
// every refreshMs (a hand edit on a node is undone). A password Secret is read again every
// refreshMs (polled: nothing tells the sidecar when a Secret changes).
// Invariants:
// - A password comes from its Secret and reaches Redis only as a SHA-256 hash, and only when
//   passwordWritable: one that is empty or holds a control character is refused like a missing
//   Secret (left as it is on the nodes), with one Warning naming the Secret and key, never the value.
// - A changed password goes through a grace period (decide/passwords.ts): its end is recorded on
//   the Redis (PASSWORD_GRACE_ANNOTATION) before any node is touched, so a new leader keeps it.
// - The default user's rules are never touched, only its passwords; the operator's own user is
//   credentials.ts's.
// - The users the operator manages are recorded on the Redis (MANAGED_USERS_ANNOTATION) BEFORE
//   they are created, so a user removed from the spec is deleted from every node even after a
//   leader change; users never listed there (made by hand) are left alone.
// - A user whose Secret is missing is left as it is on the nodes (never created without a
//   password, never deleted for it), with one Warning.
// - Leader only; a failed node is retried next round, told once per node and change.
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { MANAGED_USERS_ANNOTATION, PASSWORD_GRACE_ANNOTATION } from '../../../api/labels.ts';
import type { RedisSpec } from '../../../api/schema.ts';
import { passwordWritable } from '../../../api/secret-report.ts';
import { passwordHash, setPasswordsArgs, setUserArgs } from '../../../api/users.ts';
import type { DecideInput } from '../decide/index.ts';
import { currentFacts, endpointOf } from '../decide/index.ts';
import { decidePasswords, formatGrace, parseGrace, type PasswordsDecision } from '../decide/passwords.ts';
import type { RedisRef } from '../../adapters/kube/client.ts';
import type { Endpoint } from '../../adapters/redis/index.ts';
import type { ActionResult, RedisFailure } from '../../adapters/redis/types.ts';
import type { EventToSend } from './events.ts';

export type UserChange = { name: string; args: readonly string[] };

export interface UsersOptions {
  ref: RedisRef;
  log: Logger;
  isLeader: () => boolean;
  event: (e: EventToSend) => void;
  now: () => number;
  /** Wall-clock ms (grace periods are recorded for other sidecars). Default Date.now. */
  wallNow?: () => number;
  readSecret: (namespace: string, name: string, key: string) => Promise<string | null>;
  /** The default user's password (credentials.ts reads it); undefined until known. */
  clientPassword: () => string | undefined;
  patchAnnotations: ((redis: RedisRef, annotations: Record<string, string | null>) => Promise<void>) | undefined;
  aclPasswords: (
    endpoint: Endpoint,
    users: readonly string[],
  ) => Promise<{ ok: true; hashes: Map<string, string[] | null> } | { ok: false; error: RedisFailure }>;
  applyUsers: (endpoint: Endpoint, users: readonly UserChange[], removed: readonly string[]) => Promise<ActionResult>;
  refreshMs: number;
}

interface Wanted {
  name: string;
  hash: string;
  /** The rules of an application user; null for `default` (its rules are not ours). */
  rules: string | null;
}

const parseNames = (value: string | undefined) => (value ?? '').split(',').filter((n) => n !== '');
const fingerprint = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 16);

export class UsersApplier {
  readonly #o: UsersOptions;
  #users: NonNullable<RedisSpec['users']> = [];
  #graceMs = 0;
  #managed: string[] = [];
  #grace = new Map<string, number>();
  readonly #passwords = new Map<string, { value: string | null; at: number }>();
  /** Per pod name: `<run_id>:<fingerprint>` of the application users last applied there. */
  readonly #applied = new Map<string, string>();
  readonly #told = new Set<string>();
  #lastPass: { key: string; at: number } | null = null;

  constructor(options: UsersOptions) {
    this.#o = options;
  }

  update(annotations: Record<string, string> | undefined, spec: RedisSpec): void {
    this.#users = spec.users ?? [];
    this.#graceMs = spec.passwordGracePeriodSeconds * 1000;
    this.#managed = parseNames(annotations?.[MANAGED_USERS_ANNOTATION]);
    this.#grace = parseGrace(annotations?.[PASSWORD_GRACE_ANNOTATION]);
  }

  async reconcile(input: DecideInput): Promise<void> {
    if (!this.#o.isLeader()) return;
    const wantedNames = this.#users.map((u) => u.name);
    const removed = this.#managed.filter((n) => !wantedNames.includes(n));
    if (
      wantedNames.some((n) => !this.#managed.includes(n)) &&
      !(await this.#recordManaged([...new Set([...this.#managed, ...wantedNames])].sort()))
    )
      return;
    const wanted = await this.#wanted();
    const wall = this.#o.wallNow?.() ?? Date.now();

    const nodes = input.pods.flatMap((pod) => {
      const facts = currentFacts(pod, input.now, input.config);
      return facts && !facts.loading && !pod.deleting && pod.ip !== null
        ? [{ pod: pod.name, ip: pod.ip, runId: facts.runId }]
        : [];
    });
    const pending = input.pods.length - nodes.length;
    const key = fingerprint({ nodes, wanted, removed, grace: [...this.#grace].map(([u, t]) => [u, t > wall]) });
    if (this.#lastPass && this.#lastPass.key === key && input.now - this.#lastPass.at < this.#o.refreshMs) return;

    // What each node has now.
    const names = wanted.map((w) => w.name);
    const seen = new Map<string, Map<string, string[] | null>>();
    let failed = pending;
    for (const n of nodes) {
      const r = await this.#o.aclPasswords(endpointOf(n.ip), names);
      if (r.ok) seen.set(n.pod, r.hashes);
      else failed++;
    }
    const decisions = new Map<string, PasswordsDecision>();
    for (const w of wanted) {
      const d = decidePasswords({
        user: w.name,
        current: w.hash,
        nodes: nodes
          .filter((n) => seen.has(n.pod))
          .map((n) => ({ pod: n.pod, hashes: seen.get(n.pod)!.get(w.name) ?? null })),
        graceUntil: this.#grace.get(w.name),
        now: wall,
        graceMs: this.#graceMs,
      });
      if (d.startGrace !== undefined && !(await this.#startGrace(w.name, d))) return;
      decisions.set(w.name, d);
    }

    const done: string[] = [];
    for (const n of nodes) {
      if (!seen.has(n.pod)) continue;
      const changes: UserChange[] = [];
      const apps: UserChange[] = [];
      for (const w of wanted) {
        const d = decisions.get(w.name)!;
        const change = {
          name: w.name,
          args: w.rules === null ? setPasswordsArgs(d.hashes) : setUserArgs(w.rules, d.hashes),
        };
        if (w.rules !== null) apps.push(change);
        if (d.pods.includes(n.pod)) changes.push(change);
      }
      // Application users also go again when their rules changed or the node restarted.
      const appKey = `${n.runId}:${fingerprint({ apps, removed })}`;
      if (this.#applied.get(n.pod) !== appKey) for (const a of apps) if (!changes.includes(a)) changes.push(a);
      const deleting = this.#applied.get(n.pod) !== appKey ? removed : [];
      if (changes.length === 0 && deleting.length === 0) continue;
      if (!this.#o.isLeader()) return;
      const result = await this.#o.applyUsers(endpointOf(n.ip), changes, deleting);
      if (result.ok) {
        this.#applied.set(n.pod, appKey);
        done.push(n.pod);
      } else {
        failed++;
        this.#tellOnce(`fail/${n.pod}/${appKey}/${fingerprint(changes)}`, {
          type: 'Warning',
          reason: 'StepFailed',
          message: `applying users (${changes.map((c) => c.name).join(', ') || 'none'}${deleting.length ? `; removing ${deleting.join(', ')}` : ''}) on ${n.pod} failed (${result.error.kind}): ${result.error.message}; retried next round`,
        });
      }
    }
    if (done.length > 0) {
      this.#o.log.info({ pods: done, users: names, removed }, 'users applied');
      this.#tellOnce(`applied/${key}/${done.join(',')}`, {
        type: 'Normal',
        reason: 'UsersApplied',
        message: `users ${names.join(', ')}${removed.length ? `, removed ${removed.join(', ')}` : ''} applied on ${done.join(', ')}`,
      });
    }
    if (failed > 0) return;
    this.#lastPass = { key, at: input.now };
    // Every node is done: removed users are gone everywhere, finished grace periods can go.
    if (removed.length > 0) await this.#recordManaged(wantedNames.sort());
    const over = [...this.#grace.keys()].filter((u) => decisions.get(u)?.graceOver ?? !names.includes(u));
    if (over.length > 0) await this.#endGrace(over);
  }

  /**
   * The users to have on every node: `default` (once its password is known) and each listed user whose Secret exists.
   */
  async #wanted(): Promise<Wanted[]> {
    const out: Wanted[] = [];
    const client = this.#o.clientPassword();
    if (client !== undefined) out.push({ name: 'default', hash: passwordHash(client), rules: null });
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
      if (!passwordWritable(password)) {
        this.#tellOnce(`unwritable/${user.name}/${user.passwordSecret.name}/${user.passwordSecret.key}`, {
          type: 'Warning',
          reason: 'PasswordUnwritable',
          message: `user ${user.name}: Secret ${this.#o.ref.namespace}/${user.passwordSecret.name} key ${user.passwordSecret.key} is empty or holds a control character; Redis cannot be given it safely, so the user is left as it is on the nodes`,
        });
        continue;
      }
      out.push({ name: user.name, hash: passwordHash(password), rules: user.rules });
    }
    return out;
  }

  async #startGrace(user: string, d: PasswordsDecision): Promise<boolean> {
    const until = d.startGrace!;
    const grace = new Map(this.#grace).set(user, until);
    if (!(await this.#patch({ [PASSWORD_GRACE_ANNOTATION]: formatGrace(grace) }, 'recording a password grace period')))
      return false;
    this.#grace = grace;
    this.#o.log.info({ user, until: new Date(until).toISOString() }, 'password changed: grace period started');
    this.#o.event({
      type: 'Normal',
      reason: 'PasswordGraceStarted',
      message: `the password of user ${user} changed: until ${new Date(until).toISOString()} the old and the new password both work on every node, then only the new one`,
    });
    return true;
  }

  async #endGrace(users: string[]): Promise<void> {
    const grace = new Map(this.#grace);
    for (const u of users) grace.delete(u);
    if (!(await this.#patch({ [PASSWORD_GRACE_ANNOTATION]: formatGrace(grace) }, 'clearing a password grace period')))
      return;
    this.#grace = grace;
    this.#o.log.info({ users }, 'password grace period over: only the new password works');
    this.#o.event({
      type: 'Normal',
      reason: 'PasswordGraceEnded',
      message: `the grace period of ${users.map((u) => `user ${u}`).join(', ')} is over: only the password in the Secret works on every node now`,
    });
  }

  async #recordManaged(names: string[]): Promise<boolean> {
    if (
      !(await this.#patch(
        { [MANAGED_USERS_ANNOTATION]: names.length > 0 ? names.join(',') : null },
        'recording the managed users',
      ))
    )
      return false;
    this.#managed = names;
    return true;
  }

  async #patch(annotations: Record<string, string | null>, what: string): Promise<boolean> {
    if (!this.#o.patchAnnotations || !this.#o.isLeader()) return false;
    try {
      await this.#o.patchAnnotations(this.#o.ref, annotations);
      return true;
    } catch (err) {
      this.#o.log.warn({ err: err instanceof Error ? err.message : String(err) }, `${what} on the Redis failed`);
      return false;
    }
  }

  async #password(name: string, key: string): Promise<string | null> {
    const id = `${name}/${key}`;
    const cached = this.#passwords.get(id);
    const now = this.#o.now();
    // Polled: a found password every refreshMs, a missing one every second.
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

// The Secrets behind one resource's passwords, for every kind: when they are read (polled,
// cached between reads), how one password is read (a generated Secret made first by the leader),
// and the operator's own password, which every sidecar connection to the resource's nodes uses.
// What a kind reads besides (the clients' and the exporter's passwords, TLS), and how it tells a
// missing Secret, are the kind's (redis/manager/credentials.ts, rediscluster/manager/credentials.ts).
// Invariants:
// - The Secrets are polled (core/decide/secret-reads.ts): every everyMs() once every value was
//   found, every second while one is missing or after a failed read, and within a second after a
//   node refused our password. A read never blocks the caller once the operator's password is
//   known; one read at a time.
// - Only the leader creates a generated Secret (owned by the resource, so it goes with it);
//   creating is safe to race (adapters/kube/secrets.ts).
// - A password that breaks passwordWritable (empty, or a control character) is never used: it
//   counts as missing, told with the Secret and key, never the value nor a hint of it.
import type { Logger } from 'pino';
import type { AuthSecretRef } from '../../api/auth.ts';
import { passwordWritable } from '../../api/secret-report.ts';
import { kubeFailure, type GeneratedSecret, type RedisRef, type SecretOwner } from '../adapters/kube/client.ts';
import { decideSecretRead } from './decide/secret-reads.ts';

/** The resource a generated Secret belongs to. */
type Owned = RedisRef & { uid: string };

export interface PasswordKube {
  readSecretValue(namespace: string, name: string, key: string): Promise<string | null>;
  ensureAuthSecret(ref: Owned, secret?: AuthSecretRef, owner?: SecretOwner): Promise<GeneratedSecret>;
}

/** A Secret that is not there, or holds a password Redis cannot be given. */
export interface SecretProblem {
  text: string;
  /** The user's own Secret (a generated one is the leader's to make): worth a Warning. */
  userOwned: boolean;
  reason: 'AuthSecretMissing' | 'PasswordUnwritable';
}

/** What a kind's credentials get from its worker and hand on here. */
export interface PasswordContext {
  ref: RedisRef;
  kube: PasswordKube;
  isLeader(): boolean;
  log: Logger;
  now(): number;
}

/** Just the shared part of a kind's options. */
export function passwordContext(o: PasswordContext): PasswordContext {
  const { ref, kube, isLeader, log, now } = o;
  return { ref, kube, isLeader, log, now };
}

export interface SecretPasswordsOptions extends PasswordContext {
  /** The resource's kind, in log lines ("Redis", "RedisCluster"). */
  kind: string;
  /** The owner written on generated Secrets; undefined: a Redis's (the adapter's default). */
  owner?: SecretOwner | undefined;
  /** Said of a missing generated Secret (who makes it). */
  generatedNote: string;
  /** The polling interval now (it may depend on whether this instance leads). */
  everyMs(): number;
  /** Reads the kind's Secrets (through password()); true when every value it needs was found. */
  read(): Promise<boolean>;
  /** The operator's password changed (or is first known). */
  onOperatorPassword(password: string, previous: string | undefined): void;
}

export class SecretPasswords {
  readonly #o: SecretPasswordsOptions;
  #operator: string | undefined;
  #loadedAt = -Infinity;
  #attemptAt = -Infinity;
  #refused = false;
  #load: Promise<void> | null = null;

  constructor(options: SecretPasswordsOptions) {
    this.#o = options;
  }

  /** The operator's password, once read. */
  get operator(): string | undefined {
    return this.#operator;
  }

  /** A node refused our password: read the Secrets again soon. */
  refused(): void {
    this.#refused = true;
  }

  /** The next ensure() reads at once (a spec now names another Secret). */
  invalidate(): void {
    this.#loadedAt = -Infinity;
  }

  /**
   * True when `known()` (the kind's: the operator's password, and what else it cannot probe
   * without); starts a read when one is due, and waits for it only while not known.
   */
  async ensure(known: () => boolean): Promise<boolean> {
    const now = this.#o.now();
    const everyMs = this.#o.everyMs();
    const state = { loadedAt: this.#loadedAt, attemptAt: this.#attemptAt, refused: this.#refused, everyMs, now };
    const due = decideSecretRead(state).read;
    if (known()) {
      if (due && !this.#load) this.#start();
      return true;
    }
    if (!this.#load && now - this.#attemptAt > 1000) this.#start();
    if (this.#load) await this.#load;
    return known();
  }

  /** The operator's password as read now (null: missing or unusable). */
  useOperator(value: string | null): void {
    if (value === null || value === this.#operator) return;
    const previous = this.#operator;
    this.#operator = value;
    this.#o.onOperatorPassword(value, previous);
  }

  /** One Secret's password; a generated one is created first by the leader. */
  async password(src: AuthSecretRef): Promise<{ value: string | null; problem: SecretProblem | null }> {
    const { ref, kube, owner } = this.#o;
    let value: string | null;
    if (src.generated && this.#o.isLeader() && ref.uid) {
      const target = { namespace: ref.namespace, name: ref.name, uid: ref.uid };
      const r = owner ? await kube.ensureAuthSecret(target, src, owner) : await kube.ensureAuthSecret(target, src);
      const created = `created a generated secret (random password, owned by the ${this.#o.kind})`;
      if (r.created) this.#o.log.info({ secret: src.secretName }, created);
      value = r.password;
    } else {
      value = await kube.readSecretValue(ref.namespace, src.secretName, src.key);
    }
    if (value !== null && passwordWritable(value)) return { value, problem: null };
    if (value !== null) {
      const where = `Secret ${ref.namespace}/${src.secretName} key ${src.key}`;
      const text = `${where} is empty or holds a control character; Redis cannot be given it safely`;
      return { value: null, problem: { text, userOwned: true, reason: 'PasswordUnwritable' } };
    }
    const note = src.generated ? ` ${this.#o.generatedNote}` : '';
    const text = `secret ${src.secretName} (key ${src.key}) not found${note}`;
    return { value, problem: { text, userOwned: !src.generated, reason: 'AuthSecretMissing' } };
  }

  #start(): void {
    this.#attemptAt = this.#o.now();
    this.#refused = false;
    this.#load = this.#o
      .read()
      .then((complete) => {
        if (complete) this.#loadedAt = this.#o.now();
      })
      .catch((err: unknown) => {
        const f = kubeFailure(err);
        this.#o.log.warn({ code: f.code, err: f.message }, `could not read the ${this.#o.kind} secrets`);
      })
      .finally(() => {
        this.#load = null;
      });
  }
}

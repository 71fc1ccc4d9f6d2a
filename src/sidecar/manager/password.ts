// One Redis's password: where it comes from (the auth Secret, created by the leader when the spec
// names none), the Redis connections that use it, and the move of running nodes to a new one.
// Invariants:
// - The Secret is re-read every secretRefreshMs, and within a second after a node refused our
//   password; a read never blocks the probes once a password is known.
// - After a change, the previous password is kept (with its own connections) until every node
//   that still answers only to it has been moved to the new one; nodes are moved by the leader
//   only, with requirepass AND masterauth, so replication links survive the rotation.
// - Only the leader creates the generated Secret or sends an Event.
import type { Logger } from 'pino';
import { authSecretRef } from '../../api/auth.ts';
import type { RedisSpec } from '../../api/schema.ts';
import { REDIS_PORT } from '../../api/labels.ts';
import { kubeFailure, type GeneratedSecret, type RedisRef } from '../kube/client.ts';
import type { Endpoint, ProbeResult, RedisAdapter } from '../redis/index.ts';
import type { EventMemory, EventToSend } from './events.ts';
import type { PodView } from './pods.ts';

export interface SecretReader {
  readSecretValue(namespace: string, name: string, key: string): Promise<string | null>;
  ensureAuthSecret(redis: RedisRef & { uid: string }): Promise<GeneratedSecret>;
}

export interface PasswordSourceOptions {
  ref: RedisRef;
  kube: SecretReader;
  isLeader(): boolean;
  log: Logger;
  memory: EventMemory;
  event(e: EventToSend): void;
  newAdapter(password: string | undefined): RedisAdapter;
  secretRefreshMs: number;
  now(): number;
}

export class PasswordSource {
  readonly #o: PasswordSourceOptions;
  /** Connections with the current password: probes and steps use these. */
  readonly adapter: RedisAdapter;
  /** The previous password, kept after a Secret change to reach nodes still running with it. */
  #fallback: { password: string; adapter: RedisAdapter } | null = null;
  /** Pods (by uid) that answered only the previous password: the leader moves them to the new one. */
  readonly #oldPassword = new Set<string>();
  #spec: RedisSpec | null = null;
  #password: string | undefined;
  #loadedAt = -Infinity;
  #attemptAt = -Infinity;
  #load: Promise<void> | null = null;
  #refused = false;

  constructor(options: PasswordSourceOptions) {
    this.#o = options;
    this.adapter = options.newAdapter(undefined);
  }

  get known(): boolean {
    return this.#password !== undefined;
  }

  /** A new valid spec: a different Secret or key is read at once. */
  setSpec(spec: RedisSpec): void {
    const before = this.#spec ? authSecretRef(this.#o.ref.name, this.#spec) : null;
    const after = authSecretRef(this.#o.ref.name, spec);
    this.#spec = spec;
    if (before && (before.secretName !== after.secretName || before.key !== after.key)) this.#loadedAt = -Infinity;
  }

  /** True when a password is known; loads it (or creates the generated Secret, as leader) when not. */
  async ensure(): Promise<boolean> {
    const now = this.#o.now();
    const due = now - this.#loadedAt > this.#o.secretRefreshMs || (this.#refused && now - this.#attemptAt > 1000);
    if (this.#password !== undefined) {
      if (due && !this.#load) this.#startLoad();
      return true;
    }
    if (!this.#load && now - this.#attemptAt > 1000) this.#startLoad();
    if (this.#load) await this.#load;
    return this.#password !== undefined;
  }

  /** Probes a node; one that refuses the current password is tried with the previous one. */
  async probe(uid: string, endpoint: Endpoint, running: () => boolean): Promise<ProbeResult> {
    const result = await this.adapter.probe(endpoint);
    if (!result.ok && result.error.kind === 'auth') {
      // The password in the Secret changed and this node still runs with the previous one, or
      // the Secret changed and we have not read it yet.
      this.#refused = true;
      const fb = this.#fallback;
      if (fb && running()) {
        const old = await fb.adapter.probe(endpoint);
        if (old.ok) {
          this.#oldPassword.add(uid);
          return old;
        }
      }
    } else if (result.ok) {
      this.#oldPassword.delete(uid);
    }
    return result;
  }

  /** Connections only to the addresses pods still have. */
  retain(endpoints: Endpoint[]): void {
    this.adapter.retain(endpoints);
    this.#fallback?.adapter.retain(endpoints);
  }

  forgetPod(uid: string): void {
    this.#oldPassword.delete(uid);
  }

  close(): void {
    this.adapter.close();
    this.#fallback?.adapter.close();
  }

  #startLoad(): void {
    this.#attemptAt = this.#o.now();
    this.#refused = false;
    this.#load = this.#read()
      .catch((err: unknown) => {
        const f = kubeFailure(err);
        this.#o.log.warn({ code: f.code, err: f.message }, 'could not read the auth secret');
      })
      .finally(() => {
        this.#load = null;
      });
  }

  async #read(): Promise<void> {
    const spec = this.#spec;
    if (!spec) return;
    const { ref, kube, memory, log } = this.#o;
    const src = authSecretRef(ref.name, spec);
    let value: string | null;
    if (src.generated && this.#o.isLeader() && ref.uid) {
      const r = await kube.ensureAuthSecret({ namespace: ref.namespace, name: ref.name, uid: ref.uid });
      if (r.created) log.info({ secret: src.secretName }, 'created the generated auth secret (random password, owned by the Redis)');
      value = r.password;
    } else {
      value = await kube.readSecretValue(ref.namespace, src.secretName, src.key);
    }
    if (value === null) {
      const problem = `secret ${src.secretName} (key ${src.key}) not found${src.generated ? ' (it is created by the leader)' : ''}`;
      if (memory.authProblem !== problem) {
        memory.authProblem = problem;
        log.warn({ secret: src.secretName, key: src.key }, 'auth secret missing: waiting for it');
      }
      if (!src.generated && memory.authProblemTold !== problem && this.#o.isLeader()) {
        memory.authProblemTold = problem;
        this.#o.event({
          type: 'Warning',
          reason: 'AuthSecretMissing',
          message: `${problem}: the pods cannot start and the manager cannot reach Redis until it exists`,
        });
      }
      return;
    }
    memory.authProblem = null;
    memory.authProblemTold = null;
    this.#loadedAt = this.#o.now();
    if (value === this.#password) return;
    const previous = this.#password;
    this.#password = value;
    if (previous !== undefined) {
      // Rotation: running nodes keep the password they started with (the pods read it from env);
      // keep reaching them with the previous one until the leader moved them to the new one.
      this.#fallback?.adapter.close();
      this.#fallback = { password: previous, adapter: this.#o.newAdapter(previous) };
      log.warn('the auth secret changed: moving running nodes to the new password');
    }
    this.adapter.setPassword(value);
  }

  /**
   * Nodes that still run with the previous password get the new one (requirepass for clients,
   * masterauth for their replication link), so replication survives the rotation and pods
   * started later (which read the new password from env) can follow them. Returns the uids moved.
   */
  async rotate(views: PodView[]): Promise<Set<string>> {
    const fb = this.#fallback;
    const moved = new Set<string>();
    if (!fb || this.#oldPassword.size === 0 || this.#password === undefined) return moved;
    const password = this.#password;
    await Promise.all(
      views
        .filter((v) => this.#oldPassword.has(v.uid) && v.ip)
        .map(async (v) => {
          if (!this.#o.isLeader()) return;
          const r = await fb.adapter.configSet({ host: v.ip!, port: REDIS_PORT }, { masterauth: password, requirepass: password });
          if (r.ok) {
            moved.add(v.uid);
            this.#oldPassword.delete(v.uid);
            this.#o.log.info({ pod: v.name }, 'moved a running node to the new password');
            this.#o.event({
              type: 'Normal',
              reason: 'PasswordRotated',
              message: `${v.name} now uses the password from the auth secret (requirepass and masterauth set at runtime)`,
            });
          } else {
            this.#o.log.warn({ pod: v.name, err: r.error.message }, 'could not move a node to the new password');
          }
        }),
    );
    return moved;
  }
}

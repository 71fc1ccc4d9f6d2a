// One Redis's credentials: the operator's own user, which every sidecar connection uses (its
// password in the generated <name>-operator Secret, never rotated), and the default user's password
// (spec.auth or the generated <name>-auth: what clients use, rotated by the users pass, users.ts).
// Invariants:
// - The Secrets are read, polled and cached by the shared core (core/credentials.ts): every
//   secretRefreshMs by the instance that acts (STANDBY_REFRESH_FACTOR times less often by the
//   others), every second while a value is missing, and within a second after a node refused us.
// - A password that breaks passwordWritable (empty, or a control character) is never used (no
//   AUTH, never handed to the users pass): it counts as missing, told with the Secret and key.
// - A node that refuses the operator's user but takes the default user's password (the current
//   one, or the one before a change) was started without that user (by an earlier version) or
//   before its Secret was made again. It is probed as `default`, so it never looks silent, and the
//   leader adopts it: gives it the operator's user and points its replication link at that user.
// - With spec.tls every connection verifies the node's certificate against the TLS Secret's CA
//   (redis/tls.ts); probing waits until that CA is known. The Secret's certificate is kept for
//   the reloader (tls-reload.ts), which has nodes load a renewed one.
// - The exporter's Secret (<name>-exporter) is created and read with the others, whether the
//   exporter is on or not, so turning it on never waits for a Secret; nothing else depends on it.
// - Only the leader creates a generated Secret, adopts a node or sends an Event.
import type { Logger } from 'pino';
import {
  OPERATOR_RULES,
  OPERATOR_USER,
  authSecretRef,
  exporterSecretRef,
  operatorSecretRef,
  type AuthSecretRef,
} from '../../../api/auth.ts';
import type { RedisSpec } from '../../../api/schema.ts';
import { REDIS_PORT } from '../../../api/labels.ts';
import type { GeneratedSecret, RedisRef } from '../../adapters/kube/client.ts';
import { TLS_CA_KEY, TLS_CERT_KEY, tlsSecretName } from '../../../api/tls.ts';
import type { Endpoint, ProbeResult, RedisAdapter } from '../../adapters/redis/index.ts';
import { pemFingerprint, tlsOptionsFor } from '../../adapters/redis/tls.ts';
import type { ConnectionOptions } from 'node:tls';
import type { EventMemory, EventToSend } from './events.ts';
import type { PodView } from './pods.ts';
import { passwordContext, SecretPasswords, type SecretProblem } from '../../core/credentials.ts';

/** Instances that do not act on a Redis re-read its Secrets this many times less often. */
export const STANDBY_REFRESH_FACTOR = 6;
export interface SecretReader {
  readSecretValue(namespace: string, name: string, key: string): Promise<string | null>;
  readSecretValues(namespace: string, name: string, keys: readonly string[]): Promise<Record<string, string> | null>;
  ensureAuthSecret(redis: RedisRef & { uid: string }, ref?: AuthSecretRef): Promise<GeneratedSecret>;
}

export interface RedisCredentialsOptions {
  ref: RedisRef;
  kube: SecretReader;
  isLeader(): boolean;
  log: Logger;
  memory: EventMemory;
  event(e: EventToSend): void;
  /** Connections as `username` (undefined: `default`) with `password`. */
  newAdapter(username: string | undefined, password: string | undefined): RedisAdapter;
  secretRefreshMs: number;
  now(): number;
}

interface Legacy {
  password: string;
  adapter: RedisAdapter;
}

export class RedisCredentials {
  readonly #o: RedisCredentialsOptions;
  /** Connections as the operator's user: probes, steps and the users pass use these. */
  readonly adapter: RedisAdapter;
  /** As `default`, with its current password and the one before: for nodes not adopted yet. */
  #legacy: Legacy[] = [];
  /** Pods (by uid) that answered only as `default`, with the connections that worked. */
  readonly #unadopted = new Map<string, Legacy>();
  /** The last refusal told per pod (uid). */
  readonly #refusals = new Map<string, string>();
  readonly #secrets: SecretPasswords;
  #spec: RedisSpec | null = null;
  #clientPassword: string | undefined;
  #exporterPassword: string | undefined;
  /**
   * This Redis' share of the refresh interval, added to it (0 to 0.5 of it): workers started
   * together would otherwise re-read all their Secrets in the same instant, a burst of hundreds
   * of requests that queues a failover's label patch behind it.
   */
  readonly #spread = Math.random() * 0.5;
  #ca: string | undefined;
  #tlsOptions: ConnectionOptions | undefined;
  #certificate: string | null = null;

  constructor(options: RedisCredentialsOptions) {
    this.#o = options;
    this.adapter = options.newAdapter(OPERATOR_USER, undefined);
    this.#secrets = new SecretPasswords({
      ...passwordContext(options),
      kind: 'Redis',
      generatedNote: '(it is created by the leader)',
      // The instance that acts re-reads on schedule (a rotation is its to apply); the others only
      // need the password to probe, and a refusal re-reads anyway.
      everyMs: () =>
        (options.isLeader() ? options.secretRefreshMs : options.secretRefreshMs * STANDBY_REFRESH_FACTOR) *
        (1 + this.#spread),
      read: () => this.#read(),
      onOperatorPassword: (password, previous) => {
        if (previous !== undefined)
          options.log.warn("the operator's Secret changed: nodes with the previous password are adopted again");
        this.adapter.setPassword(password);
      },
    });
  }

  /** The operator's password (and with TLS, the CA) is known: probing may start. */
  get known(): boolean {
    return this.#secrets.operator !== undefined && (this.#spec?.tls === undefined || this.#tlsOptions !== undefined);
  }

  /** With TLS: the fingerprint of the certificate in the Secret now (what every node should serve). */
  get certificate(): string | null {
    return this.#certificate;
  }

  /** The default user's password (what clients use), once read. */
  get clientPassword(): string | undefined {
    return this.#clientPassword;
  }

  /** The exporter user's password (its Secret), once read. */
  get exporterPassword(): string | undefined {
    return this.#exporterPassword;
  }

  /** A new valid spec: a different Secret or key is read at once. */
  setSpec(spec: RedisSpec): void {
    const before = this.#spec ? authSecretRef(this.#o.ref.name, this.#spec) : null;
    const after = authSecretRef(this.#o.ref.name, spec);
    this.#spec = spec;
    if (before && (before.secretName !== after.secretName || before.key !== after.key)) {
      this.#secrets.invalidate();
    }
  }

  /** True when the operator's password is known; loads the Secrets (creating them, as leader) when not. */
  ensure(): Promise<boolean> {
    return this.#secrets.ensure(() => this.known);
  }

  /** Probes a node as the operator; one that refuses it is tried as `default` (not adopted yet). */
  async probe(uid: string, endpoint: Endpoint, running: () => boolean): Promise<ProbeResult> {
    const result = await this.adapter.probe(endpoint);
    if (!result.ok && result.error.kind === 'auth') {
      this.#secrets.refused();
      for (const legacy of running() ? this.#legacy : []) {
        const old = await legacy.adapter.probe(endpoint);
        if (old.ok) {
          this.#unadopted.set(uid, legacy);
          return old;
        }
      }
      // Said once per node and reason: a wrong password or a certificate we do not accept is a
      // configuration problem a human must see (the decision only says the node does not answer).
      if (this.#refusals.get(uid) !== result.error.message) {
        this.#refusals.set(uid, result.error.message);
        this.#o.log.warn(
          { host: endpoint.host, err: result.error.message },
          'a node refused the operator (or its certificate was refused)',
        );
      }
    } else if (result.ok) {
      this.#unadopted.delete(uid);
      this.#refusals.delete(uid);
    }
    return result;
  }

  /** Connections only to the addresses pods still have. */
  retain(endpoints: Endpoint[]): void {
    this.adapter.retain(endpoints);
    for (const l of this.#legacy) l.adapter.retain(endpoints);
  }

  forgetPod(uid: string): void {
    this.#unadopted.delete(uid);
    this.#refusals.delete(uid);
  }

  close(): void {
    this.adapter.close();
    for (const l of this.#legacy) l.adapter.close();
  }

  /**
   * Leader: gives each node that answered only as `default` the operator's user, and points its
   * replication link at it (masteruser/masterauth), so the default user's password can rotate
   * without breaking the link. Returns the uids adopted (the round probes them again).
   */
  async adopt(views: PodView[]): Promise<Set<string>> {
    const adopted = new Set<string>();
    const password = this.#secrets.operator;
    if (this.#unadopted.size === 0 || password === undefined) return adopted;
    await Promise.all(
      views
        .filter((v) => this.#unadopted.has(v.uid) && v.ip)
        .map(async (v) => {
          const legacy = this.#unadopted.get(v.uid)!;
          if (!this.#o.isLeader()) return;
          const r = await legacy.adapter.adoptOperator(
            { host: v.ip!, port: REDIS_PORT },
            OPERATOR_USER,
            OPERATOR_RULES,
            password,
          );
          if (!r.ok) {
            this.#o.log.warn({ pod: v.name, err: r.error.message }, "could not give a node the operator's user");
            return;
          }
          adopted.add(v.uid);
          this.#unadopted.delete(v.uid);
          this.#o.log.info({ pod: v.name }, "gave a node the operator's user");
          this.#o.event({
            type: 'Normal',
            reason: 'OperatorUserAdded',
            message: `${v.name} had no ${OPERATOR_USER} user with the password of Secret ${operatorSecretRef(this.#o.ref.name).secretName} (started by an earlier version, or the Secret was made again): added it, and its replication link now authenticates as it`,
          });
        }),
    );
    return adopted;
  }

  /** True when every value needed was found. */
  async #read(): Promise<boolean> {
    const spec = this.#spec;
    if (!spec) return false;
    const { ref } = this.#o;
    const tlsName = tlsSecretName(ref.name, spec);
    const [operator, client, tls, exporter] = await Promise.all([
      this.#secrets.password(operatorSecretRef(ref.name)),
      this.#secrets.password(authSecretRef(ref.name, spec)),
      tlsName === undefined ? null : this.#tls(tlsName),
      this.#secrets.password(exporterSecretRef(ref.name)),
    ]);
    if (exporter.value !== null) this.#exporterPassword = exporter.value;
    this.#problem(operator.problem ?? client.problem ?? tls?.problem ?? null);
    const complete = operator.value !== null && client.value !== null && tls?.ca !== null;
    if (tls?.ca && tls.ca !== this.#ca) {
      this.#ca = tls.ca;
      this.#tlsOptions = tlsOptionsFor(tls.ca, ref.name, ref.namespace);
      this.adapter.setTls(this.#tlsOptions);
      for (const l of this.#legacy) l.adapter.setTls(this.#tlsOptions);
    }
    this.#certificate = tls?.certificate ? pemFingerprint(tls.certificate) : null;
    this.#secrets.useOperator(operator.value);
    if (client.value !== null && client.value !== this.#clientPassword) {
      // Keep the previous password's connections: a node not adopted yet may still run with it.
      const previous = this.#legacy[0];
      for (const l of this.#legacy.slice(1)) l.adapter.close();
      const adapter = this.#o.newAdapter(undefined, client.value);
      adapter.setTls(this.#tlsOptions);
      this.#legacy = [{ password: client.value, adapter }, ...(previous ? [previous] : [])];
      this.#clientPassword = client.value;
    }
    return complete;
  }

  /** The TLS Secret's CA and certificate, in one read. */
  async #tls(
    secretName: string,
  ): Promise<{ ca: string | null; certificate: string | null; problem: SecretProblem | null }> {
    const { ref, kube } = this.#o;
    const values = await kube.readSecretValues(ref.namespace, secretName, [TLS_CA_KEY, TLS_CERT_KEY]);
    const ca = values?.[TLS_CA_KEY] ?? null;
    const problem =
      ca === null
        ? {
            text: `secret ${secretName} (key ${TLS_CA_KEY}) not found`,
            userOwned: true,
            reason: 'AuthSecretMissing' as const,
          }
        : null;
    return { ca, certificate: values?.[TLS_CERT_KEY] ?? null, problem };
  }

  /** Tells a missing Secret once (a Warning only for the user's own: the leader makes generated ones). */
  #problem(problem: SecretProblem | null): void {
    const { memory, log } = this.#o;
    if (problem === null) {
      memory.authProblem = null;
      memory.authProblemTold = null;
      return;
    }
    const { text, userOwned, reason } = problem;
    if (memory.authProblem !== text) {
      memory.authProblem = text;
      log.warn({ problem: text }, 'a Redis secret is missing: waiting for it');
    }
    if (userOwned && memory.authProblemTold !== text && this.#o.isLeader()) {
      memory.authProblemTold = text;
      this.#o.event({
        type: 'Warning',
        reason,
        message: `${text}: the pods cannot start and the manager cannot reach Redis until it exists`,
      });
    }
  }
}

// A RedisCluster's passwords. The sidecar talks to every node as the operator's own ACL user
// (`redis-operator`, password in the generated `<name>-operator` Secret, never rotated), exactly
// as for Redis: probes, cluster commands and MIGRATE's AUTH2 never depend on the password
// clients use. The clients' password (spec.auth, or the generated `<name>-auth`) is only made to
// exist: the pods need it to start.
// Invariants:
// - The exporter's Secret (<name>-exporter) is created and read with them, whether the exporter
//   is on or not; its password is given to nodes that lack the exporter's user.
// - Only the acting instance creates a generated Secret (owned by the RedisCluster, so it goes
//   with it); creating is safe to race (kube/secrets.ts).
// - The Secrets are polled (decide/secret-reads.ts): every pollMs, every second while a value is
//   missing, and within a second after a node refused the password.
// - A password that breaks passwordWritable (empty, or a control character) is never used: it
//   counts as missing, told with the Secret and key, never the value.
import type { Logger } from 'pino';
import { authSecretRef, exporterSecretRef, operatorSecretRef, type AuthSecretRef } from '../../../api/auth.ts';
import { REDIS_CLUSTER_KIND as CLUSTER_KIND, redisClusterPodSelectorLabels as clusterPodSelectorLabels } from '../../../api/rediscluster-names.ts';
import type { RedisClusterSpec } from '../../../api/rediscluster-schema.ts';
import { passwordWritable } from '../../../api/secret-report.ts';
import { decideSecretRead } from '../../redis/decide/secret-reads.ts';
import { kubeFailure, type RedisRef } from '../../adapters/kube/client.ts';
import type { ClusterKube } from './types.ts';

export interface ClusterCredentialsOptions {
  ref: RedisRef;
  kube: Pick<ClusterKube, 'readSecretValue' | 'ensureAuthSecret'>;
  isLeader(): boolean;
  log: Logger;
  /** The operator's password changed (or is first known). */
  onPassword(password: string): void;
  /** A user-owned Secret is missing, or a password unusable (said once per problem). */
  onMissing(text: string, reason: 'AuthSecretMissing' | 'PasswordUnwritable'): void;
  pollMs: number;
  now(): number;
}

export class ClusterCredentials {
  readonly #o: ClusterCredentialsOptions;
  #spec: RedisClusterSpec | null = null;
  #password: string | undefined;
  #exporterPassword: string | undefined;
  #loadedAt = -Infinity;
  #attemptAt = -Infinity;
  #refused = false;
  #load: Promise<void> | null = null;
  #told: string | null = null;

  constructor(options: ClusterCredentialsOptions) {
    this.#o = options;
  }

  get known(): boolean {
    return this.#password !== undefined;
  }

  /** The exporter user's password (its Secret), once read. */
  get exporterPassword(): string | undefined {
    return this.#exporterPassword;
  }

  setSpec(spec: RedisClusterSpec): void {
    this.#spec = spec;
  }

  /** A node refused our password: read the Secret again soon. */
  refused(): void {
    this.#refused = true;
  }

  /** True once the operator's password is known; starts a read when one is due. */
  async ensure(): Promise<boolean> {
    const due = decideSecretRead({
      loadedAt: this.#loadedAt,
      attemptAt: this.#attemptAt,
      refused: this.#refused,
      everyMs: this.#o.pollMs,
      now: this.#o.now(),
    }).read;
    if (due || (!this.known && this.#o.now() - this.#attemptAt > 1000)) this.#start();
    if (!this.known && this.#load) await this.#load;
    return this.known;
  }

  #start(): void {
    if (this.#load || !this.#spec) return;
    this.#attemptAt = this.#o.now();
    this.#refused = false;
    this.#load = this.#read(this.#spec)
      .then((complete) => {
        if (complete) this.#loadedAt = this.#o.now();
      })
      .catch((err: unknown) => {
        const f = kubeFailure(err);
        this.#o.log.warn({ code: f.code, err: f.message }, 'could not read the RedisCluster secrets');
      })
      .finally(() => {
        this.#load = null;
      });
  }

  async #read(spec: RedisClusterSpec): Promise<boolean> {
    const [operator, client, exporter] = await Promise.all([
      this.#value(operatorSecretRef(this.#o.ref.name)),
      this.#value(authSecretRef(this.#o.ref.name, spec)),
      this.#value(exporterSecretRef(this.#o.ref.name)),
    ]);
    if (exporter !== null) this.#exporterPassword = exporter;
    if (operator !== null && operator !== this.#password) {
      if (this.#password !== undefined) this.#o.log.warn("the operator's Secret of the RedisCluster changed: using the new password");
      this.#password = operator;
      this.#o.onPassword(operator);
    }
    return operator !== null && client !== null;
  }

  async #value(src: AuthSecretRef): Promise<string | null> {
    const { ref, kube } = this.#o;
    let value: string | null;
    if (src.generated && this.#o.isLeader() && ref.uid) {
      const r = await kube.ensureAuthSecret({ namespace: ref.namespace, name: ref.name, uid: ref.uid }, src, {
        kind: CLUSTER_KIND,
        labels: clusterPodSelectorLabels(ref.name),
      });
      if (r.created) this.#o.log.info({ secret: src.secretName }, 'created a generated secret (random password, owned by the RedisCluster)');
      value = r.password;
    } else {
      value = await kube.readSecretValue(ref.namespace, src.secretName, src.key);
    }
    const unwritable = value !== null && !passwordWritable(value);
    if (value === null || unwritable) {
      // Never the value, nor a hint of it: only where it is and why it is refused.
      const text = unwritable
        ? `Secret ${ref.namespace}/${src.secretName} key ${src.key} is empty or holds a control character; Redis cannot be given it safely`
        : `secret ${src.secretName} (key ${src.key}) not found${src.generated ? ' (the acting sidecar creates it)' : ''}`;
      if (this.#told !== text) {
        this.#told = text;
        this.#o.log.warn({ problem: text }, 'a RedisCluster secret is missing or unusable: waiting for it');
        if (!src.generated || unwritable) this.#o.onMissing(text, unwritable ? 'PasswordUnwritable' : 'AuthSecretMissing');
      }
      return null;
    }
    if (this.#told !== null) this.#told = null;
    return value;
  }
}

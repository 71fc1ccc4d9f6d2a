// A RedisCluster's passwords. The sidecar talks to every node as the operator's own ACL user
// (`redis-operator`, password in the generated `<name>-operator` Secret, never rotated), exactly
// as for Redis: probes, cluster commands and MIGRATE's AUTH2 never depend on the password
// clients use. The clients' password (spec.auth, or the generated `<name>-auth`) is only made to
// exist: the pods need it to start.
// Invariants:
// - The Secrets are read, polled and cached by the shared core (core/credentials.ts): every
//   pollMs, every second while a value is missing, and within a second after a node refused the
//   password. Only the acting instance creates a generated Secret (owned by the RedisCluster).
// - The exporter's Secret (<name>-exporter) is created and read with them, whether the exporter
//   is on or not; its password is given to nodes that lack the exporter's user.
// - A password that breaks passwordWritable (empty, or a control character) is never used: it
//   counts as missing, told with the Secret and key, never the value.
import type { Logger } from 'pino';
import { authSecretRef, exporterSecretRef, operatorSecretRef, type AuthSecretRef } from '../../../api/auth.ts';
import {
  REDIS_CLUSTER_KIND as CLUSTER_KIND,
  redisClusterPodSelectorLabels as clusterPodSelectorLabels,
} from '../../../api/rediscluster-names.ts';
import type { RedisClusterSpec } from '../../../api/rediscluster-schema.ts';
import type { RedisRef } from '../../adapters/kube/client.ts';
import { passwordContext, SecretPasswords } from '../../core/credentials.ts';
import type { ClusterKube } from './types.ts';

export interface RedisClusterCredentialsOptions {
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

export class RedisClusterCredentials {
  readonly #o: RedisClusterCredentialsOptions;
  readonly #secrets: SecretPasswords;
  #spec: RedisClusterSpec | null = null;
  #exporterPassword: string | undefined;
  #told: string | null = null;

  constructor(options: RedisClusterCredentialsOptions) {
    this.#o = options;
    this.#secrets = new SecretPasswords({
      ...passwordContext(options),
      kind: CLUSTER_KIND,
      owner: { kind: CLUSTER_KIND, labels: clusterPodSelectorLabels(options.ref.name) },
      generatedNote: '(the acting sidecar creates it)',
      everyMs: () => options.pollMs,
      read: () => this.#read(),
      onOperatorPassword: (password, previous) => {
        if (previous !== undefined)
          options.log.warn("the operator's Secret of the RedisCluster changed: using the new password");
        options.onPassword(password);
      },
    });
  }

  get known(): boolean {
    return this.#secrets.operator !== undefined;
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
    this.#secrets.refused();
  }

  /** True once the operator's password is known; starts a read when one is due. */
  ensure(): Promise<boolean> {
    return this.#secrets.ensure(() => this.known);
  }

  /** True when every value needed was found. */
  async #read(): Promise<boolean> {
    const spec = this.#spec;
    if (!spec) return false;
    const [operator, client, exporter] = await Promise.all([
      this.#value(operatorSecretRef(this.#o.ref.name)),
      this.#value(authSecretRef(this.#o.ref.name, spec)),
      this.#value(exporterSecretRef(this.#o.ref.name)),
    ]);
    if (exporter !== null) this.#exporterPassword = exporter;
    this.#secrets.useOperator(operator);
    return operator !== null && client !== null;
  }

  /** One password; a problem with it is told when it differs from the last one told. */
  async #value(src: AuthSecretRef): Promise<string | null> {
    const { value, problem } = await this.#secrets.password(src);
    if (problem) {
      if (this.#told !== problem.text) {
        this.#told = problem.text;
        this.#o.log.warn({ problem: problem.text }, 'a RedisCluster secret is missing or unusable: waiting for it');
        if (problem.userOwned) this.#o.onMissing(problem.text, problem.reason);
      }
      return null;
    }
    if (this.#told !== null) this.#told = null;
    return value;
  }
}

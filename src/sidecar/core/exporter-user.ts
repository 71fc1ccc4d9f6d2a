// Gives nodes that lack it the exporter's ACL user (core/decide/exporter-user.ts says which and why),
// for a Redis and a RedisCluster alike: the caller says which nodes answered and how to run one
// ACL SETUSER there. Invariants: the acting instance only; the password reaches Redis only as a
// SHA-256 hash; a failure is logged once per pod and retried next round; pods gone are forgotten.
import type { Logger } from 'pino';
import { EXPORTER_USER } from '../../api/auth.ts';
import { passwordHash } from '../../api/users.ts';
import { decideExporterUser, exporterUserArgs, type ExporterUserNode } from './decide/exporter-user.ts';
import type { RedisFailure } from '../adapters/redis/types.ts';

export interface ExporterUserOptions {
  log: Logger;
  isLeader(): boolean;
  /** The exporter Secret's password, once read. */
  password(): string | undefined;
  /** ACL SETUSER `user` `args` on the node at `ip`. */
  setUser(
    ip: string,
    user: string,
    args: readonly string[],
  ): Promise<{ ok: true } | { ok: false; error: RedisFailure }>;
}

export class ExporterUser {
  readonly #o: ExporterUserOptions;
  readonly #done = new Map<string, string>();
  readonly #told = new Set<string>();
  #hashOf: { password: string; hash: string } | null = null;

  constructor(options: ExporterUserOptions) {
    this.#o = options;
  }

  async reconcile(enabled: boolean, nodes: readonly ExporterUserNode[]): Promise<void> {
    if (!this.#o.isLeader()) return;
    const live = new Set(nodes.map((n) => n.uid));
    for (const uid of [...this.#done.keys()]) if (!live.has(uid)) this.#done.delete(uid);
    const hash = this.#hash();
    const todo = decideExporterUser({ enabled, hash, nodes, done: this.#done });
    for (const node of todo) {
      if (!this.#o.isLeader()) return;
      const r = await this.#o.setUser(node.ip, EXPORTER_USER, exporterUserArgs(hash!));
      if (r.ok) {
        this.#done.set(node.uid, hash!);
        this.#told.delete(node.uid);
      } else if (!this.#told.has(node.uid)) {
        this.#told.add(node.uid);
        this.#o.log.warn(
          { ip: node.ip, err: r.error.message },
          "could not give a node the exporter's user: its metrics stay empty until it has it; retried next round",
        );
      }
    }
  }

  #hash(): string | undefined {
    const password = this.#o.password();
    if (password === undefined) return undefined;
    if (this.#hashOf?.password !== password) this.#hashOf = { password, hash: passwordHash(password) };
    return this.#hashOf.hash;
  }
}

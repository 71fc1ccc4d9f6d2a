// Feeds the Sentinel endpoint: turns what this instance's informers hold (the Redises, their pods) and the passwords
// it reads into the next view (decide/view.ts), and hands it to the server, which answers from it and publishes its
// changes.
// Invariants: every instance runs its own feed from its own informers (leader or not), so each serves alone; a view
// is rebuilt after any informer event (coalesced: one rebuild per turn of the event loop) and after a password read
// that changed something; a Secret that cannot be read (API error) keeps the last value read, while a Secret or key
// found missing stops serving that Redis; passwords never reach a log.
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { RedisObject } from '../../api/schema.ts';
import { validateSpec } from '../../api/validate.ts';
import { sentinelInput, sentinelPasswordRef, servesSentinel } from './decide/inputs.ts';
import { EMPTY_VIEW, buildView, type SentinelRedisInput, type SentinelView } from './decide/view.ts';
import type { SentinelServer } from './server.ts';

export interface SentinelSources {
  /** Every Redis the informer holds, with its pods. */
  observed(): Array<{ redis: RedisObject; pods: V1Pod[] }>;
}

export interface SentinelFeedOptions {
  sources: SentinelSources;
  readSecretValue(namespace: string, name: string, key: string): Promise<string | null>;
  server: Pick<SentinelServer, 'update'>;
  logger: Logger;
  /** Passwords are read again this often (a rotated Secret takes effect within it). */
  secretRefreshMs: number;
}

type Verdict = ReturnType<typeof validateSpec>;

export class SentinelFeed {
  readonly #o: SentinelFeedOptions;
  readonly #log: Logger;
  /** Validated specs by namespace/name, kept while the resourceVersion stays (ajv on every pod event is waste). */
  readonly #specs = new Map<string, { version: string | undefined; verdict: Verdict }>();
  /** Passwords by namespace/secret/key: undefined until first read, null when found missing. */
  readonly #passwords = new Map<string, string | null>();
  /** Keys a read was tried for: an unread one never tried is read at once, not at the next refresh. */
  readonly #tried = new Set<string>();
  #view: SentinelView = EMPTY_VIEW;
  #scheduled = false;
  #timer: NodeJS.Timeout | undefined;
  #refreshing = false;
  #current: Promise<void> | undefined;
  #again = false;
  #stopped = false;

  constructor(options: SentinelFeedOptions) {
    this.#o = options;
    this.#log = options.logger.child({ component: 'sentinel-feed' });
  }

  /** Something the informers hold changed: rebuild soon (once for a burst of events). */
  changed(): void {
    if (this.#scheduled || this.#stopped) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#rebuild();
    });
  }

  /** Resolves once every served Redis's password has been tried once (and the view rebuilt with them). */
  async start(): Promise<void> {
    this.#rebuild();
    if (!this.#refreshing) this.#refreshNow();
    await this.#current;
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  get view(): SentinelView {
    return this.#view;
  }

  #served(): Array<{
    namespace: string;
    name: string;
    spec: NonNullable<Extract<Verdict, { ok: true }>['spec']>;
    pods: V1Pod[];
  }> {
    const out = [];
    const seen = new Set<string>();
    for (const { redis, pods } of this.#o.sources.observed()) {
      const namespace = redis.metadata.namespace ?? '';
      const name = redis.metadata.name;
      const k = `${namespace}/${name}`;
      seen.add(k);
      let cached = this.#specs.get(k);
      if (cached?.version === undefined || cached.version !== redis.metadata.resourceVersion) {
        cached = { version: redis.metadata.resourceVersion, verdict: validateSpec(name, redis.spec) };
        this.#specs.set(k, cached);
      }
      if (cached.verdict.ok && servesSentinel(cached.verdict.spec)) {
        out.push({ namespace, name, spec: cached.verdict.spec, pods });
      }
    }
    for (const k of this.#specs.keys()) if (!seen.has(k)) this.#specs.delete(k);
    return out;
  }

  #rebuild(): void {
    if (this.#stopped) return;
    const inputs: SentinelRedisInput[] = [];
    let untried = false;
    for (const r of this.#served()) {
      const ref = sentinelPasswordRef(r.name, r.spec);
      const k = `${r.namespace}/${ref.secretName}/${ref.key}`;
      const password = this.#passwords.get(k);
      if (password === undefined && !this.#tried.has(k)) untried = true;
      const input = sentinelInput(r.namespace, r.name, r.spec, r.pods, password);
      if (input !== null) inputs.push(input);
    }
    this.#view = buildView(inputs, [], this.#view);
    this.#o.server.update(this.#view);
    // A Redis newly asking to be served waits for its password no longer than one read.
    if (untried) this.#refreshNow();
  }

  #refreshNow(): void {
    if (this.#refreshing) {
      this.#again = true;
      return;
    }
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#current = this.#refresh();
  }

  async #refresh(): Promise<void> {
    this.#refreshing = true;
    let changed = false;
    const wanted = new Set<string>();
    for (const r of this.#served()) {
      const ref = sentinelPasswordRef(r.name, r.spec);
      const k = `${r.namespace}/${ref.secretName}/${ref.key}`;
      if (wanted.has(k)) continue;
      wanted.add(k);
      this.#tried.add(k);
      try {
        const value = await this.#o.readSecretValue(r.namespace, ref.secretName, ref.key);
        const differs = this.#passwords.get(k) !== value;
        changed ||= differs;
        this.#passwords.set(k, value);
        if (value === null && differs) {
          this.#log.warn(
            { namespace: r.namespace, name: r.name, secret: ref.secretName, key: ref.key },
            'the password Secret or key is missing: this Redis is not served on the Sentinel endpoint',
          );
        }
      } catch (err) {
        this.#log.warn(
          {
            namespace: r.namespace,
            name: r.name,
            secret: ref.secretName,
            err: err instanceof Error ? err.message : String(err),
          },
          'cannot read the password Secret for the Sentinel endpoint; keeping the last value read',
        );
      }
    }
    for (const k of this.#passwords.keys()) {
      if (!wanted.has(k)) {
        this.#passwords.delete(k);
        changed = true;
      }
    }
    for (const k of this.#tried) if (!wanted.has(k)) this.#tried.delete(k);
    this.#refreshing = false;
    if (this.#stopped) return;
    if (changed) this.#rebuild();
    // The rebuild may have started the next read already (a Redis never read): that one schedules what follows.
    if (this.#refreshing) return;
    if (this.#again) {
      this.#again = false;
      this.#refreshNow();
      return;
    }
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#current = this.#refresh();
    }, this.#o.secretRefreshMs);
    this.#timer.unref();
  }
}

// Leadership divided into shards: each Redis belongs to one shard (decide/shards.ts), each shard
// has its own Lease, and the instance holding a shard's Lease is the only one acting on its Redis.
// Each instance keeps its own membership Lease renewed and watches the Leases of its namespace;
// from them it computes, like every other instance, which live instance should hold each shard,
// and tries for those shards only. Adding instances adds capacity; a dead instance's shards go to
// the survivors once its membership Lease and its shard Leases have gone unrenewed for a lease
// duration.
// Invariants:
// - Safety is per shard and is the single-Lease election's (leader.ts): this instance acts on a
//   Redis only while it holds that Redis' shard Lease within its renew deadline. Membership only
//   decides who tries: instances that disagree about it still cannot both hold a shard.
// - A member's liveness and a shard Lease's silence are judged on this instance's clock, from the
//   moment the informer delivered the version (never the writer's timestamps alone).
// - An instance makes no request for a shard it is not assigned (the informer shows it to it):
//   at rest the API sees one renewal per held Lease per retry period and one watch per instance.
// - stop(): the shards are handed back first (stop acting, then release), then the membership
//   Lease, so the survivors take over at their next round instead of after expiry.
import type { V1Lease } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import {
  foldSightings,
  liveMembers,
  memberLeaseName,
  ownerOf,
  shardLeaseName,
  shardOf,
  type MemberSighting,
} from '../../redis/decide/shards.ts';
import type { MultiInformer } from './informers.ts';
import type { LeaseClient } from './leases.ts';
import { LeaderElector } from './leader.ts';
import type { LeaderSettings, Observation } from './lease-decision.ts';

/** What the manager needs of a sharded leadership (see manager.ts). */
export interface ShardedLeader {
  shardOf(namespace: string, name: string): number;
  /** Whether this instance may act on the shard's Redis now (computed from the clock on every call). */
  isLeaderOf(shard: number): boolean;
  /** The shards this instance may act on now. */
  held(): number[];
}

export interface ShardLeadershipOptions {
  identity: string;
  shards: number;
  /** Base name: shard Leases are `<base>-shard-<i>`, membership Leases `<base>-member-<identity>`. */
  leaseName: string;
  settings: LeaderSettings;
  leaseClient(name: string): LeaseClient;
  leases: MultiInformer<V1Lease>;
  logger: Logger;
  /** Wall clock in ms (the electors' clock). */
  now?: () => number;
  onShardChanged?: (shard: number, leading: boolean) => void;
}

export class ShardLeadership implements ShardedLeader {
  readonly shards: number;
  readonly #o: ShardLeadershipOptions;
  readonly #now: () => number;
  readonly #log: Logger;
  readonly #member: LeaderElector;
  readonly #electors: LeaderElector[] = [];
  #members = new Map<string, MemberSighting>();
  #leases = new Map<string, MemberSighting>();
  #owners: Array<string | null> = [];
  #timer: NodeJS.Timeout | undefined;

  constructor(options: ShardLeadershipOptions) {
    this.#o = options;
    this.shards = options.shards;
    this.#now = options.now ?? Date.now;
    this.#log = options.logger.child({ module: 'shards', identity: options.identity });
    const common = { identity: options.identity, settings: options.settings, logger: options.logger, now: this.#now };
    this.#member = new LeaderElector({
      ...common,
      client: options.leaseClient(memberLeaseName(options.leaseName, options.identity)),
    });
    for (let i = 0; i < options.shards; i++) {
      const name = shardLeaseName(options.leaseName, i, options.shards);
      this.#electors.push(
        new LeaderElector({
          ...common,
          client: options.leaseClient(name),
          eligible: () => this.ownerOf(i) === options.identity,
          sighting: () => this.#sighting(name),
          onStartedLeading: () => options.onShardChanged?.(i, true),
          onStoppedLeading: () => options.onShardChanged?.(i, false),
        }),
      );
    }
    for (const verb of ['add', 'update', 'delete'] as const) options.leases.on(verb, () => this.#refresh());
  }

  shardOf(namespace: string, name: string): number {
    return shardOf(namespace, name, this.shards);
  }

  isLeaderOf(shard: number): boolean {
    return this.#electors[shard]?.isLeader() ?? false;
  }

  /** The shards this instance may act on now. */
  held(): number[] {
    return this.#electors.flatMap((e, i) => (e.isLeader() ? [i] : []));
  }

  /** The live instance that should hold the shard, as this instance sees the members now. */
  ownerOf(shard: number): string | null {
    return ownerOf(shard, this.members());
  }

  /** Live members (this instance always counts itself), sorted. */
  members(): string[] {
    return liveMembers(this.#members, this.#now(), this.#o.settings.leaseDurationSeconds * 1000, this.#o.identity);
  }

  /** Starts the membership Lease, the informer and the shard electors; resolves once the informer listed. */
  async start(): Promise<void> {
    this.#member.start();
    await this.#o.leases.start();
    this.#refresh();
    // Liveness lapses with time alone (no event says "nothing happened"): re-judge every period.
    this.#timer = setInterval(() => this.#refresh(), this.#o.settings.retryPeriodMs);
    this.#timer.unref();
    for (const e of this.#electors) e.start();
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    await Promise.allSettled(this.#electors.map((e) => e.stop()));
    await this.#member.stop();
    await this.#o.leases.stop();
  }

  #sighting(leaseName: string): Observation | undefined {
    const s = this.#leases.get(leaseName);
    return s ? { resourceVersion: s.resourceVersion, seenAt: s.changedAt } : undefined;
  }

  /** Folds the informer's cache into the sightings and pokes the electors whose owner changed. */
  #refresh(): void {
    const now = this.#now();
    const prefix = memberLeaseName(this.#o.leaseName, '');
    const all = this.#o.leases.list().map((l) => ({
      identity: l.metadata?.name ?? '',
      resourceVersion: l.metadata?.resourceVersion ?? '',
      holder: l.spec?.holderIdentity ?? '',
    }));
    this.#leases = foldSightings(this.#leases, all, now);
    // The membership Leases' sightings, keyed by the member they name.
    this.#members = new Map(
      [...this.#leases].filter(([name]) => name.startsWith(prefix)).map(([name, s]) => [name.slice(prefix.length), s]),
    );
    const live = this.members();
    const owners = this.#electors.map((_, i) => ownerOf(i, live));
    const moved = owners.flatMap((o, i) => (o !== this.#owners[i] ? [i] : []));
    if (moved.length === 0) return;
    const first = this.#owners.length === 0;
    this.#owners = owners;
    const mine = owners.flatMap((o, i) => (o === this.#o.identity ? [i] : []));
    this.#log.info(
      { members: live, mine, moved: first ? undefined : moved },
      first ? 'shards assigned' : 'shards reassigned',
    );
    for (const i of moved) this.#electors[i]!.poke();
  }
}

// Leader election loop over a coordination.k8s.io/v1 Lease (client-node has no helper). Only the
// leader's sidecar acts on Redis; the others stand by and take over when it goes away.
// Decisions come from lease-decision.ts; this module owns the timing and the I/O.
// Invariants:
// - isLeader() is computed from the clock on every call: it is false from
//   lastRenew + renewDeadline on, whether or not the loop or the timers have run. Act only after
//   checking it. onStoppedLeading also fires at that moment (a timer), which is at least
//   leaseDuration - renewDeadline before any other instance may take over.
// - lastRenew is the time read BEFORE sending the write that succeeded (= the renewTime written),
//   never the time the answer came back.
// - A 409 on a write means someone else wrote the Lease: re-read at once; if another identity
//   holds it, stop leading now rather than at the deadline.
// - stop() stops acting first, then releases the Lease (empty holder) so a standby takes over at
//   its next poll instead of waiting for the lease to expire.
import { pino, type Logger } from 'pino';
import { kubeFailure, LeaseConflictError, type LeaseClient } from './client.ts';
import {
  decide,
  DEFAULT_LEADER_SETTINGS,
  earliest,
  mayAct,
  observe,
  releaseSpec,
  settingsProblems,
  type Decision,
  type LeaderSettings,
  type LeaseState,
  type Observation,
} from './lease-decision.ts';

export interface LeadershipInfo {
  /**
   * Why this instance became leader: LeaseAbsent (created it), Released, Expired (takeover) or HeldBySelf (restart with
   * the same identity).
   */
  reason: Exclude<Decision, { action: 'wait' }>['reason'];
  leaseTransitions: number;
}

export interface LeaderElectorOptions {
  client: LeaseClient;
  /** POD_NAME: written as holderIdentity. Must be unique among the instances. */
  identity: string;
  settings?: Partial<LeaderSettings>;
  /** Wall clock in ms (injectable for tests). */
  now?: () => number;
  logger?: Logger;
  onStartedLeading?: (info: LeadershipInfo) => void;
  /** Called when this instance must stop acting: RenewDeadlineExceeded, LeaseLost, Stopped. */
  onStoppedLeading?: (reason: string) => void;
  /** Called when the observed holder changes (including to this instance, or to nobody: ''). */
  onNewLeader?: (identity: string) => void;
  /**
   * Whether this instance should hold the Lease now (a shard assigned to it). When false it makes
   * no request for the Lease, and if it leads it stops acting, then hands the Lease back
   * (released, so the instance it now belongs to takes it at its next poll). Absent: always.
   */
  eligible?: () => boolean;
  /**
   * When this instance first saw the Lease's current version elsewhere (a Lease informer, same
   * clock as `now`): an instance that becomes eligible for a Lease it never polled counts its
   * holder's silence from then, not from its own first read (see earliest()).
   */
  sighting?: () => Observation | undefined;
}

export class LeaderElector {
  readonly identity: string;
  readonly settings: LeaderSettings;
  private readonly client: LeaseClient;
  private readonly now: () => number;
  private readonly logger: Logger;
  private readonly opts: LeaderElectorOptions;
  private leading = false;
  private lastRenewAt: number | undefined;
  private observation: Observation | undefined;
  private lease: LeaseState | null | undefined;
  private observedLeader: string | undefined;
  private stopped = true;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private failing = false;

  constructor(options: LeaderElectorOptions) {
    this.opts = options;
    this.client = options.client;
    this.identity = options.identity;
    this.settings = { ...DEFAULT_LEADER_SETTINGS, ...options.settings };
    this.now = options.now ?? Date.now;
    this.logger = (options.logger ?? pino({ level: 'silent' })).child({
      lease: `${options.client.namespace}/${options.client.name}`,
      identity: options.identity,
    });
    const problems = settingsProblems(this.settings);
    if (!options.identity) problems.push('identity (POD_NAME) must not be empty');
    if (problems.length > 0) throw new Error(`invalid leader election settings: ${problems.join('; ')}`);
  }

  /** True only while this instance holds the lease and its last renewal is within renewDeadline. */
  isLeader(): boolean {
    return this.leading && mayAct(this.lastRenewAt, this.now(), this.settings);
  }

  /** The holder last seen in the Lease ('' when released, undefined before the first read). */
  get currentLeader(): string | undefined {
    return this.observedLeader;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.loop = this.run();
  }

  /** Runs the next round now instead of after the retry period (eligibility changed). */
  poke(): void {
    this.wake?.();
  }

  /** Stops the loop; if leading, stops acting and (unless release is false) hands the Lease back. */
  async stop(options: { release?: boolean } = {}): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.wake?.();
    await this.loop;
    const lease = this.lease;
    const wasLeading = this.leading;
    if (wasLeading) this.stopLeading('Stopped');
    if (!wasLeading || options.release === false) return;
    await this.release(lease);
  }

  /** Writes an empty holder into a Lease we hold; best effort: else it expires on its own. */
  private async release(lease: LeaseState | null | undefined): Promise<void> {
    if (!lease || lease.holderIdentity !== this.identity) return;
    try {
      this.lease = await this.client.replace(releaseSpec(lease, this.now()), lease.resourceVersion);
      this.logger.info('released the lease');
    } catch (err) {
      // Someone may already have taken it (409).
      this.logger.warn(
        { err: err instanceof LeaseConflictError ? 'conflict' : kubeFailure(err).message },
        'could not release the lease',
      );
    }
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const again = await this.tick();
      if (this.stopped) break;
      if (!again) {
        // Standbys poll with a little jitter so several of them do not race in lockstep.
        const period = this.leading
          ? this.settings.retryPeriodMs
          : this.settings.retryPeriodMs * (1 + Math.random() * 0.2);
        await this.sleep(period);
      }
    }
  }

  /** One read-decide-write round. Returns true to run the next round at once. */
  private async tick(): Promise<boolean> {
    if (this.opts.eligible && !this.opts.eligible()) {
      if (this.leading) await this.handOff();
      return false;
    }
    let lease: LeaseState | null;
    // A leader renews from the Lease it wrote last: a write by anyone else since makes the PUT a
    // 409, which drops this copy and re-reads. One request per renewal instead of two.
    const held = this.leading && this.lease?.holderIdentity === this.identity ? this.lease : undefined;
    if (held) lease = held;
    else
      try {
        lease = await this.client.get();
      } catch (err) {
        this.noteFailure('read', err);
        this.enforceDeadline();
        return false;
      }
    // Taken after the read returned, so a version seen here was written no later than seenAt.
    this.observation = earliest(observe(this.observation, lease, this.now()), this.opts.sighting?.());
    this.lease = lease;
    this.noteLeader(lease?.holderIdentity ?? '');
    if (this.stopped) return false;

    const decision = decide({
      lease,
      identity: this.identity,
      now: this.now(),
      observation: this.observation,
      settings: this.settings,
    });
    if (decision.action === 'wait') {
      this.noteRecovery();
      if (this.leading) this.stopLeading(`LeaseLost: held by ${decision.holder}`);
      return false;
    }
    try {
      const written =
        decision.action === 'create'
          ? await this.client.create(decision.spec)
          : await this.client.replace(decision.spec, lease!.resourceVersion);
      this.noteRecovery();
      this.lease = written;
      this.observation = { resourceVersion: written.resourceVersion, seenAt: this.now() };
      this.noteLeader(this.identity);
      this.renewed(decision.spec.renewTime, {
        reason: decision.reason,
        leaseTransitions: decision.spec.leaseTransitions,
      });
      return false;
    } catch (err) {
      if (err instanceof LeaseConflictError) {
        this.logger.info({ action: decision.action }, 'lease write lost to another writer (409); re-reading');
        this.lease = undefined;
        // Re-read at once when leading, to stop now if someone else holds it; standbys just wait.
        return this.leading;
      }
      this.noteFailure(decision.action, err);
      this.enforceDeadline();
      return false;
    }
  }

  /** Stops acting first, then releases the Lease it holds. */
  private async handOff(): Promise<void> {
    this.stopLeading('HandedOff: assigned to another instance');
    await this.release(this.lease);
  }

  private renewed(renewAt: number, info: LeadershipInfo): void {
    this.lastRenewAt = renewAt;
    if (!mayAct(renewAt, this.now(), this.settings)) {
      // The write took longer than the deadline: the lease is ours but we must not act on it yet.
      this.enforceDeadline();
      return;
    }
    if (!this.leading) {
      this.leading = true;
      this.logger.info({ reason: info.reason, leaseTransitions: info.leaseTransitions }, 'started leading');
      try {
        this.opts.onStartedLeading?.(info);
      } catch (err) {
        this.logger.error({ err: String(err) }, 'onStartedLeading threw');
      }
    }
    this.armDeadline();
  }

  private armDeadline(): void {
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    if (this.lastRenewAt === undefined) return;
    const wait = Math.max(0, this.lastRenewAt + this.settings.renewDeadlineMs - this.now());
    this.deadlineTimer = setTimeout(() => {
      this.deadlineTimer = undefined;
      this.enforceDeadline();
      if (this.leading) this.armDeadline();
    }, wait);
  }

  private enforceDeadline(): void {
    if (this.leading && !mayAct(this.lastRenewAt, this.now(), this.settings)) this.stopLeading('RenewDeadlineExceeded');
  }

  private stopLeading(reason: string): void {
    if (!this.leading) return;
    this.leading = false;
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = undefined;
    this.logger.warn({ reason }, 'stopped leading');
    try {
      this.opts.onStoppedLeading?.(reason);
    } catch (err) {
      this.logger.error({ err: String(err) }, 'onStoppedLeading threw');
    }
  }

  private noteLeader(holder: string): void {
    if (holder === this.observedLeader) return;
    this.observedLeader = holder;
    this.logger.info({ leader: holder || null }, 'leader changed');
    try {
      this.opts.onNewLeader?.(holder);
    } catch (err) {
      this.logger.error({ err: String(err) }, 'onNewLeader threw');
    }
  }

  private noteFailure(what: string, err: unknown): void {
    const f = kubeFailure(err);
    const fields = { step: what, code: f.code, reason: f.reason, err: f.message };
    if (this.failing) this.logger.debug(fields, 'lease request failed again');
    else this.logger.warn(fields, 'lease request failed');
    this.failing = true;
  }

  private noteRecovery(): void {
    if (!this.failing) return;
    this.failing = false;
    this.logger.info('lease requests succeed again');
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}

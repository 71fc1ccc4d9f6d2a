// One pod on one node, as the kubelet's pod worker runs it: admission (probe workers), volumes
// (pod-volumes.ts), the sandbox (a pod IP), init containers then containers as real processes
// (containers.ts), probes, restarts with back-off, and graceful termination. Status is computed here (pod-status.ts) and
// written by status-sync.ts.
// Invariants:
// - sync() runs one at a time per pod (later requests coalesce into one more pass), so API reads
//   and process starts never interleave for a pod.
// - A pod gets one IP for its life (container restarts keep it); the IP is taken after volumes.
// - Termination: SIGTERM, then SIGKILL after the grace period (deletionGracePeriodSeconds, else
//   terminationGracePeriodSeconds, at least 2 s like the kubelet's minimum); the final DELETE
//   (status-sync.ts) happens only after every process has exited and the terminal phase is written.
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { V1Pod, V1Probe } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ConditionMemory, ContainerSnapshot } from '../../cluster/workloads/pod-status.ts';
import { ProbeWorker, type ProbeOutcome, type ProbeType } from '../../cluster/workloads/probes.ts';
import type { ExitInfo } from '../../cluster/workloads/processes.ts';
import { ContainerRunner, type ContainerHost, type ContainerRuntime } from './containers.ts';
import { PodVolumes } from './pod-volumes.ts';
import { createSandbox, type Sandbox } from './sandbox.ts';
import type { NodeContext } from './node-context.ts';

const DEFAULT_GRACE_SECONDS = 30;
const MIN_GRACE_SECONDS = 2;

export class PodWorker implements ContainerHost {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  readonly dir: string;
  readonly node: NodeContext;
  readonly log: Logger;
  pod: V1Pod;
  sandbox: Sandbox | undefined;
  startTimeMs: number | undefined;
  readonly conditions = new Map<string, ConditionMemory>();
  readonly volumes: PodVolumes;
  readonly runner: ContainerRunner;
  /** Why the whole pod is not running yet (FailedMount, no address): every container waits with it. */
  podWaiting: { reason: string; message?: string } | undefined;
  readonly #probes: ProbeWorker[] = [];
  readonly #execProbes: Array<[V1Probe, string[]]> = [];
  #admitted = false;
  terminating = false;
  /** The pod is gone from the API: no more writes. */
  gone = false;
  /** Every process has exited for good after termination. */
  finished = false;
  #syncing = false;
  #again = false;
  #refreshedAt = 0;
  #retry: NodeJS.Timeout | undefined;
  /** API errors in a row while setting up volumes. */
  #failures = 0;

  constructor(node: NodeContext, pod: V1Pod) {
    this.node = node;
    this.pod = pod;
    this.uid = pod.metadata?.uid ?? '';
    this.namespace = pod.metadata?.namespace ?? '';
    this.name = pod.metadata?.name ?? '';
    this.dir = path.join(node.dataDir, 'pods', this.uid);
    this.log = node.logger.child({ namespace: this.namespace, pod: this.name, node: node.name });
    this.volumes = new PodVolumes(pod, { client: node.client, dir: this.dir, machine: node.machine, holderOf: (pv) => node.holderOf(pv, this) });
    this.runner = new ContainerRunner(this);
    // The API server's own condition times (PodScheduled from the scheduler) are kept.
    // (Objects here are the API's JSON, so times are RFC 3339 strings.)
    for (const c of (pod.status?.conditions ?? []) as Array<{ type: string; status: string; lastTransitionTime?: string }>) {
      if (c.lastTransitionTime) this.conditions.set(c.type, { status: c.status, time: c.lastTransitionTime });
    }
  }

  /** The pod IP, once the sandbox exists. */
  get ip(): string | undefined {
    return this.sandbox?.ip;
  }

  /** The app containers (spec.containers). */
  get containers(): ContainerRuntime[] {
    return this.runner.containers;
  }

  get initContainers(): ContainerRuntime[] {
    return this.runner.initContainers;
  }

  /** Init containers, then app containers. */
  get allContainers(): ContainerRuntime[] {
    return this.runner.all;
  }

  get live(): boolean {
    return !this.finished;
  }

  /** Asks for a sync pass; passes never overlap. */
  kick(): void {
    if (this.#syncing) {
      this.#again = true;
      return;
    }
    this.#syncing = true;
    void (async () => {
      try {
        do {
          this.#again = false;
          await this.#syncOnce();
        } while (this.#again);
      } finally {
        this.#syncing = false;
      }
    })();
  }

  #retryIn(ms: number): void {
    clearTimeout(this.#retry);
    this.#retry = setTimeout(() => this.kick(), ms);
  }

  async #syncOnce(): Promise<void> {
    const pod = this.node.currentPod(this.uid);
    if (!pod) return this.vanish();
    this.pod = pod;
    this.volumes.pod = pod;
    if (pod.metadata?.deletionTimestamp) return this.terminate();
    if (this.terminating || this.gone) return;
    const phase = pod.status?.phase;
    if (!this.#admitted && (phase === 'Succeeded' || phase === 'Failed')) return; // a finished pod from before: nothing to run
    if (!this.#admitted) this.#admit();
    let fresh = false;
    try {
      if (this.volumes.hostPaths === undefined) {
        const problem = await this.volumes.setUp();
        this.#refreshedAt = Date.now();
        fresh = true;
        if (problem) {
          this.#wait({ reason: 'ContainerCreating', message: problem }, 1000);
          return;
        }
      } else if (Date.now() - this.#refreshedAt >= this.node.volumeRefreshMs) {
        this.#refreshedAt = Date.now();
        // A failed refresh leaves the last files in place (the next resync tries again).
        fresh = await this.volumes.refresh().then(
          () => true,
          (err: unknown) => {
            this.log.warn({ err: (err as Error).message }, 'volume refresh failed');
            return false;
          },
        );
      }
    } catch (err) {
      // Usually a 403 from the Node authorizer, whose graph learns of the pod's binding a moment
      // after the scheduler made it: retry soon, then back off.
      this.#failures++;
      this.#wait(
        { reason: 'ContainerCreating', message: `MountVolume.SetUp failed: ${(err as Error).message}` },
        Math.min(100 * 2 ** (this.#failures - 1), 2000),
      );
      return;
    }
    this.#failures = 0;
    if (this.terminating || this.gone) return;
    if (this.sandbox === undefined) {
      const sandbox = await createSandbox(this.node.addresses, this.node.network, this.pod);
      if (typeof sandbox === 'string') {
        this.#wait({ reason: 'ContainerCreating', message: sandbox }, 5000);
        return;
      }
      if (this.terminating || this.gone) {
        // Deleted while the sandbox was being made: nothing will run in it.
        void sandbox.release();
        return;
      }
      this.sandbox = sandbox;
      // Exec probes run inside the sandbox too (they were made at admission, before it existed).
      for (const [probe, command] of this.#execProbes) probe.exec!.command = [...sandbox.exec, ...command];
      this.log.info({ podIP: sandbox.ip }, 'pod sandbox ready');
    }
    this.podWaiting = undefined;
    const toStart = this.runner.runnable();
    if (toStart.length > 0) {
      // Env comes from the Secrets/ConfigMaps as they are now, as at every container start.
      if (!fresh) await this.volumes.fetchSources().catch((err: unknown) => this.log.warn({ err: (err as Error).message }, 'could not re-read env sources'));
      if (this.terminating || this.gone) return;
      for (const c of toStart) this.runner.start(c);
      if (toStart.some((c) => c.waiting?.reason === 'CreateContainerConfigError')) this.#retryIn(1000);
    }
    this.requestStatus();
  }

  #wait(waiting: { reason: string; message?: string }, retryMs: number): void {
    if (this.podWaiting?.message !== waiting.message) this.log.warn(waiting, 'pod cannot start yet');
    this.podWaiting = waiting;
    this.requestStatus();
    this.#retryIn(retryMs);
  }

  #admit(): void {
    this.#admitted = true;
    this.startTimeMs = Date.now();
    mkdirSync(path.join(this.dir, 'logs'), { recursive: true });
    for (const c of this.containers) {
      const probes: Array<[ProbeType, V1Probe | undefined]> = [
        ['startup', c.spec.startupProbe],
        ['readiness', c.spec.readinessProbe],
        ['liveness', c.spec.livenessProbe],
      ];
      for (const [type, spec] of probes) {
        if (!spec) continue;
        // A copy: an exec probe's command gets the sandbox's exec prefix once it exists.
        const probe = structuredClone(spec);
        if (probe.exec?.command) this.#execProbes.push([probe, probe.exec.command]);
        this.#probes.push(
          new ProbeWorker({
            type,
            probe,
            timeScale: this.node.timeScale,
            container: () => ({
              containerID: c.containerID,
              running: c.proc !== undefined,
              startedAtMs: c.startedAtMs,
              started: c.started,
              terminating: this.terminating,
              target: c.target,
            }),
            onResult: (t, outcome, id, output) => this.#onProbe(c, t, outcome, id, output),
          }),
        );
      }
    }
    this.requestStatus();
  }

  triggerReadiness(c: ContainerRuntime): void {
    if (c.spec.readinessProbe) for (const p of this.#probes) if (p.type === 'readiness') p.trigger();
  }

  #onProbe(c: ContainerRuntime, type: ProbeType, outcome: ProbeOutcome, containerID: string, output: string): void {
    if (c.containerID !== containerID || !c.proc || this.gone) return;
    if (type === 'readiness') {
      const ready = outcome === 'success';
      if (ready !== c.ready) {
        c.ready = ready;
        this.log.info({ container: c.spec.name, ready, output: ready ? undefined : output.trim().slice(0, 200) }, 'readiness changed');
        this.requestStatus();
      }
      return;
    }
    if (outcome === 'success') {
      if (type === 'startup' && !c.started) {
        c.started = true;
        if (!c.spec.readinessProbe) c.ready = true;
        this.log.info({ container: c.spec.name }, 'startup probe succeeded');
        this.requestStatus();
        this.triggerReadiness(c);
      }
      return;
    }
    if (this.terminating) return;
    this.log.warn({ container: c.spec.name, probe: type, output: output.trim().slice(0, 200) }, `container failed ${type} probe, will be restarted`);
    const probe = type === 'startup' ? c.spec.startupProbe : c.spec.livenessProbe;
    this.runner.kill(c, probe?.terminationGracePeriodSeconds ?? this.pod.spec?.terminationGracePeriodSeconds ?? DEFAULT_GRACE_SECONDS);
  }

  #graceSeconds(): number {
    const g = this.pod.metadata?.deletionGracePeriodSeconds ?? this.pod.spec?.terminationGracePeriodSeconds ?? DEFAULT_GRACE_SECONDS;
    return Math.max(g, MIN_GRACE_SECONDS);
  }

  /** Graceful deletion: SIGTERM, SIGKILL after the grace period; status-sync.ts then deletes the pod. */
  terminate(): void {
    if (this.gone) return;
    const grace = this.#graceSeconds();
    if (this.terminating) {
      // A later DELETE may have shortened the grace period: the kill deadline only moves earlier.
      this.runner.stopAll(grace);
      this.requestStatus();
      return;
    }
    this.terminating = true;
    clearTimeout(this.#retry);
    this.log.info({ gracePeriodSeconds: grace }, 'pod deleted; stopping containers');
    this.runner.stopAll(grace);
    this.requestStatus();
    this.checkTerminated();
  }

  /** The pod left the API (force deletion, or our own final DELETE): stop and clean up, no writes. */
  vanish(): void {
    if (this.gone) return;
    this.gone = true;
    clearTimeout(this.#retry);
    if (this.finished) {
      this.cleanup();
      return;
    }
    // Gone without our final DELETE (force deletion): the kubelet kills with the deleted pod's
    // grace period, 0, raised to its 2 s minimum.
    if (this.allContainers.some((c) => c.proc)) this.log.info('pod removed from the API; stopping containers');
    this.terminating = true;
    this.runner.stopAll(MIN_GRACE_SECONDS);
    this.checkTerminated();
  }

  checkTerminated(): void {
    if (this.finished || this.allContainers.some((c) => c.proc)) return;
    this.finished = true;
    for (const p of this.#probes) p.stop();
    this.log.info('pod terminated');
    if (this.gone) this.cleanup();
    else this.requestStatus();
  }

  /** Removes the pod's own directory (volumes it made; the node keeps the logs a while); claims' directories stay. */
  cleanup(): void {
    this.node.forget(this);
    void this.sandbox?.release();
    rmSync(this.dir, { recursive: true, force: true, maxRetries: 3 });
  }

  onContainerExit(): void {
    if (this.terminating) this.checkTerminated();
  }

  requestStatus(): void {
    if (!this.gone) this.node.requestStatus(this);
  }

  /** Test teardown: SIGKILL everything now, no API writes. */
  async killNow(): Promise<void> {
    this.gone = true;
    this.terminating = true;
    clearTimeout(this.#retry);
    for (const p of this.#probes) p.stop();
    const exits: Promise<ExitInfo>[] = this.runner.killAllNow();
    await Promise.all(exits);
    await this.sandbox?.release();
  }

  snapshots(): ContainerSnapshot[] {
    return this.containers.map((c) => this.runner.snapshot(c, this.podWaiting));
  }

  initSnapshots(): ContainerSnapshot[] {
    return this.initContainers.map((c) => this.runner.snapshot(c, this.podWaiting));
  }
}

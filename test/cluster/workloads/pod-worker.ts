// One pod as the stand-in kubelet runs it: admission (probe workers), volumes (pod-volumes.ts),
// the sandbox (a pod IP), its containers (pod-containers.ts), graceful termination, the kubelet's
// finalizer, and the pod's status. The worker holds the pod's state; the container and volume
// functions act on it, so its fields are plain members, read by those two modules.
// Invariants:
// - A pod gets a new IP (127.0.N.x, never reused) each time it is created; a container restart
//   keeps it. The IP is assigned after the volumes are set up, as the sandbox is.
// - Every status write comes from one pure function of the worker's state (pod-status.ts), is
//   made only for the pod uid the worker runs, and only when something changed; none once the pod
//   left the API (gone).
// - The kubelet's finalizer is released only after every process of the pod has exited.
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { V1Pod, V1Probe } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { StoredObject } from '../../support/kube-api/index.ts';
import type { Kubelet } from './kubelet.ts';
import { DEFAULT_GRACE_SECONDS, killContainer, onProbe, startContainer, type ContainerRuntime } from './pod-containers.ts';
import { buildPodStatus, rfc3339, type ConditionMemory, type ContainerSnapshot } from './pod-status.ts';
import { prepareVolumes, refreshConfigVolumes } from './pod-volumes.ts';
import { ProbeWorker, type ProbeType } from './probes.ts';
import type { ExitInfo } from './processes.ts';

/** Added to every pod the kubelet runs, on create: it stands in for the API server's graceful deletion. */
export const KUBELET_FINALIZER = 'stand-in.redis-operator.test/kubelet-termination';

export class PodWorker {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  readonly dir: string;
  readonly kubelet: Kubelet;
  readonly log: Logger;
  pod: V1Pod;
  ip: string | undefined;
  #startTimeMs = Date.now();
  #admitted = false;
  volumes: Map<string, string> | undefined;
  claimUids: string[] = [];
  #podWaiting: { reason: string; message?: string } | undefined;
  readonly containers: ContainerRuntime[];
  readonly probes: ProbeWorker[] = [];
  readonly #conditions = new Map<string, ConditionMemory>();
  terminating = false;
  gone = false;
  #finished = false;

  constructor(kubelet: Kubelet, pod: StoredObject) {
    this.kubelet = kubelet;
    this.uid = pod.metadata.uid;
    this.namespace = pod.metadata.namespace ?? '';
    this.name = pod.metadata.name;
    this.dir = path.join(kubelet.options.dataRoot, 'pods', this.uid);
    this.log = kubelet.options.logger.child({ namespace: this.namespace, pod: this.name });
    this.pod = pod as unknown as V1Pod;
    this.containers = (this.pod.spec?.containers ?? []).map((spec) => ({
      spec,
      started: false,
      ready: false,
      everStarted: false,
      restartCount: 0,
      killing: false,
    }));
  }

  get live(): boolean {
    return !this.#finished;
  }

  // ------------------------------------------------------------ lifecycle

  sync(pod: StoredObject): void {
    if (this.terminating || this.gone) return;
    this.pod = pod as unknown as V1Pod;
    if (!this.#admitted) this.#admit();
    if (this.volumes === undefined) {
      const problem = prepareVolumes(this);
      if (problem) {
        this.#podWaiting = { reason: 'ContainerCreating', message: problem };
        this.writeStatus();
        return;
      }
    } else {
      refreshConfigVolumes(this);
    }
    if (this.ip === undefined) {
      this.ip = this.kubelet.options.addresses.allocate();
      if (this.ip === undefined) {
        this.#podWaiting = { reason: 'ContainerCreating', message: `failed to create pod sandbox: no address left in 127.0.x.0/24 (pod IPs are never reused)` };
        this.writeStatus();
        return;
      }
      this.log.info({ podIP: this.ip }, 'pod sandbox ready');
    }
    this.#podWaiting = undefined;
    for (const c of this.containers) {
      if (!c.proc && !c.restartTimer && !c.terminated) startContainer(this, c);
    }
    this.writeStatus();
  }

  #admit(): void {
    this.#admitted = true;
    this.#startTimeMs = Date.now();
    mkdirSync(path.join(this.dir, 'logs'), { recursive: true });
    if ((this.pod.spec?.initContainers ?? []).length > 0) this.log.warn('initContainers are not run by the stand-in kubelet');
    for (const c of this.containers) {
      const probes: Array<[ProbeType, V1Probe | undefined]> = [
        ['startup', c.spec.startupProbe],
        ['readiness', c.spec.readinessProbe],
        ['liveness', c.spec.livenessProbe],
      ];
      for (const [type, probe] of probes) {
        if (!probe) continue;
        this.probes.push(
          new ProbeWorker({
            type,
            probe,
            timeScale: this.kubelet.options.timeScale,
            container: () => ({
              containerID: c.containerID,
              running: c.proc !== undefined,
              startedAtMs: c.startedAtMs,
              started: c.started,
              terminating: this.terminating,
              target: c.target,
            }),
            onResult: (t, outcome, id, output) => onProbe(this, c, t, outcome, id, output),
          }),
        );
      }
    }
    this.writeStatus();
  }

  /** Graceful deletion: SIGTERM, SIGKILL after the grace period, then the finalizer goes. */
  terminate(): void {
    if (this.terminating || this.gone) return;
    this.terminating = true;
    const grace = this.pod.spec?.terminationGracePeriodSeconds ?? DEFAULT_GRACE_SECONDS;
    this.log.info({ gracePeriodSeconds: grace }, 'pod deleted; stopping containers');
    this.#stopContainers(grace);
    this.writeStatus();
    this.checkTerminated();
  }

  /** The pod left the API without the kubelet's say (no finalizer): stop and clean up, no writes. */
  vanish(): void {
    if (this.gone) return;
    const wasTerminating = this.terminating;
    this.gone = true;
    this.terminating = true;
    if (!wasTerminating) {
      this.log.info('pod removed from the API; stopping containers');
      this.#stopContainers(this.pod.spec?.terminationGracePeriodSeconds ?? DEFAULT_GRACE_SECONDS);
    }
    this.checkTerminated();
  }

  #stopContainers(graceSeconds: number): void {
    for (const c of this.containers) {
      clearTimeout(c.restartTimer);
      c.restartTimer = undefined;
      if (c.proc) killContainer(this, c, graceSeconds);
    }
  }

  checkTerminated(): void {
    if (this.#finished || this.containers.some((c) => c.proc)) return;
    this.#finished = true;
    for (const p of this.probes) p.stop();
    if (!this.gone) {
      this.writeStatus(true);
      try {
        const current = this.kubelet.options.store.get('pods', this.namespace, this.name);
        if (current && current.metadata.uid === this.uid && (current.metadata.finalizers ?? []).includes(KUBELET_FINALIZER)) {
          this.kubelet.options.store.mutate('pods', this.namespace, this.name, (p) => {
            p.metadata.finalizers = (p.metadata.finalizers ?? []).filter((f) => f !== KUBELET_FINALIZER);
          });
        }
      } catch (err) {
        this.log.warn({ err }, 'could not release the pod finalizer');
      }
    }
    this.log.info('pod terminated');
    this.#cleanup();
  }

  #cleanup(): void {
    rmSync(this.dir, { recursive: true, force: true, maxRetries: 3 });
    this.kubelet.forget(this);
  }

  /** Test teardown: SIGKILL everything now, no API writes. */
  async killNow(): Promise<void> {
    this.gone = true;
    this.terminating = true;
    for (const p of this.probes) p.stop();
    const exits: Promise<ExitInfo>[] = [];
    for (const c of this.containers) {
      clearTimeout(c.restartTimer);
      clearTimeout(c.killTimer);
      if (c.proc) {
        c.proc.signal('SIGKILL');
        exits.push(c.proc.exited);
      }
    }
    await Promise.all(exits);
  }

  // ------------------------------------------------------------ status

  snapshotContainer(c: ContainerRuntime): ContainerSnapshot {
    const state: ContainerSnapshot['state'] = c.proc
      ? { running: { startedAt: rfc3339(c.startedAtMs ?? Date.now()) } }
      : c.terminated
        ? { terminated: c.terminated }
        : { waiting: this.#podWaiting ?? c.waiting ?? { reason: 'ContainerCreating' } };
    return {
      name: c.spec.name,
      image: c.spec.image ?? '',
      ...(c.containerID ? { containerID: c.containerID } : {}),
      ready: c.ready,
      started: c.started,
      restartCount: c.restartCount,
      state,
      ...(c.lastTerminated ? { lastTerminated: c.lastTerminated } : {}),
    };
  }

  writeStatus(terminal = false): void {
    if (this.gone) return;
    const { store } = this.kubelet.options;
    const status = buildPodStatus(
      {
        terminal,
        restartPolicy: this.pod.spec?.restartPolicy ?? 'Always',
        hostIP: this.kubelet.options.addresses.hostIP,
        ...(this.ip !== undefined ? { podIP: this.ip } : {}),
        startTime: rfc3339(this.#startTimeMs),
        containers: this.containers.map((c) => this.snapshotContainer(c)),
      },
      this.#conditions,
      Date.now(),
    );
    const current = store.get('pods', this.namespace, this.name);
    if (!current || current.metadata.uid !== this.uid || isDeepStrictEqual(current['status'], status)) return;
    try {
      store.update('pods', { ...current, status }, { subresource: 'status' });
    } catch (err) {
      this.log.warn({ err }, 'pod status write failed');
    }
  }
}

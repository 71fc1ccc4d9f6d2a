// Pod status, the way the kubelet's status manager writes it: the status is computed from the
// worker (pod-status.ts, shared with the stand-in), compared with what the API server holds, and
// sent as a strategic merge patch of pods/status carrying metadata.uid (so a recreated pod of the
// same name is never touched). When a deleted pod has finished and the API shows a terminal
// phase, the pod is deleted for good: DELETE with gracePeriodSeconds 0 and a uid precondition.
// Invariants:
// - One write at a time per pod; requests during a write coalesce into one more pass.
// - Nothing is written when the API already shows this status (only our fields are compared:
//   conditions by type, others whole, nulls ignored), so a quiet pod costs one GET per request.
// - Conditions owned by others (the scheduler's PodScheduled, DisruptionTarget) are left alone.
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { isExporterImage, isOperatorImage } from '../../cluster/workloads/container.ts';
import { exporterImageID } from '../../cluster/workloads/exporter-image.ts';
import { buildPodStatus, rfc3339, type ContainerSnapshot } from '../../cluster/workloads/pod-status.ts';
import { isStatus, type Json } from './api-client.ts';
import { IMAGE_ID_SCHEME } from './container-setup.ts';
import { operatorImageID } from './operator-image.ts';
import type { PodWorker } from './pod-worker.ts';

/** Drops nulls and undefined, recursively: the API writes `lastProbeTime: null` for unset times. */
export function stripNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(stripNulls);
  if (v && typeof v === 'object') {
    const out: Json = {};
    for (const [k, x] of Object.entries(v)) if (x !== null && x !== undefined) out[k] = stripNulls(x);
    return out;
  }
  return v;
}

/** The first of our status fields the API's status does not say (undefined: nothing to write). */
export function statusDiff(server: Json | undefined, ours: Json): string | undefined {
  const s = (server ?? {}) as Json;
  for (const [key, value] of Object.entries(ours)) {
    if (key === 'conditions') {
      const theirs = (s['conditions'] ?? []) as Json[];
      for (const c of value as Json[]) {
        if (!isDeepStrictEqual(stripNulls(theirs.find((t) => t['type'] === c['type'])), stripNulls(c))) return `conditions[${String(c['type'])}]`;
      }
    } else if (!isDeepStrictEqual(stripNulls(s[key]), stripNulls(value))) return key;
  }
  return undefined;
}

export const statusMatches = (server: Json | undefined, ours: Json): boolean => statusDiff(server, ours) === undefined;

/**
 * The strategic merge patch body for `ours`: conditions merge by type, so a field the API's copy
 * has and ours no longer has (the reason and message of a condition that became True) must be
 * sent as null to be removed, as the kubelet's two-way patch does.
 */
export function statusPatch(server: Json | undefined, ours: Json): Json {
  const theirs = ((server ?? {})['conditions'] ?? []) as Json[];
  const conditions = (ours['conditions'] as Json[]).map((c) => {
    const old = theirs.find((t) => t['type'] === c['type']) ?? {};
    const cleared = Object.keys(old).filter((k) => !(k in c) && old[k] !== null);
    return { ...c, ...Object.fromEntries(cleared.map((k) => [k, null])) };
  });
  return { ...ours, conditions };
}

/**
 * The kubelet's status for this worker's pod now. Once it has finished, TerminatePod's rules: an
 * app container that never ran is ContainerStatusUnknown (exit 137) if the pod had initialized;
 * so is an init container that started but did not finish, while those after it, never started,
 * keep waiting.
 */
export function workerStatus(w: PodWorker, hostIP: string, imageID: string, serverStatus: Json | undefined, nowMs: number): Json {
  const terminal = w.finished && w.terminating;
  const unknown = (c: ContainerSnapshot): ContainerSnapshot =>
    'terminated' in c.state
      ? c
      : {
          ...c,
          state: {
            terminated: {
              exitCode: 137,
              reason: 'ContainerStatusUnknown',
              message: 'The container could not be located when the pod was terminated',
              finishedAt: rfc3339(nowMs),
            },
          },
        };
  const inits = w.initSnapshots();
  const initialized = inits.every((c) => 'terminated' in c.state && c.state.terminated.exitCode === 0);
  const lastStarted = inits.findLastIndex((c) => c.containerID !== undefined);
  const initContainers = terminal ? inits.map((c, i) => (i <= lastStarted ? unknown(c) : c)) : inits;
  const containers = terminal && initialized ? w.snapshots().map(unknown) : w.snapshots();
  const status = buildPodStatus(
    {
      terminal,
      restartPolicy: w.pod.spec?.restartPolicy ?? 'Always',
      hostIP,
      ...(w.ip !== undefined ? { podIP: w.ip } : {}),
      startTime: rfc3339(w.startTimeMs ?? nowMs),
      containers,
      initContainers,
    },
    w.conditions,
    nowMs,
  );
  if (terminal && status['phase'] !== 'Succeeded' && status['phase'] !== 'Failed') status['phase'] = 'Failed';
  const generation = w.pod.metadata?.generation;
  const serverConditions = ((serverStatus?.['conditions'] ?? []) as Json[]).map((c) => c['type']);
  status['conditions'] = (status['conditions'] as Json[])
    // The scheduler wrote PodScheduled; the kubelet only keeps it.
    .filter((c) => !(c['type'] === 'PodScheduled' && serverConditions.includes('PodScheduled')))
    .map((c) => (generation !== undefined && c['type'] !== 'PodScheduled' ? { ...c, observedGeneration: generation } : c));
  for (const cs of [...((status['initContainerStatuses'] ?? []) as Json[]), ...(status['containerStatuses'] as Json[])]) {
    const image = cs['image'] as string;
    cs['imageID'] = !cs['containerID'] ? '' : isOperatorImage(image) ? operatorImageID() : isExporterImage(image) ? exporterImageID(IMAGE_ID_SCHEME) : imageID;
  }
  if (generation !== undefined) status['observedGeneration'] = generation;
  return status;
}

export interface StatusSyncOptions {
  logger: Logger;
  hostIP: string;
  /** What containerStatuses[].imageID says (the host binary that runs every redis image). */
  imageID: string;
}

export class StatusSync {
  readonly #o: StatusSyncOptions;
  readonly #busy = new Map<string, { again: boolean }>();
  readonly #failures = new Map<string, number>();
  #stopped = false;

  constructor(options: StatusSyncOptions) {
    this.#o = options;
  }

  stop(): void {
    this.#stopped = true;
  }

  request(w: PodWorker): void {
    if (this.#stopped || w.gone) return;
    const busy = this.#busy.get(w.uid);
    if (busy) {
      busy.again = true;
      return;
    }
    const state = { again: false };
    this.#busy.set(w.uid, state);
    void (async () => {
      try {
        do {
          state.again = false;
          await this.#sync(w).then(
            () => this.#failures.delete(w.uid),
            (err: unknown) => {
              // A 403 right after binding is the Node authorizer catching up: retry soon, then back off.
              const n = this.#failures.get(w.uid) ?? 0;
              this.#failures.set(w.uid, n + 1);
              w.log[isStatus(err, 403) && n === 0 ? 'debug' : 'warn']({ err: (err as Error).message }, 'pod status sync failed; retrying');
              setTimeout(() => this.request(w), Math.min(100 * 2 ** n, 5000));
            },
          );
        } while (state.again && !this.#stopped && !w.gone);
      } finally {
        this.#busy.delete(w.uid);
      }
    })();
  }

  async #sync(w: PodWorker): Promise<void> {
    const client = w.node.client;
    const podPath = `/api/v1/namespaces/${w.namespace}/pods/${w.name}`;
    let pod: Json | undefined;
    try {
      pod = await client.get<Json>(podPath);
    } catch (err) {
      // The Node authorizer answers 403, not 404, for a pod of that name that is no longer bound
      // here (deleted, or recreated on another node).
      if (isStatus(err, 403) && (w.gone || !w.node.currentPod(w.uid))) return;
      throw err;
    }
    const meta = (pod?.['metadata'] ?? {}) as Json;
    if (!pod || meta['uid'] !== w.uid) return; // gone, or a new pod of the same name
    const ours = workerStatus(w, this.#o.hostIP, this.#o.imageID, pod['status'] as Json | undefined, Date.now());
    const diff = statusDiff(pod['status'] as Json | undefined, ours);
    if (diff !== undefined) {
      try {
        pod = await client.request<Json>('PATCH', `${podPath}/status`, {
          contentType: 'application/strategic-merge-patch+json',
          body: { metadata: { uid: w.uid }, status: statusPatch(pod['status'] as Json | undefined, ours) },
        });
      } catch (err) {
        if (isStatus(err, 404, 409)) return; // deleted or replaced meanwhile
        throw err;
      }
      w.log.debug({ phase: ours['phase'], changed: diff }, 'pod status written');
    }
    const phase = (pod['status'] as Json | undefined)?.['phase'];
    if (w.finished && meta['deletionTimestamp'] && (phase === 'Succeeded' || phase === 'Failed')) {
      try {
        await client.request('DELETE', podPath, { body: { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0, preconditions: { uid: w.uid } } });
        w.log.info('pod fully terminated and removed from the API');
      } catch (err) {
        if (!isStatus(err, 404, 409)) throw err;
      }
    }
  }
}

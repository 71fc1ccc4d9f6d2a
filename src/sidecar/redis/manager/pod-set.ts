// The pods of one Redis as its worker knows them: the informer's pods that belong to it (by name),
// what our label patches returned (core/pod-labels.ts), and the per-pod metrics and Event memory
// of pods that left.
// Invariants: membership is pods.ts belongsTo (never the role label); a pod that leaves has its
// metrics series and Event memory dropped in the round that no longer sees it; a label step
// carries the uid of the pod the round saw (a recreated pod is never labelled for its predecessor).
import type { V1Pod } from '@kubernetes/client-node';
import { compareCodeUnits } from '../../../api/order.ts';
import type { RedisRef } from '../../adapters/kube/client.ts';
import { PodLabelWriter, type Overlay, type PodPatcher } from '../../core/pod-labels.ts';
import type { SidecarMetrics } from '../../metrics.ts';
import type { EventMemory } from './events.ts';
import type { LabelResult, LabelStep } from './steps.ts';
import { belongsTo, labelResult, podView, type PodView } from './pods.ts';

export interface RedisPodSetOptions {
  ref: RedisRef;
  kube: PodPatcher;
  metrics: Pick<SidecarMetrics, 'forgetPod'>;
  memory: Pick<EventMemory, 'forgetPod'>;
  /** The pods the informer holds (any Redis). */
  pods: () => V1Pod[];
}

export class RedisPodSet {
  readonly #o: RedisPodSetOptions;
  readonly #labels: PodLabelWriter;
  readonly #views = new Map<string, PodView>();
  #names = new Set<string>();

  constructor(options: RedisPodSetOptions) {
    this.#o = options;
    this.#labels = new PodLabelWriter(options.kube, options.ref.namespace);
  }

  /** The pods seen last, by uid. */
  get uids(): string[] {
    return [...this.#views.keys()];
  }

  uidOf(podName: string): string | undefined {
    for (const [uid, v] of this.#views) if (v.name === podName) return uid;
    return undefined;
  }

  overlay(uid: string): Overlay | undefined {
    return this.#labels.overlay(uid);
  }

  /** A pod the probes no longer follow. */
  forget(uid: string): void {
    this.#labels.forget(uid);
  }

  /** The pods of this Redis now, by name. */
  read(): PodView[] {
    const { namespace, name } = this.#o.ref;
    const views: PodView[] = [];
    for (const pod of this.#o.pods()) {
      if (!belongsTo(pod, namespace, name)) continue;
      const v = podView(pod);
      if (v) views.push(v);
    }
    views.sort((a, b) => compareCodeUnits(a.name, b.name));
    this.#views.clear();
    for (const v of views) this.#views.set(v.uid, v);
    const names = new Set(views.map((v) => v.name));
    for (const old of this.#names) {
      if (names.has(old)) continue;
      this.#o.metrics.forgetPod(namespace, name, old);
      this.#o.memory.forgetPod(old);
    }
    this.#names = names;
    return views;
  }

  /** The worker stops: every pod's metrics series goes. */
  forgetAll(): void {
    for (const pod of this.#names) this.#o.metrics.forgetPod(this.#o.ref.namespace, this.#o.ref.name, pod);
  }

  /** A label step's patch, with the uid of the pod this round saw under that name. */
  async label(step: LabelStep, views: readonly PodView[]): Promise<LabelResult> {
    const uid = views.find((v) => v.name === step.pod)?.uid;
    return labelResult(step, await this.#labels.patch(step.pod, uid, step.patch.metadata));
  }
}

// The role label and link annotation writes of one Redis's pods, and what they returned.
// Invariants:
// - Every patch carries the pod's uid as a precondition (when the pod is known): a pod recreated
//   under the same name is never labelled on behalf of its predecessor.
// - What a patch returned is kept as an overlay until the informer's copy catches up (pods.ts
//   overlayApplies), so the next round does not plan the same patch again from a stale cache.
// - A pod that is gone (404) or replaced (uid precondition) counts as done when the patch takes a
//   label away, and as a failure when it gives the master label (replanned from the next pod list).
import { ROLE_LABEL, ROLE_MASTER } from '../../../api/labels.ts';
import { isReplaced, kubeFailure } from '../../adapters/kube/client.ts';
import type { LabelResult, LabelStep } from './steps.ts';
import type { Overlay, PodView } from './pods.ts';
import type { KubeWriter } from './types.ts';

export class PodLabels {
  readonly #kube: Pick<KubeWriter, 'patchPodMetadata'>;
  readonly #namespace: string;
  readonly #overlays = new Map<string, Overlay>();

  constructor(kube: Pick<KubeWriter, 'patchPodMetadata'>, namespace: string) {
    this.#kube = kube;
    this.#namespace = namespace;
  }

  overlay(uid: string): Overlay | undefined {
    return this.#overlays.get(uid);
  }

  forget(uid: string): void {
    this.#overlays.delete(uid);
  }

  async write(step: LabelStep, view: PodView | undefined): Promise<LabelResult> {
    try {
      const changes = { ...step.patch.metadata, ...(view ? { uid: view.uid } : {}) };
      const updated = await this.#kube.patchPodMetadata(this.#namespace, step.pod, changes);
      const uid = updated.metadata?.uid;
      if (uid) {
        this.#overlays.set(uid, {
          resourceVersion: updated.metadata?.resourceVersion ?? '',
          labels: { ...(updated.metadata?.labels ?? {}) },
          annotations: { ...(updated.metadata?.annotations ?? {}) },
        });
      }
      return { ok: true };
    } catch (err) {
      const f = kubeFailure(err);
      const replaced = isReplaced(err);
      if (f.code === 404 || replaced) {
        if (step.patch.metadata.labels?.[ROLE_LABEL] !== ROLE_MASTER) return { ok: true, gone: true };
        return { ok: false, gone: true, code: f.code, message: replaced ? 'pod replaced' : 'pod gone' };
      }
      return { ok: false, code: f.code, message: `${f.code ?? 'no answer'} ${f.reason ?? ''} ${f.message}`.trim() };
    }
  }
}

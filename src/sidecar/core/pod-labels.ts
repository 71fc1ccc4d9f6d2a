// The pod metadata writes of both kinds (the role label, the link annotation of a Redis pod, the
// node record of a RedisCluster pod), and what each returned.
// Invariants:
// - Every patch carries the pod's uid as a precondition when the pod is known: a pod recreated
//   under the same name is never written on behalf of its predecessor.
// - What a patch returned is kept (overlay) until the pod is forgotten, so a round does not plan
//   the same patch again from an informer copy that has not caught up yet. Whether the overlay
//   still wins over the informer's copy is the kind's rule.
// - A patch never throws: a pod that is gone (404) or replaced (uid precondition) and any other
//   failure come back as data, for the kind to judge.
import type { V1Pod } from '@kubernetes/client-node';
import { isReplaced, kubeFailure, type KubeFailure } from '../adapters/kube/client.ts';

/** The Kubernetes call (KubeClient implements it). */
export interface PodPatcher {
  patchPodMetadata(
    namespace: string,
    name: string,
    changes: { labels?: Record<string, string | null>; annotations?: Record<string, string | null>; uid?: string },
  ): Promise<V1Pod>;
}

/** Labels and annotations as our last successful patch returned them. */
export interface Overlay {
  resourceVersion: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface PodMetadataPatch {
  labels?: Record<string, string | null>;
  annotations?: Record<string, string | null>;
}

/** `gone`: the pod no longer exists under that uid ('replaced': the uid precondition failed). */
export type PodPatchResult = { ok: true } | { ok: false; gone: 'gone' | 'replaced' | null; failure: KubeFailure };

export class PodLabelWriter {
  readonly #kube: PodPatcher;
  readonly #namespace: string;
  readonly #overlays = new Map<string, Overlay>();

  constructor(kube: PodPatcher, namespace: string) {
    this.#kube = kube;
    this.#namespace = namespace;
  }

  overlay(uid: string): Overlay | undefined {
    return this.#overlays.get(uid);
  }

  forget(uid: string): void {
    this.#overlays.delete(uid);
  }

  /** Forgets every pod but these. */
  retain(uids: ReadonlySet<string>): void {
    for (const uid of [...this.#overlays.keys()]) if (!uids.has(uid)) this.#overlays.delete(uid);
  }

  /** Patches the pod's metadata (uid: the precondition, when the pod is known). */
  async patch(pod: string, uid: string | undefined, changes: PodMetadataPatch): Promise<PodPatchResult> {
    try {
      const precondition = uid !== undefined ? { uid } : {};
      const updated = await this.#kube.patchPodMetadata(this.#namespace, pod, { ...changes, ...precondition });
      const returned = updated.metadata?.uid;
      if (returned) {
        this.#overlays.set(returned, {
          resourceVersion: updated.metadata?.resourceVersion ?? '',
          labels: { ...(updated.metadata?.labels ?? {}) },
          annotations: { ...(updated.metadata?.annotations ?? {}) },
        });
      }
      return { ok: true };
    } catch (err) {
      const failure = kubeFailure(err);
      const gone = isReplaced(err) ? 'replaced' : failure.code === 404 ? 'gone' : null;
      return { ok: false, gone, failure };
    }
  }
}

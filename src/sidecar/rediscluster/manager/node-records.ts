// Each RedisCluster pod's role label and cluster-node record, written through the core pod-label
// writer (core/pod-labels.ts).
// Invariants:
// - A pod is patched only when decide/records.ts says its label or record changed, with the pod's
//   uid as a precondition (never onto a recreated pod), and only while this instance leads.
// - What a patch returned wins over the informer's copy until the pod leaves the topology, so a
//   round never writes the same value twice.
// - A pod gone or replaced meanwhile is no failure (the next round sees the new one); any other
//   failure is logged and the write is planned again next round.
import type { Logger } from 'pino';
import { CLUSTER_NODE_ANNOTATION } from '../../../api/rediscluster-names.ts';
import { ROLE_LABEL } from '../../../api/labels.ts';
import type { RedisRef } from '../../adapters/kube/client.ts';
import { PodLabelWriter, type Overlay, type PodPatcher } from '../../core/pod-labels.ts';
import { decideRecord } from '../decide/records.ts';
import type { Topology } from '../decide/topology.ts';

export interface NodeRecordsOptions {
  ref: RedisRef;
  kube: PodPatcher;
  log: Logger;
  isLeader(): boolean;
}

export class NodeRecords {
  readonly #o: NodeRecordsOptions;
  readonly #labels: PodLabelWriter;

  constructor(options: NodeRecordsOptions) {
    this.#o = options;
    this.#labels = new PodLabelWriter(options.kube, options.ref.namespace);
  }

  /** What our last patch of the pod returned (the informer may not show it yet). */
  overlay(uid: string): Overlay | undefined {
    return this.#labels.overlay(uid);
  }

  async write(t: Topology, nowMs: number): Promise<void> {
    this.#labels.retain(new Set(t.pods.map((p) => p.uid)));
    const writes = t.pods.flatMap((p) => {
      const w = decideRecord(t, p, nowMs);
      return w ? [w] : [];
    });
    await Promise.all(
      writes.map(async (w) => {
        if (!this.#o.isLeader()) return;
        const labels = w.role ? { [ROLE_LABEL]: w.role } : undefined;
        const annotations = w.record ? { [CLUSTER_NODE_ANNOTATION]: w.record } : undefined;
        const r = await this.#labels.patch(w.pod, w.uid, { labels, annotations });
        if (r.ok) this.#o.log.debug({ pod: w.pod, reason: w.reason }, 'node record written');
        else if (r.gone === null) {
          const { code, message } = r.failure;
          this.#o.log.warn({ pod: w.pod, code, err: message }, 'could not write the node record');
        }
      }),
    );
  }
}

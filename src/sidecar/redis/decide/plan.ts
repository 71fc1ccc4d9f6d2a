// One reconcile step for one Redis: the master decision and the ordered steps that carry it out.
// Pure. The manager probes every pod, folds the results with track(), calls planRound(), and applies
// the steps IN ORDER:
//   1. promote (REPLICAOF NO ONE) or switchover                        critical
//   2. replicaof with demote=true: nodes that claim master but are not   (before their labels move)
//   3. replicaof: re-point replicas to the master's current IP           (may run in parallel)
//   4. config: fencing on the master
//   5. config: runtime-managed spec.config directives, on every node     (runtime-config.ts)
//   6. label patches taking the master label away                       critical
//   7. the label patch giving the master label                          critical
//   8. other label/annotation patches
// If a critical step fails, stop and plan again next tick from fresh probes (a 404 on a label
// patch means the pod is gone: treat it as done). Redis changes come before label changes so the
// master Service never selects a pod that is not yet master, and replicas are re-attached before
// clients are sent to the new master (it is fenced until one replica is back).
// Invariants: no I/O, no clock; the same input always gives the same plan; an empty step list
// means nothing to do (the usual case on a healthy tick).
import { decideMaster } from './master.ts';
import { planLabels, type LabelContext } from './labels.ts';
import { currentFacts, endpointOf } from './observe.ts';
import { planFencing, planReplication } from './replication.ts';
import { planRuntimeConfig } from './runtime-config.ts';
import type { DecideInput, RoundPlan, Step } from './types.ts';

export function planRound(input: DecideInput): RoundPlan {
  const { decision } = decideMaster(input);
  const masterName = decision.master;
  const masterPod = masterName === null ? undefined : input.pods.find((p) => p.name === masterName);

  if (decision.kind === 'wait' || !masterPod || !masterPod.ip) {
    // Nothing moves in Redis; labels only follow what we see (link annotations, new replicas).
    const ip = masterPod?.ip ?? null;
    const steps = planLabels(input, { master: masterPod ? masterPod.name : null, masterIp: ip });
    return { decision, master: masterPod && ip ? { pod: masterPod.name, endpoint: endpointOf(ip) } : null, steps };
  }

  const masterIp = masterPod.ip;
  const steps: Step[] = [];
  const facts = currentFacts(masterPod, input.now, input.config);
  let promotion: LabelContext['promotion'];

  if (decision.kind === 'promote') {
    if (facts?.replication.role !== 'master') {
      steps.push({
        kind: 'promote',
        pod: masterPod.name,
        endpoint: endpointOf(masterIp),
        critical: true,
        reason: decision.reason,
      });
    }
    promotion = {
      cause: decision.cause,
      previous: decision.previous,
      offset: facts?.replication.masterReplOffset ?? 0,
    };
  } else if (decision.kind === 'switchover') {
    const from = input.pods.find((p) => p.name === decision.from);
    if (from?.ip) {
      steps.push({
        kind: 'switchover',
        pod: masterPod.name,
        endpoint: endpointOf(masterIp),
        from: { pod: from.name, endpoint: endpointOf(from.ip) },
        critical: true,
        reason: decision.reason,
      });
    }
    promotion = { cause: 'switchover', previous: decision.from, offset: facts?.replication.masterReplOffset ?? 0 };
  }

  const repoint = planReplication(input, masterPod, masterIp);
  steps.push(...repoint.filter((s) => s.kind === 'replicaof' && s.demote));
  steps.push(...repoint.filter((s) => !(s.kind === 'replicaof' && s.demote)));
  const fence = planFencing(input, masterPod, masterIp);
  if (fence) steps.push(fence);
  steps.push(...planRuntimeConfig(input));
  steps.push(...planLabels(input, { master: masterPod.name, masterIp, promotion }));
  return { decision, master: { pod: masterPod.name, endpoint: endpointOf(masterIp) }, steps };
}

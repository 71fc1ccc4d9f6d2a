// Role labels and link annotations the pods should carry. Pure.
// Invariants: patches only for transitions (a pod already right gets no patch, so Metacontroller
// is not woken on every tick); at most one pod is ever labelled master: every patch that takes
// the master label away comes before the one that gives it (plan.ts keeps this order and the
// manager must stop if one of them fails); a pod we cannot read keeps its role label, except that
// it loses the master label when another pod is chosen.
import {
  LINK_ANNOTATION,
  REDIS_PORT,
  ROLE_LABEL,
  ROLE_MASTER,
  ROLE_REPLICA,
  ROLE_SINCE_ANNOTATION,
} from '../../../api/labels.ts';
import { currentFacts, silentForMs } from './observe.ts';
import type { DecideInput, PodPatch, Step } from './types.ts';

export interface LabelContext {
  /** The master after this plan (null: none yet). */
  master: string | null;
  masterIp: string | null;
  /** Set when this plan makes `master` master: written to the role-changed-by annotation. */
  promotion?: { cause: string; previous: string | null; offset: number } | undefined;
}

export function planLabels(input: DecideInput, ctx: LabelContext): Step[] {
  const { now, config } = input;
  const unmaster: Step[] = [];
  const master: Step[] = [];
  const rest: Step[] = [];
  for (const pod of input.pods) {
    const facts = currentFacts(pod, now, config);
    let role: string | null = null;
    let link: string | null = null;
    let why: string;
    if (pod.name === ctx.master) {
      role = ROLE_MASTER;
      link = 'up';
      why = `${pod.name} is the master`;
    } else if (facts) {
      role = ctx.master ? ROLE_REPLICA : null;
      const r = facts.replication;
      const linked =
        ctx.masterIp !== null &&
        r.role === 'replica' &&
        r.masterHost === ctx.masterIp &&
        r.masterPort === REDIS_PORT &&
        r.masterLinkStatus === 'up';
      link = linked ? 'up' : 'down';
      why = linked ? `${pod.name} replicates from the master` : `${pod.name} is not (yet) linked to the master`;
    } else {
      if (pod.roleLabel === ROLE_MASTER && ctx.master !== null) role = ROLE_REPLICA;
      const silent = silentForMs(pod, now);
      // Refused or a container gone: no Redis runs there, so it is not linked, however short the silence.
      const gone = pod.redis?.refusedSince != null || pod.redisContainerGone === true;
      if (silent !== null && (silent >= config.downAfterMs || gone)) link = 'down';
      why = `${pod.name} does not answer`;
      if (role === ROLE_REPLICA) why = `${pod.name} is no longer the master (${ctx.master} is)`;
    }
    const labels: Record<string, string> = {};
    const annotations: Record<string, string> = {};
    if (role !== null && pod.roleLabel !== role) labels[ROLE_LABEL] = role;
    if (link !== null && pod.linkAnnotation !== link) annotations[LINK_ANNOTATION] = link;
    if (role === ROLE_MASTER && pod.roleLabel !== ROLE_MASTER && ctx.promotion) {
      const p = ctx.promotion;
      annotations[ROLE_SINCE_ANNOTATION] = `${p.cause}${p.previous ? ` from ${p.previous}` : ''} at offset ${p.offset}`;
    }
    if (Object.keys(labels).length === 0 && Object.keys(annotations).length === 0) continue;
    const patch: PodPatch = { metadata: {} };
    if (Object.keys(labels).length > 0) patch.metadata.labels = labels;
    if (Object.keys(annotations).length > 0) patch.metadata.annotations = annotations;
    const changes = [
      ...Object.entries(labels).map(([k, v]) => `${k}=${v}`),
      ...Object.entries(annotations).map(([k, v]) => `${k}=${v}`),
    ].join(', ');
    if (pod.roleLabel === ROLE_MASTER && role === ROLE_REPLICA) {
      unmaster.push({ kind: 'label', pod: pod.name, patch, critical: true, reason: `${why}: ${changes}` });
    } else if (role === ROLE_MASTER && pod.roleLabel !== ROLE_MASTER) {
      master.push({ kind: 'label', pod: pod.name, patch, critical: true, reason: `${why}: ${changes}` });
    } else {
      rest.push({ kind: 'label', pod: pod.name, patch, critical: false, reason: `${why}: ${changes}` });
    }
  }
  return [...unmaster, ...master, ...rest];
}

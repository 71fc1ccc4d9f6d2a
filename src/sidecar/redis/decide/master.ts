// Who is master: keep, wait, promote (bootstrap / failover / adopt) or switch over. Pure.
// Invariants: the role label is the durable record of our choice (it survives a crash of the
// sidecar); Redis' own role tells whether the choice took effect. A node that reports role master
// without the label is either a promotion an earlier leader did not finish (adopted when no
// healthy labelled master exists) or a stale old master (demoted while the labelled one is healthy).
// A switchover a day-2 operation asks for (input.switchoverTo) happens only from a single healthy
// labelled master that is not leaving, to a target that passes checkTarget at this very round.
import { ROLE_MASTER } from '../../../api/labels.ts';
import { compareCodeUnits } from '../../../api/order.ts';
import { chooseBootstrap, choosePromotion } from './choose.ts';
import { assessMaster, type MasterHealth } from './failure.ts';
import { currentFacts, isBeyondScale } from './observe.ts';
import { checkTarget } from './switchover.ts';
import type { DecideInput, MasterDecision, PodObservation } from './types.ts';

/** When several pods carry the master label (never by our hand), the one that is really master wins. */
function pickLabelled(input: DecideInput, labelled: PodObservation[]): PodObservation {
  const masters = labelled.filter((p) => currentFacts(p, input.now, input.config)?.replication.role === 'master');
  const pool = masters.length > 0 ? masters : labelled;
  const superseded = new Set(pool.map((p) => currentFacts(p, input.now, input.config)?.replication.masterReplid2));
  return [...pool].sort((a, b) => {
    const fa = currentFacts(a, input.now, input.config);
    const fb = currentFacts(b, input.now, input.config);
    const sa = fa && superseded.has(fa.replication.masterReplid) ? 1 : 0;
    const sb = fb && superseded.has(fb.replication.masterReplid) ? 1 : 0;
    return (
      sa - sb ||
      (fb?.replication.masterReplOffset ?? -1) - (fa?.replication.masterReplOffset ?? -1) ||
      compareCodeUnits(a.name, b.name)
    );
  })[0]!;
}

export interface MasterAssessment {
  decision: MasterDecision;
  /** The labelled master's health, when there is a labelled master. */
  health: MasterHealth | null;
}

export function decideMaster(input: DecideInput): MasterAssessment {
  const labelled = input.pods.filter((p) => p.roleLabel === ROLE_MASTER);
  if (labelled.length === 0) {
    const choice = chooseBootstrap(input);
    if (!choice.ok) return { decision: { kind: 'wait', master: null, reason: choice.reason }, health: null };
    const adopt = choice.facts.replication.role === 'master';
    return {
      decision: {
        kind: 'promote',
        cause: adopt ? 'adopt' : 'bootstrap',
        master: choice.pod.name,
        previous: null,
        reason: choice.reason,
      },
      health: null,
    };
  }

  const master = labelled.length === 1 ? labelled[0]! : pickLabelled(input, labelled);
  const extra =
    labelled.length > 1 ? ` (${labelled.length} pods carried the master label; keeping ${master.name})` : '';
  const health = assessMaster(input, master);
  switch (health.state) {
    case 'healthy': {
      const leaving = master.deleting
        ? 'its pod is being deleted'
        : isBeyondScale(master, input.name, input.spec.replicas)
          ? `a scale-down to ${input.spec.replicas} replicas removes its pod`
          : null;
      if (leaving) {
        const target = choosePromotion(input, master, false, { stayingOnly: true });
        const linked =
          target.ok &&
          target.facts.replication.role === 'replica' &&
          target.facts.replication.masterLinkStatus === 'up';
        if (target.ok && linked) {
          return {
            decision: {
              kind: 'switchover',
              from: master.name,
              master: target.pod.name,
              reason: `${master.name} is healthy but ${leaving}: planned switchover; ${target.reason}`,
            },
            health,
          };
        }
        return {
          decision: {
            kind: 'keep',
            master: master.name,
            reason: `${master.name} is master and ${leaving}, but no linked replica can take over yet${target.ok ? '' : `: ${target.reason}`}${extra}`,
          },
          health,
        };
      }
      const asked =
        input.switchoverTo === undefined ? undefined : input.pods.find((p) => p.name === input.switchoverTo);
      if (asked && labelled.length === 1) {
        const check = checkTarget(input, master, asked);
        if (check.ok) {
          return {
            decision: {
              kind: 'switchover',
              from: master.name,
              master: asked.name,
              reason: `${master.name} is healthy; planned switchover asked for: ${check.reason}`,
            },
            health,
          };
        }
      }
      return { decision: { kind: 'keep', master: master.name, reason: `${health.reason}${extra}` }, health };
    }
    case 'unreadable':
    case 'suspect':
      return { decision: { kind: 'wait', master: master.name, reason: `${health.reason}${extra}` }, health };
    case 'lost-role':
    case 'failed': {
      const choice = choosePromotion(input, master, health.state === 'lost-role');
      if (!choice.ok)
        return {
          decision: { kind: 'wait', master: master.name, reason: `${health.reason}; ${choice.reason}` },
          health,
        };
      const adopt = choice.pod !== master && choice.facts.replication.role === 'master';
      return {
        decision: {
          kind: 'promote',
          cause: adopt ? 'adopt' : 'failover',
          master: choice.pod.name,
          previous: master.name,
          reason: `${health.reason}; ${choice.reason}${extra}`,
        },
        health,
      };
    }
  }
}

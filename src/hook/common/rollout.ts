// The Updated condition's verdict for either kind, from which pods run their StatefulSet's current
// template: done, a template the StatefulSet controller has not processed yet, rolling out, or
// waiting for a pod that is not Ready. Pure. Invariants: a template change is never reported done
// before every StatefulSet concerned processed it; a pod that is not Ready is named, because the
// sidecar replaces no other pod until it is: that is where a stuck rollout stops.

export interface RolloutFacts {
  updated: readonly string[];
  stale: readonly string[];
  total: number;
  /** What is not settled yet (StatefulSets whose controller has not processed their spec); empty: nothing. */
  pending: string;
  notReady: readonly string[];
  leaving: readonly string[];
  /** How this kind rolls out, for the RollingOut message. */
  order: string;
}

export interface RolloutVerdict {
  ok: boolean;
  reason: 'TemplateChanging' | 'UpToDate' | 'RolloutWaiting' | 'RollingOut' | 'EngineMove';
  message: string;
}

export function rolloutVerdict(f: RolloutFacts): RolloutVerdict {
  if (f.pending !== '') return { ok: false, reason: 'TemplateChanging', message: f.pending };
  if (f.stale.length === 0)
    return { ok: true, reason: 'UpToDate', message: `${f.total} of ${f.total} pods run the current template` };
  const head = `${f.updated.length} of ${f.total} pods updated; stale: ${f.stale.join(', ')}`;
  if (f.notReady.length > 0) {
    return {
      ok: false,
      reason: 'RolloutWaiting',
      message: `${head}; waiting for ${f.notReady.join(', ')} to become Ready: no other pod is replaced until every pod is Ready and linked`,
    };
  }
  return {
    ok: false,
    reason: 'RollingOut',
    message: `${head}${f.leaving.length > 0 ? `; replacing ${f.leaving.join(', ')}` : ''} (${f.order})`,
  };
}

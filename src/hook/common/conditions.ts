// Status helpers every kind's conditions use: the latest of observed times, and the conditions of
// the previous status by type, so a condition keeps its lastTransitionTime while its status holds.
// Invariant: pure; times are compared as RFC 3339 strings (the API server writes them so).
import { array, at, compare, str } from './util.ts';

/** The latest of the known times, or undefined when none is known. */
export function latest(times: ReadonlyArray<string | undefined>): string | undefined {
  let best: string | undefined;
  for (const t of times) if (t !== undefined && (best === undefined || compare(t, best) > 0)) best = t;
  return best;
}

export function previousConditions(
  previous: unknown,
): Map<string, { status: unknown; lastTransitionTime: string | undefined }> {
  const out = new Map<string, { status: unknown; lastTransitionTime: string | undefined }>();
  for (const c of array(at(previous, 'conditions'))) {
    const type = str(at(c, 'type'));
    if (type !== undefined && !out.has(type))
      out.set(type, { status: at(c, 'status'), lastTransitionTime: str(at(c, 'lastTransitionTime')) });
  }
  return out;
}

// The design article's scale-down rule: spec.replicas may not drop by more than half of the
// replicas running now in one step, unless the Redis carries the confirmation annotation with
// the new count. Pure. Invariants: the baseline is what the observed replica StatefulSet runs
// (the hook has no memory); a refused step holds the StatefulSet where it is (nothing is removed)
// and says why, naming spec.replicas; a confirmation must name exactly the new count, so one left
// behind never lets a later, different step through.
import { CONFIRM_SCALE_DOWN_ANNOTATION } from '../../api/labels.ts';

export type ScaleVerdict = { ok: true; replicas: number } | { ok: false; replicas: number; message: string };

/**
 * `running`: replicas the observed replica StatefulSet asks for, undefined when there is none yet
 * (a new Redis) or it is hibernated (0: waking up is never a scale-down).
 */
export function guardScaleDown(
  wanted: number,
  running: number | undefined,
  annotations: Record<string, string> | undefined,
): ScaleVerdict {
  if (running === undefined || running === 0 || wanted >= running) return { ok: true, replicas: wanted };
  // "More than half": removing more than running/2 pods, i.e. keeping fewer than half.
  if (wanted * 2 >= running) return { ok: true, replicas: wanted };
  const confirmed = annotations?.[CONFIRM_SCALE_DOWN_ANNOTATION];
  if (confirmed === String(wanted)) return { ok: true, replicas: wanted };
  return {
    ok: false,
    replicas: running,
    message:
      `spec.replicas: scaling down from ${running} to ${wanted} removes more than half of the replicas in one step; ` +
      `kept at ${running}. Scale down in steps of at most half, or confirm with ` +
      `kubectl annotate redis <name> ${CONFIRM_SCALE_DOWN_ANNOTATION}=${wanted}` +
      (confirmed !== undefined ? ` (the annotation says ${JSON.stringify(confirmed)}, not ${wanted})` : ''),
  };
}

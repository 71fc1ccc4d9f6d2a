// The one ordering for names, keys and ids wherever output or a choice must be reproducible.
// Invariant: comparison is by UTF-16 code unit, never locale-dependent (localeCompare depends on
// the ICU data and locale of the process), so the hook's output and the sidecar's tie-breaks are
// the same on every machine.

/** Negative, zero or positive as `a` sorts before, with or after `b` by UTF-16 code unit. */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// Kubernetes resource quantities as numbers, where the hook and the sidecar need arithmetic:
// maxmemory from the memory limit (hook), and comparing a requested volume size with the one a
// claim or a StatefulSet's claim template has (hook and sidecar). It lives in api/ because both
// use it and neither may import the other. Invariant: returns undefined for anything that is not
// a quantity rather than guessing; never throws.

const BINARY: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
const DECIMAL: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};

const QUANTITY = /^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$/;

/** The value of a quantity in base units (bytes for memory and storage), or undefined. */
export function parseQuantity(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value !== 'string') return undefined;
  const match = QUANTITY.exec(value.trim());
  if (!match) return undefined;
  const number = Number(match[1]);
  const suffix = match[2] ?? '';
  if (suffix.startsWith('e') || suffix.startsWith('E')) {
    const result = number * 10 ** Number(suffix.slice(1));
    return Number.isFinite(result) ? result : undefined;
  }
  const factor = BINARY[suffix] ?? DECIMAL[suffix];
  return factor === undefined ? undefined : number * factor;
}

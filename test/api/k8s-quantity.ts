// TEST STAND-IN for Kubernetes' resource.Quantity as its CEL quantity library exposes it
// (quantity(string), Quantity.compareTo). It is not Kubernetes' code: it parses the same
// syntax (apimachinery's quantity pattern) into an exact rational and compares exactly, which
// is what apimachinery's Quantity.Cmp does for the values our rules see (sizes such as 10Gi,
// 1.5Gi, 500M, 1e9). Rounding of more than 9 fractional digits, which Kubernetes applies on
// parse, is not reproduced.
import { QUANTITY_PATTERN } from '../../src/api/schema.ts';

const QUANTITY = new RegExp(QUANTITY_PATTERN);

const BINARY: Record<string, bigint> = { Ki: 1n, Mi: 2n, Gi: 3n, Ti: 4n, Pi: 5n, Ei: 6n };
const DECIMAL: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };

/** An exact value num / den (den > 0). */
export class Quantity {
  readonly num: bigint;
  readonly den: bigint;
  readonly text: string;
  constructor(num: bigint, den: bigint, text: string) {
    this.num = num;
    this.den = den;
    this.text = text;
  }
}

function scaleBy10(num: bigint, den: bigint, exponent: number): [bigint, bigint] {
  return exponent >= 0 ? [num * 10n ** BigInt(exponent), den] : [num, den * 10n ** BigInt(-exponent)];
}

/** Throws (as CEL's quantity() errors) on anything that is not a Kubernetes quantity. */
export function parseQuantity(text: string): Quantity {
  if (!QUANTITY.test(text)) throw new Error(`quantities must match the regular expression '${QUANTITY_PATTERN}': ${JSON.stringify(text)}`);
  const match = /^([+-]?)(\d*)(?:\.(\d*))?(.*)$/.exec(text);
  if (match === null) throw new Error(`unparsable quantity ${text}`);
  const [, sign = '', whole = '', fraction = '', suffix = ''] = match;
  let num = BigInt(`${whole}${fraction}` || '0');
  let den = 10n ** BigInt(fraction.length);
  const binary = BINARY[suffix];
  const decimal = DECIMAL[suffix];
  if (binary !== undefined) num *= 1024n ** binary;
  else if (decimal !== undefined) [num, den] = scaleBy10(num, den, decimal);
  else if (/^[eE][+-]?\d+$/.test(suffix)) [num, den] = scaleBy10(num, den, Number(suffix.slice(1)));
  else throw new Error(`unable to parse quantity's suffix: ${text}`);
  return new Quantity(sign === '-' ? -num : num, den, text);
}

/** -1, 0 or 1 as Kubernetes' Quantity.compareTo returns them. */
export function compareQuantities(a: Quantity, b: Quantity): -1 | 0 | 1 {
  const left = a.num * b.den;
  const right = b.num * a.den;
  return left < right ? -1 : left > right ? 1 : 0;
}

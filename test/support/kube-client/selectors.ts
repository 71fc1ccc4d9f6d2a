// Label and field selectors, matched client-side over a watch cache: the equality-based forms of
// k8s.io/apimachinery (`a=b`, `a==b`, `a!=b`, `a`, `!a`, comma-separated, all must hold), which
// are all the tests ask for. A field selector names a dotted path (`metadata.name=x`).
// Invariant: a selector that does not parse throws (SelectorError) rather than matching
// everything; set-based forms (`in`, `notin`) are refused by name, not half-understood.
import { getPath } from './objects.ts';

export class SelectorError extends Error {}

type Requirement = { key: string; op: 'eq' | 'neq' | 'exists' | 'absent'; value: string };

const KEY = /^[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?$/;

function parse(selector: string, what: string): Requirement[] {
  const out: Requirement[] = [];
  for (const raw of selector.split(',')) {
    const term = raw.trim();
    if (term === '') continue;
    if (/\s(in|notin)\s*\(/.test(term))
      throw new SelectorError(`${what} ${JSON.stringify(selector)}: set-based requirements are not supported here`);
    const m = /^(!?)([^=!]+?)\s*(?:(==|=|!=)\s*(.*))?$/.exec(term);
    const key = m?.[2]?.trim() ?? '';
    if (!m || !KEY.test(key) || (m[1] === '!' && m[3] !== undefined))
      throw new SelectorError(`${what} ${JSON.stringify(selector)}: cannot parse ${JSON.stringify(term)}`);
    const op = m[1] === '!' ? 'absent' : m[3] === undefined ? 'exists' : m[3] === '!=' ? 'neq' : 'eq';
    out.push({ key, op, value: (m[4] ?? '').trim() });
  }
  return out;
}

const holds = (r: Requirement, v: unknown): boolean =>
  r.op === 'exists'
    ? v !== undefined
    : r.op === 'absent'
      ? v === undefined
      : r.op === 'eq'
        ? v !== undefined && String(v) === r.value
        : v === undefined || String(v) !== r.value;

/** A predicate for objects: their labels match `labelSelector` and their fields `fieldSelector` (both optional). */
export function selectorMatcher(
  labelSelector = '',
  fieldSelector = '',
): (obj: { metadata?: { labels?: Record<string, string> } }) => boolean {
  const labels = parse(labelSelector, 'label selector');
  const fields = parse(fieldSelector, 'field selector');
  return (obj) =>
    labels.every((r) => holds(r, obj.metadata?.labels?.[r.key])) && fields.every((r) => holds(r, getPath(obj, r.key)));
}

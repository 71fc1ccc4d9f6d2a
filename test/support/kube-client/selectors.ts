// Label and field selectors with the grammar and semantics of k8s.io/apimachinery.
// Invariant: parsing is separate from matching, and a selector that does not parse throws
// SelectorError rather than silently matching everything.

export class SelectorError extends Error {}

export type LabelOp = 'eq' | 'neq' | 'in' | 'notin' | 'exists' | 'notexists' | 'gt' | 'lt';

export interface LabelRequirement {
  key: string;
  op: LabelOp;
  values: string[];
}

const KEY_CHARS = /[A-Za-z0-9._/-]/;
const NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function checkKey(key: string): void {
  const slash = key.indexOf('/');
  const [prefix, name] = slash >= 0 ? [key.slice(0, slash), key.slice(slash + 1)] : ['', key];
  if (slash >= 0 && (prefix.length === 0 || prefix.length > 253 || !SUBDOMAIN.test(prefix))) {
    throw new SelectorError(`unable to parse requirement: invalid label key "${key}": prefix part must be a DNS-1123 subdomain`);
  }
  if (name.length === 0 || name.length > 63 || !NAME.test(name)) {
    throw new SelectorError(
      `unable to parse requirement: invalid label key "${key}": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`,
    );
  }
}

function checkValue(value: string): void {
  if (value.length > 63 || (value.length > 0 && !NAME.test(value))) {
    throw new SelectorError(
      `unable to parse requirement: invalid label value: "${value}": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`,
    );
  }
}

type Token = { t: 'id'; v: string } | { t: 'op'; v: string };

function tokenize(input: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < input.length) {
    const c = input[i]!;
    if (c === ' ' || c === '\t') {
      i++;
    } else if (c === '!' && input[i + 1] === '=') {
      out.push({ t: 'op', v: '!=' });
      i += 2;
    } else if (c === '=' && input[i + 1] === '=') {
      out.push({ t: 'op', v: '==' });
      i += 2;
    } else if ('!=(),<>'.includes(c)) {
      out.push({ t: 'op', v: c });
      i++;
    } else if (KEY_CHARS.test(c)) {
      let j = i;
      while (j < input.length && KEY_CHARS.test(input[j]!)) j++;
      out.push({ t: 'id', v: input.slice(i, j) });
      i = j;
    } else {
      throw new SelectorError(`unable to parse requirement: unexpected character ${JSON.stringify(c)} in selector "${input}"`);
    }
  }
  return out;
}

/** Parses `a=b,c!=d,e in (x,y),f notin (z),g,!h,n>3`. Empty string selects everything. */
export function parseLabelSelector(input: string): LabelRequirement[] {
  const tokens = tokenize(input);
  const reqs: LabelRequirement[] = [];
  let i = 0;
  const peek = () => tokens[i];
  const next = () => tokens[i++];
  const fail = (why: string): never => {
    throw new SelectorError(`unable to parse requirement: ${why} in selector "${input}"`);
  };
  const ident = (): string => {
    const tok = next();
    if (!tok || tok.t !== 'id') fail('expected an identifier');
    return (tok as Token).v;
  };
  while (i < tokens.length) {
    let req: LabelRequirement;
    const first = peek()!;
    if (first.t === 'op' && first.v === '!') {
      next();
      const key = ident();
      checkKey(key);
      req = { key, op: 'notexists', values: [] };
    } else {
      const key = ident();
      checkKey(key);
      const op = peek();
      if (!op || (op.t === 'op' && op.v === ',')) {
        req = { key, op: 'exists', values: [] };
      } else if (op.t === 'op' && ['=', '==', '!='].includes(op.v)) {
        next();
        const valTok = peek();
        const value = valTok && valTok.t === 'id' ? (next(), valTok.v) : '';
        checkValue(value);
        req = { key, op: op.v === '!=' ? 'neq' : 'eq', values: [value] };
      } else if (op.t === 'op' && (op.v === '>' || op.v === '<')) {
        next();
        const value = ident();
        if (!/^-?\d+$/.test(value)) fail(`for 'Gt', 'Lt' operators, the value must be an integer, got "${value}"`);
        req = { key, op: op.v === '>' ? 'gt' : 'lt', values: [value] };
      } else if (op.t === 'id' && (op.v === 'in' || op.v === 'notin')) {
        next();
        const open = next();
        if (!open || open.v !== '(') fail(`expected '(' after ${op.v}`);
        const values: string[] = [];
        if (peek()?.v === ')') fail(`for 'in', 'notin' operators, values set can't be empty`);
        for (;;) {
          const tok = peek();
          if (tok && tok.t === 'id') {
            next();
            checkValue(tok.v);
            values.push(tok.v);
          } else {
            values.push('');
          }
          const sep = next();
          if (!sep) fail(`expected ')'`);
          if (sep!.v === ')') break;
          if (sep!.v !== ',') fail(`unexpected ${JSON.stringify(sep!.v)} in value set`);
        }
        req = { key, op: op.v, values };
      } else {
        return fail(`unexpected ${JSON.stringify(op.v)} after "${key}"`);
      }
    }
    reqs.push(req);
    const sep = next();
    if (sep && !(sep.t === 'op' && sep.v === ',')) fail(`expected ',' but found ${JSON.stringify(sep.v)}`);
    if (sep && i >= tokens.length) fail('trailing comma');
  }
  return reqs;
}

export function matchesLabels(reqs: LabelRequirement[], labels: Record<string, string> | undefined): boolean {
  const l = labels ?? {};
  return reqs.every((r) => {
    const has = Object.hasOwn(l, r.key);
    const v = l[r.key];
    switch (r.op) {
      case 'eq':
        return has && v === r.values[0];
      case 'neq':
        return !has || v !== r.values[0];
      case 'in':
        return has && r.values.includes(v!);
      case 'notin':
        return !has || !r.values.includes(v!);
      case 'exists':
        return has;
      case 'notexists':
        return !has;
      case 'gt':
      case 'lt': {
        if (!has || !/^-?\d+$/.test(v!)) return false;
        const n = Number(v);
        const bound = Number(r.values[0]);
        return r.op === 'gt' ? n > bound : n < bound;
      }
    }
  });
}

/** A LabelSelector object (matchLabels/matchExpressions) as the string form, e.g. for Scale.status.selector. */
export function labelSelectorToString(
  sel: { matchLabels?: Record<string, string>; matchExpressions?: Array<{ key: string; operator: string; values?: string[] }> } | undefined,
): string {
  if (!sel) return '';
  const parts = Object.entries(sel.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of sel.matchExpressions ?? []) {
    if (e.operator === 'In') parts.push(`${e.key} in (${(e.values ?? []).join(',')})`);
    else if (e.operator === 'NotIn') parts.push(`${e.key} notin (${(e.values ?? []).join(',')})`);
    else if (e.operator === 'Exists') parts.push(e.key);
    else if (e.operator === 'DoesNotExist') parts.push(`!${e.key}`);
  }
  return parts.join(',');
}

export interface FieldRequirement {
  field: string;
  op: 'eq' | 'neq';
  value: string;
}

function splitUnescaped(s: string, sep: string): string[] {
  const out: string[] = [];
  let cur = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === '\\' && i + 1 < s.length) {
      cur += c + s[i + 1];
      i++;
    } else if (c === sep) {
      out.push(cur);
      cur = '';
    } else {
      cur += c;
    }
  }
  out.push(cur);
  return out;
}

function unescape(s: string): string {
  return s.replace(/\\(.)/g, '$1');
}

/** Parses `metadata.name=x,status.phase!=Running`; only `allowed` fields, as the real server refuses others. */
export function parseFieldSelector(input: string, allowed: readonly string[]): FieldRequirement[] {
  if (input.trim() === '') return [];
  return splitUnescaped(input, ',').map((part) => {
    const m = /^([^=!]+?)\s*(==|!=|=)\s*(.*)$/.exec(part.trim());
    if (!m) throw new SelectorError(`invalid selector: '${input}'; can't understand '${part}'`);
    const field = m[1]!.trim();
    if (!allowed.includes(field)) throw new SelectorError(`field label not supported: ${field}`);
    return { field, op: m[2] === '!=' ? 'neq' : 'eq', value: unescape(m[3]!) };
  });
}

export function matchesFields(reqs: FieldRequirement[], get: (field: string) => unknown): boolean {
  return reqs.every((r) => {
    const raw = get(r.field);
    const v = raw === undefined || raw === null ? '' : String(raw);
    return r.op === 'eq' ? v === r.value : v !== r.value;
  });
}

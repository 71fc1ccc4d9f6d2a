// Redis's glob-style pattern matching for PSUBSCRIBE: `*`, `?`, `[abc]`, `[^a]`, `[a-z]` and `\` escapes.
// Invariants: pure; time is bounded by pattern length times text length (the single-star backtracking form), so a
// hostile pattern like `*a*a*a*b` cannot take exponential time.

interface Token {
  kind: 'star' | 'one' | 'char' | 'class';
  ch?: string;
  ranges?: Array<[string, string]>;
  negate?: boolean;
}

function tokens(pattern: string): Token[] {
  const out: Token[] = [];
  const p = [...pattern];
  for (let i = 0; i < p.length; i++) {
    const c = p[i]!;
    if (c === '*') {
      if (out.at(-1)?.kind !== 'star') out.push({ kind: 'star' });
    } else if (c === '?') out.push({ kind: 'one' });
    else if (c === '\\' && i + 1 < p.length) out.push({ kind: 'char', ch: p[++i]! });
    else if (c === '[') {
      let j = i + 1;
      const negate = p[j] === '^';
      if (negate) j++;
      const ranges: Array<[string, string]> = [];
      for (; j < p.length && p[j] !== ']'; j++) {
        if (p[j] === '\\' && j + 1 < p.length) {
          j++;
          ranges.push([p[j]!, p[j]!]);
        } else if (p[j + 1] === '-' && j + 2 < p.length && p[j + 2] !== ']') {
          const [a, b] = [p[j]!, p[j + 2]!];
          ranges.push(a <= b ? [a, b] : [b, a]);
          j += 2;
        } else ranges.push([p[j]!, p[j]!]);
      }
      out.push({ kind: 'class', ranges, negate });
      i = j; // an unclosed class runs to the end, as in Redis
    } else out.push({ kind: 'char', ch: c });
  }
  return out;
}

function matchesOne(t: Token, c: string): boolean {
  switch (t.kind) {
    case 'one':
      return true;
    case 'char':
      return t.ch === c;
    case 'class': {
      const hit = t.ranges!.some(([a, b]) => c >= a && c <= b);
      return t.negate === true ? !hit : hit;
    }
    case 'star':
      return false;
  }
}

export function globMatch(pattern: string, text: string): boolean {
  const ts = tokens(pattern);
  const s = [...text];
  let ti = 0;
  let si = 0;
  let starT = -1;
  let starS = 0;
  while (si < s.length) {
    const t = ts[ti];
    if (t !== undefined && t.kind === 'star') {
      starT = ti++;
      starS = si;
    } else if (t !== undefined && matchesOne(t, s[si]!)) {
      ti++;
      si++;
    } else if (starT >= 0) {
      ti = starT + 1;
      si = ++starS;
    } else return false;
  }
  while (ts[ti]?.kind === 'star') ti++;
  return ti === ts.length;
}

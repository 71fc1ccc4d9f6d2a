// The command blocks of a Markdown page, as the docs test (test/system/docs.test.ts) runs them:
// fenced ```sh/```bash/```shell blocks, transcripts (a fence whose first line starts with `$ `),
// and YAML blocks marked to be applied; each with its heading, its marker and the output the page
// shows after it. Pure: text in, blocks out.
// How a page marks a block (an HTML comment on the line right before the fence, any indent):
//   <!-- illustrative: REASON -->        not run; the reason says why (it must not be empty)
//   <!-- docs-test: env NAME[, NAME] --> run, with these variables given by the test (VARIABLES)
//   <!-- docs-test: retry -->            run again until it exits 0 (it observes something eventually true)
//   <!-- docs-test: apply -->            (a YAML block) applied with `kubectl apply -f -`
// Options combine: `<!-- docs-test: env NEW; retry -->`. A shell block with no marker is RUN:
// a block added later is tested without anyone remembering to say so.
// Invariants: the runner substitutes nothing; a `$NAME` a run block reads is assigned in the
// block or declared by its marker (checked by unmarkedVariables), so no value is made up silently.

export type Kind = 'shell' | 'transcript' | 'apply';

export interface Block {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  /** The `## ` heading the block is under ('' before the first). */
  section: string;
  /** Every heading above the block, outermost first. */
  headings: string[];
  /** The block's lines, its fence's indent removed. */
  text: string;
  kind: Kind | 'other';
  illustrative?: string;
  env: string[];
  retry: boolean;
  /** A JSON or text block right after this one (only blank lines between): the output the page shows. */
  shows?: string;
}

const SHELL = new Set(['sh', 'bash', 'shell', 'console']);
const MARKER = /^<!--\s*(illustrative|docs-test)\s*:\s*(.*?)\s*-->$/;

interface RawBlock {
  line: number;
  lang: string;
  indent: number;
  lines: string[];
  before: string | undefined;
  blankAfterPrevious: boolean;
}

function rawBlocks(text: string): Array<RawBlock & { headings: string[] }> {
  const lines = text.split('\n');
  const out: Array<RawBlock & { headings: string[] }> = [];
  const headings: Array<{ level: number; title: string }> = [];
  let lastEnd = -2;
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    const h = /^(#{1,6}) (.+)$/.exec(l);
    if (h) {
      const level = h[1]!.length;
      while (headings.length > 0 && headings[headings.length - 1]!.level >= level) headings.pop();
      headings.push({ level, title: h[2]!.trim() });
      continue;
    }
    const open = /^(\s*)```(\S*)\s*$/.exec(l);
    if (!open) continue;
    const indent = open[1]!.length;
    let j = i + 1;
    while (j < lines.length && !/^\s*```\s*$/.test(lines[j]!)) j++;
    let k = i - 1;
    while (k >= 0 && lines[k]!.trim() === '' && k > lastEnd) k--;
    const onlyBlank = lines.slice(lastEnd + 1, i).every((x) => x.trim() === '');
    out.push({
      line: i + 1,
      lang: open[2] ?? '',
      indent,
      lines: lines.slice(i + 1, j).map((x) => x.slice(Math.min(indent, x.length - x.trimStart().length))),
      before: k >= 0 && k > lastEnd ? lines[k]!.trim() : undefined,
      blankAfterPrevious: lastEnd >= 0 && onlyBlank,
      headings: headings.map((x) => x.title),
    });
    lastEnd = j;
    i = j;
  }
  return out;
}

function kindOf(lang: string, lines: string[], apply: boolean): Kind | 'other' {
  if (lang === 'yaml' && apply) return 'apply';
  const first = lines.find((x) => x.trim() !== '')?.trimStart() ?? '';
  if ((lang === '' || lang === 'text' || lang === 'console') && first.startsWith('$ ')) return 'transcript';
  if (SHELL.has(lang)) return 'shell';
  return 'other';
}

/** Every fenced block of a page, classified and marked. Throws on a malformed marker, naming its line. */
export function parseBlocks(file: string, text: string): Block[] {
  const raws = rawBlocks(text);
  const out: Block[] = [];
  for (const r of raws) {
    const m = r.before !== undefined ? MARKER.exec(r.before) : null;
    let illustrative: string | undefined;
    const env: string[] = [];
    let retry = false;
    let apply = false;
    if (m && m[1] === 'illustrative') {
      if (m[2]!.trim() === '')
        throw new Error(`${file}:${r.line}: an illustrative block needs a reason: <!-- illustrative: why -->`);
      illustrative = m[2]!;
    } else if (m) {
      for (const opt of m[2]!.split(';').map((x) => x.trim())) {
        const envOpt = /^env\s+(.+)$/.exec(opt);
        if (envOpt) env.push(...envOpt[1]!.split(',').map((x) => x.trim()));
        else if (opt === 'retry') retry = true;
        else if (opt === 'apply') apply = true;
        else throw new Error(`${file}:${r.line}: unknown docs-test option "${opt}" (env NAME, retry, apply)`);
      }
    }
    const kind = kindOf(r.lang, r.lines, apply);
    const previous = out[out.length - 1];
    if (
      kind === 'other' &&
      previous &&
      previous.kind !== 'other' &&
      r.blankAfterPrevious &&
      (r.lang === 'json' || r.lang === 'text')
    ) {
      previous.shows = r.lines.join('\n');
    }
    out.push({
      file,
      line: r.line,
      lang: r.lang,
      section: sectionOf(text, r.line),
      headings: r.headings,
      text: r.lines.join('\n'),
      kind,
      ...(illustrative !== undefined ? { illustrative } : {}),
      env,
      retry,
    });
  }
  return out;
}

/** The `## ` heading above a line ('' when none). */
function sectionOf(text: string, line: number): string {
  const above = text.split('\n').slice(0, line - 1);
  for (let i = above.length - 1; i >= 0; i--) {
    const h = /^## (.+)$/.exec(above[i]!);
    if (h) return h[1]!.trim();
  }
  return '';
}

/** The blocks a user types: shell blocks, transcripts and YAML blocks marked apply. */
export function commandBlocks(file: string, text: string): Block[] {
  return parseBlocks(file, text).filter((b) => b.kind !== 'other');
}

/** A transcript's commands, each with the output the page shows for it. */
export function transcriptSteps(text: string): Array<{ command: string; shows: string }> {
  const steps: Array<{ command: string; shows: string[] }> = [];
  for (const l of text.split('\n')) {
    if (l.startsWith('$ ')) steps.push({ command: l.slice(2), shows: [] });
    else steps[steps.length - 1]?.shows.push(l);
  }
  return steps.map((s) => ({ command: s.command, shows: s.shows.join('\n') }));
}

const SPECIAL = new Set(['HOME', 'PATH', 'KUBECONFIG', 'PWD', 'USER', 'RANDOM', 'SECONDS', 'REPLY']);

/** `$NAME`s a shell block reads that it neither assigns nor declares: the runner would run them empty. */
export function unmarkedVariables(b: Block): string[] {
  const assigned = new Set(
    [...b.text.matchAll(/(?:^|[\s;&|(])(?:export\s+|local\s+|for\s+)?([A-Za-z_][A-Za-z0-9_]*)(?:=|\s+in\s)/gm)].map(
      (m) => m[1]!,
    ),
  );
  const read = new Set([...b.text.matchAll(/\$\{?([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]!));
  // Inside single quotes (jq programs, jsonpath) a `$` is not the shell's.
  const quoted = new Set(
    [...b.text.matchAll(/'[^']*'/g)].flatMap((m) =>
      [...m[0].matchAll(/\$\{?([A-Za-z_][A-Za-z0-9_]*)/g)].map((x) => x[1]!),
    ),
  );
  return [...read].filter(
    (v) => !assigned.has(v) && !b.env.includes(v) && !SPECIAL.has(v) && !(quoted.has(v) && !unquotedUse(b.text, v)),
  );
}

function unquotedUse(text: string, v: string): boolean {
  return new RegExp(`\\$\\{?${v}\\b`).test(text.replace(/'[^']*'/g, "''"));
}

/**
 * Column names a command's trailing comment promises (`kubectl get redis # NAME VERSION ...`): two or more upper-case
 * words.
 */
export function promisedColumns(line: string): string[] | undefined {
  const comment = /\s#\s+(.+)$/.exec(line)?.[1];
  if (comment === undefined) return undefined;
  const words = comment.trim().split(/\s+/);
  return words.length >= 2 && words.every((w) => /^[A-Z][A-Z-]*$/.test(w)) ? words : undefined;
}

/** The column rows (two or more upper-case words) and one-word lines of an output the page shows. */
export function shownShape(shows: string): { columns: string[][]; words: string[]; keys: string[] } {
  const columns: string[][] = [];
  const words: string[] = [];
  for (const raw of shows.split('\n')) {
    const l = raw.trim();
    const w = l.split(/\s+/);
    if (w.length >= 2 && w.every((x) => /^[A-Z][A-Z-]*$/.test(x))) columns.push(w);
    else if (/^[A-Z][a-z]+$/.test(l)) words.push(l);
  }
  const keys = [...shows.matchAll(/"([A-Za-z_][\w-]*)"\s*:/g)].map((m) => m[1]!);
  return { columns, words, keys: [...new Set(keys)] };
}

/**
 * What the shown output promises and the real output lacks (loosely: columns in order on one line, one-word lines, JSON
 * keys).
 */
export function shapeMismatches(shows: string, actual: string): string[] {
  const { columns, words, keys } = shownShape(shows);
  const lines = actual.split('\n').map((l) => l.trim());
  const out: string[] = [];
  for (const cols of columns)
    if (!lines.some((l) => hasInOrder(l.split(/\s+/), cols))) out.push(`no line with the columns ${cols.join(' ')}`);
  for (const w of words) if (!lines.includes(w)) out.push(`no line "${w}"`);
  for (const k of keys) if (!actual.includes(`"${k}"`)) out.push(`no key "${k}"`);
  return out;
}

export function hasInOrder(have: string[], want: string[]): boolean {
  let i = 0;
  for (const h of have) if (h === want[i]) i++;
  return i === want.length;
}

/**
 * The values the docs test gives a block that declares them (`<!-- docs-test: env NAME -->`); the
 * page says what each stands for next to its block. Only these: a block that reads anything else
 * it does not assign fails (unmarkedVariables).
 */
export const VARIABLES: Record<string, { meaning: string; value: () => string }> = {
  NEW: {
    meaning: 'the new password of a rotation',
    value: () => `docs-test-${Math.random().toString(36).slice(2, 12)}`,
  },
};

/** The pages whose command blocks are run (or marked illustrative). */
export const PAGES = [
  'README.md',
  'docs/troubleshooting.md',
  'docs/monitoring.md',
  'charts/redis-operator/README.md',
] as const;

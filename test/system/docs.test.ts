// System test: the docs' commands, run as a user types them, on the real cluster. Every command
// block of the pages in PAGES (README.md, docs/troubleshooting.md, docs/monitoring.md, the chart's
// README) is run in page order, a subtest per block named by its page, line and heading, unless an
// `<!-- illustrative: why -->` comment sits right before it (test/docs/blocks.ts has the markers).
// Each block runs in bash (test/docs/shell.ts) in the repository's root with `kubectl` the cluster's
// (KUBECONFIG, the real kubectl first on PATH) and `kubectl redis` (bin/ on PATH); it passes when
// it exits 0, prints no Redis error reply, and shows the columns, one-word lines and JSON keys the
// page shows for it (loosely: a trailing `# NAME VERSION ...` comment, a ```json/```text block right
// after it, or a transcript's output).
// The pages' `my-redis` is the design's Redis (manifests/examples/redis.yaml) in `default`: before a
// section that runs kubectl, it is made Running and linked, re-created (claims and all) only when a
// block before changed its spec or it is not; what runs in the background (`npm start &`) is
// stopped when its section ends.
//   flock /work/.cluster.lock node --test --test-timeout=900000 test/system/docs.test.ts
//   DOCS_SECTIONS='Day-2|No master' ...      # only the sections whose heading matches
// Network: 198.18.93.x.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  commandBlocks,
  PAGES,
  promisedColumns,
  shapeMismatches,
  transcriptSteps,
  VARIABLES,
  type Block,
} from '../docs/blocks.ts';
import { REDIS_ERROR, Shell, type ShellResult } from '../docs/shell.ts';
import { BIN_DIR } from './plugin-run.ts';
import { allLinked, applyDesign, boot, NAME, NS, RUNNING_ROW } from './support.ts';
import type { SystemCluster } from './cluster.ts';

const SUBNET = 93;
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BLOCK_MS = 90_000;
const RETRY_MS = 30_000;

/** A block's failure in words, or undefined when it passed. */
function verdict(r: ShellResult, shows: string | undefined, columns: string[][]): string | undefined {
  const out = `${r.stdout}\n--- stderr\n${r.stderr}`.slice(-4000);
  if (r.timedOut) return `timed out\n${out}`;
  if (r.code !== 0) return `exit ${r.code}\n${out}`;
  if (REDIS_ERROR.test(r.stdout) || REDIS_ERROR.test(r.stderr)) return `a Redis error reply\n${out}`;
  const missing = [
    ...(shows !== undefined ? shapeMismatches(shows, r.stdout) : []),
    ...columns
      .filter((cols) => shapeMismatches(cols.join(' '), r.stdout).length > 0)
      .map((cols) => `no line with the columns ${cols.join(' ')}`),
  ];
  return missing.length > 0 ? `the output lacks what the page shows: ${missing.join('; ')}\n${out}` : undefined;
}

async function runBlock(shell: Shell, b: Block): Promise<string | undefined> {
  const env = Object.fromEntries(b.env.map((v) => [v, VARIABLES[v]?.value() ?? '']));
  const prefix = Object.entries(env)
    .map(([k, v]) => `export ${k}=${JSON.stringify(v)}`)
    .join('\n');
  if (b.kind === 'transcript') {
    for (const step of transcriptSteps(b.text)) {
      const why = verdict(await shell.run(step.command, BLOCK_MS), step.shows, []);
      if (why) return `$ ${step.command}: ${why}`;
    }
    return undefined;
  }
  if (b.kind === 'apply') return verdict(await shell.run('kubectl apply -f -', BLOCK_MS, b.text), undefined, []);
  const columnRows = b.text
    .split('\n')
    .map((l) => promisedColumns(l))
    .filter((c): c is string[] => c !== undefined);
  const deadline = Date.now() + (b.retry ? RETRY_MS : 0);
  for (;;) {
    const why = verdict(await shell.run(`${prefix}\n${b.text}`, BLOCK_MS), b.shows, columnRows);
    if (why === undefined || Date.now() >= deadline) return why;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** The design's Redis Running and linked; re-created from scratch when a block changed its spec or broke it. */
async function designRedis(
  t: { diagnostic: (s: string) => void },
  c: SystemCluster,
  generation: { value?: number },
): Promise<void> {
  const r = c.get('redises', NAME, NS);
  if (r && r.metadata.generation === generation.value && c.redisRow(NAME) === RUNNING_ROW && allLinked(c, 3)) return;
  if (r) {
    t.diagnostic(
      `re-creating ${NAME}: a block changed it (generation ${generation.value} -> ${r.metadata.generation})`,
    );
    await c.kubectl(['delete', 'redis', NAME, '-n', NS, '--wait=true', '--timeout=60s']);
    await c.waitFor(() => c.pods(NAME).length === 0, 60_000, `${NAME}'s pods gone`);
    await c.kubectl(['delete', 'pvc,redisbackup', '--all', '-n', NS, '--wait=true', '--timeout=60s']);
    await c.waitFor(() => !c.get('configmaps', `${NAME}-config`, NS), 60_000, `${NAME}-config gone`);
  }
  await applyDesign(t, c);
  generation.value = c.get('redises', NAME, NS)?.metadata.generation;
}

test('every command block of the docs runs on the real cluster', { timeout: 900_000 }, async (t) => {
  const c = await boot(t, { subnet: SUBNET });
  if (!c) return;
  const only = process.env['DOCS_SECTIONS'] ? new RegExp(process.env['DOCS_SECTIONS']) : undefined;
  const shell = new Shell(ROOT, {
    KUBECONFIG: c.kubeconfig,
    PATH: [BIN_DIR, c.controlPlane.binDir, path.dirname(process.execPath), process.env['PATH'] ?? ''].join(':'),
    NO_COLOR: '1',
  });
  t.after(() => shell.dispose());
  const generation: { value?: number } = {};
  const illustrative: string[] = [];
  for (const page of PAGES) {
    const blocks = commandBlocks(page, readFileSync(path.join(ROOT, page), 'utf8'));
    const sections = [...new Set(blocks.map((b) => b.section))];
    for (const section of sections) {
      if (only && !only.test(section)) continue;
      const mine = blocks.filter((b) => b.section === section);
      for (const b of mine.filter((x) => x.illustrative !== undefined))
        illustrative.push(`${page}:${b.line} (${section}): ${b.illustrative}`);
      const run = mine.filter((x) => x.illustrative === undefined);
      if (run.length === 0) continue;
      await t.test(`${page}: ${section || '(top)'}`, async (st) => {
        if (run.some((b) => /\bkubectl\b/.test(b.text))) await designRedis(st, c, generation);
        try {
          for (const b of run) {
            await st.test(`${page}:${b.line} ${b.headings.slice(1).join(' > ')}`, async () => {
              const why = await runBlock(shell, b);
              assert.equal(why, undefined, `${page}:${b.line}: ${why}`);
            });
          }
        } finally {
          await shell.stopAll();
        }
      });
    }
  }
  t.diagnostic(`left illustrative (${illustrative.length}):\n${illustrative.join('\n')}`);
});

// The docs test's reading of the pages, without a cluster: how blocks, markers and shown output
// are parsed (test/docs/blocks.ts), and that every page's blocks are runnable as written (markers
// well formed, illustrative ones with a reason, no variable the test would run empty). The blocks
// themselves run in test/system/docs.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  commandBlocks,
  PAGES,
  parseBlocks,
  promisedColumns,
  shapeMismatches,
  transcriptSteps,
  unmarkedVariables,
  VARIABLES,
} from './blocks.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const PAGE = [
  '# T',
  '## One',
  '```sh',
  'kubectl get redis   # NAME VERSION',
  '```',
  '',
  '```json',
  '{ "phase": "Running" }',
  '```',
  '<!-- illustrative: needs cert-manager -->',
  '```bash',
  'kubectl apply -f cert.yaml',
  '```',
  '## Two',
  '- a list item:',
  '',
  '  <!-- docs-test: env NEW; retry -->',
  '  ```bash',
  '  echo "$NEW"',
  '  ```',
  '```',
  '$ kubectl get redis',
  'NAME       VERSION',
  'my-redis   7.2',
  '```',
  '```yaml',
  'spec: {}',
  '```',
].join('\n');

test('blocks: kinds, sections, markers, indent and the output shown after a block', () => {
  const all = parseBlocks('p.md', PAGE);
  assert.deepEqual(
    all.map((b) => [b.line, b.kind, b.section, b.illustrative ?? '', b.env.join(','), b.retry]),
    [
      [3, 'shell', 'One', '', '', false],
      [7, 'other', 'One', '', '', false],
      [11, 'shell', 'One', 'needs cert-manager', '', false],
      [18, 'shell', 'Two', '', 'NEW', true],
      [21, 'transcript', 'Two', '', '', false],
      [26, 'other', 'Two', '', '', false],
    ],
  );
  assert.equal(all[0]!.shows, '{ "phase": "Running" }');
  assert.equal(all[3]!.text, 'echo "$NEW"');
  assert.equal(commandBlocks('p.md', PAGE).length, 4);
  assert.deepEqual(transcriptSteps(all[4]!.text), [
    { command: 'kubectl get redis', shows: 'NAME       VERSION\nmy-redis   7.2' },
  ]);
});

test('blocks: a malformed marker is refused, naming its line', () => {
  assert.throws(
    () => parseBlocks('p.md', '<!-- illustrative: -->\n```sh\nls\n```'),
    /p\.md:2: an illustrative block needs a reason/,
  );
  assert.throws(
    () => parseBlocks('p.md', '<!-- docs-test: sometimes -->\n```sh\nls\n```'),
    /unknown docs-test option "sometimes"/,
  );
});

test('blocks: what the page shows is matched loosely, and a difference is named', async (t) => {
  const cases: Array<[string, string, string[]]> = [
    ['NAME VERSION', 'NAME   VERSION   MASTER\nmy-redis 7.2 x', []],
    ['NAME MASTER', 'NAME   VERSION\n', ['no line with the columns NAME MASTER']],
    ['{ "phase": "Running", ... }', '{"phase":"Pending"}', []],
    ['{ "master": "x" }', '{"phase":"Running"}', ['no key "master"']],
    ['Conditions\n  True Ready', 'Conditions\n  False Ready', []],
    ['Pods', 'Conditions', ['no line "Pods"']],
  ];
  for (const [shows, actual, want] of cases)
    await t.test(shows, () => assert.deepEqual(shapeMismatches(shows, actual), want));
  assert.deepEqual(promisedColumns('kubectl get redisbackup   # REDIS PHASE SIZE'), ['REDIS', 'PHASE', 'SIZE']);
  assert.equal(promisedColumns('kubectl get pods   # Pending pods? PVCs not bound?'), undefined);
});

test('blocks: a variable read but neither assigned nor declared is found', () => {
  const [b] = commandBlocks('p.md', "```sh\nkubectl logs $POD\nX=1; echo $X\njq '.a | $__loc__' f\n```");
  assert.deepEqual(unmarkedVariables(b!), ['POD']);
});

for (const page of PAGES) {
  test(`${page}: every command block is run as written or marked illustrative with a reason`, async (t) => {
    const text = readFileSync(join(ROOT, page), 'utf8');
    const blocks = commandBlocks(page, text);
    for (const b of blocks.filter((x) => x.illustrative === undefined)) {
      await t.test(`${page}:${b.line}`, () => {
        assert.deepEqual(
          unmarkedVariables(b),
          [],
          `${page}:${b.line}: reads variables it neither sets nor declares (<!-- docs-test: env NAME -->)`,
        );
        for (const v of b.env) {
          assert.ok(
            VARIABLES[v],
            `${page}:${b.line}: ${v} is not one the docs test gives (test/docs/blocks.ts VARIABLES)`,
          );
          assert.ok(
            text.includes(`\`${v}\``) || text.includes(`\`$${v}\``),
            `${page}:${b.line}: the page does not say what \`${v}\` stands for`,
          );
        }
      });
    }
  });
}

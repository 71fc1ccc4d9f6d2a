// The Dockerfile, checked statically (no Docker engine here): Node 24 bases only, a typecheck
// stage the final image depends on, production dependencies only, a numeric non-root user that
// matches the Deployment, both entry points present, and a .dockerignore that keeps the
// context small without dropping what the build needs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { manifestHookCommand } from '../support/hook-command.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Instruction {
  keyword: string;
  args: string;
}
interface Stage {
  image: string;
  name: string | undefined;
  instructions: Instruction[];
}

/** Dockerfile instructions (comments dropped, continuation lines joined), grouped by stage. */
function parseDockerfile(text: string): Stage[] {
  const logical: string[] = [];
  let current = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (current === '' && (line === '' || line.startsWith('#'))) continue;
    if (line.startsWith('#')) continue;
    if (line.endsWith('\\')) current += `${line.slice(0, -1)} `;
    else {
      logical.push(`${current}${line}`.trim());
      current = '';
    }
  }
  if (current.trim() !== '') logical.push(current.trim());
  const stages: Stage[] = [];
  for (const line of logical) {
    const match = /^(\S+)\s*(.*)$/.exec(line);
    if (match === null) continue;
    const keyword = (match[1] as string).toUpperCase();
    const args = match[2] as string;
    if (keyword === 'FROM') {
      const from = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      assert.ok(from, `unparsable FROM ${args}`);
      stages.push({ image: from[1] as string, name: from[2], instructions: [] });
    } else {
      assert.ok(stages.length > 0, `${keyword} before FROM`);
      (stages[stages.length - 1] as Stage).instructions.push({ keyword, args });
    }
  }
  return stages;
}

const stages = parseDockerfile(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
const final = stages[stages.length - 1] as Stage;
const all = (stage: Stage, keyword: string) => stage.instructions.filter((i) => i.keyword === keyword);

test('the Dockerfile is multi-stage on Node 24 images only', () => {
  assert.ok(stages.length >= 2, 'multi-stage');
  const names = new Set(stages.map((s) => s.name).filter(Boolean));
  for (const stage of stages) {
    assert.ok(stage.image.startsWith('node:24') || names.has(stage.image), `base image ${stage.image} is not node:24*`);
  }
});

test('the final image depends on a stage that installs everything and typechecks', () => {
  const check = stages.find((s) => all(s, 'RUN').some((r) => /npm run typecheck/.test(r.args)));
  assert.ok(check?.name, 'a named stage runs npm run typecheck');
  assert.ok(all(check, 'RUN').some((r) => /npm ci\b/.test(r.args)), 'it installs with npm ci');
  // BuildKit builds only the stages the target depends on: without this COPY the check is skipped.
  assert.ok(all(final, 'COPY').some((c) => c.args.includes(`--from=${check.name}`)), `the final stage copies from ${check.name}`);
});

test('the final image has production dependencies only', () => {
  const runs = all(final, 'RUN').map((r) => r.args);
  const installs = runs.filter((r) => /\bnpm (ci|install|i)\b/.test(r));
  assert.equal(installs.length, 1, runs.join(' | '));
  assert.match(installs[0] as string, /npm ci\b.*--omit=dev/);
  for (const copy of all(final, 'COPY')) {
    assert.doesNotMatch(copy.args, /node_modules/, `COPY ${copy.args} would bring dev dependencies`);
    if (copy.args.includes('--from=')) assert.match(copy.args, /\b(src|dist)\b/, `only sources and their compiled JS come from another stage: ${copy.args}`);
  }
  assert.ok(all(final, 'COPY').some((c) => /package\.json/.test(c.args)), 'package.json ("type": "module") is in the image');
  assert.ok(all(final, 'ENV').some((e) => /NODE_ENV=production/.test(e.args)));
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { type?: string; devDependencies?: Record<string, string> };
  assert.equal(pkg.type, 'module', 'Node must load src/*.ts as ES modules');
  assert.ok(pkg.devDependencies?.['node'], 'the Node 24 binary is a devDependency, which --omit=dev keeps out');
});

test('the image runs as a numeric non-root user, the one the Deployment declares', () => {
  const users = all(final, 'USER');
  assert.ok(users.length > 0, 'the final stage sets USER');
  const user = (users[users.length - 1] as Instruction).args.split(':')[0] as string;
  assert.ok(user !== 'root' && user !== '0', `USER ${user} is root`);
  assert.match(user, /^\d+$/, 'numeric, so that runAsNonRoot can verify it');
  const deployment = parseAllDocuments(readFileSync(join(ROOT, 'manifests/deployment.yaml'), 'utf8'))[0]?.toJS() as {
    spec: { template: { spec: { securityContext: { runAsUser: number } } } };
  };
  assert.equal(String(deployment.spec.template.spec.securityContext.runAsUser), user);
});

test('both entry points exist and the default command is the hook service, as the Deployment runs it', () => {
  const cmd = all(final, 'CMD');
  assert.equal(cmd.length, 1);
  assert.deepEqual(JSON.parse((cmd[0] as Instruction).args), manifestHookCommand());
  assert.ok(all(final, 'COPY').some((c) => /\bsrc\b/.test(c.args)), 'src/ is in the image');
  assert.ok(all(final, 'COPY').some((c) => /\/app\/dist \.\/dist/.test(c.args)), 'dist/ (the compiled hook) is in the image');
  assert.ok(all(stages.find((x) => x.name === 'check')!, 'RUN').some((r) => /npm run build/.test(r.args)), 'the check stage builds dist/');
  for (const entry of ['src/server/main.ts', 'src/sidecar/main.ts']) assert.ok(existsSync(join(ROOT, entry)), `${entry} does not exist`);
});

test('.dockerignore keeps node_modules and .git out and what the build needs in', () => {
  const patterns = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  for (const needed of ['node_modules', '.git']) assert.ok(patterns.includes(needed), `${needed} is ignored`);
  for (const kept of ['src', 'package.json', 'package-lock.json', 'tsconfig.json', 'test', 'scripts']) {
    assert.ok(!patterns.some((p) => p === kept || p === `${kept}/` || p === '*' || p === `${kept}/**`), `${kept} must stay in the build context`);
  }
});

// The static checks `npm test` runs before the tests, side by side: the type check, the lint
// rules (type-checked, so they build a program of their own), the formatting check and the build.
// They read the same files and share no state, and each waits on a single core for much of its
// run, so running them together takes about as long as the slowest instead of their sum. Each
// one's output is printed whole, in this fixed order, once all have finished; the exit code is 1
// when any failed. Usage: node scripts/checks.ts
import { spawn } from 'node:child_process';

const CHECKS: Array<{ name: string; argv: string[] }> = [
  { name: 'typecheck', argv: ['tsc', '-p', 'tsconfig.json', '--noEmit'] },
  { name: 'eslint', argv: ['eslint', '.'] },
  { name: 'prettier', argv: ['prettier', '--check', '.'] },
  { name: 'build', argv: ['tsc', '-p', 'tsconfig.build.json'] },
];

interface Outcome {
  name: string;
  code: number | null;
  output: string;
  seconds: number;
}

function run(name: string, [command, ...args]: string[]): Promise<Outcome> {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(command ?? '', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const done = (code: number | null, extra = '') =>
      resolve({ name, code, output: output + extra, seconds: (performance.now() - started) / 1000 });
    child.on('error', (err) => done(null, `${err.message}\n`));
    child.on('close', (code) => done(code));
  });
}

const outcomes = await Promise.all(CHECKS.map((c) => run(c.name, c.argv)));
for (const o of outcomes) {
  const verdict = o.code === 0 ? 'ok' : `FAILED (exit ${o.code ?? 'none'})`;
  if (o.code !== 0 || o.output.trim() !== '')
    process.stdout.write(o.output.endsWith('\n') ? o.output : `${o.output}\n`);
  console.log(`checks: ${o.name} ${verdict} in ${o.seconds.toFixed(1)} s`);
}
process.exitCode = outcomes.every((o) => o.code === 0) ? 0 : 1;

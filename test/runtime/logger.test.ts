// createLogger: JSON lines at the configured level, to the destination given.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger } from '../../src/runtime/logger.ts';

function capture() {
  const lines: string[] = [];
  return { lines, destination: { write: (line: string) => void lines.push(line) } };
}

test('writes one JSON object per line with level, time and message', () => {
  const { lines, destination } = capture();
  const logger = createLogger({ level: 'info', destination });
  logger.child({ namespace: 'default', name: 'my-redis' }).info({ route: 'sync' }, 'hook request answered');
  assert.equal(lines.length, 1);
  const line = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
  assert.equal(line['level'], 30);
  assert.equal(typeof line['time'], 'number');
  assert.equal(line['msg'], 'hook request answered');
  assert.equal(line['namespace'], 'default');
  assert.equal(line['name'], 'my-redis');
  assert.equal(line['route'], 'sync');
});

const levels: Array<['trace' | 'info' | 'warn' | 'silent', number]> = [
  ['trace', 4],
  ['info', 2],
  ['warn', 1],
  ['silent', 0],
];
for (const [level, expected] of levels) {
  test(`level ${level}: ${expected} of trace, debug, info, warn get through`, () => {
    const { lines, destination } = capture();
    const logger = createLogger({ level, destination });
    logger.trace('t');
    logger.debug('d');
    logger.info('i');
    logger.warn('w');
    assert.equal(lines.length, expected);
  });
}

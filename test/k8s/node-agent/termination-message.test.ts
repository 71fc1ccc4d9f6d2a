// A container's termination message by the kubelet's rule: the file, or with FallbackToLogsOnError
// the tail of the log (pure), and reading a file's tail.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { joinMessages, MAX_LOG_BYTES, readTail, terminationMessage, type MessageSources } from './termination-message.ts';

const lines = (n: number, width = 3) => Array.from({ length: n }, (_, i) => `${String(i + 1).padStart(width, '0')}\n`).join('');

describe('terminationMessage', () => {
  const log = Buffer.from('starting\nboom: no such bucket\n');
  const src = (o: Partial<MessageSources>): MessageSources => ({ file: Buffer.alloc(0), policy: 'File', exitCode: 0, logTail: () => log, ...o });
  const cases: Array<[string, MessageSources, string]> = [
    ['the file, whatever the exit code', src({ file: Buffer.from('{"ok":true}'), exitCode: 3 }), '{"ok":true}'],
    ['policy File: an empty file is no message, even on failure', src({ exitCode: 1 }), ''],
    ['FallbackToLogsOnError, exit 0: still the (empty) file', src({ policy: 'FallbackToLogsOnError' }), ''],
    ['FallbackToLogsOnError, failed with an empty file: the log', src({ policy: 'FallbackToLogsOnError', exitCode: 1 }), 'starting\nboom: no such bucket\n'],
    [
      'FallbackToLogsOnError, failed, file missing: the log',
      src({ policy: 'FallbackToLogsOnError', exitCode: 1, file: undefined }),
      'starting\nboom: no such bucket\n',
    ],
    ['FallbackToLogsOnError, failed with a message in the file: the file', src({ policy: 'FallbackToLogsOnError', exitCode: 1, file: Buffer.from('m') }), 'm'],
    ['the log: its last 80 lines', src({ policy: 'FallbackToLogsOnError', exitCode: 1, logTail: () => Buffer.from(lines(100)) }), lines(100).slice(20 * 4)],
    [
      'the log: its last 2048 bytes when 80 lines are more',
      src({ policy: 'FallbackToLogsOnError', exitCode: 1, logTail: () => Buffer.from(lines(100, 49)) }),
      lines(100, 49).slice(-MAX_LOG_BYTES),
    ],
    ['no log at all', src({ policy: 'FallbackToLogsOnError', exitCode: 1, logTail: () => undefined }), ''],
  ];
  for (const [name, sources, want] of cases) test(name, () => assert.equal(terminationMessage(sources), want));

  test('the log is read only when the fallback applies', () => {
    let read = 0;
    terminationMessage(src({ policy: 'FallbackToLogsOnError', exitCode: 0, logTail: () => (read++, log) }));
    assert.equal(read, 0);
  });
});

test('joinMessages: the runtime message first, as the kubelet appends the container message', () => {
  assert.equal(joinMessages(undefined, ''), undefined);
  assert.equal(joinMessages('exec: "nod": not found', ''), 'exec: "nod": not found');
  assert.equal(joinMessages(undefined, 'done'), 'done');
  assert.equal(joinMessages('start error', 'done'), 'start error: done');
});

test('readTail: the last bytes of a file; undefined when it is missing', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tail-'));
  try {
    const file = path.join(dir, 'f');
    writeFileSync(file, 'x'.repeat(5000) + 'END');
    assert.equal(readTail(file, 4096)?.length, 4096);
    assert.ok(readTail(file, 4096)?.toString().endsWith('xEND'));
    assert.equal(readTail(file, 10)?.toString(), 'xxxxxxxEND');
    writeFileSync(file, '');
    assert.equal(readTail(file, 4096)?.length, 0);
    assert.equal(readTail(path.join(dir, 'missing'), 4096), undefined);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

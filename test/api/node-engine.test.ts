// Pure: telling engines apart from INFO server (texts captured from the real servers), the pod
// annotation's format, the target engine of a rollout and a move's progress.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  engineField,
  engineFromInfo,
  engineMoveProgress,
  formatEngine,
  readEngine,
  targetEngine,
  type EngineOfPod,
} from '../../src/api/node-engine.ts';
import { parseInfoFields } from '../../src/sidecar/adapters/redis/info.ts';

// The first lines of INFO server, as each server answers (CRLF as they send it).
const INFO = {
  valkey801:
    '# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\nredis_git_sha1:00000000\r\nserver_mode:standalone\r\n',
  redis726: '# Server\r\nredis_version:7.2.6\r\nredis_git_sha1:00000000\r\nredis_mode:standalone\r\n',
  redis7015: '# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:00000000\r\nredis_mode:standalone\r\n',
};

test('engineFromInfo: the engine and its own version', async (t) => {
  const cases: Array<{ name: string; text: string; want: string | null }> = [
    { name: 'Valkey 8.0.1 (redis_version says 7.2.4)', text: INFO.valkey801, want: 'valkey 8.0.1' },
    { name: 'Redis 7.2.6 (no server_name)', text: INFO.redis726, want: 'redis 7.2.6' },
    { name: "Debian's Redis 7.0.15", text: INFO.redis7015, want: 'redis 7.0.15' },
    { name: 'no server section', text: '# Replication\r\nrole:master\r\n', want: null },
    {
      name: 'an unknown server names itself, its version field absent: redis_version',
      text: 'server_name:Keydb\r\nredis_version:6.3.4\r\n',
      want: 'keydb 6.3.4',
    },
    {
      name: 'a server_name that is no word is not reported',
      text: 'server_name:a b\r\nredis_version:1\r\n',
      want: null,
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const e = engineFromInfo(parseInfoFields(c.text));
      assert.equal(e === null ? null : formatEngine(e), c.want);
    });
  }
});

test('the annotation reads back what was written; anything else reads as null', async (t) => {
  fc.assert(
    fc.property(
      fc.constantFrom('redis', 'valkey'),
      fc.stringMatching(/^[0-9]{1,2}\.[0-9]{1,2}\.[0-9]{1,3}$/),
      (engine, version) => {
        assert.deepEqual(readEngine(formatEngine({ engine, version })), { engine, version });
      },
    ),
  );
  for (const bad of [undefined, '', 'valkey', 'valkey 8.0.1 extra', 'Valkey 8.0.1', ' 8.0.1']) {
    await t.test(`${JSON.stringify(bad)} reads as null`, () => assert.equal(readEngine(bad), null));
  }
});

const pod = (name: string, engine: string | null, updated: boolean | null): EngineOfPod => ({
  pod: name,
  engine: engine === null ? null : readEngine(engine),
  updated,
});

test('targetEngine: spec.engine, else what the pods of the current template run', async (t) => {
  const cases: Array<{ name: string; spec: unknown; pods: EngineOfPod[]; want: string | null }> = [
    { name: 'the spec says it', spec: 'valkey', pods: [pod('a', 'redis 7.2.6', false)], want: 'valkey' },
    {
      name: 'no spec.engine: the updated pods that answered',
      spec: undefined,
      pods: [pod('a', 'redis 7.2.6', false), pod('b', 'valkey 8.0.1', true), pod('c', null, true)],
      want: 'valkey',
    },
    {
      name: 'no updated pod answered yet: not known',
      spec: undefined,
      pods: [pod('a', 'redis 7.2.6', false), pod('b', null, true)],
      want: null,
    },
    {
      name: 'updated pods disagree: not known',
      spec: undefined,
      pods: [pod('a', 'redis 7.2.6', true), pod('b', 'valkey 8.0.1', true)],
      want: null,
    },
    { name: 'an empty spec.engine counts as not said', spec: '', pods: [pod('a', 'redis 7.2.6', true)], want: 'redis' },
  ];
  for (const c of cases) await t.test(c.name, () => assert.equal(targetEngine(c.spec, c.pods), c.want));
});

test('engineMoveProgress: under way while an answering pod runs another engine', async (t) => {
  const cases: Array<{ name: string; target: string | null; pods: EngineOfPod[]; want: unknown }> = [
    { name: 'target not known', target: null, pods: [pod('a', 'redis 7.2.6', false)], want: null },
    {
      name: 'every pod on the target',
      target: 'valkey',
      pods: [pod('a', 'valkey 8.0.1', true), pod('b', null, true)],
      want: null,
    },
    {
      name: 'not started: to names the engine only',
      target: 'valkey',
      pods: [pod('b', 'redis 7.2.6', false), pod('a', 'redis 7.2.6', false)],
      want: { from: 'redis 7.2.6', to: 'valkey', arrived: [], total: 2 },
    },
    {
      name: 'half way, a pod restarting',
      target: 'valkey',
      pods: [pod('c', 'redis 7.2.6', false), pod('b', 'valkey 8.0.1', true), pod('a', null, true)],
      want: { from: 'redis 7.2.6', to: 'valkey 8.0.1', arrived: ['b'], total: 3 },
    },
    {
      name: 'the way back',
      target: 'redis',
      pods: [pod('a', 'valkey 8.0.1', false), pod('b', 'redis 7.2.6', true)],
      want: { from: 'valkey 8.0.1', to: 'redis 7.2.6', arrived: ['b'], total: 2 },
    },
  ];
  for (const c of cases) await t.test(c.name, () => assert.deepEqual(engineMoveProgress(c.target, c.pods), c.want));
});

test('engineField: only a non-empty string', () => {
  assert.deepEqual(engineField({ engine: 'valkey' }), { engine: 'valkey' });
  assert.deepEqual(engineField({}), {});
  assert.deepEqual(engineField({ engine: '' }), {});
  assert.deepEqual(engineField({ engine: 7 }), {});
});

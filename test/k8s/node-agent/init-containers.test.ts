// The order the node agent runs init containers in, and what a restarted agent keeps of them
// (pure). No API server, no processes.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { completedInits, initStep, isSidecar, type InitStep, type InitView } from './init-containers.ts';

const v = (name: string, o: Partial<InitView> = {}): InitView => ({ name, running: false, restarting: false, ...o });

describe('initStep', () => {
  const cases: Array<[string, InitView[], InitStep]> = [
    ['no init containers: the app containers may run', [], { done: true }],
    ['none ran yet: the first', [v('a'), v('b')], { next: 0 }],
    ['the first completed: the second', [v('a', { exitCode: 0 }), v('b')], { next: 1 }],
    ['one running: nothing starts beside it', [v('a', { exitCode: 0 }), v('b', { running: true }), v('c')], { busy: 'b' }],
    ['one backing off after a failure: nothing starts', [v('a', { restarting: true }), v('b')], { busy: 'a' }],
    ['one failed for good (Never): the pod is done', [v('a', { exitCode: 0 }), v('b', { exitCode: 2 }), v('c')], { failed: 'b' }],
    ['all completed', [v('a', { exitCode: 0 }), v('b', { exitCode: 0 })], { done: true }],
  ];
  for (const [name, inits, want] of cases) test(name, () => assert.deepEqual(initStep(inits), want));
});

test('isSidecar: an init container with restartPolicy Always', () => {
  assert.equal(isSidecar({ restartPolicy: 'Always' }), true);
  assert.equal(isSidecar({}), false);
});

describe('completedInits (a restarted agent)', () => {
  const completed = { exitCode: 0, reason: 'Completed', startedAt: '2025-01-01T00:00:01Z', finishedAt: '2025-01-01T00:00:02Z' };
  const pod = (restartPolicy: string | undefined): V1Pod =>
    ({
      spec: { restartPolicy, initContainers: [{ name: 'a' }, { name: 'b' }, { name: 'c' }], containers: [{ name: 'main' }] },
      status: {
        initContainerStatuses: [
          { name: 'a', restartCount: 2, containerID: 'node-agent://1', state: { terminated: completed } },
          { name: 'b', restartCount: 0, state: { terminated: { ...completed, exitCode: 1, reason: 'Error' } } },
          { name: 'c', restartCount: 0, state: { running: { startedAt: '2025-01-01T00:00:03Z' } } },
        ],
      },
    }) as unknown as V1Pod;
  const cases: Array<[string, string | undefined, string[]]> = [
    ['Always (the default): every init container runs again, as on a rebooted node', undefined, []],
    ['Always', 'Always', []],
    ['OnFailure: the API would refuse a completed one running again, so it stays completed', 'OnFailure', ['a']],
    ['Never: likewise', 'Never', ['a']],
  ];
  for (const [name, policy, want] of cases) test(name, () => assert.deepEqual([...completedInits(pod(policy)).keys()], want));
  test('the recorded completion is kept whole', () =>
    assert.deepEqual(completedInits(pod('Never')).get('a'), { terminated: completed, restartCount: 2, containerID: 'node-agent://1' }));
});

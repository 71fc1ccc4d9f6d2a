// Init containers in the kubelet's pod status (pure): the phase (getPhase), the Initialized
// condition (GeneratePodInitializedCondition) and initContainerStatuses; a pod without init
// containers keeps the status it always had.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildPodStatus, initializedCondition, podPhase, type ContainerSnapshot, type PodSnapshot } from './pod-status.ts';

type State = ContainerSnapshot['state'];
const waiting = (reason = 'PodInitializing'): State => ({ waiting: { reason } });
const running: State = { running: { startedAt: '2025-01-01T00:00:01Z' } };
const exited = (exitCode: number): State => ({ terminated: { exitCode, reason: exitCode === 0 ? 'Completed' : 'Error', finishedAt: '2025-01-01T00:00:02Z' } });
const c = (name: string, state: State, o: { ready?: boolean; last?: number } = {}): ContainerSnapshot => ({
  name,
  image: 'redis-operator:0.1.0',
  ready: o.ready ?? ('terminated' in state && state.terminated.exitCode === 0),
  started: 'running' in state,
  restartCount: o.last === undefined ? 0 : 1,
  state,
  ...(o.last === undefined ? {} : { lastTerminated: { exitCode: o.last, reason: 'Error', finishedAt: 'x' } }),
});
const pod = (initContainers: ContainerSnapshot[], app: State, restartPolicy = 'Always'): PodSnapshot => ({
  terminal: false,
  restartPolicy,
  hostIP: '127.0.49.1',
  podIP: '127.0.49.2',
  startTime: '2025-01-01T00:00:00Z',
  containers: [c('main', app, { ready: 'running' in app })],
  initContainers,
});

describe('podPhase with init containers', () => {
  const cases: Array<[string, PodSnapshot, string]> = [
    ['the first init container not started yet: Pending', pod([c('a', waiting()), c('b', waiting())], waiting()), 'Pending'],
    ['an init container running: Pending', pod([c('a', exited(0)), c('b', running)], waiting()), 'Pending'],
    ['all completed, the app container running: Running', pod([c('a', exited(0)), c('b', exited(0))], running), 'Running'],
    ['all completed, the app container not started yet: Pending', pod([c('a', exited(0))], waiting()), 'Pending'],
    ['an init container failed under Never: Failed', pod([c('a', exited(1)), c('b', waiting())], waiting(), 'Never'), 'Failed'],
    ['an init container backing off under OnFailure: Pending', pod([c('a', waiting('CrashLoopBackOff'), { last: 1 })], waiting(), 'OnFailure'), 'Pending'],
    ['an init container backing off under Always: Pending', pod([c('a', waiting('CrashLoopBackOff'), { last: 2 })], waiting(), 'Always'), 'Pending'],
    ['all completed, the app container exited 0 under Never: Succeeded', pod([c('a', exited(0))], exited(0), 'Never'), 'Succeeded'],
  ];
  for (const [name, snapshot, want] of cases) test(name, () => assert.equal(podPhase(snapshot), want));
});

describe('the Initialized condition', () => {
  const cases: Array<[string, PodSnapshot, [boolean, string?, string?]]> = [
    ['no init containers: True, as always', { ...pod([], running), initContainers: [] }, [true]],
    [
      'one running, one to come: False, naming both',
      pod([c('a', running), c('b', waiting())], waiting()),
      [false, 'ContainersNotInitialized', 'containers with incomplete status: [a b]'],
    ],
    [
      'a failed one is incomplete',
      pod([c('a', exited(0)), c('b', exited(1))], waiting(), 'Never'),
      [false, 'ContainersNotInitialized', 'containers with incomplete status: [b]'],
    ],
    ['all completed: True', pod([c('a', exited(0)), c('b', exited(0))], waiting()), [true]],
    ['an app container has run (whatever the init statuses say): True', pod([c('a', waiting())], running), [true]],
    ['Succeeded: True, PodCompleted', pod([c('a', exited(0))], exited(0), 'Never'), [true, 'PodCompleted']],
  ];
  for (const [name, snapshot, want] of cases) test(name, () => assert.deepEqual(initializedCondition(snapshot, podPhase(snapshot)), want));
});

describe('buildPodStatus', () => {
  test('initContainerStatuses have the containerStatuses shape; Initialized moves to True once they completed', () => {
    const memory = new Map();
    const t0 = Date.parse('2025-01-01T00:00:05Z');
    const during = buildPodStatus(pod([c('restore', running)], waiting()), memory, t0);
    const initialized = (s: Record<string, unknown>) => (s['conditions'] as Array<Record<string, unknown>>).find((x) => x['type'] === 'Initialized');
    assert.deepEqual(initialized(during), {
      type: 'Initialized',
      status: 'False',
      lastTransitionTime: '2025-01-01T00:00:05Z',
      reason: 'ContainersNotInitialized',
      message: 'containers with incomplete status: [restore]',
    });
    assert.deepEqual((during['initContainerStatuses'] as unknown[])[0], {
      name: 'restore',
      image: 'redis-operator:0.1.0',
      imageID: '',
      ready: false,
      started: true,
      restartCount: 0,
      state: running,
      lastState: {},
    });
    const after = buildPodStatus(pod([c('restore', exited(0))], running), memory, t0 + 2000);
    assert.deepEqual(initialized(after), { type: 'Initialized', status: 'True', lastTransitionTime: '2025-01-01T00:00:07Z' });
    const init = (after['initContainerStatuses'] as Array<Record<string, unknown>>)[0]!;
    assert.deepEqual([init['ready'], init['started'], init['state']], [true, false, exited(0)]);
  });

  test('a pod without init containers has no initContainerStatuses', () => {
    const s = buildPodStatus({ ...pod([], running), initContainers: undefined }, new Map(), 0);
    assert.equal('initContainerStatuses' in s, false);
    assert.equal(buildPodStatus({ ...pod([], running), initContainers: [] }, new Map(), 0)['initContainerStatuses'], undefined);
  });
});

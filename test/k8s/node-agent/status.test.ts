// What the node agent writes about pods and nodes (pure): the pod status a worker reports, when
// it counts as already written, and the Node object and Lease times. No API server.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ContainerSnapshot } from '../../cluster/workloads/pod-status.ts';
import { microTime, nodeObject } from './node.ts';
import type { PodWorker } from './pod-worker.ts';
import { statusMatches, stripNulls, workerStatus } from './status-sync.ts';

type Json = Record<string, unknown>;
const NOW = Date.parse('2026-01-02T03:04:05.678Z');

function worker(o: {
  containers: ContainerSnapshot[];
  initContainers?: ContainerSnapshot[];
  finished?: boolean;
  terminating?: boolean;
  generation?: number;
  restartPolicy?: string;
}): PodWorker {
  return {
    finished: o.finished ?? false,
    terminating: o.terminating ?? false,
    ip: '127.0.61.2',
    startTimeMs: NOW - 5000,
    conditions: new Map(),
    pod: {
      metadata: { name: 'web-0', namespace: 'ns', uid: 'u', ...(o.generation ? { generation: o.generation } : {}) },
      spec: { containers: [], restartPolicy: o.restartPolicy ?? 'Always' },
    },
    snapshots: () => o.containers,
    initSnapshots: () => o.initContainers ?? [],
  } as unknown as PodWorker;
}

const running: ContainerSnapshot = {
  name: 'redis',
  image: 'redis:7.2',
  containerID: 'node-agent://abc',
  ready: true,
  started: true,
  restartCount: 0,
  state: { running: { startedAt: '2026-01-02T03:04:01Z' } },
};

describe('workerStatus', () => {
  test('a running, ready pod: phase, IPs, conditions with observedGeneration, containerStatuses with imageID', () => {
    const s = workerStatus(worker({ containers: [running], generation: 3 }), '127.0.61.1', 'node-agent://redis-server@sha256:x', undefined, NOW);
    assert.equal(s['phase'], 'Running');
    assert.equal(s['podIP'], '127.0.61.2');
    assert.deepEqual(s['podIPs'], [{ ip: '127.0.61.2' }]);
    assert.deepEqual(s['hostIPs'], [{ ip: '127.0.61.1' }]);
    assert.equal(s['observedGeneration'], 3);
    const conditions = s['conditions'] as Json[];
    assert.deepEqual(
      conditions.map((c) => [c['type'], c['status']]),
      [
        ['PodReadyToStartContainers', 'True'],
        ['Initialized', 'True'],
        ['Ready', 'True'],
        ['ContainersReady', 'True'],
        ['PodScheduled', 'True'],
      ],
    );
    assert.ok(conditions.filter((c) => c['type'] !== 'PodScheduled').every((c) => c['observedGeneration'] === 3));
    const cs = (s['containerStatuses'] as Json[])[0]!;
    assert.equal(cs['imageID'], 'node-agent://redis-server@sha256:x');
    assert.equal(cs['containerID'], 'node-agent://abc');
  });

  test('PodScheduled is left to the scheduler once the API has it', () => {
    const s = workerStatus(worker({ containers: [running] }), '127.0.61.1', 'i', { conditions: [{ type: 'PodScheduled', status: 'True' }] }, NOW);
    assert.equal(
      (s['conditions'] as Json[]).some((c) => c['type'] === 'PodScheduled'),
      false,
    );
  });

  test('a finished deleted pod is terminal: exit 0 is Succeeded; a container that never ran is ContainerStatusUnknown and the pod Failed (TerminatePod)', () => {
    const done: ContainerSnapshot = {
      ...running,
      ready: false,
      started: false,
      state: { terminated: { exitCode: 0, reason: 'Completed', finishedAt: '2026-01-02T03:04:05Z' } },
    };
    assert.equal(workerStatus(worker({ containers: [done], finished: true, terminating: true }), 'h', 'i', undefined, NOW)['phase'], 'Succeeded');
    const never: ContainerSnapshot = {
      name: 'redis',
      image: 'redis:7.2',
      ready: false,
      started: false,
      restartCount: 0,
      state: { waiting: { reason: 'ContainerCreating' } },
    };
    const s = workerStatus(worker({ containers: [never], finished: true, terminating: true }), 'h', 'i', undefined, NOW);
    assert.equal(s['phase'], 'Failed');
    const state = ((s['containerStatuses'] as Json[])[0]!['state'] as Json)['terminated'] as Json;
    assert.equal(state['reason'], 'ContainerStatusUnknown');
    assert.equal(state['exitCode'], 137);
  });
});

describe('workerStatus with init containers', () => {
  const snap = (name: string, state: ContainerSnapshot['state'], o: Partial<ContainerSnapshot> = {}): ContainerSnapshot => ({
    name,
    image: 'redis-operator:0.1.0',
    ready: false,
    started: false,
    restartCount: 0,
    state,
    ...o,
  });
  const initializing = { waiting: { reason: 'PodInitializing' } };
  const completed = { terminated: { exitCode: 0, reason: 'Completed', finishedAt: '2026-01-02T03:04:02Z' } };
  const init = (s: Json) => s['initContainerStatuses'] as Json[];
  const app = (s: Json) => s['containerStatuses'] as Json[];

  test('a running init container: Pending, not Initialized, the app container PodInitializing; imageIDs by image', () => {
    const s = workerStatus(
      worker({
        initContainers: [snap('restore', { running: { startedAt: '2026-01-02T03:04:01Z' } }, { containerID: 'node-agent://r', started: true })],
        containers: [snap('redis', initializing, { image: 'redis:7.2' })],
      }),
      'h',
      'node-agent://redis-server@sha256:x',
      undefined,
      NOW,
    );
    assert.equal(s['phase'], 'Pending');
    const initialized = (s['conditions'] as Json[]).find((c) => c['type'] === 'Initialized');
    assert.deepEqual(
      [initialized?.['status'], initialized?.['reason'], initialized?.['message']],
      ['False', 'ContainersNotInitialized', 'containers with incomplete status: [restore]'],
    );
    assert.match(String(init(s)[0]!['imageID']), /^node-agent:\/\/node@sha256:[0-9a-f]{64}$/, 'the operator image is the Node binary');
    assert.equal(app(s)[0]!['imageID'], '', 'not started: no image yet');
    assert.deepEqual(app(s)[0]!['state'], initializing);
  });

  test('deleted while initializing: the started init container is ContainerStatusUnknown, the rest keep waiting; Failed', () => {
    const s = workerStatus(
      worker({
        initContainers: [
          snap('first', completed, { containerID: 'node-agent://1', ready: true }),
          snap('second', { waiting: { reason: 'CrashLoopBackOff' } }, { containerID: 'node-agent://2', restartCount: 1 }),
          snap('third', initializing),
        ],
        containers: [snap('redis', initializing)],
        finished: true,
        terminating: true,
      }),
      'h',
      'i',
      undefined,
      NOW,
    );
    assert.equal(s['phase'], 'Failed');
    assert.deepEqual(
      init(s).map((c) => Object.keys(c['state'] as Json)[0] + ':' + String(((c['state'] as Json)['terminated'] as Json | undefined)?.['reason'] ?? '')),
      ['terminated:Completed', 'terminated:ContainerStatusUnknown', 'waiting:'],
    );
    assert.deepEqual(app(s)[0]!['state'], initializing, 'the pod never initialized: its app container is not "unknown"');
  });

  test('restartPolicy Never and a failed init container: Failed while nothing is deleted', () => {
    const failed = { terminated: { exitCode: 1, reason: 'Error', message: 'boom\n', finishedAt: '2026-01-02T03:04:02Z' } };
    const s = workerStatus(
      worker({
        initContainers: [snap('restore', failed, { containerID: 'node-agent://r' })],
        containers: [snap('redis', initializing)],
        restartPolicy: 'Never',
      }),
      'h',
      'i',
      undefined,
      NOW,
    );
    assert.equal(s['phase'], 'Failed');
    assert.deepEqual(init(s)[0]!['state'], failed);
  });
});

describe('statusMatches', () => {
  const ours: Json = { phase: 'Running', podIP: '127.0.61.2', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: 't' }] };
  test("the API's extra fields, nulls and other owners' conditions do not count as a difference", () => {
    const server = {
      phase: 'Running',
      podIP: '127.0.61.2',
      qosClass: 'Burstable',
      conditions: [
        { type: 'PodScheduled', status: 'True' },
        { type: 'Ready', status: 'True', lastTransitionTime: 't', lastProbeTime: null },
      ],
    };
    assert.equal(statusMatches(server, ours), true);
  });
  test('a changed field or condition does', () => {
    assert.equal(statusMatches({ ...ours, phase: 'Pending' }, ours), false);
    assert.equal(statusMatches({ ...ours, conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: 't' }] }, ours), false);
    assert.equal(statusMatches(undefined, ours), false);
  });
  test('stripNulls is recursive', () => assert.deepEqual(stripNulls({ a: null, b: [{ c: null, d: 1 }] }), { b: [{ d: 1 }] }));
});

test('the Node: labels a node may set on itself, InternalIP + Hostname, the kubelet port, Ready', () => {
  const n = nodeObject(
    { name: 'node-1', hostIP: '127.0.61.1', kubeletPort: 10250, version: 'v1.37.2', capacity: { cpu: '2' }, allocatable: { cpu: '2' } },
    '2026-01-02T03:04:05Z',
  );
  const meta = n['metadata'] as { labels: Record<string, string> };
  assert.equal(meta.labels['kubernetes.io/hostname'], 'node-1');
  assert.ok(Object.keys(meta.labels).every((k) => /^(beta\.)?kubernetes\.io\/(hostname|os|arch)$/.test(k)));
  const status = n['status'] as Json;
  assert.deepEqual(status['addresses'], [
    { type: 'InternalIP', address: '127.0.61.1' },
    { type: 'Hostname', address: 'node-1' },
  ]);
  assert.deepEqual(status['daemonEndpoints'], { kubeletEndpoint: { Port: 10250 } });
  const ready = (status['conditions'] as Json[]).find((c) => c['type'] === 'Ready');
  assert.equal(ready?.['status'], 'True');
  assert.equal((status['nodeInfo'] as Json)['kubeletVersion'], 'v1.37.2');
});

test('microTime has six fractional digits, as metav1.MicroTime', () => assert.equal(microTime(NOW), '2026-01-02T03:04:05.678000Z'));

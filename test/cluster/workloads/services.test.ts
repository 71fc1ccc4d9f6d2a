// serviceEndpoints and pod status: the endpoints controller's and the kubelet's rules. Pure.
// Addresses are strings only (127.0.49.x, nothing is contacted).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { StoredObject } from '../../support/kube-api/index.ts';
import { buildPodStatus, podPhase, type ConditionMemory, type PodSnapshot } from './pod-status.ts';
import { serviceEndpoints } from './services.ts';

function svc(spec: Record<string, unknown>, namespace = 'ns'): StoredObject {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name: 's', namespace, uid: 's', resourceVersion: '1', creationTimestamp: 'x' }, spec };
}

function pod(
  name: string,
  o: { labels?: Record<string, string>; ready?: boolean; ip?: string | null; phase?: string; terminating?: boolean; namespace?: string } = {},
): StoredObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: o.namespace ?? 'ns',
      uid: name,
      resourceVersion: '1',
      creationTimestamp: 'x',
      labels: o.labels ?? { app: 'r', role: 'master' },
      ...(o.terminating ? { deletionTimestamp: 'y' } : {}),
    },
    status: {
      phase: o.phase ?? 'Running',
      ...(o.ip === null ? {} : { podIP: o.ip ?? `127.0.49.${name.length}` }),
      conditions: [{ type: 'Ready', status: o.ready === false ? 'False' : 'True' }],
    },
  };
}

describe('serviceEndpoints', () => {
  const selector = { app: 'r', role: 'master' };
  const cases: Array<{ name: string; spec: Record<string, unknown>; pods: StoredObject[]; want: string[] }> = [
    { name: 'selector match and Ready', spec: { selector }, pods: [pod('a'), pod('b', { labels: { app: 'r', role: 'replica' } })], want: ['a'] },
    { name: 'not Ready is left out', spec: { selector }, pods: [pod('a', { ready: false }), pod('b')], want: ['b'] },
    { name: 'terminating is left out even when Ready', spec: { selector }, pods: [pod('a', { terminating: true })], want: [] },
    { name: 'no pod IP yet is left out', spec: { selector }, pods: [pod('a', { ip: null })], want: [] },
    { name: 'terminal phases are left out', spec: { selector }, pods: [pod('a', { phase: 'Failed' }), pod('b', { phase: 'Succeeded' })], want: [] },
    { name: 'other namespaces are left out', spec: { selector }, pods: [pod('a', { namespace: 'other' })], want: [] },
    {
      name: 'publishNotReadyAddresses includes not-ready and terminating pods',
      spec: { selector, publishNotReadyAddresses: true },
      pods: [pod('c', { ready: false }), pod('a', { terminating: true }), pod('b', { ip: null })],
      want: ['a', 'c'],
    },
    { name: 'no selector: no managed endpoints', spec: {}, pods: [pod('a')], want: [] },
  ];
  for (const c of cases)
    test(c.name, () =>
      assert.deepEqual(
        serviceEndpoints(svc(c.spec), c.pods).map((e) => e.pod),
        c.want,
      ),
    );
});

describe('pod status', () => {
  const base = (containers: PodSnapshot['containers'], terminal = false, restartPolicy = 'Always'): PodSnapshot => ({
    terminal,
    restartPolicy,
    hostIP: '127.0.49.1',
    podIP: '127.0.49.2',
    startTime: '2025-01-01T00:00:00Z',
    containers,
  });
  const c = (state: PodSnapshot['containers'][number]['state'], o: { ready?: boolean; last?: boolean } = {}) => ({
    name: 'redis',
    image: 'redis:7.2',
    ready: o.ready ?? false,
    started: true,
    restartCount: 0,
    state,
    ...(o.last ? { lastTerminated: { exitCode: 1, reason: 'Error', finishedAt: 'x' } } : {}),
  });
  const cases: Array<[string, PodSnapshot, string]> = [
    ['waiting, never ran: Pending', base([c({ waiting: { reason: 'CreateContainerConfigError' } })]), 'Pending'],
    ['running: Running', base([c({ running: { startedAt: 'x' } })]), 'Running'],
    ['crash-looping (waiting after a run): Running', base([c({ waiting: { reason: 'CrashLoopBackOff' } }, { last: true })]), 'Running'],
    ['stopped for good while deleted, exit 0: Succeeded', base([c({ terminated: { exitCode: 0, reason: 'Completed', finishedAt: 'x' } })], true), 'Succeeded'],
    ['stopped for good while deleted, exit 137: Failed', base([c({ terminated: { exitCode: 137, reason: 'Error', finishedAt: 'x' } })], true), 'Failed'],
    ['restartPolicy Never, exit 1: Failed', base([c({ terminated: { exitCode: 1, reason: 'Error', finishedAt: 'x' } })], false, 'Never'), 'Failed'],
  ];
  for (const [name, snapshot, want] of cases) test(name, () => assert.equal(podPhase(snapshot), want));

  test('Ready follows the containers; lastTransitionTime moves only on a transition', () => {
    const memory = new Map<string, ConditionMemory>();
    const t0 = Date.parse('2025-01-01T00:00:05Z');
    const ready = (s: Record<string, unknown>) =>
      (s['conditions'] as Array<{ type: string; status: string; lastTransitionTime: string }>).find((x) => x.type === 'Ready')!;
    const a = buildPodStatus(base([c({ running: { startedAt: 'x' } })]), memory, t0);
    assert.deepEqual([ready(a).status, ready(a).lastTransitionTime], ['False', '2025-01-01T00:00:05Z']);
    const b = buildPodStatus(base([c({ running: { startedAt: 'x' } })]), memory, t0 + 3000);
    assert.deepEqual(b, a, 'nothing changed: the same status, so no write');
    const d = buildPodStatus(base([c({ running: { startedAt: 'x' } }, { ready: true })]), memory, t0 + 7000);
    assert.deepEqual([ready(d).status, ready(d).lastTransitionTime], ['True', '2025-01-01T00:00:12Z']);
    assert.equal(d['podIP'], '127.0.49.2');
  });
});

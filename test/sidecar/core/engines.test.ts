// EngineWatch with a recording Kubernetes client: the leader writes each pod's engine once (its
// own write counts before the informer shows it) and tells the move; a standby writes and tells
// nothing and forgets the move.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import pino from 'pino';
import { ENGINE_ANNOTATION, readEngine } from '../../../src/api/node-engine.ts';
import { EngineWatch, type EngineWatchPod } from '../../../src/sidecar/core/engines.ts';

function harness() {
  let leader = true;
  const patches: Array<{ name: string; uid: string | undefined; value: string | null | undefined }> = [];
  const events: string[] = [];
  const pending: Promise<unknown>[] = [];
  const watch = new EngineWatch({
    log: pino({ level: 'silent' }),
    isLeader: () => leader,
    event: (e) => events.push(e.reason),
    namespace: 'ns',
    track: (p) => pending.push(p),
    kube: {
      patchPodMetadata: async (_ns, name, changes): Promise<V1Pod> => {
        patches.push({ name, uid: changes.uid, value: changes.annotations?.[ENGINE_ANNOTATION] });
        return { metadata: { name, uid: changes.uid ?? '', annotations: { ...changes.annotations } } } as V1Pod;
      },
    },
  });
  return {
    watch,
    patches,
    events,
    setLeader: (v: boolean) => void (leader = v),
    settle: () => Promise.all(pending.splice(0)),
  };
}

const pod = (name: string, engine: string | null, o: Partial<EngineWatchPod> = {}): EngineWatchPod => ({
  name,
  uid: `uid-${name}`,
  annotations: {},
  engine: readEngine(engine ?? ''),
  updated: null,
  master: false,
  ...o,
});

test('the leader writes each answering pod once, with the uid as precondition', async () => {
  const h = harness();
  h.watch.observe([pod('a', 'redis 7.2.6', { master: true }), pod('b', null)], undefined, 2);
  await h.settle();
  assert.deepEqual(h.patches, [{ name: 'a', uid: 'uid-a', value: 'redis 7.2.6' }]);
  // The informer has not caught up: our own write counts.
  h.watch.observe([pod('a', 'redis 7.2.6', { master: true }), pod('b', 'redis 7.2.6')], undefined, 2);
  await h.settle();
  assert.deepEqual(
    h.patches.map((p) => p.name),
    ['a', 'b'],
  );
  assert.deepEqual(h.events, [], 'no move at rest');
});

test('a move is told by the leader; a standby tells and writes nothing and forgets it', async () => {
  const h = harness();
  const at = (b: string) => [pod('m', 'redis 7.2.6', { master: true }), pod('r', b, { updated: true })];
  h.watch.observe(at('redis 7.2.6'), 'valkey', 2);
  assert.deepEqual(h.events, ['EngineMoveStarted']);
  h.setLeader(false);
  h.watch.observe(at('valkey 8.0.1'), 'valkey', 2);
  await h.settle();
  assert.deepEqual(h.events, ['EngineMoveStarted']);
  const written = h.patches.length;
  h.setLeader(true);
  h.watch.observe(at('valkey 8.0.1'), 'valkey', 2);
  await h.settle();
  assert.deepEqual(
    h.events,
    ['EngineMoveStarted', 'EngineMoveStarted', 'EngineMovePod'],
    'a new leadership starts over',
  );
  assert.ok(h.patches.length > written, 'the leader writes again');
});

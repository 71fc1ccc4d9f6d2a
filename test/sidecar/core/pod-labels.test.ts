// The core pod-label writer (src/sidecar/core/pod-labels.ts) with a fake pod PATCH: the uid
// precondition, the overlay of what a patch returned, and failures as data (gone, replaced, other).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiException, type V1Pod } from '@kubernetes/client-node';
import { PodLabelWriter, type PodPatcher } from '../../../src/sidecar/core/pod-labels.ts';

type Changes = Parameters<PodPatcher['patchPodMetadata']>[2];

function writer(answer: (name: string, changes: Changes) => V1Pod | Error) {
  const calls: Array<[string, string, Changes]> = [];
  const w = new PodLabelWriter(
    {
      patchPodMetadata: async (namespace, name, changes) => {
        calls.push([namespace, name, changes]);
        const a = answer(name, changes);
        if (a instanceof Error) throw a;
        return a;
      },
    },
    'ns',
  );
  return { w, calls };
}

type Meta = Record<string, string>;
const pod = (uid: string, rv: string, labels: Meta, annotations: Meta = {}): V1Pod => ({
  metadata: { name: 'p-0', uid, resourceVersion: rv, labels, annotations },
});
const status = (code: number, message: string) => new ApiException(code, 'HTTP', JSON.stringify({ message }), {});

test('a patch carries the uid precondition and keeps what the API returned as the overlay', async () => {
  const { w, calls } = writer(() => pod('u1', '12', { role: 'master', app: 'x' }, { link: 'up' }));
  assert.deepEqual(await w.patch('p-0', 'u1', { labels: { role: 'master' } }), { ok: true });
  assert.deepEqual(calls, [['ns', 'p-0', { labels: { role: 'master' }, uid: 'u1' }]]);
  const want = { resourceVersion: '12', labels: { role: 'master', app: 'x' }, annotations: { link: 'up' } };
  assert.deepEqual(w.overlay('u1'), want);
});

test('an unknown pod is patched without a precondition', async () => {
  const { w, calls } = writer(() => pod('u2', '3', {}));
  await w.patch('p-0', undefined, { annotations: { link: 'down' } });
  assert.deepEqual(calls[0]![2], { annotations: { link: 'down' } });
});

test('forget and retain drop overlays', async () => {
  let n = 0;
  const { w } = writer(() => pod(`u${++n}`, '1', {}));
  await w.patch('a', 'u1', { labels: { role: 'x' } });
  await w.patch('b', 'u2', { labels: { role: 'x' } });
  await w.patch('c', 'u3', { labels: { role: 'x' } });
  w.forget('u1');
  w.retain(new Set(['u3']));
  assert.deepEqual(
    ['u1', 'u2', 'u3'].map((u) => w.overlay(u) !== undefined),
    [false, false, true],
  );
});

test('failures come back as data: gone (404), replaced (uid precondition), anything else', async () => {
  const cases: Array<[Error, string | null, number | undefined]> = [
    [status(404, 'pods "p-0" not found'), 'gone', 404],
    [status(422, 'Precondition failed: metadata.uid: Invalid value'), 'replaced', 422],
    [status(409, 'conflict'), null, 409],
    [new Error('socket hang up'), null, undefined],
  ];
  for (const [err, gone, code] of cases) {
    const { w } = writer(() => err);
    const r = await w.patch('p-0', 'u1', { labels: { role: 'master' } });
    assert.equal(r.ok, false);
    if (r.ok) continue;
    assert.equal(r.gone, gone, err.message);
    assert.equal(r.failure.code, code);
    assert.equal(w.overlay('u1'), undefined);
  }
});

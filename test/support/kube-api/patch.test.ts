// Merge, JSON and strategic merge patch (pure).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jsonPatch, mergePatch, PatchError, strategicMergePatch } from './patch.ts';

test('JSON merge patch (RFC 7386 examples)', async (t) => {
  const cases: Array<[unknown, unknown, unknown]> = [
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [
      ['a', 'b'],
      ['c', 'd'],
      ['c', 'd'],
    ],
    [{ a: 'b' }, ['c'], ['c']],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ];
  for (const [target, patch, expected] of cases) {
    await t.test(`${JSON.stringify(target)} + ${JSON.stringify(patch)}`, () => assert.deepEqual(mergePatch(target, patch), expected, JSON.stringify(patch)));
  }
});

test('merge patch does not mutate its inputs', () => {
  const target = { metadata: { labels: { a: '1' } } };
  const patch = { metadata: { labels: { b: '2' } } };
  mergePatch(target, patch);
  assert.deepEqual(target, { metadata: { labels: { a: '1' } } });
  assert.deepEqual(patch, { metadata: { labels: { b: '2' } } });
});

test('JSON patch operations', async (t) => {
  const doc = { metadata: { labels: { a: '1' }, finalizers: ['x'] }, spec: { list: [1, 2] } };
  const cases: Array<[unknown[], unknown]> = [
    [[{ op: 'add', path: '/metadata/labels/b', value: '2' }], { ...doc, metadata: { ...doc.metadata, labels: { a: '1', b: '2' } } }],
    [[{ op: 'remove', path: '/metadata/finalizers/0' }], { ...doc, metadata: { ...doc.metadata, finalizers: [] } }],
    [[{ op: 'replace', path: '/spec/list/1', value: 3 }], { ...doc, spec: { list: [1, 3] } }],
    [[{ op: 'add', path: '/spec/list/-', value: 9 }], { ...doc, spec: { list: [1, 2, 9] } }],
    [[{ op: 'move', from: '/spec/list', path: '/spec/moved' }], { ...doc, spec: { moved: [1, 2] } }],
    [[{ op: 'copy', from: '/metadata/labels/a', path: '/metadata/labels/c' }], { ...doc, metadata: { ...doc.metadata, labels: { a: '1', c: '1' } } }],
    [
      [
        { op: 'test', path: '/metadata/labels/a', value: '1' },
        { op: 'add', path: '/metadata/labels/a~1b', value: 'x' },
      ],
      { ...doc, metadata: { ...doc.metadata, labels: { a: '1', 'a/b': 'x' } } },
    ],
  ];
  for (const [ops, expected] of cases) await t.test(JSON.stringify(ops), () => assert.deepEqual(jsonPatch(doc, ops), expected, JSON.stringify(ops)));
});

test('JSON patch failures: non-array body (400), failed test and missing paths (422)', () => {
  const expectCode = (fn: () => unknown, code: number) => assert.throws(fn, (e: unknown) => e instanceof PatchError && e.code === code);
  expectCode(() => jsonPatch({}, { metadata: {} }), 400);
  expectCode(() => jsonPatch({ a: 1 }, [{ op: 'test', path: '/a', value: 2 }]), 422);
  expectCode(() => jsonPatch({ a: 1 }, [{ op: 'remove', path: '/b' }]), 422);
  expectCode(() => jsonPatch({ a: [1] }, [{ op: 'replace', path: '/a/5', value: 1 }]), 422);
  expectCode(() => jsonPatch({}, [{ op: 'explode', path: '/a' }]), 400);
});

test('strategic merge patch: keyed lists merge, sets union, directives', async (t) => {
  const pod = {
    metadata: { finalizers: ['a'], ownerReferences: [{ uid: 'u1', name: 'x' }] },
    spec: { containers: [{ name: 'redis', image: 'redis:7.0', ports: [{ containerPort: 6379, name: 'redis' }] }], tolerations: [{ key: 't' }] },
  };
  const cases: Array<[string, unknown, unknown]> = [
    [
      'containers merge by name',
      { spec: { containers: [{ name: 'redis', image: 'redis:7.2' }] } },
      { ...pod, spec: { ...pod.spec, containers: [{ ...pod.spec.containers[0], image: 'redis:7.2' }] } },
    ],
    [
      'new container appended',
      { spec: { containers: [{ name: 'side' }] } },
      { ...pod, spec: { ...pod.spec, containers: [...pod.spec.containers, { name: 'side' }] } },
    ],
    ['$patch delete removes an element', { spec: { containers: [{ name: 'redis', $patch: 'delete' }] } }, { ...pod, spec: { ...pod.spec, containers: [] } }],
    [
      'ports merge by containerPort',
      { spec: { containers: [{ name: 'redis', ports: [{ containerPort: 6379, protocol: 'TCP' }] }] } },
      { ...pod, spec: { ...pod.spec, containers: [{ ...pod.spec.containers[0], ports: [{ containerPort: 6379, name: 'redis', protocol: 'TCP' }] }] } },
    ],
    ['unkeyed lists replace', { spec: { tolerations: [{ key: 'u' }] } }, { ...pod, spec: { ...pod.spec, tolerations: [{ key: 'u' }] } }],
    ['finalizers union', { metadata: { finalizers: ['b', 'a'] } }, { ...pod, metadata: { ...pod.metadata, finalizers: ['a', 'b'] } }],
    ['$deleteFromPrimitiveList', { metadata: { '$deleteFromPrimitiveList/finalizers': ['a'] } }, { ...pod, metadata: { ...pod.metadata, finalizers: [] } }],
    ['$patch replace on a map', { spec: { $patch: 'replace', containers: [] } }, { ...pod, spec: { containers: [] } }],
    ['null deletes a field', { spec: { tolerations: null } }, { ...pod, spec: { containers: pod.spec.containers } }],
  ];
  for (const [what, patch, expected] of cases) await t.test(what, () => assert.deepEqual(strategicMergePatch(pod, patch), expected, what));
});

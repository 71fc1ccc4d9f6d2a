// A restore into the name of an earlier Redis whose claims are still there (persistence.whenDeleted:
// Retain, the default): refused before any StatefulSet exists, since its pods would bind those claims
// and start on the old data, which a restore never overwrites. The refusal changes no child (as an
// invalid spec), names the claims and what to do, and lifts once they are gone. Claims of the Redis
// itself (made after it), of another Redis, or met once the StatefulSets exist never refuse.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RESTORE_LOCATION_KEY } from '../../../src/api/backup.ts';
import { podSelectorLabels } from '../../../src/api/labels.ts';
import { sync, finalize, type KubeObject } from '../../../src/hook/index.ts';
import { condition, designSpec, find, get, healthyPods, NS, redis, request, type Json } from '../common/helpers.ts';

const CREATED = '2025-01-15T12:00:00Z';
const BEFORE = '2025-01-14T08:30:00Z';
const AFTER = '2025-01-15T12:00:03Z';
const LOCATION = 's3://redis-backups/redis~default~old/20250115T120000Z-42.rdb';
const STORAGE = { s3: { bucket: 'redis-backups', region: 'us-east-1', prefix: '' } };
const SPEC: Json = { ...designSpec(), restore: { location: LOCATION, storage: STORAGE } };
const SELECTOR =
  'app.kubernetes.io/instance=my-redis,app.kubernetes.io/managed-by=redis-operator,app.kubernetes.io/name=redis';

const parent = (spec: Json = SPEC, status?: unknown) =>
  redis(spec, { metadata: { creationTimestamp: CREATED }, ...(status !== undefined ? { status } : {}) });

function claim(name: string, created: string | undefined, instance = 'my-redis'): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name,
      namespace: NS,
      labels: podSelectorLabels(instance),
      ...(created !== undefined ? { creationTimestamp: created } : {}),
    },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '10Gi' } } },
  };
}
const OLD_CLAIMS = ['data-my-redis-master-0', 'data-my-redis-replica-0', 'data-my-redis-replica-1'].map((n) =>
  claim(n, BEFORE),
);

const kinds = (children: readonly KubeObject[]) => children.map((c) => `${c.kind}/${c.metadata.name}`);

test('claims of an earlier Redis of this name: refused up front, no child created, the status says which and what to do', () => {
  const r = sync(request({ parent: parent(), related: OLD_CLAIMS }));
  assert.deepEqual(r.children, [], 'nothing is created: no StatefulSet could bind the old claims');
  assert.equal(get(r.status, 'restore', 'phase'), 'Pending');
  const message = String(get(r.status, 'restore', 'message'));
  assert.match(
    message,
    /^PersistentVolumeClaim\(s\) data-my-redis-master-0, data-my-redis-replica-0, data-my-redis-replica-1 of an earlier Redis named my-redis/,
  );
  assert.match(message, /persistence\.whenDeleted: Retain, the default, keeps them/);
  assert.ok(message.includes(`kubectl delete pvc -n ${NS} -l ${SELECTOR}`), message);
  assert.match(message, /or restore under another name$/);
  const ready = condition(r.status, 'Ready');
  assert.equal(ready?.['status'], 'False');
  assert.equal(ready?.['reason'], 'RestoreRefused');
  assert.equal(ready?.['message'], message);
  assert.equal(
    condition(r.status, 'SpecValid')?.['status'],
    'True',
    'the spec is valid: it is the cluster that is in the way',
  );
});

test('the refusal changes no observed child, and lifts once the claims are gone', async (t) => {
  // What a first sync made before claims appeared (the ConfigMap, Services, PDB): kept exactly.
  const first = sync(request({ parent: parent() }));
  assert.ok(first.children.length > 0);
  await t.test('observed children are echoed as they are, none added', () => {
    const r = sync(request({ parent: parent(SPEC, first.status), children: first.children, related: OLD_CLAIMS }));
    const byId = (children: readonly KubeObject[]) =>
      [...children].sort((a, b) => kinds([a])[0]!.localeCompare(kinds([b])[0]!));
    assert.deepEqual(kinds(byId(r.children)), kinds(byId(first.children)));
    assert.deepEqual(byId(r.children), byId(first.children));
    assert.equal(condition(r.status, 'Ready')?.['reason'], 'RestoreRefused');
    assert.equal(get(r.status, 'restore', 'location'), LOCATION, 'a location known before is carried on');
  });
  await t.test('the claims gone: the restore goes ahead (the ConfigMap carries the location first)', () => {
    const refused = sync(request({ parent: parent(), related: OLD_CLAIMS }));
    const r = sync(request({ parent: parent(SPEC, refused.status) }));
    assert.equal(get(r.status, 'restore', 'phase'), 'Restoring');
    assert.equal(get(find(r.children, 'ConfigMap', 'my-redis-config'), 'data', RESTORE_LOCATION_KEY), LOCATION);
    assert.notEqual(condition(r.status, 'Ready')?.['reason'], 'RestoreRefused');
  });
});

test('which claims refuse: only an earlier Redis of this name, and only before the StatefulSets exist', async (t) => {
  const restoring = sync(request({ parent: parent() }));
  const withSets = sync(request({ parent: parent(SPEC, restoring.status), children: restoring.children }));
  assert.ok(withSets.children.some((c) => c.kind === 'StatefulSet'));
  const cases: Array<[string, Json, KubeObject[], readonly KubeObject[], boolean]> = [
    ['claims made before this Redis', SPEC, [], OLD_CLAIMS, true],
    [
      'a claim with no creation time: not known to be ours',
      SPEC,
      [],
      [claim('data-my-redis-master-0', undefined)],
      true,
    ],
    [
      "this Redis's own claims (made after it), its StatefulSets not observed",
      SPEC,
      [],
      [claim('data-my-redis-master-0', AFTER)],
      false,
    ],
    ['claims of another Redis', SPEC, [], [claim('data-other-master-0', BEFORE, 'other')], false],
    ['the StatefulSets observed: never refused afterwards', SPEC, withSets.children, OLD_CLAIMS, false],
    ['no spec.restore: a Redis created again takes its data back, by design', designSpec(), [], OLD_CLAIMS, false],
  ];
  for (const [what, spec, children, claims, refused] of cases)
    await t.test(what, () => {
      const r = sync(
        request({ parent: parent(spec, children.length > 0 ? withSets.status : undefined), children, related: claims }),
      );
      assert.equal(
        condition(r.status, 'Ready')?.['reason'] === 'RestoreRefused',
        refused,
        String(condition(r.status, 'Ready')?.['message']),
      );
      if (refused) assert.deepEqual(r.children, []);
    });
  await t.test('a parent without a creation time: every claim is taken as an earlier one', () => {
    const r = sync(request({ parent: redis(SPEC), related: [claim('data-my-redis-master-0', AFTER)] }));
    assert.equal(condition(r.status, 'Ready')?.['reason'], 'RestoreRefused');
  });
  await t.test('a settled restore (Completed) is never refused', () => {
    const done = {
      source: LOCATION,
      location: LOCATION,
      storage: STORAGE,
      phase: 'Completed',
      message: 'the master started from it',
      decidedBy: 'my-redis-master-0',
    };
    const r = sync(request({ parent: parent(SPEC, { restore: done }), related: [...OLD_CLAIMS, ...healthyPods()] }));
    assert.equal(get(r.status, 'restore', 'phase'), 'Completed');
    assert.ok(r.children.some((c) => c.kind === 'StatefulSet'));
  });
  await t.test('many claims: five named, the rest counted (the selector covers them all)', () => {
    const many = Array.from({ length: 8 }, (_, i) => claim(`data-my-redis-replica-${i}`, BEFORE));
    const message = String(get(sync(request({ parent: parent(), related: many })).status, 'restore', 'message'));
    assert.match(message, /data-my-redis-replica-4 and 3 more of an earlier Redis/);
  });
});

test('deleting a refused Redis: finalized at once, nothing created, the earlier claims left alone', async (t) => {
  for (const whenDeleted of ['Retain', 'Delete'])
    await t.test(whenDeleted, () => {
      const spec = { ...SPEC, persistence: { ...(SPEC['persistence'] as Json), whenDeleted } };
      const r = finalize(request({ parent: parent(spec), related: OLD_CLAIMS, finalizing: true }));
      assert.equal(r.finalized, true);
      assert.deepEqual(r.children, []);
    });
});

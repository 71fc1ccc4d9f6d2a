// Pure: what growing spec.persistence.size asks of the claims and the StatefulSets. Table-driven;
// no API server, no address contacted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  expansionRefusal,
  planVolumes,
  setOfClaim,
  type ClaimView,
  type SetView,
  type VolumeInput,
} from '../../../../src/sidecar/redis/decide/volumes.ts';

const claim = (name: string, requested: string, o: Partial<ClaimView> = {}): ClaimView => ({
  name,
  uid: `uid-${name}`,
  requested,
  capacity: requested,
  storageClassName: 'grow',
  phase: 'Bound',
  deleting: false,
  conditions: [],
  refusedAnnotation: undefined,
  ...o,
});
const M0 = (requested: string, o: Partial<ClaimView> = {}) => claim('data-r-master-0', requested, o);
const R0 = (requested: string, o: Partial<ClaimView> = {}) => claim('data-r-replica-0', requested, o);
const R1 = (requested: string, o: Partial<ClaimView> = {}) => claim('data-r-replica-1', requested, o);
const set = (name: string, templateSize: string | undefined, o: Partial<SetView> = {}): SetView => ({
  name,
  uid: `uid-${name}`,
  templateSize,
  deleting: false,
  ...o,
});
const sets = (master: string | undefined, replica: string | undefined = master) => [
  set('r-master', master),
  set('r-replica', replica),
];
const CLASSES = new Map([
  ['grow', true],
  ['fixed', false],
]);

function input(o: Partial<VolumeInput>): VolumeInput {
  return {
    name: 'r',
    persistence: true,
    desiredSize: '2Gi',
    claims: [],
    storageClasses: CLASSES,
    sets: sets('1Gi'),
    ...o,
  };
}

/** An action in one line: `kind object [size]`. */
const brief = (i: VolumeInput) =>
  planVolumes(i).actions.map((a) =>
    a.kind === 'expand-claim'
      ? `expand ${a.claim} ${a.from}->${a.size}`
      : a.kind === 'recreate-statefulset'
        ? `recreate ${a.name}`
        : a.kind === 'refuse'
          ? `refuse ${a.claim}${a.told ? ' (told)' : ''}`
          : `clear ${a.claim}`,
  );

test('planVolumes: table', async (t) => {
  const cases: Array<{ name: string; input: VolumeInput; want: string[] }> = [
    {
      name: 'persistence off: nothing, whatever the sizes',
      input: input({ persistence: false, claims: [M0('1Gi')] }),
      want: [],
    },
    {
      name: 'sizes already match: nothing',
      input: input({ desiredSize: '1Gi', claims: [M0('1Gi'), R0('1Gi'), R1('1Gi')] }),
      want: [],
    },
    {
      name: 'the same size written differently (1Gi vs 1024Mi): nothing',
      input: input({ desiredSize: '1024Mi', claims: [M0('1Gi'), R0('1Gi')] }),
      want: [],
    },
    {
      name: 'grown: every smaller claim is expanded, in name order; the sets wait for their claims',
      input: input({ claims: [R1('1Gi'), M0('1Gi'), R0('1Gi')] }),
      want: ['expand data-r-master-0 1Gi->2Gi', 'expand data-r-replica-0 1Gi->2Gi', 'expand data-r-replica-1 1Gi->2Gi'],
    },
    {
      name: 'claims requested, master set first: one set at a time',
      input: input({ claims: [M0('2Gi', { capacity: '1Gi' }), R0('2Gi'), R1('2Gi')] }),
      want: ['recreate r-master'],
    },
    {
      name: 'the master set is new: the replica set next',
      input: input({ claims: [M0('2Gi'), R0('2Gi'), R1('2Gi')], sets: sets('2Gi', '1Gi') }),
      want: ['recreate r-replica'],
    },
    {
      name: 'a set whose claims are requested is replaced while another set still has a claim to grow',
      input: input({ claims: [M0('2Gi'), R0('2Gi'), R1('1Gi')] }),
      want: ['expand data-r-replica-1 1Gi->2Gi', 'recreate r-master'],
    },
    {
      name: 'a set just deleted (Metacontroller has not recreated it): the other one waits',
      input: input({ claims: [M0('2Gi'), R0('2Gi')], sets: [set('r-replica', '1Gi')] }),
      want: [],
    },
    {
      name: 'a set being deleted: the other one waits',
      input: input({
        claims: [M0('2Gi'), R0('2Gi')],
        sets: [set('r-master', '1Gi', { deleting: true }), set('r-replica', '1Gi')],
      }),
      want: [],
    },
    {
      name: 'everything at the size: nothing',
      input: input({ claims: [M0('2Gi'), R0('2Gi')], sets: sets('2Gi') }),
      want: [],
    },
    {
      name: 'never shrink: claims and templates bigger than desired are left alone',
      input: input({ desiredSize: '2Gi', claims: [M0('5Gi'), R0('3Gi')], sets: sets('5Gi') }),
      want: [],
    },
    {
      name: 'a set without a data template (persistence off at creation): never replaced',
      input: input({ claims: [], sets: sets(undefined) }),
      want: [],
    },
    {
      name: 'class without expansion: refused, and no set is replaced (new claims would not match)',
      input: input({ claims: [M0('2Gi'), R0('1Gi', { storageClassName: 'fixed' }), R1('2Gi')] }),
      want: ['refuse data-r-replica-0'],
    },
    {
      name: 'refused already told (the claim carries this very reason): still refused, marked told',
      input: input({
        claims: [
          M0('1Gi', {
            storageClassName: 'fixed',
            refusedAnnotation:
              'data-r-master-0 cannot grow from 1Gi to 2Gi: StorageClass fixed does not allow volume expansion (allowVolumeExpansion is false)',
          }),
        ],
      }),
      want: ['refuse data-r-master-0 (told)'],
    },
    {
      name: 'the annotation names an older size: refused again, not told',
      input: input({
        desiredSize: '3Gi',
        claims: [M0('1Gi', { storageClassName: 'fixed', refusedAnnotation: 'cannot grow from 1Gi to 2Gi' })],
      }),
      want: ['refuse data-r-master-0'],
    },
    {
      name: 'no class: refused',
      input: input({ claims: [M0('1Gi', { storageClassName: undefined })] }),
      want: ['refuse data-r-master-0'],
    },
    {
      name: 'empty class: refused',
      input: input({ claims: [M0('1Gi', { storageClassName: '' })] }),
      want: ['refuse data-r-master-0'],
    },
    {
      name: 'unknown class: refused',
      input: input({ claims: [M0('1Gi', { storageClassName: 'gone' })] }),
      want: ['refuse data-r-master-0'],
    },
    {
      name: 'a claim that reached the size loses its refusal annotation',
      input: input({ claims: [M0('2Gi', { refusedAnnotation: 'old' }), R0('2Gi')], sets: sets('2Gi') }),
      want: ['clear data-r-master-0'],
    },
    {
      name: 'a claim not bound yet: not patched (the API server allows it only once bound), and its set waits',
      input: input({ claims: [M0('2Gi'), R0('1Gi', { phase: 'Pending' })], sets: sets('2Gi', '1Gi') }),
      want: [],
    },
    {
      name: 'a claim being deleted is ignored',
      input: input({ claims: [M0('2Gi'), R0('2Gi'), R1('1Gi', { deleting: true })], sets: sets('2Gi', '1Gi') }),
      want: ['recreate r-replica'],
    },
    {
      name: "claims that are not the sets' (another Redis' name prefix, other templates) are ignored",
      input: input({
        claims: [claim('data-r-master-x', '1Gi'), claim('cache-r-master-0', '1Gi'), claim('data-rr-master-0', '1Gi')],
        sets: sets('2Gi'),
      }),
      want: [],
    },
    {
      name: 'a retained claim beyond the replicas is grown too (a later scale-up reuses it)',
      input: input({ claims: [M0('2Gi'), R0('2Gi'), claim('data-r-replica-5', '1Gi')], sets: sets('2Gi') }),
      want: ['expand data-r-replica-5 1Gi->2Gi'],
    },
    {
      name: 'an unreadable desired size: nothing',
      input: input({ desiredSize: 'two gigs', claims: [M0('1Gi')] }),
      want: [],
    },
  ];
  for (const c of cases) await t.test(c.name, () => assert.deepEqual(brief(c.input), c.want));
});

test('planVolumes: the reasons say what and why', () => {
  const plan = planVolumes(input({ claims: [M0('1Gi'), R0('1Gi', { storageClassName: 'fixed' })] }));
  const [expand, refuse] = plan.actions;
  assert.equal(expand?.kind, 'expand-claim');
  assert.match(
    expand!.reason,
    /data-r-master-0 requests 1Gi, spec\.persistence\.size is 2Gi, and StorageClass grow allows volume expansion/,
  );
  assert.equal(refuse?.kind, 'refuse');
  assert.equal(
    refuse!.reason,
    'data-r-replica-0 cannot grow from 1Gi to 2Gi: StorageClass fixed does not allow volume expansion (allowVolumeExpansion is false)',
  );

  const recreate = planVolumes(input({ claims: [M0('2Gi'), R0('2Gi')] })).actions[0];
  assert.equal(recreate?.kind, 'recreate-statefulset');
  assert.deepEqual(
    { name: recreate.name, uid: recreate.uid, size: recreate.size },
    { name: 'r-master', uid: 'uid-r-master', size: '2Gi' },
  );
  assert.match(
    recreate.reason,
    /r-master creates claims of 1Gi and every claim of it requests 2Gi.*pods orphaned, kept running/,
  );
});

test('planVolumes: claims still growing are reported as waiting, with their resize conditions', () => {
  const plan = planVolumes(
    input({
      claims: [
        M0('2Gi', { capacity: '1Gi', conditions: ['FileSystemResizePending'] }),
        R0('2Gi', { capacity: undefined }),
      ],
      sets: sets('2Gi'),
    }),
  );
  assert.deepEqual(plan.actions, []);
  assert.deepEqual(plan.waiting, [
    'data-r-master-0: requests 2Gi, has 1Gi (FileSystemResizePending)',
    'data-r-replica-0: requests 2Gi, has no capacity yet',
  ]);
});

test('expansionRefusal names the StorageClass and allowVolumeExpansion', async (t) => {
  const cases: Array<[string, Partial<ClaimView>, RegExp | undefined]> = [
    ['allowed', { storageClassName: 'grow' }, undefined],
    [
      'not allowed',
      { storageClassName: 'fixed' },
      /StorageClass fixed does not allow volume expansion \(allowVolumeExpansion is false\)/,
    ],
    [
      'unknown class',
      { storageClassName: 'gone' },
      /StorageClass gone does not exist, so allowVolumeExpansion is false/,
    ],
    ['no class', { storageClassName: undefined }, /has no StorageClass.*allowVolumeExpansion is false/],
  ];
  for (const [name, o, want] of cases)
    await t.test(name, () => {
      const got = expansionRefusal(M0('1Gi', o), CLASSES, '2Gi');
      if (want === undefined) assert.equal(got, undefined);
      else assert.match(got ?? '', want);
    });
});

test('setOfClaim: data-<set>-<ordinal> of this Redis only', async (t) => {
  const cases: Array<[string, string | undefined]> = [
    ['data-r-master-0', 'r-master'],
    ['data-r-replica-12', 'r-replica'],
    ['data-r-replica-', undefined],
    ['data-r-replica-1x', undefined],
    ['data-rr-master-0', undefined],
    ['logs-r-master-0', undefined],
  ];
  for (const [name, want] of cases) await t.test(name, () => assert.equal(setOfClaim('r', name), want));
});

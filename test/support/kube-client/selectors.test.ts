// Label and field selector parsing and matching (pure).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector, labelSelectorToString } from './selectors.ts';

const labels = { app: 'redis', 'redis.example.com/role': 'master', ordinal: '2' };

test('label selectors match as in apimachinery', async (t) => {
  const cases: Array<[string, boolean]> = [
    ['', true],
    ['app=redis', true],
    ['app==redis', true],
    ['app=other', false],
    ['app!=other', true],
    ['missing!=x', true],
    ['redis.example.com/role in (master,replica)', true],
    ['redis.example.com/role in (replica)', false],
    ['redis.example.com/role notin (replica)', true],
    ['missing notin (x)', true],
    ['missing in (x)', false],
    ['app', true],
    ['missing', false],
    ['!missing', true],
    ['!app', false],
    ['app=redis, redis.example.com/role = master', true],
    ['app=redis,!redis.example.com/role', false],
    ['ordinal>1', true],
    ['ordinal<2', false],
    ['app=', false],
  ];
  for (const [selector, expected] of cases) {
    await t.test(`${JSON.stringify(selector)} ${expected ? 'matches' : 'does not match'}`, () =>
      assert.equal(matchesLabels(parseLabelSelector(selector), labels), expected, selector),
    );
  }
});

test('malformed label selectors are refused', async (t) => {
  for (const bad of ['app in (a', 'app in a', 'app=(', '=x', 'app=a,', 'bad key=x', 'app=a b', 'ordinal>x', 'app in ()', 'app=' + 'v'.repeat(64), '-app=x']) {
    await t.test(JSON.stringify(bad), () => assert.throws(() => parseLabelSelector(bad), /unable to parse requirement/, bad));
  }
});

test('field selectors: only allowed fields, = == !=, escaped commas', async (t) => {
  const obj = { metadata: { name: 'a,b', namespace: 'ns' }, status: { phase: 'Running' } };
  const get = (f: string) => f.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], obj);
  const allowed = ['metadata.name', 'metadata.namespace', 'status.phase'];
  const cases: Array<[string, boolean]> = [
    ['metadata.name=a\\,b', true],
    ['metadata.namespace==ns,status.phase!=Pending', true],
    ['status.phase=Pending', false],
    ['', true],
  ];
  for (const [selector, expected] of cases) {
    await t.test(`${JSON.stringify(selector)} ${expected ? 'matches' : 'does not match'}`, () =>
      assert.equal(matchesFields(parseFieldSelector(selector, allowed), get), expected, selector),
    );
  }
  assert.throws(() => parseFieldSelector('spec.nodeName=x', allowed), /field label not supported/);
  assert.throws(() => parseFieldSelector('metadata.name', allowed), /invalid selector/);
});

test('LabelSelector objects render to the string form', () => {
  assert.equal(
    labelSelectorToString({
      matchLabels: { a: 'b' },
      matchExpressions: [
        { key: 'c', operator: 'In', values: ['x', 'y'] },
        { key: 'd', operator: 'DoesNotExist' },
      ],
    }),
    'a=b,c in (x,y),!d',
  );
  assert.equal(labelSelectorToString(undefined), '');
});

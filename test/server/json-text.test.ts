// The response serializer writes what JSON.stringify writes, at any depth, and keeps the closed
// top level of a response schema (declared keys only, in order; a missing required key throws).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { jsonText, schemaSerializer, stackSafeJsonText } from '../../src/server/json-text.ts';
import { HookResponse } from '../../src/hook/index.ts';

test('property: the same text as JSON.stringify for any value it can write', () => {
  fc.assert(
    fc.property(
      fc.oneof(fc.jsonValue(), fc.anything({ withNullPrototype: true, withObjectString: false })),
      (value) => {
        assert.equal(stackSafeJsonText(value), JSON.stringify(value));
      },
    ),
    { numRuns: 500 },
  );
});

test('the cases JSON.stringify treats specially', async (t) => {
  const rows: Array<[string, unknown]> = [
    ['undefined in an object is skipped, in a list is null', { a: undefined, b: [undefined, () => 1], c: 1 }],
    ['non-finite numbers are null', [Infinity, -Infinity, NaN, -0]],
    ['toJSON is honoured', { at: new Date(0) }],
    ['escapes', { 'line\nbreak': '\u0000\u2028"\\', '': '' }],
    ['a __proto__ own key is written as a key', JSON.parse('{"__proto__":{"a":1}}')],
    ['unicode', { ключ: '値 😀 \ud800' }],
  ];
  for (const [name, value] of rows)
    await t.test(name, () => assert.equal(stackSafeJsonText(value), JSON.stringify(value)));
});

test('200000 levels of lists or objects, where JSON.stringify overflows the stack', () => {
  const depth = 200_000;
  const pairs: Array<[string, string]> = [
    ['[', ']'],
    ['{"a":', '}'],
  ];
  for (const [open, close] of pairs) {
    const text = open.repeat(depth) + '1' + close.repeat(depth);
    const value: unknown = JSON.parse(text);
    assert.throws(() => JSON.stringify(value), RangeError);
    assert.equal(jsonText(value), text);
  }
});

test("a response schema's top level: declared keys only, in order; a missing required key throws", () => {
  const serialize = schemaSerializer(HookResponse);
  assert.equal(serialize({ children: [], extra: 1, status: { b: 1, a: 2 } }), '{"status":{"b":1,"a":2},"children":[]}');
  assert.throws(() => serialize({ status: {} }), /"children" is required/);
  assert.throws(() => serialize({ status: {}, children: undefined }), /"children" is required/);
  assert.equal(schemaSerializer({ type: 'object' })({ z: 1 }), '{"z":1}');
});

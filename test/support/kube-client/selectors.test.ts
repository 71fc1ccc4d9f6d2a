// The test client's selectors (pure): the equality-based forms, as k8s.io/apimachinery reads them,
// and refusals for what it does not support or cannot parse.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SelectorError, selectorMatcher } from './selectors.ts';

const pod = {
  metadata: { name: 'p-0', namespace: 'ns', labels: { app: 'redis', 'redis.example.com/role': 'master' } },
  spec: { nodeName: 'n1' },
};

test('label and field selectors: table', async (t) => {
  const cases: Array<[string, string, string, boolean]> = [
    ['nothing selects everything', '', '', true],
    ['a=b', 'app=redis', '', true],
    ['a==b', 'app==redis', '', true],
    ['a=b, other value', 'app=memcached', '', false],
    ['a prefixed key', 'redis.example.com/role=master', '', true],
    ['every term must hold', 'app=redis,redis.example.com/role=replica', '', false],
    ['a!=b', 'app!=memcached', '', true],
    ['a!=b on a missing label holds', 'tier!=web', '', true],
    ['exists', 'app', '', true],
    ['exists, missing', 'tier', '', false],
    ['absent', '!tier', '', true],
    ['absent, present', '!app', '', false],
    ['spaces around terms', ' app = redis , !tier ', '', true],
    ['a field path', '', 'metadata.name=p-0', true],
    ['a field path, other value', '', 'spec.nodeName=n2', false],
    ['a field path !=', '', 'metadata.namespace!=default', true],
    ['labels and fields together', 'app=redis', 'metadata.name=p-1', false],
  ];
  for (const [name, labels, fields, want] of cases)
    await t.test(name, () => assert.equal(selectorMatcher(labels, fields)(pod), want));
});

test('what it refuses: set-based forms by name, and what does not parse', async (t) => {
  for (const [selector, message] of [
    ['tier in (web,db)', /set-based requirements are not supported/],
    ['app notin (x)', /set-based requirements are not supported/],
    ['=redis', /cannot parse "=redis"/],
    ['!app=redis', /cannot parse "!app=redis"/],
    ['ap p=redis', /cannot parse/],
  ] as const)
    await t.test(selector, () =>
      assert.throws(
        () => selectorMatcher(selector),
        (e: unknown) => e instanceof SelectorError && message.test(e.message),
      ),
    );
});

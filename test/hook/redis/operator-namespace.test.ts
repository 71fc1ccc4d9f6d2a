// The defaults that name the operator's namespace follow the namespace the operator is installed
// in: the hook is told its own (HookOptions.operatorNamespace, from POD_NAMESPACE by
// src/server/config.ts) and the NetworkPolicy's operator peer names it when the Redis names none.
// The hook stays pure: the namespace is an input, the same request and options give the same answer.
import assert from 'node:assert/strict';
import test from 'node:test';
import { DEFAULT_HOOK_OPTIONS, sync } from '../../../src/hook/index.ts';
import { loadConfig } from '../../../src/server/config.ts';
import { condition, find, fixtureRequest, get, type Json } from '../common/helpers.ts';

const specOf = (body: Json) => (body['parent'] as Json)['spec'] as Json;

/** The namespace the NetworkPolicy lets the operator's pods in from. */
function operatorPeerNamespace(networkPolicy: Json, operatorNamespace?: string): unknown {
  const options =
    operatorNamespace === undefined ? DEFAULT_HOOK_OPTIONS : { ...DEFAULT_HOOK_OPTIONS, operatorNamespace };
  const response = sync(
    fixtureRequest((b) => void (specOf(b)['networkPolicy'] = networkPolicy)),
    options,
  );
  const ingress = get(find(response.children, 'NetworkPolicy', 'my-redis-ingress'), 'spec', 'ingress') as Json[];
  const peers = ingress[0]!['from'] as Json[];
  const operator = peers.find((p) => p['namespaceSelector'] !== undefined);
  return get(operator, 'namespaceSelector', 'matchLabels', 'kubernetes.io/metadata.name');
}

test('spec.networkPolicy.operatorNamespace: unset, the namespace the hook runs in; set, the one the Redis names', async (t) => {
  const cases: Array<[string, Json, string | undefined, string]> = [
    ['unset, operator installed in platform-redis', { allowFrom: { app: 'shop' } }, 'platform-redis', 'platform-redis'],
    [
      'unset, the hook told nothing: where manifests/ installs it',
      { allowFrom: { app: 'shop' } },
      undefined,
      'redis-operator',
    ],
    [
      'set: the Redis wins over the hook',
      { allowFrom: { app: 'shop' }, operatorNamespace: 'sidecars' },
      'platform-redis',
      'sidecars',
    ],
  ];
  for (const [label, policy, hookNamespace, expected] of cases) {
    await t.test(label, () => assert.equal(operatorPeerNamespace(policy, hookNamespace), expected));
  }
});

test('an invalid operatorNamespace is still refused, naming the field', () => {
  const response = sync(
    fixtureRequest(
      (b) => void (specOf(b)['networkPolicy'] = { allowFrom: { app: 'shop' }, operatorNamespace: 'Not_A_Namespace' }),
    ),
    { ...DEFAULT_HOOK_OPTIONS, operatorNamespace: 'platform-redis' },
  );
  assert.equal(condition(response.status, 'SpecValid')?.['status'], 'False');
  assert.match(String(condition(response.status, 'SpecValid')?.['message']), /spec\.networkPolicy\.operatorNamespace/);
});

test("POD_NAMESPACE (the downward API's metadata.namespace) reaches the hook's options", () => {
  const loaded = loadConfig({ POD_NAMESPACE: 'platform-redis' });
  assert.ok(loaded.ok, JSON.stringify(loaded));
  const { operatorImage, runbookBaseUrl, operatorNamespace } = loaded.config;
  assert.equal(operatorPeerNamespace({ allowFrom: { app: 'shop' } }, operatorNamespace), 'platform-redis');
  assert.deepEqual(
    { operatorImage, runbookBaseUrl, operatorNamespace },
    { ...DEFAULT_HOOK_OPTIONS, operatorNamespace: 'platform-redis' },
  );
});

// decideExporterUser: which answering nodes get the exporter's user, as a table.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decideExporterUser, exporterUserArgs } from '../../../../src/sidecar/core/decide/exporter-user.ts';

const a = { uid: 'a', ip: '10.0.0.1' };
const b = { uid: 'b', ip: '10.0.0.2' };

test('decideExporterUser', async (t) => {
  const cases: Array<[string, Parameters<typeof decideExporterUser>[0], string[]]> = [
    ['exporter off: nothing', { enabled: false, hash: 'h1', nodes: [a, b], done: new Map() }, []],
    ['password not read yet: nothing', { enabled: true, hash: undefined, nodes: [a, b], done: new Map() }, []],
    ['every answering node once', { enabled: true, hash: 'h1', nodes: [a, b], done: new Map() }, ['a', 'b']],
    [
      'done with this password: not again (a restart brings the user from its env)',
      { enabled: true, hash: 'h1', nodes: [a, b], done: new Map([['a', 'h1']]) },
      ['b'],
    ],
    [
      'the Secret was made again: every node again',
      {
        enabled: true,
        hash: 'h2',
        nodes: [a, b],
        done: new Map([
          ['a', 'h1'],
          ['b', 'h1'],
        ]),
      },
      ['a', 'b'],
    ],
    ['only nodes that answered', { enabled: true, hash: 'h1', nodes: [], done: new Map() }, []],
  ];
  for (const [label, input, want] of cases)
    await t.test(label, () =>
      assert.deepEqual(
        decideExporterUser(input).map((n) => n.uid),
        want,
      ),
    );
});

test('the arguments add a password and set exactly the read-only rules: no key, no channel, no CONFIG', () => {
  const args = exporterUserArgs('ab12');
  assert.deepEqual(args.slice(0, 2), ['on', '#ab12']);
  assert.ok(!args.includes('resetpass') && !args.includes('reset'), 'passwords the node has are kept');
  assert.deepEqual(
    args.slice(2, 6),
    ['resetkeys', 'resetchannels', 'clearselectors', '-@all'],
    'everything taken away first',
  );
  assert.ok(
    args.every((x) => !/^[~%&]|allkeys|allchannels|allcommands|\+@|config/i.test(x)),
    args.join(' '),
  );
});

// Pure: which nodes must load a renewed TLS certificate (decide/tls.ts). Table-driven.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decideTlsReload, type ServedCertificate } from '../../../../src/sidecar/redis/decide/tls.ts';

const node = (pod: string, fingerprint: string | null, reloadedAt?: number): ServedCertificate => ({
  pod,
  fingerprint,
  reloadedAt,
});

test('which nodes are asked to load their TLS files again', async (t) => {
  const table: Array<[string, string | null, ServedCertificate[], string[], string[]]> = [
    [
      'every node serves the Secret certificate: nothing to do',
      'NEW',
      [node('a', 'NEW'), node('b', 'NEW')],
      [],
      ['a', 'b'],
    ],
    ['renewed: every node serving the old one reloads', 'NEW', [node('a', 'OLD'), node('b', 'OLD')], ['a', 'b'], []],
    [
      'a node asked 1 s ago is not asked again before the retry interval',
      'NEW',
      [node('a', 'OLD', 9_000), node('b', 'OLD')],
      ['b'],
      [],
    ],
    [
      'a node asked long ago is asked again (its files were not updated yet then)',
      'NEW',
      [node('a', 'OLD', 0)],
      ['a'],
      [],
    ],
    ['a node whose certificate could not be seen is left alone', 'NEW', [node('a', null), node('b', 'NEW')], [], ['b']],
    ['no certificate in the Secret: nothing is compared', null, [node('a', 'OLD')], [], []],
  ];
  for (const [name, wanted, nodes, reload, current] of table) {
    await t.test(name, () => {
      const d = decideTlsReload(wanted, nodes, 10_000, 5_000);
      assert.deepEqual({ reload: d.reload, current: d.current }, { reload, current }, d.reason);
    });
  }
});

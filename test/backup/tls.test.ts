// Loopback octet: 127.0.131.x. The backup Job over TLS (spec.tls) checks the node's certificate
// against the CA AND a name: the host it dialled (the Services' names, which cert-manager's
// Certificate lists) or a pod of this Redis (*.<name>-headless.<namespace>.svc, what the README
// asks of a user's certificate). Another Redis's certificate from the same CA is refused, so
// nothing holding one receives the operator's password or a snapshot meant for this Redis's
// backups. The entry point runs as the Job runs it, against real redis-servers serving TLS.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PeerCertificate } from 'node:tls';
import { tlsDnsNames } from '../../src/api/tls.ts';
import { identityProblem } from '../../src/backup/tls.ts';
import { redisCommand } from '../sidecar/redis/manager/harness-redis.ts';
import { addr, OPERATOR_USER, startRedis, TEST_OPERATOR_PASSWORD } from '../support/redis-server.ts';
import { issue, makeCa } from '../support/tls-certs.ts';
import { BACKUP_MAIN, runEntry } from './support.ts';

const N = 131;
const ca = makeCa();

/** What Node hands checkServerIdentity: the subject and subjectAltName of the peer certificate. */
function peer(pem: string): PeerCertificate {
  const x = new X509Certificate(pem);
  return {
    subject: { CN: x.subject.replace(/^CN=/, '') },
    subjectaltname: x.subjectAltName ?? '',
  } as unknown as PeerCertificate;
}

test("the names a backup accepts: the operator's own certificates pass, another Redis's of the same CA does not", async (t) => {
  const table: Array<[string, string, { dnsNames?: string[]; ips?: string[] }, boolean]> = [
    [
      "cert-manager's certificate, dialled at the replicas Service",
      'cache-replicas.shop.svc',
      { dnsNames: tlsDnsNames('cache', 'shop') },
      true,
    ],
    [
      "cert-manager's certificate, dialled at the master Service",
      'cache-master.shop.svc',
      { dnsNames: tlsDnsNames('cache', 'shop') },
      true,
    ],
    [
      "a user's certificate with the headless wildcard only (as the README asks)",
      'cache-replicas.shop.svc',
      { dnsNames: ['*.cache-headless.shop.svc'] },
      true,
    ],
    [
      'the headless wildcard with the cluster domain',
      'cache-master.shop.svc',
      { dnsNames: ['*.cache-headless.shop.svc.cluster.local'] },
      true,
    ],
    [
      "another Redis's certificate (same CA, same namespace)",
      'cache-replicas.shop.svc',
      { dnsNames: tlsDnsNames('other', 'shop') },
      false,
    ],
    [
      'the same name in another namespace',
      'cache-replicas.shop.svc',
      { dnsNames: tlsDnsNames('cache', 'prod') },
      false,
    ],
    [
      'a name that only starts like ours',
      'cache-replicas.shop.svc',
      { dnsNames: ['cache-replicas.shop.svc.evil.example'] },
      false,
    ],
    ['no name at all', 'cache-replicas.shop.svc', { ips: ['10.0.0.1'] }, false],
  ];
  for (const [name, host, names, ok] of table) {
    await t.test(name, () => {
      const err = identityProblem(host, peer(issue(ca, names)['tls.crt']), 'cache', 'shop');
      assert.equal(err === undefined, ok, err?.message);
      if (err) assert.match(err.message, /names neither it nor \*\.cache-headless\.shop\.svc/);
    });
  }
});

test("the backup Job over TLS: a node with this Redis's certificate is backed up, one with another's certificate of the same CA is refused", async (t) => {
  const cases: Array<[string, { dnsNames?: string[]; ips?: string[] }, boolean]> = [
    ['the headless wildcard of this Redis', { dnsNames: ['*.cache-headless.shop.svc'] }, true],
    ['the address dialled (as a Service name would be)', { ips: [addr(N, 2)] }, true],
    ["another Redis's names", { dnsNames: tlsDnsNames('other', 'shop') }, false],
    ['this name in another namespace', { dnsNames: tlsDnsNames('cache', 'prod') }, false],
  ];
  const nodes = await Promise.all(
    cases.map(([, names], i) => startRedis(t, { ip: addr(N, i + 1), minReplicasToWrite: 0, tls: issue(ca, names) })),
  );
  // Masters without replicas: the backup reads the master then.
  for (const node of nodes) await redisCommand(node.ip, 'REPLICAOF', 'NO', 'ONE');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'backup-tls-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const caFile = path.join(dir, 'ca.crt');
  writeFileSync(caFile, ca.ca);
  for (const [i, [name, , ok]] of cases.entries()) {
    await t.test(name, async () => {
      const claim = mkdtempSync(path.join(dir, 'claim-'));
      const r = await runEntry(BACKUP_MAIN, {
        REDIS_NAMESPACE: 'shop',
        REDIS_NAME: 'cache',
        REDIS_HOSTS: `${nodes[i]!.ip}:6379`,
        REDIS_USERNAME: OPERATOR_USER,
        REDIS_PASSWORD: TEST_OPERATOR_PASSWORD,
        REDIS_TLS_CA_FILE: caFile,
        BACKUP_STORAGE: 'pvc',
        BACKUP_CLAIM: 'redis-backups',
        BACKUP_DIR: claim,
      });
      if (ok) {
        assert.equal(r.code, 0, `${JSON.stringify(r.result)}\n${r.stderr}`);
        assert.ok(existsSync(path.join(claim, String(r.result['key']))), 'the snapshot is stored');
      } else {
        assert.notEqual(r.code, 0, `a certificate for another name must be refused: ${JSON.stringify(r.result)}`);
        assert.match(
          String(r.result['error']),
          /certificate of 127\.\d+\.131\.\d+ names neither it nor \*\.cache-headless\.shop\.svc/,
        );
      }
    });
  }
});

// The sidecar's TLS checks (redis/tls.ts, errors.ts) against real certificates made with openssl:
// a node's certificate must chain to the Redis's CA and name the Redis (its headless Service's
// wildcard, or the address dialled); a refusal is classified as an answer (auth), not a silence.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import type { PeerCertificate } from 'node:tls';
import { classifyError } from '../../../../src/sidecar/adapters/redis/errors.ts';
import { pemFingerprint, tlsOptionsFor } from '../../../../src/sidecar/adapters/redis/tls.ts';
import { issue, makeCa } from '../../../support/tls-certs.ts';

const ca = makeCa();
/** What Node hands checkServerIdentity: the subject and subjectAltName of the peer certificate. */
function peer(pem: string): PeerCertificate {
  const x = new X509Certificate(pem);
  return {
    subject: { CN: x.subject.replace(/^CN=/, '') },
    subjectaltname: x.subjectAltName ?? '',
  } as unknown as PeerCertificate;
}

test('a certificate is accepted when it names the Redis or the address, refused otherwise', async (t) => {
  const check = tlsOptionsFor(ca.ca, 'cache', 'shop').checkServerIdentity!;
  const table: Array<[string, { dnsNames?: string[]; ips?: string[] }, boolean]> = [
    ["the headless Service's wildcard (.svc)", { dnsNames: ['*.cache-headless.shop.svc'] }, true],
    ['the wildcard with the cluster domain', { dnsNames: ['*.cache-headless.shop.svc.cluster.local'] }, true],
    ['the address dialled', { ips: ['127.0.30.99'] }, true],
    ['another Redis of the same namespace', { dnsNames: ['*.other-headless.shop.svc'] }, false],
    ['the same name in another namespace', { dnsNames: ['*.cache-headless.prod.svc'] }, false],
    ['another address', { ips: ['127.0.30.98'] }, false],
  ];
  for (const [name, names, ok] of table) {
    await t.test(name, () => {
      const err = check('127.0.30.99', peer(issue(ca, names)['tls.crt']));
      assert.equal(err === undefined, ok, err?.message);
      if (err) assert.equal(classifyError(err).kind, 'auth', 'a refused certificate is an answer, not a silence');
    });
  }
});

test('TLS refusals from Node are auth; the fingerprint matches what openssl says', () => {
  for (const code of [
    'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    'DEPTH_ZERO_SELF_SIGNED_CERT',
    'CERT_HAS_EXPIRED',
    'ERR_SSL_WRONG_VERSION_NUMBER',
    'ERR_TLS_CERT_ALTNAME_INVALID',
  ]) {
    assert.equal(classifyError(Object.assign(new Error(code), { code })).kind, 'auth', code);
  }
  const cert = issue(ca, { dnsNames: ['x'] });
  assert.equal(pemFingerprint(cert['tls.crt']), cert.fingerprint);
  assert.equal(pemFingerprint('not a certificate'), null);
});

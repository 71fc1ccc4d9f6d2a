// Test certificates made with the real openssl: a CA and server certificates signed by it, in the
// layout cert-manager writes into a Secret (tls.crt, tls.key, ca.crt). Synchronous and quick
// (P-256 keys). Files live in a temp directory the caller removes (or the OS does).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface CertificateAuthority {
  dir: string;
  /** PEM of the CA certificate (ca.crt). */
  ca: string;
  certFile: string;
  keyFile: string;
}

export interface Issued {
  /** PEM of the certificate (tls.crt), its key (tls.key) and the CA (ca.crt). */
  'tls.crt': string;
  'tls.key': string;
  'ca.crt': string;
  /** SHA-256 fingerprint as Node reports it. */
  fingerprint: string;
}

const openssl = (args: string[], cwd: string) =>
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });

export function makeCa(name = 'redis-operator test CA'): CertificateAuthority {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'test-ca-'));
  openssl(
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-days',
      '2',
      '-subj',
      `/CN=${name}`,
    ],
    dir,
  );
  return {
    dir,
    ca: readFileSync(path.join(dir, 'ca.crt'), 'utf8'),
    certFile: path.join(dir, 'ca.crt'),
    keyFile: path.join(dir, 'ca.key'),
  };
}

let serial = 0;

/** A server (and client) certificate for `dnsNames` and `ips`, signed by the CA. */
export function issue(ca: CertificateAuthority, names: { dnsNames?: string[]; ips?: string[]; cn?: string }): Issued {
  const id = `c${process.pid}-${++serial}`;
  const san = [...(names.dnsNames ?? []).map((d) => `DNS:${d}`), ...(names.ips ?? []).map((ip) => `IP:${ip}`)].join(
    ',',
  );
  writeFileSync(path.join(ca.dir, `${id}.ext`), `subjectAltName=${san}\nextendedKeyUsage=serverAuth,clientAuth\n`);
  openssl(
    [
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      `${id}.key`,
      '-out',
      `${id}.csr`,
      '-subj',
      `/CN=${names.cn ?? id}`,
    ],
    ca.dir,
  );
  openssl(
    [
      'x509',
      '-req',
      '-in',
      `${id}.csr`,
      '-CA',
      ca.certFile,
      '-CAkey',
      ca.keyFile,
      '-CAcreateserial',
      '-out',
      `${id}.crt`,
      '-days',
      '1',
      '-extfile',
      `${id}.ext`,
    ],
    ca.dir,
  );
  const crt = readFileSync(path.join(ca.dir, `${id}.crt`), 'utf8');
  const fingerprint = openssl(['x509', '-in', `${id}.crt`, '-noout', '-fingerprint', '-sha256'], ca.dir)
    .toString()
    .trim()
    .replace(/^.*=/, '');
  return {
    'tls.crt': crt,
    'tls.key': readFileSync(path.join(ca.dir, `${id}.key`), 'utf8'),
    'ca.crt': ca.ca,
    fingerprint,
  };
}

/** Writes an issued certificate as the files a mounted Secret would hold. */
export function writeTlsDir(dir: string, cert: Issued): void {
  for (const key of ['tls.crt', 'tls.key', 'ca.crt'] as const)
    writeFileSync(path.join(dir, key), cert[key], { mode: 0o600 });
}

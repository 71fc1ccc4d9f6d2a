// The local control plane's PKI, made with openssl: one CA, the API server's serving certificate,
// client certificates (admin, controller-manager, scheduler, the API server's kubelet client, one
// per node) and the service-account signing key pair.
// Invariants: keys are P-256 (fast to make, accepted everywhere in Kubernetes); every file is
// written once into the control plane's own directory with mode 0600 for keys; nothing here is
// trusted by anything outside that directory.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface CertPaths {
  cert: string;
  key: string;
}

export interface Pki {
  readonly dir: string;
  readonly ca: CertPaths;
  readonly serviceAccountKey: string;
  readonly serviceAccountPub: string;
  /** A client certificate for user `cn` in groups `orgs` (cached by cn). */
  client(cn: string, orgs?: string[]): CertPaths;
  /** A serving certificate for these IPs and DNS names. */
  serving(name: string, ips: string[], dns: string[]): CertPaths;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

function newKey(file: string, cwd: string): void {
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', file], cwd);
}

function fileName(s: string): string {
  return s.replace(/[^A-Za-z0-9_.-]+/g, '_');
}

export function createPki(dir: string): Pki {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const ca = { cert: path.join(dir, 'ca.crt'), key: path.join(dir, 'ca.key') };
  if (!existsSync(ca.cert)) {
    newKey(ca.key, dir);
    openssl(
      [
        'req',
        '-x509',
        '-new',
        '-key',
        ca.key,
        '-days',
        '30',
        '-subj',
        '/CN=redis-operator-local-ca',
        '-out',
        ca.cert,
        '-addext',
        'basicConstraints=critical,CA:TRUE',
        '-addext',
        'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
      ],
      dir,
    );
  }
  const serviceAccountKey = path.join(dir, 'sa.key');
  const serviceAccountPub = path.join(dir, 'sa.pub');
  if (!existsSync(serviceAccountPub)) {
    newKey(serviceAccountKey, dir);
    openssl(['pkey', '-in', serviceAccountKey, '-pubout', '-out', serviceAccountPub], dir);
  }

  function sign(base: string, subject: string, ext: string[]): CertPaths {
    const out = { cert: path.join(dir, `${base}.crt`), key: path.join(dir, `${base}.key`) };
    if (existsSync(out.cert)) return out;
    newKey(out.key, dir);
    const csr = path.join(dir, `${base}.csr`);
    const extFile = path.join(dir, `${base}.ext`);
    writeFileSync(extFile, `${ext.join('\n')}\n`);
    openssl(['req', '-new', '-key', out.key, '-subj', subject, '-out', csr], dir);
    openssl(
      [
        'x509',
        '-req',
        '-in',
        csr,
        '-CA',
        ca.cert,
        '-CAkey',
        ca.key,
        '-CAcreateserial',
        '-days',
        '30',
        '-out',
        out.cert,
        '-extfile',
        extFile,
      ],
      dir,
    );
    return out;
  }

  return {
    dir,
    ca,
    serviceAccountKey,
    serviceAccountPub,
    client(cn, orgs = []) {
      // OpenSSL subject syntax: '/' separates RDNs; a '/' inside a value would be read as one.
      const subject = `${orgs.map((o) => `/O=${o}`).join('')}/CN=${cn}`;
      return sign(`client-${fileName(cn)}`, subject, [
        'basicConstraints=CA:FALSE',
        'keyUsage=critical,digitalSignature,keyEncipherment',
        'extendedKeyUsage=clientAuth',
      ]);
    },
    serving(name, ips, dns) {
      const san = [...ips.map((ip) => `IP:${ip}`), ...dns.map((d) => `DNS:${d}`)].join(',');
      return sign(`serving-${fileName(name)}`, `/CN=${name}`, [
        'basicConstraints=CA:FALSE',
        'keyUsage=critical,digitalSignature,keyEncipherment',
        'extendedKeyUsage=serverAuth',
        `subjectAltName=${san}`,
      ]);
    },
  };
}

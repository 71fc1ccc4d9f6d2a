// TLS from the backup Job to a Redis node (spec.tls): trust only the Redis's CA, and accept only a
// certificate that names the node the Job dialled or this Redis. Pure (the CA is passed in).
// Why the name matters: every Redis whose certificates one issuer signs shares that CA; checking
// the chain alone would let any of them (or anything holding such a certificate) answer for this
// Redis and receive the operator user's password and the snapshot.
// Invariant: a certificate is accepted when it names the host dialled (the Services' DNS names,
// what cert-manager's Certificate lists: hook/redis/children/certificate.ts) or a pod of this Redis under its
// headless Service (the name the README asks a user's own certificate to carry; the sidecar checks
// the same: sidecar/adapters/redis/tls.ts). Anything else, another Redis's certificate of the same CA
// included, is refused with Node's own name-mismatch code.
import tls, { type ConnectionOptions, type PeerCertificate } from 'node:tls';
import { childNames } from '../api/labels.ts';

/** The names, besides the host dialled, that make a certificate this Redis's. */
export function redisIdentities(name: string, namespace: string): string[] {
  const headless = childNames(name).headless;
  return [`node.${headless}.${namespace}.svc`, `node.${headless}.${namespace}.svc.cluster.local`];
}

/** Why `cert` does not belong to the node at `host` of Redis namespace/name, or undefined. */
export function identityProblem(
  host: string,
  cert: PeerCertificate,
  name: string,
  namespace: string,
): Error | undefined {
  if (tls.checkServerIdentity(host, cert) === undefined) return undefined;
  if (redisIdentities(name, namespace).some((n) => tls.checkServerIdentity(n, cert) === undefined)) return undefined;
  return Object.assign(
    new Error(
      `the certificate of ${host} names neither it nor *.${childNames(name).headless}.${namespace}.svc (Redis ${namespace}/${name}): ${cert.subjectaltname ?? 'no subjectAltName'}`,
    ),
    { code: 'ERR_TLS_CERT_ALTNAME_INVALID' },
  );
}

/** Connection options for Redis namespace/name: its CA, its names. */
export function backupTlsOptions(ca: string, name: string, namespace: string): ConnectionOptions {
  return {
    ca,
    minVersion: 'TLSv1.2',
    checkServerIdentity: (host: string, cert: PeerCertificate) => identityProblem(host, cert, name, namespace),
  };
}

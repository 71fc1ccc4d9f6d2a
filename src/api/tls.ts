// What TLS means for one Redis, shared by the hook (redis.conf, the pod's volume and probes, the
// Certificate child) and the sidecar (which Secret holds the CA it verifies with, and which
// names a node's certificate must carry).
// Invariants: with spec.tls, every node serves TLS on REDIS_PORT and nothing in plaintext;
// certificates are read from files under TLS_MOUNT, so a renewed Secret is a file change that
// CONFIG SET of the same paths loads (Redis 7 re-reads TLS files on every such CONFIG SET).
import { childNames, TLS_MOUNT } from './labels.ts';
import type { RedisSpec } from './schema.ts';

export const TLS_CERT_KEY = 'tls.crt';
export const TLS_KEY_KEY = 'tls.key';
export const TLS_CA_KEY = 'ca.crt';

/** The redis.conf directives naming the mounted files: also what the sidecar sets again to reload them. */
export const TLS_FILE_DIRECTIVES: Readonly<Record<string, string>> = {
  'tls-cert-file': `${TLS_MOUNT}/${TLS_CERT_KEY}`,
  'tls-key-file': `${TLS_MOUNT}/${TLS_KEY_KEY}`,
  'tls-ca-cert-file': `${TLS_MOUNT}/${TLS_CA_KEY}`,
};

/** The Secret with the certificate, or undefined when TLS is off. */
export function tlsSecretName(name: string, spec: Pick<RedisSpec, 'tls'>): string | undefined {
  if (!spec.tls) return undefined;
  return spec.tls.secretName ?? childNames(name).certificate;
}

/** DNS names a node's certificate is checked against (one is enough), and what the Certificate child asks for. */
export function tlsDnsNames(name: string, namespace: string): string[] {
  const names = childNames(name);
  const out: string[] = [];
  for (const suffix of ['svc', 'svc.cluster.local']) {
    out.push(
      `*.${names.headless}.${namespace}.${suffix}`,
      `${names.masterService}.${namespace}.${suffix}`,
      `${names.replicasService}.${namespace}.${suffix}`,
    );
  }
  return out;
}

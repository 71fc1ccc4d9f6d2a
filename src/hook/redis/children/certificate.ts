// Certificate <name>-tls (cert-manager.io/v1), only when spec.tls.certManager is set: cert-manager
// writes the Secret the pods mount (tls.crt, tls.key, ca.crt) and renews it; the sidecar has the
// nodes load a renewed one without a restart.
// Invariants: the names are the ones the sidecar checks a node's certificate against
// (api/tls.ts), so an issued certificate is always accepted; the private key is rotated on every
// renewal; usages cover serving clients and, for replication, the replica's own TLS client side.
// cert-manager is not a dependency of the operator: its type is declared in common/child.ts.
import { childNames } from '../../../api/labels.ts';
import { tlsDnsNames, tlsSecretName } from '../../../api/tls.ts';
import type { HookContext } from '../context.ts';
import { childMetadata } from './meta.ts';
import type { Certificate } from '../../common/child.ts';

export function desiredCertificate(ctx: HookContext): Certificate | undefined {
  const manager = ctx.spec.tls?.certManager;
  const secretName = tlsSecretName(ctx.name, ctx.spec);
  if (manager === undefined || secretName === undefined) return undefined;
  const dnsNames = tlsDnsNames(ctx.name, ctx.namespace);
  return {
    apiVersion: 'cert-manager.io/v1',
    kind: 'Certificate',
    metadata: childMetadata(ctx, childNames(ctx.name).certificate, 'certificate'),
    spec: {
      secretName,
      issuerRef: { name: manager.issuerRef.name, kind: manager.issuerRef.kind, group: manager.issuerRef.group },
      // A common name of at most 64 characters: the master Service's short DNS name.
      commonName: `${childNames(ctx.name).masterService}.${ctx.namespace}.svc`.slice(0, 64),
      dnsNames,
      usages: ['server auth', 'client auth', 'digital signature', 'key encipherment'],
      privateKey: { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always' },
    },
  };
}

// TLS to a Redis node (spec.tls): the options every connection uses, and the certificate a node
// serves right now (to see whether it loaded a renewed one). Owns all of node:tls.
// Invariants: a node's certificate must chain to the Secret's CA AND name this Redis: the pod IP,
// or a DNS name under <name>-headless.<namespace>.svc (what the Certificate child asks for);
// a handshake is bounded by timeoutMs and its socket always destroyed.
import { X509Certificate } from 'node:crypto';
import net from 'node:net';
import tls, { type ConnectionOptions, type PeerCertificate } from 'node:tls';
import { childNames } from '../../../api/labels.ts';
import type { Endpoint } from './types.ts';

/** The connection options for one Redis: trust only its CA, accept only certificates naming it. */
export function tlsOptionsFor(ca: string, name: string, namespace: string): ConnectionOptions {
  const headless = childNames(name).headless;
  const candidates = [`node.${headless}.${namespace}.svc`, `node.${headless}.${namespace}.svc.cluster.local`];
  return {
    ca,
    minVersion: 'TLSv1.2',
    checkServerIdentity: (host: string, cert: PeerCertificate) => {
      const byAddress = tls.checkServerIdentity(host, cert);
      if (byAddress === undefined) return undefined;
      // Pods are reached by IP; a certificate for the headless Service's wildcard names them all.
      for (const dns of candidates) if (tls.checkServerIdentity(dns, cert) === undefined) return undefined;
      // Node's own code for a name mismatch, so the refusal is classified like its own (errors.ts).
      return Object.assign(
        new Error(
          `certificate of ${host} names neither it nor *.${headless}.${namespace}.svc: ${cert.subjectaltname ?? 'no subjectAltName'}`,
        ),
        {
          code: 'ERR_TLS_CERT_ALTNAME_INVALID',
        },
      );
    },
  };
}

/** SHA-256 fingerprint (colon hex, as Node reports it) of the first certificate of a PEM. */
export function pemFingerprint(pem: string): string | null {
  try {
    return new X509Certificate(pem).fingerprint256;
  } catch {
    return null;
  }
}

/** The fingerprint of the certificate the node serves to a new connection now. */
export function servedFingerprint(
  endpoint: Endpoint,
  options: ConnectionOptions,
  localAddress: string | undefined,
  timeoutMs: number,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.createConnection({
      host: endpoint.host,
      port: endpoint.port,
      ...(localAddress ? { localAddress } : {}),
    });
    const secure = tls.connect({ ...options, socket });
    const timer = setTimeout(
      () => done(new Error(`TLS handshake with ${endpoint.host}:${endpoint.port} timed out after ${timeoutMs} ms`)),
      timeoutMs,
    );
    const done = (err: Error | null, fingerprint?: string) => {
      clearTimeout(timer);
      secure.destroy();
      socket.destroy();
      if (err) reject(err);
      else resolve(fingerprint!);
    };
    secure.once('secureConnect', () => done(null, secure.getPeerCertificate().fingerprint256));
    secure.once('error', (err: Error) => done(err));
  });
}

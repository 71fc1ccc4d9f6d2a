// Which nodes must load their TLS files again: those serving a certificate other than the one in
// the Secret now (it was renewed). Pure.
// Invariants: a node whose served certificate could not be seen is left alone (nothing to
// compare); a node asked to reload is asked again only after retryMs, since the kubelet updates a
// mounted Secret up to a minute after the API (until then the files still hold the old one).

export interface ServedCertificate {
  pod: string;
  /** Fingerprint of the certificate the node serves; null when it could not be seen. */
  fingerprint: string | null;
  /** When it was last asked to reload (monotonic ms). */
  reloadedAt: number | undefined;
}

export interface TlsReloadDecision {
  reload: string[];
  /** Nodes that serve the Secret's certificate. */
  current: string[];
  reason: string;
}

export function decideTlsReload(
  wanted: string | null,
  nodes: readonly ServedCertificate[],
  now: number,
  retryMs: number,
): TlsReloadDecision {
  if (wanted === null) return { reload: [], current: [], reason: 'no certificate in the Secret to compare with' };
  const current = nodes.filter((n) => n.fingerprint === wanted).map((n) => n.pod);
  const stale = nodes.filter((n) => n.fingerprint !== null && n.fingerprint !== wanted);
  const reload = stale.filter((n) => n.reloadedAt === undefined || now - n.reloadedAt >= retryMs).map((n) => n.pod);
  const reason =
    stale.length === 0
      ? 'every node that answers serves the certificate in the Secret'
      : `${stale.map((n) => n.pod).join(', ')} serve an older certificate than the Secret's${reload.length < stale.length ? ' (asked to reload less than a retry interval ago)' : ''}`;
  return { reload, current, reason };
}

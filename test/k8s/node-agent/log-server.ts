// The kubelet's read-only HTTPS endpoint for `kubectl logs`: the API server proxies
// GET /api/v1/namespaces/<ns>/pods/<pod>/log to https://<node InternalIP>:<kubelet port>/
// containerLogs/<ns>/<pod>/<container>, which this answers from the container's log file.
// Supported query: tailLines, limitBytes, previous, follow (stream until the container stops or
// the client goes). Not supported: timestamps, sinceSeconds/sinceTime (no per-line times are
// kept), exec/attach/port-forward, metrics, /pods.
// Invariants: one self-signed certificate for every node of the agent (kube-apiserver does not
// verify kubelet certificates unless given --kubelet-certificate-authority); listens on the
// node's own loopback address only; a follow stream ends when its client disconnects.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, openSync, readSync, closeSync } from 'node:fs';
import https from 'node:https';
import type { ServerResponse } from 'node:http';
import path from 'node:path';
import type { LogTarget } from './node-kubelet.ts';

export interface Tls {
  cert: Buffer;
  key: Buffer;
}

/** A self-signed P-256 serving certificate for these IPs (made once per directory, with openssl). */
export function selfSignedCert(dir: string, ips: string[]): Tls {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const cert = path.join(dir, 'kubelet.crt');
  const key = path.join(dir, 'kubelet.key');
  if (!existsSync(cert)) {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '30',
        '-subj',
        '/CN=node-agent',
        '-addext',
        `subjectAltName=${ips.map((ip) => `IP:${ip}`).join(',')}`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
  }
  return { cert: readFileSync(cert), key: readFileSync(key) };
}

/** The last `tailLines` lines, then at most `limitBytes` bytes (the kubelet applies both in that order). */
export function selectLog(content: Buffer, tailLines: number | undefined, limitBytes: number | undefined): Buffer {
  let out = content;
  if (tailLines !== undefined) {
    if (tailLines <= 0) out = Buffer.alloc(0);
    else {
      let idx = out.length;
      // A final newline ends the last line; it does not start another.
      if (idx > 0 && out[idx - 1] === 0x0a) idx--;
      let lines = 0;
      while (idx > 0) {
        if (out[idx - 1] === 0x0a && ++lines === tailLines) break;
        idx--;
      }
      out = out.subarray(idx);
    }
  }
  return limitBytes !== undefined && out.length > limitBytes ? out.subarray(0, limitBytes) : out;
}

function readFrom(file: string, offset: number): Buffer {
  const size = existsSync(file) ? statSync(file).size : 0;
  if (size <= offset) return Buffer.alloc(0);
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(size - offset);
    readSync(fd, buf, 0, buf.length, offset);
    return buf;
  } finally {
    closeSync(fd);
  }
}

export type LogResolver = (namespace: string, pod: string, container: string, which: 'current' | 'previous') => LogTarget | string;

function intParam(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name);
  return v !== null && /^-?\d+$/.test(v) ? Number(v) : undefined;
}

function fail(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(message);
}

export interface LogServer {
  readonly port: number;
  close(): Promise<void>;
}

export async function startLogServer(options: { host: string; port: number; tls: Tls; resolve: LogResolver; followPollMs?: number }): Promise<LogServer> {
  const poll = options.followPollMs ?? 200;
  const server = https.createServer({ cert: options.tls.cert, key: options.tls.key }, (req, res) => {
    const url = new URL(req.url ?? '/', 'https://node');
    if (req.method !== 'GET') return fail(res, 405, 'method not allowed');
    if (url.pathname === '/healthz') return fail(res, 200, 'ok');
    const m = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(url.pathname);
    if (!m) return fail(res, 404, `the node agent serves only /containerLogs/<namespace>/<pod>/<container> (not ${url.pathname})`);
    const [ns, pod, container] = [m[1]!, m[2]!, m[3]!].map(decodeURIComponent) as [string, string, string];
    const q = url.searchParams;
    const previous = q.get('previous') === 'true';
    const target = options.resolve(ns, pod, container, previous ? 'previous' : 'current');
    if (typeof target === 'string') return fail(res, 404, target);
    const file = target.files[target.files.length - 1]!;
    const limit = intParam(q, 'limitBytes');
    const first = selectLog(readFrom(file, 0), intParam(q, 'tailLines'), limit);
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    res.write(first);
    if (q.get('follow') !== 'true' || (limit !== undefined && first.length >= limit)) return void res.end();
    // Follow: keep sending what the container appends, until it stops or the client leaves.
    let offset = existsSync(file) ? statSync(file).size : 0;
    let sent = first.length;
    const timer = setInterval(() => {
      let more = readFrom(file, offset);
      offset += more.length;
      if (limit !== undefined) more = more.subarray(0, Math.max(0, limit - sent));
      if (more.length > 0) {
        res.write(more);
        sent += more.length;
      }
      if (!target.running() || (limit !== undefined && sent >= limit)) {
        clearInterval(timer);
        res.end();
      }
    }, poll);
    res.on('close', () => clearInterval(timer));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  return {
    port: (server.address() as { port: number }).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// The redis_exporter image (`isExporterImage`) as both runners (this stand-in kubelet and the node
// agent) run it: the image's entrypoint `/redis_exporter` is Debian's build of the same release
// on this machine (monitoringTool of test/monitoring/tools.ts; REDIS_EXPORTER_BIN overrides), its
// args appended, its environment passed through. Its imageID is that binary's digest, hashed once.
//
// The rewrite (README, "What it does not model"): where pods share the host's network namespace
// (every stand-in pod, node-agent pods without a pod network), the pod's own loopback and its
// wildcard listen address would be the machine's, shared by every pod. So, in the env and in the
// entrypoint's flags, a Redis address on 127.0.0.1/localhost/::1 (REDIS_ADDR, -redis.addr)
// becomes the pod IP, and a listen address without a host or on a wildcard/loopback host
// (REDIS_EXPORTER_WEB_LISTEN_ADDRESS, -web.listen-address) becomes `<pod IP>:<port>`; unset,
// both get the exporter's defaults so rewritten (`redis://<pod IP>:6379`, `<pod IP>:9121`).
// Invariants: other values stay as written; nothing is rewritten for a pod with its own network
// namespace; a missing binary is a start refusal (a message), never an exception.
import { createHash } from 'node:crypto';
import { accessSync, constants, readFileSync } from 'node:fs';
import { monitoringTool } from '../../monitoring/tools.ts';
import { EXPORTER_ENTRYPOINT } from './container.ts';

export const ADDR_ENV = 'REDIS_ADDR';
export const LISTEN_ENV = 'REDIS_EXPORTER_WEB_LISTEN_ADDRESS';
/** The exporter's defaults (main.go) for the two addresses, as they read in a pod of its own. */
const DEFAULT_ADDR = 'redis://localhost:6379';
const DEFAULT_LISTEN = ':9121';
const ADDR_FLAG = 'redis.addr';
const LISTEN_FLAG = 'web.listen-address';

/** A Redis address whose host is the pod's loopback, with the pod IP instead (URL or bare host:port). */
export function podRedisAddr(value: string, podIP: string): string {
  const m = /^((?:[a-z][a-z0-9+.-]*:\/\/)?(?:[^@/]*@)?)(localhost|127\.0\.0\.1|\[::1\]|)(?=:\d+(?:\/|$)|\/|$)/i.exec(value);
  if (!m || /^unix:/i.test(m[1]!)) return value; // a socket path has no host to move
  // Without a host (`redis://:6379`) the exporter dials localhost; without host and port there is nothing to move.
  if (m[2] === '' && !value.slice(m[1]!.length).startsWith(':')) return value;
  return m[1]! + podIP + value.slice(m[0].length);
}

/** A listen address on every interface or on loopback, as `<pod IP>:<port>` (others stay). */
export function podListenAddr(value: string, podIP: string): string {
  const m = /^(|0\.0\.0\.0|\[::\]|localhost|127\.0\.0\.1|\[::1\]):(\d+)$/.exec(value);
  return m ? `${podIP}:${m[2]!}` : value;
}

/** The exporter's env in a shared network namespace (see the header); defaults made explicit. */
export function sharedNetnsEnv(env: ReadonlyArray<readonly [string, string]>, podIP: string): Array<[string, string]> {
  const out = env.map(([k, v]): [string, string] => [k, k === ADDR_ENV ? podRedisAddr(v, podIP) : k === LISTEN_ENV ? podListenAddr(v, podIP) : v]);
  if (!out.some(([k]) => k === ADDR_ENV)) out.push([ADDR_ENV, podRedisAddr(DEFAULT_ADDR, podIP)]);
  if (!out.some(([k]) => k === LISTEN_ENV)) out.push([LISTEN_ENV, podListenAddr(DEFAULT_LISTEN, podIP)]);
  return out;
}

/** The entrypoint's flags (Go's flag syntax: -f v, -f=v, --f v, --f=v) with the same rewrite. */
export function sharedNetnsArgs(args: readonly string[], podIP: string): string[] {
  const rewrite = (flag: string, v: string) => (flag === ADDR_FLAG ? podRedisAddr(v, podIP) : flag === LISTEN_FLAG ? podListenAddr(v, podIP) : v);
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') {
      out.push(...args.slice(i)); // the end of the flags
      break;
    }
    const m = /^--?([^=]+)(?:=(.*))?$/s.exec(a);
    if (!m || (m[1] !== ADDR_FLAG && m[1] !== LISTEN_FLAG)) out.push(a);
    else if (m[2] !== undefined) out.push(`${a.slice(0, a.indexOf('='))}=${rewrite(m[1], m[2])}`);
    else if (i + 1 < args.length) out.push(a, rewrite(m[1], args[++i]!));
    else out.push(a);
  }
  return out;
}

let binary: string | undefined;

/** The host's redis_exporter, or why there is none (what the container's waiting message says). */
export function exporterBinary(): string | { error: string } {
  if (binary !== undefined) return binary;
  let found: string;
  try {
    // Only the exporter: a missing Prometheus must not stop a runner.
    found = monitoringTool('redisExporter');
    accessSync(found, constants.X_OK);
  } catch (err) {
    // Not cached: a binary fetched while the runner runs is found at the next start.
    return {
      error: `the image's entrypoint ${EXPORTER_ENTRYPOINT} is the host's redis_exporter, which is missing: ${(err as Error).message} (or set REDIS_EXPORTER_BIN to a redis_exporter 1.45 binary)`,
    };
  }
  binary = found;
  return binary;
}

/**
 * What the exporter container runs: argv[0] the image's entrypoint mapped to the host binary (an
 * explicit command naming another program stays), and the rewrite when the pod shares the host's
 * network namespace. `argv` and `env` as containerArgv/resolveEnv made them.
 */
export function exporterProcess(
  argv: readonly string[],
  env: ReadonlyArray<readonly [string, string]>,
  options: { podIP: string; sharedNetns: boolean },
): { argv: string[]; env: Array<[string, string]> } | { error: string } {
  const bin = exporterBinary();
  if (typeof bin === 'object') return bin;
  const entry = argv[0] === EXPORTER_ENTRYPOINT;
  const args = entry && options.sharedNetns ? sharedNetnsArgs(argv.slice(1), options.podIP) : argv.slice(1);
  return {
    argv: [entry ? bin : argv[0]!, ...args],
    env: options.sharedNetns ? sharedNetnsEnv(env, options.podIP) : env.map(([k, v]): [string, string] => [k, v]),
  };
}

let imageID: string | undefined;

/** containerStatuses[].imageID of exporter containers: `<scheme>redis_exporter@sha256:<the binary's digest>` ('' without one). */
export function exporterImageID(scheme: string): string {
  if (imageID === undefined) {
    const bin = exporterBinary();
    if (typeof bin === 'object') return '';
    imageID = createHash('sha256').update(readFileSync(bin)).digest('hex');
  }
  return `${scheme}redis_exporter@sha256:${imageID}`;
}

// Test harness: real redis-server processes, each on its own loopback address port 6379 (like a
// pod IP), configured like the hook's ConfigMap, plus firewall cuts between two addresses.
// Invariants: no process or firewall rule outlives the test process. Each server is registered
// for t.after and for process exit/SIGINT/SIGTERM; redis-server runs under
// `setpriv --pdeathsig KILL` so it dies even if node is SIGKILLed. Firewall rules carry a comment
// naming their third octet, and rules left by a crashed earlier run of the same file are swept
// before new ones are added. Nothing here ever addresses anything outside 127.0.0.0/8.
// Loopback addressing and the exit hooks are in loopback-guard.ts, network cuts in link-cuts.ts;
// this file owns the servers and re-exports the rest, so tests import one module.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync, readFileSync, existsSync } from 'node:fs';
import net from 'node:net';
import tls, { type ConnectionOptions } from 'node:tls';
import os from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { selectedEngine, type TestEngine } from './engines.ts';
import { assertLoopback, installHooks, liveServers } from './loopback-guard.ts';
import { writeTlsDir, type Issued } from './tls-certs.ts';

export { addr } from './loopback-guard.ts';
export { assertIptablesUsable, cutLink, sweepRules, type LinkCut } from './link-cuts.ts';

export const TEST_PASSWORD = 'test-password-7f3a';
/** The operator user's password on test servers (what the `<name>-operator` Secret holds in harnesses). */
export const TEST_OPERATOR_PASSWORD = 'test-operator-password-91c4';
export const OPERATOR_USER = 'redis-operator';
export const REDIS_PORT = 6379;

export interface RedisServerOptions {
  ip: string;
  password?: string;
  /**
   * The operator's own user, as the pod's start-up config gives it (default TEST_OPERATOR_PASSWORD);
   * null starts a node the way an earlier version did: no such user, the link as `default`.
   */
  operatorPassword?: string | null;
  /**
   * TLS only, as spec.tls makes it: the certificate's files in <root>/tls (what the mounted Secret
   * holds), TLS on port 6379, the plaintext port closed, replication over TLS.
   */
  tls?: Issued;
  /** Mirrors spec.persistence.enableAof. */
  appendonly?: boolean;
  /** Mirrors spec.failover (what the ConfigMap would carry for the default spec: 1 and 5). */
  minReplicasToWrite?: number;
  minReplicasMaxLag?: number;
  replicaPriority?: number;
  /** Any further redis.conf directives (tests only; e.g. repl-diskless-sync-delay). */
  extra?: Record<string, string>;
  /**
   * A Redis Cluster node, as a RedisCluster pod runs (cluster-enabled, nodes.conf in the data
   * directory, cluster-node-timeout), with no `replicaof` line (refused in cluster mode) and no
   * write fencing unless asked (minReplicasToWrite defaults to 0 here).
   */
  cluster?: { nodeTimeoutMs?: number };
  /** How long to wait for the server to accept connections. Default 10000 ms. */
  startTimeoutMs?: number;
  /** 'pong' (default): until PING answers (data loaded); 'accept': until it accepts TCP (may still be LOADING). */
  waitFor?: 'pong' | 'accept';
  /** Which server binary runs it (default: the one REDIS_OPERATOR_TEST_ENGINE selects, see engines.ts). */
  engine?: TestEngine;
}

// ---- redis-server ---------------------------------------------------------------------------

function configText(
  o: Required<
    Omit<
      RedisServerOptions,
      'extra' | 'password' | 'operatorPassword' | 'startTimeoutMs' | 'waitFor' | 'tls' | 'cluster' | 'engine'
    >
  > & {
    extra: Record<string, string>;
    cluster: RedisServerOptions['cluster'];
  },
  dataDir: string,
  logFile: string,
): string {
  const lines = [
    "# What the hook's ConfigMap carries (see the brief), for one pod:",
    `bind ${o.ip}`,
    'port 6379',
    `dir ${dataDir}`,
    ...(o.cluster
      ? [
          'cluster-enabled yes',
          'cluster-config-file nodes.conf',
          `cluster-node-timeout ${o.cluster.nodeTimeoutMs ?? 1000}`,
          'cluster-require-full-coverage no',
          'cluster-allow-replica-migration no',
          'repl-diskless-sync-delay 0',
        ]
      : ['replicaof 127.0.0.1 1']),
    'replica-read-only yes',
    'repl-ping-replica-period 1',
    `min-replicas-to-write ${o.minReplicasToWrite}`,
    `min-replicas-max-lag ${o.minReplicasMaxLag}`,
    `appendonly ${o.appendonly ? 'yes' : 'no'}`,
    '# Harness only: no automatic snapshots; a test calls SAVE when it needs a file.',
    'save ""',
    `replica-priority ${o.replicaPriority}`,
    "# Harness only: a pod's outgoing connections carry its own IP; here they must be bound to it,",
    '# or every replica would connect from 127.0.0.1 and masters would list replicas by that address.',
    `bind-source-addr ${o.ip}`,
    'daemonize no',
    `logfile ${logFile}`,
    'enable-debug-command local',
  ];
  for (const [k, v] of Object.entries(o.extra)) lines.push(`${k} ${v}`);
  return lines.join('\n') + '\n';
}

/**
 * AUTH + PING over a raw socket: resolves true on PONG, false on anything else (refused,
 * LOADING...). With acceptOnly, any answer counts.
 */
function pingOnce(
  ip: string,
  password: string,
  timeoutMs: number,
  acceptOnly = false,
  secure = false,
): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = secure
      ? tls.connect({ host: ip, port: REDIS_PORT, rejectUnauthorized: false })
      : net.createConnection({ host: ip, port: REDIS_PORT });
    let data = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.on('error', () => done(false));
    socket.on(secure ? 'secureConnect' : 'connect', () => socket.write(`AUTH ${password}\r\nPING\r\n`));
    socket.on('data', (chunk) => {
      data += chunk.toString();
      if (data.includes('+PONG') || acceptOnly) done(true);
      else if (data.split('\r\n').length > 2) done(false);
    });
  });
}

/** The TLS options to reach the live test server at ip (undefined when it speaks plaintext or is unknown). */
export function clientTlsFor(ip: string): ConnectionOptions | undefined {
  for (const server of liveServers) if (server.ip === ip) return server.clientTls;
  return undefined;
}

export class RedisServer {
  /** Temp root holding data/, redis.conf and redis.log. */
  readonly root: string;
  readonly dataDir: string;
  readonly logFile: string;
  /** The default user's password it starts with (a restart may take a new one: the pod's env after a rotation). */
  password: string;
  /** The engine it runs (fixed at construction: a restart runs the same binary). */
  readonly engine: TestEngine;
  #ip: string;
  #options: RedisServerOptions;
  #child: ChildProcess | null = null;
  #exited: Promise<void> = Promise.resolve();
  #stopped = false;

  private constructor(options: RedisServerOptions) {
    assertLoopback(options.ip);
    installHooks();
    this.#options = options;
    this.engine = options.engine ?? selectedEngine();
    this.#ip = options.ip;
    this.password = options.password ?? TEST_PASSWORD;
    this.root = mkdtempSync(path.join(os.tmpdir(), `redis-test-${options.ip}-`));
    this.dataDir = path.join(this.root, 'data');
    this.logFile = path.join(this.root, 'redis.log');
    mkdirSync(this.dataDir);
  }

  /** Starts a server and waits until it answers PING. Prefer startRedis(t, ...) in tests. */
  static async start(options: RedisServerOptions): Promise<RedisServer> {
    const server = new RedisServer(options);
    liveServers.add(server);
    try {
      await server.#spawn();
    } catch (err) {
      server.cleanup();
      throw err;
    }
    return server;
  }

  /** With TLS: where its certificate files are (rewrite them with renewTls, then a reload loads them). */
  get tlsDir(): string {
    return path.join(this.root, 'tls');
  }

  /** How a client reaches it: TLS options trusting its CA (names unchecked: tests address by IP), or undefined. */
  get clientTls(): ConnectionOptions | undefined {
    const cert = this.#options.tls;
    return cert ? { ca: cert['ca.crt'], checkServerIdentity: () => undefined } : undefined;
  }

  /**
   * A renewed certificate in its files, as the kubelet updates a mounted Secret; the running server keeps serving the
   * old one until it reloads.
   */
  renewTls(cert: Issued): void {
    this.#options = { ...this.#options, tls: cert };
    writeTlsDir(this.tlsDir, cert);
  }

  #tlsArgs(cert: Issued): string[] {
    mkdirSync(this.tlsDir, { recursive: true });
    writeTlsDir(this.tlsDir, cert);
    const file = (k: string) => path.join(this.tlsDir, k);
    return [
      '--port',
      '0',
      '--tls-port',
      String(REDIS_PORT),
      '--tls-cert-file',
      file('tls.crt'),
      '--tls-key-file',
      file('tls.key'),
      '--tls-ca-cert-file',
      file('ca.crt'),
      '--tls-auth-clients',
      'no',
      '--tls-replication',
      'yes',
    ];
  }

  get ip(): string {
    return this.#ip;
  }

  get endpoint(): { host: string; port: number } {
    return { host: this.#ip, port: REDIS_PORT };
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get running(): boolean {
    return this.#child !== null;
  }

  async #spawn(): Promise<void> {
    const o = this.#options;
    const conf = configText(
      {
        ip: this.#ip,
        appendonly: o.appendonly ?? false,
        minReplicasToWrite: o.minReplicasToWrite ?? (o.cluster ? 0 : 1),
        minReplicasMaxLag: o.minReplicasMaxLag ?? 5,
        replicaPriority: o.replicaPriority ?? 100,
        extra: o.extra ?? {},
        cluster: o.cluster,
      },
      this.dataDir,
      this.logFile,
    );
    const confFile = path.join(this.root, 'redis.conf');
    writeFileSync(confFile, conf);
    // What the container's start-up config adds (it gives them on stdin; here, test passwords on the command line).
    const op = o.operatorPassword === undefined ? TEST_OPERATOR_PASSWORD : o.operatorPassword;
    const auth =
      op === null
        ? ['--requirepass', this.password, '--masterauth', this.password]
        : [
            '--requirepass',
            this.password,
            '--user',
            OPERATOR_USER,
            'on',
            `>${op}`,
            '~*',
            '&*',
            '+@all',
            '--masteruser',
            OPERATOR_USER,
            '--masterauth',
            op,
          ];
    const secure = o.tls ? this.#tlsArgs(o.tls) : [];
    const bin = this.engine.server;
    const child = spawn('setpriv', ['--pdeathsig', 'KILL', bin, confFile, ...auth, ...secure], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    // Config errors are printed before the log file is opened: keep them for the error message.
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      if (stderr.length < 8192) stderr += chunk.toString();
    });
    this.#child = child;
    this.#stopped = false;
    let exitInfo: string | null = null;
    this.#exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        exitInfo = `exit code ${code} signal ${signal}`;
        if (this.#child === child) this.#child = null;
        resolve();
      });
      child.once('error', (err) => {
        exitInfo = `spawn error ${err.message}`;
        if (this.#child === child) this.#child = null;
        resolve();
      });
    });
    const deadline = Date.now() + (o.startTimeoutMs ?? 10000);
    while (Date.now() < deadline) {
      if (exitInfo !== null)
        throw new Error(`${bin} on ${this.#ip} died at start (${exitInfo}):\n${stderr}${this.logTail()}`);
      if (await pingOnce(this.#ip, this.password, 300, o.waitFor === 'accept', o.tls !== undefined)) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(
      `redis-server on ${this.#ip} did not answer PING within ${o.startTimeoutMs ?? 10000} ms:\n${this.logTail()}`,
    );
  }

  /** SIGKILL and wait for the exit: the process vanishes, its sockets are closed by the kernel. */
  async kill(): Promise<void> {
    const child = this.#child;
    if (!child) return;
    // No SIGCONT first: SIGKILL kills a stopped process, and a hung master resumed even for a
    // moment could answer clients or stream writes to its replicas before it dies.
    child.kill('SIGKILL');
    await this.#exited;
  }

  /** SIGTERM and wait: Redis' own shutdown (waits for lagging replicas, saves if configured). */
  async shutdown(): Promise<void> {
    const child = this.#child;
    if (!child) return;
    if (this.#stopped) child.kill('SIGCONT');
    child.kill('SIGTERM');
    await this.#exited;
  }

  /** SIGSTOP: a hung node. Its sockets stay open; the kernel still completes new TCP handshakes. */
  stop(): void {
    if (!this.#child) throw new Error(`redis-server on ${this.#ip} is not running`);
    this.#child.kill('SIGSTOP');
    this.#stopped = true;
  }

  cont(): void {
    if (!this.#child) throw new Error(`redis-server on ${this.#ip} is not running`);
    this.#child.kill('SIGCONT');
    this.#stopped = false;
  }

  /**
   * Kill (if running) and start again on the same data directory, optionally on a new address
   * ("the pod was recreated with a new IP"). Like a pod, it comes back as a replica of nowhere.
   */
  async restart(
    options: { ip?: string; waitFor?: 'pong' | 'accept'; password?: string; extra?: Record<string, string> } = {},
  ): Promise<void> {
    await this.kill();
    if (options.password !== undefined) this.password = options.password;
    if (options.waitFor) this.#options = { ...this.#options, waitFor: options.waitFor };
    // Further directives from this start on (e.g. key-load-delay: a node that stays LOADING).
    if (options.extra) this.#options = { ...this.#options, extra: { ...this.#options.extra, ...options.extra } };
    if (options.ip) {
      assertLoopback(options.ip);
      this.#ip = options.ip;
    }
    liveServers.add(this);
    await this.#spawn();
  }

  /** Kill, empty the data directory, start again: a pod recreated without its volume. */
  async wipe(options: { ip?: string } = {}): Promise<void> {
    await this.kill();
    rmSync(this.dataDir, { recursive: true, force: true });
    mkdirSync(this.dataDir);
    await this.restart(options);
  }

  /** Synchronous kill for exit hooks. */
  killSync(): void {
    const child = this.#child;
    if (!child?.pid) return;
    try {
      process.kill(child.pid, 'SIGKILL');
    } catch {
      // already dead
    }
  }

  /** Kill and remove the temp directory. Safe to call twice. */
  cleanup(): void {
    this.killSync();
    this.#child = null;
    liveServers.delete(this);
    rmSync(this.root, { recursive: true, force: true, maxRetries: 5 });
  }

  logTail(lines = 30): string {
    if (!existsSync(this.logFile)) return '(no log)';
    return readFileSync(this.logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  }
}

/** Starts a server that is cleaned up after the test (also when the test fails). */
export async function startRedis(t: TestContext | undefined, options: RedisServerOptions): Promise<RedisServer> {
  const server = await RedisServer.start(options);
  t?.after(async () => {
    await server.kill();
    server.cleanup();
  });
  return server;
}

// Connections reused per address (host:port). The manager keeps one pool per Redis resource (one
// password, one set of pods), so a broken Redis never shares a connection with another.
// Invariants: at most one connection per address; a connection that timed out or broke is
// dropped at once (a late reply must never be read as the answer to the next command); retain()
// closes connections of addresses that disappeared (pod gone, IP changed); an established
// connection the other side closed (the process died: the kernel closes its sockets) is told to
// onLost at once, so a crash is noticed without waiting for the next probe.
import type { ConnectionOptions } from 'node:tls';
import type { Redis } from 'ioredis';
import { createClient, DEFAULT_TIMEOUTS, type ClientTimeouts } from './client.ts';
import { breaksConnection, classifyError } from './errors.ts';
import type { Endpoint } from './types.ts';

export interface PoolOptions {
  /** The ACL user to authenticate as; `default` when unset. */
  username?: string | undefined;
  password: string | undefined;
  localAddress?: string | undefined;
  /** TLS to every node (spec.tls); replaced with setTls(). */
  tls?: ConnectionOptions | undefined;
  timeouts?: Partial<ClientTimeouts>;
  connectionName?: string | undefined;
  /** An established connection closed without the pool closing it. */
  onLost?: ((endpoint: Endpoint) => void) | undefined;
}

interface Entry {
  client: Redis;
  ready: Promise<Redis>;
  /** An AUTH refusal ioredis reported as an 'error' event (see run()). */
  authError?: unknown;
}

export function endpointKey(endpoint: Endpoint): string {
  return `${endpoint.host}:${endpoint.port}`;
}

export class RedisPool {
  readonly #entries = new Map<string, Entry>();
  #password: string | undefined;
  readonly #username: string | undefined;
  #tls: ConnectionOptions | undefined;
  readonly #localAddress: string | undefined;
  readonly #timeouts: ClientTimeouts;
  readonly #connectionName: string | undefined;
  readonly #onLost: ((endpoint: Endpoint) => void) | undefined;

  constructor(options: PoolOptions) {
    this.#onLost = options.onLost;
    this.#password = options.password;
    this.#username = options.username;
    this.#tls = options.tls;
    this.#localAddress = options.localAddress;
    this.#timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
    this.#connectionName = options.connectionName;
  }

  get timeouts(): ClientTimeouts {
    return this.#timeouts;
  }

  get tls(): ConnectionOptions | undefined {
    return this.#tls;
  }

  get localAddress(): string | undefined {
    return this.#localAddress;
  }

  /** New TLS settings (a new CA, TLS switched on): connections made with the old ones are closed. */
  setTls(options: ConnectionOptions | undefined): void {
    if (options === this.#tls) return;
    this.#tls = options;
    this.close();
  }

  /** Number of open (or opening) connections. */
  get size(): number {
    return this.#entries.size;
  }

  /** A new password (rotation): existing connections authenticated with the old one are closed. */
  setPassword(password: string | undefined): void {
    if (password === this.#password) return;
    this.#password = password;
    this.close();
  }

  /**
   * Runs fn on the connection to endpoint (connecting first when needed). Errors propagate
   * unchanged; a connection-level error also drops the connection so the next call reconnects.
   */
  async run<T>(endpoint: Endpoint, fn: (client: Redis) => Promise<T>): Promise<T> {
    const key = endpointKey(endpoint);
    const entry = this.#entry(key, endpoint);
    try {
      const client = await entry.ready;
      return await fn(client);
    } catch (err) {
      // With enableReadyCheck off, connect() resolves before AUTH is answered; when AUTH is
      // refused, ioredis emits the WRONGPASS as an 'error' event and (when it also sends CLIENT
      // SETNAME) closes the socket, so the command itself fails with "Stream isn't writeable".
      // Report the refusal: a wrong password is an answer, never a silence.
      const reported = entry.authError ?? err;
      if (breaksConnection(classifyError(reported).kind)) this.#dropEntry(key, entry);
      throw reported;
    }
  }

  /** Closes connections whose address is not in `keep`. */
  retain(keep: Iterable<Endpoint>): void {
    const wanted = new Set<string>();
    for (const e of keep) wanted.add(endpointKey(e));
    for (const [key, entry] of this.#entries) if (!wanted.has(key)) this.#dropEntry(key, entry);
  }

  drop(endpoint: Endpoint): void {
    const key = endpointKey(endpoint);
    const entry = this.#entries.get(key);
    if (entry) this.#dropEntry(key, entry);
  }

  close(): void {
    for (const [key, entry] of this.#entries) this.#dropEntry(key, entry);
  }

  #entry(key: string, endpoint: Endpoint): Entry {
    const existing = this.#entries.get(key);
    // 'end'/'close': the server or a timeout closed it; never reuse (ioredis will not reconnect).
    if (existing && existing.client.status !== 'end' && existing.client.status !== 'close') return existing;
    if (existing) this.#dropEntry(key, existing);
    const client = createClient(endpoint, {
      ...this.#timeouts,
      username: this.#username,
      password: this.#password,
      tls: this.#tls,
      localAddress: this.#localAddress,
      connectionName: this.#connectionName,
    });
    // Without a listener ioredis prints every connection error. With no retries, connect() rejects
    // with a bare "Connection is closed": report the socket's own error (ECONNREFUSED...) instead.
    let socketError: unknown;
    const entry: Entry = { client, ready: Promise.resolve(client) };
    client.on('error', (err: unknown) => {
      socketError ??= err;
      if (classifyError(err).kind === 'auth') entry.authError ??= err;
    });
    const ready = client.connect().then(
      () => {
        // Dropped by us first (#dropEntry removes the entry before disconnecting): not a loss.
        client.once('close', () => {
          if (this.#entries.get(key) === entry) this.#onLost?.(endpoint);
        });
        return client;
      },
      (err: unknown) => {
        throw socketError ?? err;
      },
    );
    ready.catch(() => {});
    entry.ready = ready;
    this.#entries.set(key, entry);
    return entry;
  }

  #dropEntry(key: string, entry: Entry): void {
    if (this.#entries.get(key) === entry) this.#entries.delete(key);
    entry.client.disconnect();
  }
}

// One fail-fast ioredis connection to one Redis node. Owns the ioredis options: the defaults
// would hide a dead master for ~10 s (20 retries) and a hung one forever (no command timeout).
// Invariants: a call never waits longer than commandTimeoutMs (+ connectTimeoutMs to connect);
// nothing is queued while disconnected; ioredis never reconnects on its own (the caller's probe
// loop is the retry, so failed connections cannot pile up behind our back).
import net from 'node:net';
import tls, { type ConnectionOptions } from 'node:tls';
import { Redis, AbstractConnector, type RedisOptions } from 'ioredis';
import { REDIS_PORT } from '../../../api/labels.ts';
import type { Endpoint } from './types.ts';

export interface ClientTimeouts {
  /** TCP connect bound (a dropped SYN otherwise waits for kernel retransmits). Default 500. */
  connectTimeoutMs: number;
  /** Bound on every command, including AUTH (a SIGSTOPped node accepts TCP but never answers). Default 500. */
  commandTimeoutMs: number;
}

export const DEFAULT_TIMEOUTS: ClientTimeouts = { connectTimeoutMs: 500, commandTimeoutMs: 500 };

export interface ClientOptions extends ClientTimeouts {
  username?: string | undefined;
  password: string | undefined;
  /**
   * Source address for our connections. ioredis 5 passes only host/port/family to
   * net.createConnection, so this goes through a custom connector. Used by tests to give the
   * sidecar its own loopback address (so a firewall rule can cut only the sidecar's link).
   */
  localAddress?: string | undefined;
  connectionName?: string | undefined;
  /** TLS to the node (spec.tls): the CA and how the certificate's names are checked. */
  tls?: ConnectionOptions | undefined;
}

interface ConnectorOptions {
  host?: string;
  port?: number;
  localAddress?: string;
  disconnectTimeout?: number;
  tls?: ConnectionOptions;
}

/** StandaloneConnector's behaviour (TLS included) plus localAddress. */
class LocalAddressConnector extends AbstractConnector {
  readonly #options: ConnectorOptions;

  constructor(options: unknown) {
    const o = options as ConnectorOptions;
    super(o.disconnectTimeout ?? 2000);
    this.#options = o;
  }

  connect(): Promise<net.Socket> {
    this.connecting = true;
    const { host, port, localAddress, tls: secure } = this.#options;
    return new Promise((resolve, reject) => {
      process.nextTick(() => {
        if (!this.connecting) {
          reject(new Error('Connection is closed.'));
          return;
        }
        try {
          const socket = net.createConnection({
            host: host ?? '127.0.0.1',
            port: port ?? REDIS_PORT,
            ...(localAddress ? { localAddress } : {}),
          });
          // ioredis waits for 'secureConnect' when options.tls is set, which a TLS socket over ours emits.
          const stream = secure ? tls.connect({ ...secure, socket }) : socket;
          this.stream = stream;
          stream.once('error', (err: Error) => {
            this.firstError = err;
          });
          resolve(stream);
        } catch (err) {
          reject(err);
        }
      });
    });
  }
}

/** A connected-on-demand client; call connect() and handle its rejection. */
export function createClient(endpoint: Endpoint, options: ClientOptions): Redis {
  return new Redis({
    host: endpoint.host,
    port: endpoint.port,
    ...(options.username !== undefined ? { username: options.username } : {}),
    password: options.password,
    ...(options.localAddress ? { Connector: LocalAddressConnector, localAddress: options.localAddress } : {}),
    ...(options.tls ? { tls: options.tls } : {}),
    connectionName: options.connectionName,
    connectTimeout: options.connectTimeoutMs,
    // On close, ioredis waits up to this for the peer's FIN before destroying the socket; a hung
    // node never sends one, so do not keep its half-open socket around for the default 2 s.
    disconnectTimeout: 100,
    commandTimeout: options.commandTimeoutMs,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    // The ready check would wait out LOADING (up to maxLoadingRetryTime); we report loading instead.
    enableReadyCheck: false,
    lazyConnect: true,
    retryStrategy: () => null,
    autoResendUnfulfilledCommands: false,
    disableClientInfo: true,
    // A probe sends INFO and CONFIG GET in the same tick: one write instead of two (the socket
    // writes were the largest share of an idle sidecar's CPU across a fleet).
    enableAutoPipelining: true,
  } as RedisOptions & { localAddress?: string });
}

// The parts of one Redis' worker that talk to Kubernetes and Redis for it, wired together: its
// credentials (and through them its Redis adapter), the day-2 operations, the exporter's user, the
// report of the Secrets it uses and the bootstrap watch. The worker (worker.ts) owns them and runs
// them from its round; this file only builds them.
// Invariants: every part checks the worker's leadership (options.leader) itself before a write;
// the parts that use Redis read `auth.adapter` at each call, never once, so they follow the
// adapter the credentials swap in when a password changes.
import type { Logger } from 'pino';
import { REDIS_PORT } from '../../../api/labels.ts';
import type { KubeClient, RedisRef } from '../../adapters/kube/client.ts';
import { RedisAdapter } from '../../adapters/redis/index.ts';
import { ExporterUser } from '../../core/exporter-user.ts';
import { SecretReporter } from '../../core/secret-report.ts';
import { BootstrapWatch, type BootstrapKube } from './bootstrap.ts';
import { RedisCredentials } from './credentials.ts';
import { createDay2, type Day2 } from './day2-wiring.ts';
import type { EventMemory, EventToSend } from './events.ts';
import type { KubeWriter, RedisWorkerOptions } from './types.ts';

/** What the parts need of their worker. */
export interface WorkerPartsContext {
  ref: RedisRef;
  log: Logger;
  options: RedisWorkerOptions;
  memory: EventMemory;
  now: () => number;
  event: (e: EventToSend) => void;
  track: (p: Promise<unknown>) => void;
  /** A node closed the operator's connection. */
  lost: () => void;
  /** The Redis is at rest (schedule.ts): day-2 reports for humans wait for it. */
  atRest: () => boolean;
}

export interface WorkerParts {
  auth: RedisCredentials;
  day2: Day2;
  exporterUser: ExporterUser;
  secrets: SecretReporter;
  boot: BootstrapWatch;
}

export function createWorkerParts(c: WorkerPartsContext): WorkerParts {
  const auth = new RedisCredentials({
    ref: c.ref,
    kube: c.options.kube,
    isLeader: () => c.options.leader.isLeader(),
    log: c.log,
    memory: c.memory,
    event: c.event,
    newAdapter: (username, password) =>
      new RedisAdapter({
        username,
        password,
        localAddress: c.options.redisLocalAddress,
        timeouts: {
          connectTimeoutMs: c.options.timing.redisConnectTimeoutMs,
          commandTimeoutMs: c.options.timing.redisCommandTimeoutMs,
        },
        connectionName: 'redis-operator-sidecar',
        // The node closed our connection (its process died, most likely): look now.
        onLost: c.lost,
      }),
    secretRefreshMs: c.options.timing.secretRefreshMs,
    now: c.now,
  });
  const day2 = createDay2({
    ref: c.ref,
    log: c.log,
    kube: c.options.kube,
    statefulSets: c.options.statefulSets ?? (() => []),
    isLeader: () => c.options.leader.isLeader(),
    event: c.event,
    now: c.now,
    timing: c.options.timing,
    applyUsers: (endpoint, users, removed) => auth.adapter.applyUsers(endpoint, users, removed),
    aclPasswords: (endpoint, users) => auth.adapter.aclPasswords(endpoint, users),
    clientPassword: () => auth.clientPassword,
    atRest: c.atRest,
    tls: {
      certificate: () => auth.certificate,
      served: (endpoint) => auth.adapter.servedCertificate(endpoint),
      reload: (endpoint) => auth.adapter.reloadTls(endpoint),
    },
    track: c.track,
  });
  const exporterUser = new ExporterUser({
    log: c.log,
    isLeader: () => c.options.leader.isLeader(),
    password: () => auth.exporterPassword,
    setUser: (ip, user, args) => auth.adapter.applyUsers({ host: ip, port: REDIS_PORT }, [{ name: user, args }], []),
  });
  // A KubeWriter without these calls (test fakes) reports nothing.
  const kube = c.options.kube as KubeWriter & Partial<Pick<KubeClient, 'getSecret' | 'patchRedisAnnotations'>>;
  const secrets = new SecretReporter({
    ref: c.ref,
    log: c.log,
    isLeader: () => c.options.leader.isLeader(),
    now: c.now,
    getSecret: kube.getSecret?.bind(kube),
    patch: kube.patchRedisAnnotations ? (annotations) => kube.patchRedisAnnotations!(c.ref, annotations) : undefined,
    everyMs: c.options.timing.secretRefreshMs,
  });
  const boot = new BootstrapWatch({
    ref: c.ref,
    log: c.log,
    kube: c.options.kube as KubeWriter & BootstrapKube,
    isLeader: () => c.options.leader.isLeader(),
    event: c.event,
    now: c.now,
    track: c.track,
  });
  return { auth, day2, exporterUser, secrets, boot };
}

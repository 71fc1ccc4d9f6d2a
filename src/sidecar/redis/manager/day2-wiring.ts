// Builds a worker's day-2 runner (day2.ts) with its parts: the volume expander (volumes.ts), the
// users applier (users.ts: application users and the default user's password changes), the TLS
// reloader (tls-reload.ts), the replication reporter (replication-report.ts) and the engine watch
// (core/engines.ts), from what the worker has. Only wiring: no decision is made here.
// Invariant: a KubeWriter without the day-2 calls (test harnesses) gets a runner whose writes are
// skipped, never one that throws.
import type { V1StatefulSet } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ManagerTiming } from '../../config.ts';
import type { RedisRef } from '../../adapters/kube/client.ts';
import { EngineWatch } from '../../core/engines.ts';
import { Day2, type Day2Kube } from './day2.ts';
import type { EventToSend } from './events.ts';
import type { KubeWriter } from './types.ts';
import { ReplicationReporter } from './replication-report.ts';
import { TlsReloader, type TlsReloaderOptions } from './tls-reload.ts';
import { UsersApplier, type UsersOptions } from './users.ts';
import { volumeExpanderFor } from './volumes.ts';

export { Day2 } from './day2.ts';

export interface Day2Parts {
  ref: RedisRef;
  log: Logger;
  kube: KubeWriter;
  statefulSets: () => V1StatefulSet[];
  isLeader: () => boolean;
  event: (e: EventToSend) => void;
  now: () => number;
  timing: ManagerTiming;
  applyUsers: UsersOptions['applyUsers'];
  aclPasswords: UsersOptions['aclPasswords'];
  clientPassword: () => string | undefined;
  /** The Redis is at rest (schedule.ts): reports for humans wait for it. */
  atRest: () => boolean;
  tls: Pick<TlsReloaderOptions, 'certificate' | 'served' | 'reload'>;
  track: (p: Promise<unknown>) => void;
}

export function createDay2(parts: Day2Parts): Day2 {
  const kube = parts.kube as KubeWriter & Partial<Day2Kube>;
  const { ref, log, isLeader, event, now } = parts;
  return new Day2({
    ref,
    log,
    kube,
    statefulSets: parts.statefulSets,
    isLeader,
    event,
    now,
    stallAfterMs: parts.timing.rolloutStallMs,
    track: parts.track,
    volumes: volumeExpanderFor(kube, { ref, log, event, isLeader }),
    users: new UsersApplier({
      ref,
      log,
      isLeader,
      event,
      now,
      readSecret: (ns, name, key) => kube.readSecretValue(ns, name, key),
      patchAnnotations: kube.patchRedisAnnotations?.bind(kube),
      applyUsers: parts.applyUsers,
      aclPasswords: parts.aclPasswords,
      clientPassword: parts.clientPassword,
      refreshMs: parts.timing.secretRefreshMs,
    }),
    replication: new ReplicationReporter({
      log,
      isLeader,
      now,
      atRest: parts.atRest,
      kube,
      namespace: parts.ref.namespace,
    }),
    engines: new EngineWatch({
      log,
      isLeader,
      event,
      kube,
      namespace: ref.namespace,
      track: parts.track,
    }),
    tls: new TlsReloader({
      log,
      isLeader,
      event,
      now,
      ...parts.tls,
      checkEveryMs: parts.timing.secretRefreshMs,
      // The kubelet's own sync of a mounted Secret takes up to about a minute.
      retryMs: 2000,
    }),
  });
}

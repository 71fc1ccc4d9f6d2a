// Builders for decision tests: pods and Redis facts as the manager would observe them.
// No I/O; the IPs are labels only (10.0.0.x, never contacted).
import type { RedisErrorKind, RedisFacts, ReplicaLine } from '../../../../src/sidecar/adapters/redis/types.ts';
import {
  DEFAULT_DECIDE_CONFIG,
  type DecideConfig,
  type DecideInput,
  type PodObservation,
  type RedisTrack,
  type SpecView,
} from '../../../../src/sidecar/redis/decide/types.ts';
import { LINK_ANNOTATION, ROLE_LABEL } from '../../../../src/api/labels.ts';

export const NOW = 1_000_000;
export const H1 = '1'.repeat(40);
export const H2 = '2'.repeat(40);
export const H3 = '3'.repeat(40);
export const ZERO = '0'.repeat(40);
export const NAME = 'cache';

export const ip = (n: number) => `10.0.0.${n}`;

export interface FactsSpec {
  role?: 'master' | 'replica';
  /** Replica: whom it follows (default: placeholder 127.0.0.1:1). */
  of?: string;
  port?: number;
  link?: 'up' | 'down';
  lastIo?: number | null;
  linkDownSince?: number | null;
  sync?: boolean;
  syncLastIo?: number | null;
  offset?: number;
  replid?: string;
  replid2?: string;
  keys?: number;
  priority?: number;
  loading?: boolean;
  runId?: string;
  uptime?: number;
  replicas?: ReplicaLine[];
  minReplicas?: number;
  maxLag?: number;
  /** CONFIG GET of the runtime-managed directives (default: none reported). */
  runtimeConfig?: Record<string, string>;
}

export function facts(s: FactsSpec = {}): RedisFacts {
  const role = s.role ?? 'replica';
  const replica = role === 'replica';
  const of = s.of ?? '127.0.0.1';
  return {
    runId: s.runId ?? 'r'.repeat(40),
    version: '7.0.15',
    uptimeSeconds: s.uptime ?? 100,
    replication: {
      role,
      masterHost: replica ? of : null,
      masterPort: replica ? (s.port ?? (of === '127.0.0.1' ? 1 : 6379)) : null,
      masterLinkStatus: replica ? (s.link ?? (of === '127.0.0.1' ? 'down' : 'up')) : null,
      masterLastIoSecondsAgo: replica
        ? s.lastIo === undefined
          ? s.link === 'down' || of === '127.0.0.1'
            ? null
            : 0
          : s.lastIo
        : null,
      masterLinkDownSinceSeconds: replica ? (s.linkDownSince ?? null) : null,
      masterSyncInProgress: s.sync ?? false,
      masterSyncLastIoSecondsAgo: s.syncLastIo ?? null,
      slaveReplOffset: replica ? (s.offset ?? 0) : null,
      slavePriority: replica ? (s.priority ?? 100) : null,
      masterReplOffset: s.offset ?? 0,
      masterReplid: s.replid ?? H1,
      masterReplid2: s.replid2 ?? ZERO,
      secondReplOffset: null,
      connectedSlaves: s.replicas?.length ?? 0,
      replicas: s.replicas ?? [],
      failoverState: 'no-failover',
    },
    replicaPriority: s.priority ?? 100,
    minReplicasToWrite: s.minReplicas ?? 1,
    minReplicasMaxLag: s.maxLag ?? 5,
    loading: s.loading ?? false,
    keys: s.keys ?? (s.offset ? 10 : 0),
    aofEnabled: false,
    runtimeConfig: s.runtimeConfig ?? {},
  };
}

export const online = (...ips: string[]): ReplicaLine[] =>
  ips.map((i) => ({ ip: i, port: 6379, state: 'online', offset: 0, lag: 0 }));

export interface PodSpec {
  name: string;
  ip?: string | null;
  component?: 'master-set' | 'replica-set' | null;
  phase?: string | null;
  ready?: boolean;
  deleting?: boolean;
  label?: string | null;
  link?: string | null;
  /** Latest successful facts (omit with `never` for a pod never probed). */
  facts?: RedisFacts;
  /** ms since it last answered (0 = answering now). */
  okAgo?: number;
  /** The latest probe failed with this kind (failing for okAgo ms unless failingFor). */
  error?: RedisErrorKind;
  failingFor?: number;
  /** With error 'refused': refused for this many ms (default: failingFor, else okAgo). */
  refusedFor?: number;
  /** The API says the redis container is not running. */
  containerGone?: boolean;
  /** Replica witness streak: reported down/silent for this many ms. */
  witnessFor?: number;
  /** Remembered facts from when it was master. */
  lastMaster?: { replid: string; offset: number; online: string[] };
  firstOkAgo?: number;
  /** Never probed (redis: null). */
  never?: boolean;
}

export function pod(s: PodSpec): PodObservation {
  const name = s.name.startsWith(`${NAME}-`) ? s.name : `${NAME}-${s.name}`;
  const component = s.component !== undefined ? s.component : name.includes('-master-') ? 'master-set' : 'replica-set';
  const podIp =
    s.ip === undefined ? ip(Number(/-(\d+)$/.exec(name)?.[1] ?? '0') + (name.includes('-master-') ? 1 : 11)) : s.ip;
  let redis: RedisTrack | null = null;
  if (!s.never) {
    const f = s.facts ?? facts();
    const okAgo = s.okAgo ?? 0;
    const failing = s.error !== undefined;
    const r = f.replication;
    redis = {
      ip: podIp ?? ip(250),
      firstSeenAt: NOW - Math.max(okAgo, s.firstOkAgo ?? 60_000),
      lastAt: NOW,
      lastError: failing ? { kind: s.error!, message: s.error! } : null,
      facts: f,
      okAt: NOW - okAgo,
      firstOkAt: NOW - Math.max(okAgo, s.firstOkAgo ?? 60_000),
      failingSince: failing ? NOW - (s.failingFor ?? okAgo) : null,
      refusedSince: s.error === 'refused' ? NOW - (s.refusedFor ?? s.failingFor ?? okAgo) : null,
      lastMasterFacts: s.lastMaster
        ? {
            at: NOW - okAgo,
            replid: s.lastMaster.replid,
            replid2: ZERO,
            offset: s.lastMaster.offset,
            keys: 10,
            onlineReplicaIps: s.lastMaster.online,
          }
        : r.role === 'master'
          ? {
              at: NOW - okAgo,
              replid: r.masterReplid,
              replid2: r.masterReplid2,
              offset: r.masterReplOffset,
              keys: f.keys,
              onlineReplicaIps: r.replicas.filter((l) => l.state === 'online').map((l) => l.ip),
            }
          : null,
      witnessDownSince: s.witnessFor !== undefined ? NOW - s.witnessFor : null,
      witnessOf: r.role === 'replica' ? `${r.masterHost}:${r.masterPort}` : null,
    };
  }
  return {
    name,
    component,
    ip: podIp,
    phase: s.phase === undefined ? 'Running' : s.phase,
    ready: s.ready ?? true,
    deleting: s.deleting ?? false,
    roleLabel: s.label === undefined ? null : s.label,
    linkAnnotation: s.link === undefined ? null : s.link,
    redis,
    ...(s.containerGone !== undefined ? { redisContainerGone: s.containerGone } : {}),
  };
}

export function input(
  pods: PodObservation[],
  spec: Partial<SpecView> = {},
  config: Partial<DecideConfig> = {},
  now = NOW,
): DecideInput {
  return {
    name: NAME,
    spec: {
      replicas: 2,
      minReplicasToWrite: 1,
      minReplicasMaxLagSeconds: 5,
      persistence: false,
      runtimeConfig: {},
      ...spec,
    },
    pods,
    now,
    config: { ...DEFAULT_DECIDE_CONFIG, ...config },
  };
}

/** Pod labels/annotations as a manager would report after applying a plan's label steps. */
export { LINK_ANNOTATION, ROLE_LABEL };

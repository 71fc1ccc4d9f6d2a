// The fleet of bench:scale (see scale.ts): Redis objects, their Secrets and pods on the real API
// server, a real redis-server per pod on its own loopback address, the sidecars as processes, and
// what the bench reads back (roles, links, Lease holders, process CPU and RSS).
// What it does not model: no kubelet or StatefulSet runs these pods. They are created with a
// scheduler nobody runs (so none is scheduled or evicted), their status (Running, Ready, podIP) is
// written once by the bench, and a killed container is restarted by the bench at the same address.
// The hook and Metacontroller are not in this bench: it measures the sidecars. The one thing of
// theirs the sidecars read, status.secrets (the Secrets' resourceVersions, hook/redis/state.ts
// secretVersions), is written by the bench once the Secrets exist, as the hook would.
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { COMPONENT_LABEL, LINK_ANNOTATION, podSelectorLabels, ROLE_LABEL, ROLE_MASTER } from '../src/api/labels.ts';
import { addr, RedisServer, TEST_OPERATOR_PASSWORD, TEST_PASSWORD } from '../test/support/redis-server.ts';

export const NS = 'bench';
export const LEASE_NS = 'redis-operator';
export const POD_SUFFIXES = ['master-0', 'replica-0', 'replica-1'];
const MAIN = new URL('../src/sidecar/main.ts', import.meta.url).pathname;

/** Runs fn over items, at most `width` at once. */
export async function inBatches<T>(
  items: readonly T[],
  width: number,
  fn: (item: T, index: number) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i]!, i);
      }
    }),
  );
}

export class Fleet {
  readonly core: CoreV1Api;
  readonly custom: CustomObjectsApi;
  readonly leases: CoordinationV1Api;
  /** pod name -> its server. */
  readonly servers = new Map<string, RedisServer>();
  readonly #baseOctet: number;

  constructor(kubeconfig: string, baseOctet: number) {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    this.core = kc.makeApiClient(CoreV1Api);
    this.custom = kc.makeApiClient(CustomObjectsApi);
    this.leases = kc.makeApiClient(CoordinationV1Api);
    this.#baseOctet = baseOctet;
  }

  static redisName = (i: number) => `bench-${i}`;

  /** The loopback address of pod p (0..2) of Redis i: 250 hosts per octet from the base octet on. */
  ip(i: number, p: number): string {
    const n = i * POD_SUFFIXES.length + p;
    return addr(this.#baseOctet + Math.floor(n / 250), (n % 250) + 1);
  }

  async namespaces(): Promise<void> {
    for (const name of [NS, LEASE_NS]) await this.core.createNamespace({ body: { metadata: { name } } });
    // Pods need the namespace's default ServiceAccount, which the controllers make.
    for (let i = 0; i < 600; i++) {
      const ok = await this.core.readNamespacedServiceAccount({ namespace: NS, name: 'default' }).then(
        () => true,
        () => false,
      );
      if (ok) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no default ServiceAccount in ${NS} after 60 s`);
  }

  /** Redis i's three servers (each a replica of nowhere, as a pod starts). */
  async startServers(i: number): Promise<void> {
    const name = Fleet.redisName(i);
    await Promise.all(
      POD_SUFFIXES.map(async (suffix, p) => {
        const server = await RedisServer.start({ ip: this.ip(i, p), extra: { 'repl-diskless-sync-delay': '0' } });
        this.servers.set(`${name}-${suffix}`, server);
      }),
    );
  }

  /** Redis i on the API: the object, its two Secrets, three pods Running and Ready at its servers' addresses. */
  async register(i: number): Promise<void> {
    const name = Fleet.redisName(i);
    const redis = { group: 'redis.example.com', version: 'v1', namespace: NS, plural: 'redises' };
    const created = (await this.custom.createNamespacedCustomObject({
      ...redis,
      body: {
        apiVersion: 'redis.example.com/v1',
        kind: 'Redis',
        metadata: { name, namespace: NS },
        spec: { version: '7.2', replicas: 2 },
      },
    })) as Record<string, unknown>;
    const secrets: Array<{ name: string; resourceVersion: string }> = [];
    for (const [secret, password] of [
      [`${name}-auth`, TEST_PASSWORD],
      [`${name}-operator`, TEST_OPERATOR_PASSWORD],
    ] as const) {
      const made = await this.core.createNamespacedSecret({
        namespace: NS,
        body: { metadata: { name: secret, namespace: NS }, type: 'Opaque', stringData: { password } },
      });
      secrets.push({ name: secret, resourceVersion: made.metadata!.resourceVersion! });
    }
    await this.custom.replaceNamespacedCustomObjectStatus({
      ...redis,
      name,
      body: { ...created, status: { secrets } },
    });
    await Promise.all(
      POD_SUFFIXES.map(async (suffix, p) => {
        const ip = this.ip(i, p);
        const component = suffix.startsWith('master') ? 'master-set' : 'replica-set';
        const pod = await this.core.createNamespacedPod({
          namespace: NS,
          body: {
            metadata: {
              name: `${name}-${suffix}`,
              namespace: NS,
              labels: { ...podSelectorLabels(name), [COMPONENT_LABEL]: component },
            },
            // No scheduler serves this name: the pod is never bound, so nothing evicts or restarts it.
            spec: { schedulerName: 'bench-unscheduled', containers: [{ name: 'redis', image: 'redis:7.2' }] },
          },
        });
        pod.status = {
          phase: 'Running',
          podIP: ip,
          podIPs: [{ ip }],
          conditions: [
            { type: 'Ready', status: 'True' },
            { type: 'ContainersReady', status: 'True' },
          ],
        };
        await this.core.replaceNamespacedPodStatus({ namespace: NS, name: pod.metadata!.name!, body: pod });
      }),
    );
  }

  async pods(): Promise<V1Pod[]> {
    return (await this.core.listNamespacedPod({ namespace: NS })).items;
  }

  /** Redis names (of those given) with exactly one pod labelled master and every other one a linked replica. */
  static running(pods: readonly V1Pod[], names: readonly string[]): string[] {
    const by = new Map<string, V1Pod[]>();
    for (const p of pods) {
      const r = p.metadata?.labels?.['app.kubernetes.io/instance'];
      if (r) by.set(r, [...(by.get(r) ?? []), p]);
    }
    return names.filter((n) => {
      const ps = by.get(n) ?? [];
      const roles = ps.map((p) => p.metadata?.labels?.[ROLE_LABEL]);
      return (
        ps.length === POD_SUFFIXES.length &&
        roles.filter((r) => r === ROLE_MASTER).length === 1 &&
        ps.every(
          (p) =>
            p.metadata?.labels?.[ROLE_LABEL] === ROLE_MASTER || p.metadata?.annotations?.[LINK_ANNOTATION] === 'up',
        )
      );
    });
  }

  async masterOf(name: string): Promise<string | undefined> {
    const pods = await this.core.listNamespacedPod({
      namespace: NS,
      labelSelector: `app.kubernetes.io/instance=${name},${ROLE_LABEL}=${ROLE_MASTER}`,
    });
    return pods.items.length === 1 ? pods.items[0]!.metadata!.name : undefined;
  }

  async holders(base: string, shards: number): Promise<string[]> {
    const out: string[] = [];
    for (let s = 0; s < shards; s++) {
      const name = shards <= 1 ? base : `${base}-shard-${s}`;
      const lease = await this.leases.readNamespacedLease({ namespace: LEASE_NS, name }).catch(() => undefined);
      out.push(lease?.spec?.holderIdentity ?? '');
    }
    return out;
  }

  cleanup(): void {
    for (const s of this.servers.values()) s.cleanup();
  }
}

export interface Sidecar {
  name: string;
  child: ChildProcess;
  exited: Promise<void>;
}

export function startSidecar(
  name: string,
  kubeconfig: string,
  sourceIp: string,
  env: Record<string, string>,
  logFile: string,
): Sidecar {
  const out = openSync(logFile, 'a');
  const child = spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env['PATH'] ?? '',
      KUBECONFIG: kubeconfig,
      POD_NAME: name,
      POD_NAMESPACE: LEASE_NS,
      WATCH_NAMESPACES: NS,
      METRICS_PORT: '0',
      METRICS_HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      REDIS_LOCAL_ADDRESS: sourceIp,
      // SIDECAR_NODE_OPTIONS=--cpu-prof (for one): profiles of the sidecars, written as they stop.
      ...(process.env['SIDECAR_NODE_OPTIONS'] ? { NODE_OPTIONS: process.env['SIDECAR_NODE_OPTIONS'] } : {}),
      ...env,
    },
    stdio: ['ignore', out, out],
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return { name, child, exited };
}

export async function stopSidecar(s: Sidecar, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (s.child.exitCode !== null || s.child.signalCode !== null) return;
  s.child.kill(signal);
  const t = setTimeout(() => s.child.kill('SIGKILL'), 10_000);
  await s.exited;
  clearTimeout(t);
}

/** CPU time (user + system) of a process in ms, from /proc (clock ticks of 10 ms). */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

export function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

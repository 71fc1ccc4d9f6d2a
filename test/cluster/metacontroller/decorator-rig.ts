// The rig of the DecoratorController tests (decorator.test.ts, decorator-lifecycle.test.ts): the
// kube-api stand-in's store serving prometheus-operator's two kinds as custom resources, a
// scripted hook over HTTP, a Redis to decorate, and small readers. Test code only.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DEFAULT_RESOURCES, defineResource, ObjectStore, type StoredObject } from '../../support/kube-api/index.ts';
import { until } from '../../support/until.ts';
import { loadDecoratorController, startDecoratorController, type DecoratorController, type DecoratorControllerHandle } from './index.ts';

export type Json = Record<string, any>;
export const NS = 'default';
export const KEY = `${NS}/r`;
export const SYNC_PATH = '/monitoring/sync';
export const PM = 'PodMonitor.monitoring.coreos.com/v1';
export const PR = 'PrometheusRule.monitoring.coreos.com/v1';
export const MONITORING = ['podmonitors:PodMonitor', 'prometheusrules:PrometheusRule'].map((r) => {
  const [resource, kind] = r.split(':') as [string, string];
  return defineResource({ group: 'monitoring.coreos.com', version: 'v1', resource, kind, namespaced: true, custom: true, generation: true });
});
export const RESOURCES = [...DEFAULT_RESOURCES, ...MONITORING];

// ------------------------------------------------------------------ the scripted hook

export interface Reply {
  code?: number;
  body?: unknown;
  /** Sent as is instead of JSON(body). */
  raw?: string;
  headers?: Record<string, string>;
}
export type Answer = (request: Json) => Reply;

export interface Hook {
  url: string;
  /** Requests by path, in arrival order. */
  received: Array<{ path: string; body: Json }>;
  answers: Map<string, Answer>;
  calls(path?: string): Json[];
  close(): Promise<void>;
}

export async function scriptedHook(): Promise<Hook> {
  const received: Hook['received'] = [];
  const answers = new Map<string, Answer>();
  const server: Server = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      const body = JSON.parse(text) as Json;
      received.push({ path: req.url ?? '', body });
      const notFound: Answer = () => ({ code: 404 });
      const reply = (answers.get(req.url ?? '') ?? notFound)(body);
      res.writeHead(reply.code ?? 200, { 'content-type': 'application/json', ...reply.headers }).end(reply.raw ?? JSON.stringify(reply.body ?? {}));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    answers,
    calls: (path = SYNC_PATH) => received.filter((r) => r.path === path).map((r) => r.body),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export const podMonitor = (name: string, port = 'metrics'): Json => ({
  apiVersion: 'monitoring.coreos.com/v1',
  kind: 'PodMonitor',
  metadata: { name, namespace: NS },
  spec: { podMetricsEndpoints: [{ port }], selector: { matchLabels: { 'app.kubernetes.io/instance': name } } },
});
export const prometheusRule = (name: string): Json => ({
  apiVersion: 'monitoring.coreos.com/v1',
  kind: 'PrometheusRule',
  metadata: { name, namespace: NS },
  spec: { groups: [{ name: 'redis', rules: [{ alert: 'RedisDown', expr: 'redis_up == 0' }] }] },
});
/** The design's answer: a PodMonitor and a PrometheusRule named after the Redis. */
export const monitoringFor = (request: Json): Reply => {
  const name = String(request['object']['metadata']['name']);
  return { body: { attachments: [podMonitor(name), prometheusRule(name)] } };
};

// ------------------------------------------------------------------ the rig

export interface Rig {
  store: ObjectStore;
  hook: Hook;
  dc: DecoratorControllerHandle;
  close(): Promise<void>;
}

export async function startRig(
  controller: DecoratorController = loadDecoratorController(),
  answer: Answer = monitoringFor,
  store = new ObjectStore({ resources: RESOURCES }),
): Promise<Rig> {
  const hook = await scriptedHook();
  hook.answers.set(SYNC_PATH, answer);
  const dc = startDecoratorController({ store, controller, hookBaseUrl: hook.url, backoff: { initialMs: 10, maxMs: 100 }, resyncPeriodMs: 0 });
  await dc.ready;
  return {
    store,
    hook,
    dc,
    close: async () => {
      await dc.stop();
      await hook.close();
    },
  };
}

export function createRedis(store: ObjectStore, name = 'r', meta: Json = {}, status?: Json): StoredObject {
  return store.create('redises', {
    apiVersion: 'redis.example.com/v1',
    kind: 'Redis',
    metadata: { name, namespace: NS, ...meta },
    spec: {},
    ...(status ? { status } : {}),
  });
}

export const uidAndVersion = (o: StoredObject | undefined) => `${o?.metadata.uid}@${o?.metadata.resourceVersion}`;
/** The latest sync request for one Redis. */
export const lastCall = (hook: Hook, name = 'r') =>
  hook
    .calls()
    .filter((c) => c['object']['metadata']['name'] === name)
    .at(-1)!;

/** Resync and wait until that sync has run (and whatever it caused). */
export async function resync(rig: Rig, key = KEY): Promise<void> {
  const calls = rig.dc.syncCount(key);
  rig.dc.resync(key);
  await until('the resync', () => rig.dc.syncCount(key) > calls);
  await rig.dc.waitForIdle();
}

// Fixtures and helpers for test/k8s/node-agent.test.ts (the node agent on a real control
// plane): why the suite is skipped, polling, redis-cli, the StatefulSet under test, the hook's
// children, the init-container pods, and readers for pod status. No state.
import { execFile, execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { parseHookRequest, sync } from '../../../src/hook/index.ts';
import { binDir, isBuilt } from '../build.ts';
import type { Json } from './api-client.ts';
import type { KubeObject } from './reflector.ts';
import { until as untilPolled } from '../../support/until.ts';

export function skipReason(): string | false {
  try {
    execFileSync('sh', ['-c', 'command -v redis-server && command -v redis-cli'], { stdio: 'ignore' });
  } catch {
    return 'redis-server/redis-cli not installed';
  }
  try {
    if (!isBuilt()) return `control plane binaries not built in ${binDir()} (run: node test/k8s/cli.ts build)`;
  } catch (err) {
    return `control plane binaries unavailable: ${(err as Error).message}`;
  }
  return false;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** test/support/until.ts, tolerating errors (an API server still starting): the last one is told on timeout. */
export async function until<T>(what: string, check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 60_000): Promise<T> {
  let last: unknown;
  const tolerant = async () => {
    try {
      return await check();
    } catch (err) {
      last = err;
      return undefined;
    }
  };
  return untilPolled(what, tolerant, timeoutMs, { everyMs: 100, dump: () => (last ? `(last error: ${(last as Error).message})` : '') });
}

export function cli(ip: string, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('redis-cli', ['-h', ip, '-p', '6379', ...args], { timeout: 5000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message} ${stderr}`)) : resolve(stdout.trim()),
    );
  });
}

export const PASSWORD = 'node-agent-password';

export function authCli(ip: string, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'redis-cli',
      ['-h', ip, '-p', '6379', ...args],
      { timeout: 5000, env: { PATH: process.env['PATH'] ?? '', REDISCLI_AUTH: PASSWORD } },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message} ${stderr}`)) : resolve(stdout.trim())),
    );
  });
}

/** The hook's children for a Redis called my-redis with one replica (what Metacontroller would apply). */
export function hookChildren(namespace: string): Array<Json & { apiVersion: string; kind: string }> {
  const spec = {
    version: '7.2',
    master: { replicas: 1 },
    replicas: 1,
    persistence: { enableRdb: true, rdbSchedule: '*/15 * * * *', enableAof: true, size: '1Gi' },
  };
  const parsed = parseHookRequest({
    parent: { apiVersion: 'redis.example.com/v1', kind: 'Redis', metadata: { name: 'my-redis', namespace, uid: randomUUID(), generation: 1 }, spec },
    children: {},
    related: {},
  });
  if (!parsed.ok) throw new Error(parsed.message);
  // Without the Redis object in the API, an ownerReference to it would get the children collected.
  return sync(parsed.request).children.map((c) => ({ ...c, metadata: { ...c.metadata, namespace, ownerReferences: undefined } }));
}

/** `web`: 3 redis pods (Parallel), a 1Gi claim each, fast probes; whenScaled Delete, whenDeleted Retain. */
export function statefulSet(namespace: string): Json {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: 'web', namespace },
    spec: {
      serviceName: 'web',
      replicas: 3,
      podManagementPolicy: 'Parallel',
      selector: { matchLabels: { app: 'web' } },
      persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Retain', whenScaled: 'Delete' },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: {
          terminationGracePeriodSeconds: 20,
          containers: [
            {
              name: 'redis',
              image: 'redis:7.2',
              // No command: the redis image's entrypoint runs redis-server with these flags, in /data.
              args: ['--appendonly', 'yes', '--save', ''],
              env: [{ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }],
              ports: [{ name: 'redis', containerPort: 6379 }],
              volumeMounts: [{ name: 'data', mountPath: '/data' }],
              startupProbe: { tcpSocket: { port: 'redis' }, periodSeconds: 1, failureThreshold: 30 },
              readinessProbe: {
                exec: { command: ['sh', '-c', 'redis-cli -h "$POD_IP" ping | grep -q PONG'] },
                periodSeconds: 1,
                timeoutSeconds: 1,
                failureThreshold: 2,
              },
            },
          ],
        },
      },
      volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }],
    },
  };
}

/**
 * Two bare pods (restartPolicy Never) with init containers. `init-ok`: `prepare` writes
 * /work/x (an emptyDir; through its mapped workingDir, as there is no mount namespace), then
 * `check` (the operator image) reads it through its env-mapped WORK_FILE and writes
 * {ok, v: Node's version, src: whether src/ is in its working directory} to TERMINATION_LOG.
 * `init-fails`: `fail` prints a line and exits 1, so `never` must never run.
 */
export function initPods(): Json[] {
  const check = [
    "const fs = require('fs');",
    "const seen = fs.readFileSync(process.env.WORK_FILE, 'utf8');",
    "if (seen !== 'hi\\n') { console.error('init output: ' + JSON.stringify(seen)); process.exit(2); }",
    "fs.writeFileSync(process.env.TERMINATION_LOG, JSON.stringify({ ok: true, v: process.version, src: fs.existsSync('src/backup/main.ts') }));",
  ].join(' ');
  const bare = (name: string, initContainers: Json[], containers: Json[]) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { restartPolicy: 'Never', terminationGracePeriodSeconds: 5, volumes: [{ name: 'work', emptyDir: {} }], initContainers, containers },
  });
  const work = [{ name: 'work', mountPath: '/work' }];
  const env = [
    { name: 'WORK_FILE', value: '/work/x' },
    { name: 'TERMINATION_LOG', value: '/dev/termination-log' },
  ];
  return [
    bare(
      'init-ok',
      [{ name: 'prepare', image: 'busybox:1.36', workingDir: '/work', command: ['sh', '-c', 'sleep 1; echo hi > x'], volumeMounts: work }],
      [
        {
          name: 'check',
          image: 'redis-operator:0.1.0',
          command: ['node', '-e', check],
          env,
          volumeMounts: work,
          terminationMessagePolicy: 'FallbackToLogsOnError',
        },
      ],
    ),
    bare(
      'init-fails',
      [{ name: 'fail', image: 'busybox:1.36', command: ['sh', '-c', 'echo cannot restore; exit 1'], terminationMessagePolicy: 'FallbackToLogsOnError' }],
      [{ name: 'never', image: 'redis-operator:0.1.0', command: ['node', '-e', 'process.exit(0)'] }],
    ),
  ];
}

export type Pod = KubeObject & { spec: { nodeName?: string; volumes?: Json[] }; status?: Json };

export const conditionOf = (p: Pod | undefined, type: string) => ((p?.status?.['conditions'] ?? []) as Json[]).find((c) => c['type'] === type)?.['status'];
export const containerOf = (p: Pod | undefined) => ((p?.status?.['containerStatuses'] ?? []) as Json[])[0] ?? {};
export const isReady = (p: Pod | undefined) => conditionOf(p, 'Ready') === 'True';

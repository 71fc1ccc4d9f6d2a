// The exporter container (the hook's, `oliver006/redis_exporter`) as the node agent plans its
// process (container-setup.ts): the image's entrypoint is the host's redis_exporter, the env the
// hook wrote (the password from its Secret), rewritten to the pod IP on a loopback pod and left
// alone in a pod network namespace; its imageID is the binary's digest. No cluster, no process.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { exporterBinary } from '../../cluster/workloads/exporter-image.ts';
import { planProcess, type ProcessPlan } from './container-setup.ts';
import type { ContainerHost, ContainerRuntime } from './containers.ts';
import type { PodWorker } from './pod-worker.ts';
import { workerStatus } from './status-sync.ts';

const IP = '127.0.61.5';
const found = exporterBinary();

/** What the hook writes (src/hook/children/exporter.ts), without TLS. */
const exporter: V1Container = {
  name: 'exporter',
  image: 'oliver006/redis_exporter:v1.45.0',
  env: [
    { name: 'REDIS_ADDR', value: 'redis://127.0.0.1:6379' },
    { name: 'REDIS_USER', value: 'redis-operator' },
    { name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: 'my-redis-operator', key: 'password' } } },
    { name: 'REDIS_EXPORTER_WEB_LISTEN_ADDRESS', value: ':9121' },
  ],
  ports: [{ name: 'metrics', containerPort: 9121, protocol: 'TCP' }],
  livenessProbe: { httpGet: { path: '/health', port: 'metrics' } },
};

describe('planProcess: the exporter image', () => {
  // As every monitoring test: without the binary this fails, naming what to run (never skips).
  before(() => assert.equal(typeof found, 'string', typeof found === 'object' ? found.error : ''));
  const bin = found as string;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'exporter-plan-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const secret = { metadata: { name: 'my-redis-operator' }, data: { password: Buffer.from('op pw').toString('base64') } };
  const host = (spec: V1Container, exec: string[] | undefined, ip = IP): ContainerHost =>
    ({
      pod: { metadata: { name: 'my-redis-master-0', namespace: 'ns', uid: 'u' }, spec: { containers: [spec] } } as V1Pod,
      name: 'my-redis-master-0',
      namespace: 'ns',
      uid: 'u',
      dir,
      ip,
      sandbox: exec === undefined ? undefined : { ip, exec, release: async () => undefined },
      node: { hostIP: '127.0.61.1', machine: { memoryBytes: 2 ** 30, cpus: 2 }, redisServer: '/usr/bin/redis-server' },
      volumes: { hostPaths: new Map(), sources: { secrets: new Map([['my-redis-operator', secret]]), configMaps: new Map(), tokens: new Map() } },
    }) as unknown as ContainerHost;
  const runtime = (spec: V1Container): ContainerRuntime => ({
    spec,
    init: false,
    started: false,
    ready: false,
    everStarted: false,
    restartCount: 0,
    killing: false,
  });
  const plan = (spec: V1Container, exec?: string[], ip?: string) => planProcess(host(spec, exec, ip), runtime(spec), 0);

  test("a loopback pod: the binary with no args; the hook's env with the pod IP for 127.0.0.1 and :9121", () => {
    const p = plan(exporter) as ProcessPlan;
    assert.deepEqual(p.argv, [bin]);
    assert.equal(p.env['REDIS_ADDR'], `redis://${IP}:6379`);
    assert.equal(p.env['REDIS_EXPORTER_WEB_LISTEN_ADDRESS'], `${IP}:9121`);
    assert.equal(p.env['REDIS_USER'], 'redis-operator');
    assert.equal(p.env['REDIS_PASSWORD'], 'op pw', 'from the Secret');
    assert.equal(p.log, path.join(dir, 'logs/exporter/0.log'));
  });

  test('a pod network namespace: nothing rewritten (127.0.0.1 is the pod loopback, where the shim also binds redis)', () => {
    const p = plan(exporter, ['ip', 'netns', 'exec', 'rok92-2'], '198.18.92.2') as ProcessPlan;
    assert.deepEqual(p.argv, [bin]);
    assert.equal(p.env['REDIS_ADDR'], 'redis://127.0.0.1:6379');
    assert.equal(p.env['REDIS_EXPORTER_WEB_LISTEN_ADDRESS'], ':9121');
  });

  test('args go to the entrypoint, rewritten like the env; a command runs as written', () => {
    assert.deepEqual((plan({ ...exporter, args: ['-web.listen-address=:9200', '-debug'] }) as ProcessPlan).argv, [
      bin,
      `-web.listen-address=${IP}:9200`,
      '-debug',
    ]);
    assert.deepEqual((plan({ ...exporter, command: ['sh', '-c', 'exit 3'] }) as ProcessPlan).argv, ['sh', '-c', 'exit 3']);
  });

  test('the password Secret missing: CreateContainerConfigError, as for any container', () => {
    const spec = { ...exporter, env: [{ name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: 'nope', key: 'password' } } }] };
    assert.deepEqual(plan(spec), { reason: 'CreateContainerConfigError', message: 'secret "nope" not found' });
  });

  test('containerStatuses[].imageID: node-agent://redis_exporter@sha256:<the binary digest>', () => {
    const w = {
      finished: false,
      terminating: false,
      ip: IP,
      startTimeMs: 0,
      conditions: new Map(),
      pod: { metadata: { name: 'p', namespace: 'ns', uid: 'u' }, spec: { containers: [] } },
      snapshots: () => [
        {
          name: 'exporter',
          image: 'quay.io/oliver006/redis_exporter:v1.45.0',
          containerID: 'node-agent://e',
          ready: true,
          started: true,
          restartCount: 0,
          state: { running: { startedAt: 'x' } },
        },
      ],
      initSnapshots: () => [],
    } as unknown as PodWorker;
    const status = workerStatus(w, '127.0.61.1', 'node-agent://redis-server@sha256:x', undefined, Date.now());
    assert.match(String((status['containerStatuses'] as Array<Record<string, unknown>>)[0]!['imageID']), /^node-agent:\/\/redis_exporter@sha256:[0-9a-f]{64}$/);
  });
});

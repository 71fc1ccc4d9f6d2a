// The operator image as the node agent runs it: env values naming container paths become host
// paths (pure), /app is the repository, and a planned container process (container-setup.ts)
// gets the project's Node as `node`, its own termination message file, and mapped env.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { Mount } from '../../cluster/workloads/container.ts';
import { planProcess, type ProcessPlan } from './container-setup.ts';
import type { ContainerHost, ContainerRuntime } from './containers.ts';
import { IMAGE_WORKDIR, mapEnvPaths, operatorMounts, operatorWorkingDir, REPO_ROOT } from './operator-image.ts';

const mounts: Mount[] = [
  { containerPath: '/tls', hostPath: '/h/tls' },
  { containerPath: '/data', hostPath: '/h/claim' },
  { containerPath: '/dev/termination-log', hostPath: '/h/pod/termination-log/0' },
];

describe('mapEnvPaths', () => {
  const cases: Array<[string, string, string]> = [
    ['a file in a mounted Secret', '/tls/ca.crt', '/h/tls/ca.crt'],
    ['the mount itself', '/data', '/h/claim'],
    ['the termination message path', '/dev/termination-log', '/h/pod/termination-log/0'],
    ['a path no volume covers stays', '/etc/hosts', '/etc/hosts'],
    ['a prefix that is not a directory boundary stays', '/database', '/database'],
    ['relative paths stay', 'data/x', 'data/x'],
    ['URLs and lists stay', 'http://minio:9000/data', 'http://minio:9000/data'],
    ['plain values stay', 'my-redis', 'my-redis'],
    ['/app is the repository', '/app/src/backup/main.ts', path.join(REPO_ROOT, 'src/backup/main.ts')],
  ];
  for (const [name, value, want] of cases) test(name, () => assert.deepEqual(mapEnvPaths([['X', value]], operatorMounts(mounts)), [['X', want]]));
  test('a volume mounted over /app wins over the image', () =>
    assert.deepEqual(mapEnvPaths([['X', '/app/x']], operatorMounts([{ containerPath: '/app', hostPath: '/h/app' }])), [['X', '/h/app/x']]));
});

test('operatorWorkingDir: the image WORKDIR (/app) is the repository root; workingDir is mapped like any path', () => {
  assert.equal(IMAGE_WORKDIR, '/app');
  assert.equal(operatorWorkingDir(undefined, operatorMounts(mounts)), REPO_ROOT);
  assert.ok(existsSync(path.join(operatorWorkingDir(undefined, operatorMounts(mounts))!, 'src/backup/main.ts')), 'the image src/ is here');
  assert.equal(operatorWorkingDir('/data', operatorMounts(mounts)), '/h/claim');
  assert.equal(operatorWorkingDir('/srv', operatorMounts(mounts)), undefined, 'the image filesystem: the runner uses a scratch directory');
});

describe('planProcess', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'plan-'));
  const volumes = new Map([
    ['tls', path.join(dir, 'vol-tls')],
    ['work', path.join(dir, 'vol-work')],
  ]);
  for (const d of volumes.values()) mkdirSync(d, { recursive: true });
  after(() => rmSync(dir, { recursive: true, force: true }));
  const host = (spec: V1Container): ContainerHost =>
    ({
      pod: { metadata: { name: 'backup-1', namespace: 'ns', uid: 'u' }, spec: { containers: [spec] } } as V1Pod,
      name: 'backup-1',
      namespace: 'ns',
      uid: 'u',
      dir,
      ip: '127.0.61.5',
      node: { hostIP: '127.0.61.1', machine: { memoryBytes: 2 ** 30, cpus: 2 }, redisServer: '/usr/bin/redis-server' },
      volumes: { hostPaths: volumes, sources: { secrets: new Map(), configMaps: new Map(), tokens: new Map() } },
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
  const plan = (spec: V1Container, instance = 0) => planProcess(host(spec), runtime(spec), instance) as ProcessPlan;
  const operator: V1Container = {
    name: 'backup',
    image: 'redis-operator:0.1.0',
    command: ['node', 'src/backup/main.ts'],
    env: [
      { name: 'REDIS_TLS_CA_FILE', value: '/tls/ca.crt' },
      { name: 'TERMINATION_LOG', value: '/dev/termination-log' },
      { name: 'NODE_ENV', value: 'test' },
    ],
    volumeMounts: [
      { name: 'tls', mountPath: '/tls' },
      { name: 'work', mountPath: '/work' },
    ],
    terminationMessagePath: '/dev/termination-log',
  };

  test('an operator container: node is the project Node, cwd the repository, env paths mapped, a fresh message file', () => {
    const p = plan(operator, 2);
    assert.deepEqual(p.argv, ['node', 'src/backup/main.ts']);
    assert.equal(p.cwd, REPO_ROOT);
    assert.equal(p.messageFile, path.join(dir, 'containers/backup/termination-log/2'));
    assert.equal(readFileSync(p.messageFile, 'utf8'), '');
    assert.equal(p.log, path.join(dir, 'logs/backup/2.log'));
    assert.equal(p.env['REDIS_TLS_CA_FILE'], path.join(dir, 'vol-tls/ca.crt'));
    assert.equal(p.env['TERMINATION_LOG'], p.messageFile);
    assert.equal(p.env['NODE_ENV'], 'test', "the container's env overrides the image's");
    const version = execFileSync('node', ['-p', 'process.version'], { env: p.env, cwd: p.cwd, encoding: 'utf8' }).trim();
    assert.match(version, /^v2[4-9]\./, `node on the container's PATH is the project's Node (${version})`);
  });

  test('another image: env verbatim, cwd mapped from workingDir, no node', () => {
    const p = plan({ ...operator, name: 'init', image: 'busybox:1.36', workingDir: '/work', command: ['sh', '-c', 'echo hi > x'] });
    assert.equal(p.env['REDIS_TLS_CA_FILE'], '/tls/ca.crt');
    assert.equal(p.env['NODE_ENV'], 'test');
    assert.equal(p.cwd, path.join(dir, 'vol-work'));
    assert.equal(existsSync(path.join(dir, 'containers/init/bin/node')), false);
    assert.ok(p.mounts.some((m) => m.containerPath === '/dev/termination-log' && m.hostPath === p.messageFile));
  });

  test("the image's NODE_ENV applies when the container sets none", () => {
    const p = plan({ ...operator, env: [] });
    assert.equal(p.env['NODE_ENV'], 'production');
  });

  test('refusals: a missing Secret, a mount of no volume', () => {
    const missing = planProcess(host(operator), runtime({ ...operator, env: [{ name: 'P', valueFrom: { secretKeyRef: { name: 'auth', key: 'p' } } }] }), 0);
    assert.deepEqual(missing, { reason: 'CreateContainerConfigError', message: 'secret "auth" not found' });
    const orphan = planProcess(host(operator), runtime({ ...operator, volumeMounts: [{ name: 'nope', mountPath: '/x' }] }), 0);
    assert.deepEqual(orphan, { reason: 'CreateContainerError', message: 'volumeMount "nope" names no volume of the pod' });
  });
});

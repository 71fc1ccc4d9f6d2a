// How the stand-in kubelet builds a container's process: env, argv, paths, the redis-server shim.
// The shim test runs the generated script with sh against a fake redis-server; no network.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import {
  containerArgv,
  expand,
  isExporterImage,
  isOperatorImage,
  isRedisImage,
  mapPath,
  redisShim,
  resolveEnv,
  type ObjectLookup,
  mapPathsInText,
} from './container.ts';
import { REDIS_START_SCRIPT } from '../../../src/hook/children/statefulset.ts';

const NODE = { memoryBytes: 8 * 2 ** 30, cpus: 4 };
const NET = { podIP: '127.0.49.7', hostIP: '127.0.49.1' };

const pod: V1Pod = {
  metadata: { name: 'web-0', namespace: 'ns', uid: 'u-1', labels: { app: 'web' }, annotations: { note: 'hi' } },
  spec: { containers: [], nodeName: 'node-a' },
};

const lookup: ObjectLookup = {
  secret: (name) =>
    name === 'auth' ? { data: { password: Buffer.from('s3cret').toString('base64'), user: Buffer.from('bob').toString('base64') } } : undefined,
  configMap: (name) => (name === 'cfg' ? { data: { mode: 'fast', level: 'debug' } } : undefined),
};

describe('expand', () => {
  const vars = new Map([
    ['A', 'x'],
    ['B', 'y y'],
  ]);
  const cases: Array<[string, string]> = [
    ['$(A)', 'x'],
    ['pre-$(A)-$(B)', 'pre-x-y y'],
    ['$(MISSING)', '$(MISSING)'],
    ['$$(A)', '$(A)'],
    ['$A and $1', '$A and $1'],
    ['open $(A', 'open $(A'],
    ['trailing $', 'trailing $'],
  ];
  for (const [input, want] of cases)
    test(JSON.stringify(input), () =>
      assert.equal(
        expand(input, (n) => vars.get(n)),
        want,
      ),
    );
});

describe('resolveEnv', () => {
  const cases: Array<{ name: string; container: V1Container; want: Array<[string, string]> | RegExp }> = [
    {
      name: 'values, downward API and $(VAR) references to earlier entries',
      container: {
        name: 'c',
        env: [
          { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
          { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
          { name: 'NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
          { name: 'APP', valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } },
          { name: 'HOST', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
          { name: 'ADDR', value: '$(POD_IP):6379 $(UNDEFINED)' },
        ],
      },
      want: [
        ['POD_IP', NET.podIP],
        ['POD_NAME', 'web-0'],
        ['NS', 'ns'],
        ['APP', 'web'],
        ['HOST', NET.hostIP],
        ['ADDR', '127.0.49.7:6379 $(UNDEFINED)'],
      ],
    },
    {
      name: 'secretKeyRef and configMapKeyRef',
      container: {
        name: 'c',
        env: [
          { name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'auth', key: 'password' } } },
          { name: 'MODE', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'mode' } } },
        ],
      },
      want: [
        ['PASSWORD', 's3cret'],
        ['MODE', 'fast'],
      ],
    },
    {
      name: 'optional references to missing objects or keys are left out',
      container: {
        name: 'c',
        env: [
          { name: 'A', valueFrom: { secretKeyRef: { name: 'nope', key: 'k', optional: true } } },
          { name: 'B', valueFrom: { secretKeyRef: { name: 'auth', key: 'nope', optional: true } } },
          { name: 'C', valueFrom: { configMapKeyRef: { name: 'nope', key: 'k', optional: true } } },
        ],
      },
      want: [],
    },
    {
      name: 'envFrom with a prefix, then env overrides',
      container: {
        name: 'c',
        envFrom: [{ secretRef: { name: 'auth' }, prefix: 'S_' }, { configMapRef: { name: 'cfg' } }],
        env: [{ name: 'mode', value: 'slow' }],
      },
      want: [
        ['S_password', 's3cret'],
        ['S_user', 'bob'],
        ['mode', 'slow'],
        ['level', 'debug'],
      ],
    },
    {
      name: "resourceFieldRef: a limit with a divisor; no limit is the node's allocatable",
      container: {
        name: 'c',
        resources: { limits: { memory: '512Mi' } },
        env: [
          { name: 'MEM_MI', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } } },
          { name: 'CPU', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
        ],
      },
      want: [
        ['MEM_MI', '512'],
        ['CPU', '4'],
      ],
    },
    {
      name: 'a missing Secret',
      container: { name: 'c', env: [{ name: 'P', valueFrom: { secretKeyRef: { name: 'gone', key: 'password' } } }] },
      want: /^secret "gone" not found$/,
    },
    {
      name: 'a missing key',
      container: { name: 'c', env: [{ name: 'P', valueFrom: { secretKeyRef: { name: 'auth', key: 'token' } } }] },
      want: /^couldn't find key token in Secret ns\/auth$/,
    },
    { name: 'a missing ConfigMap in envFrom', container: { name: 'c', envFrom: [{ configMapRef: { name: 'gone' } }] }, want: /^configmap "gone" not found$/ },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const got = resolveEnv(pod, c.container, lookup, NET, NODE);
      if (c.want instanceof RegExp) {
        assert.equal(got.ok, false);
        assert.match((got as { message: string }).message, c.want);
      } else {
        assert.deepEqual(got, { ok: true, env: c.want });
      }
    });
  }
});

describe('containerArgv', () => {
  const env: Array<[string, string]> = [['CONF', '/etc/redis/redis.conf']];
  const cases: Array<[string, V1Container, string[] | RegExp]> = [
    [
      'command and args, $(VAR)-expanded',
      { name: 'c', image: 'redis:7.2', command: ['sh', '-c'], args: ['exec redis-server $(CONF)'] },
      ['sh', '-c', 'exec redis-server /etc/redis/redis.conf'],
    ],
    ['the redis image without command: redis-server', { name: 'c', image: 'redis:7.2' }, ['redis-server']],
    [
      'the redis image with flag args: the entrypoint prepends redis-server',
      { name: 'c', image: 'docker.io/library/redis:7.2', args: ['--port', '6379'] },
      ['redis-server', '--port', '6379'],
    ],
    [
      'the redis image with a .conf arg',
      { name: 'c', image: 'ghcr.io/acme/redis@sha256:abc', args: ['/etc/redis/redis.conf'] },
      ['redis-server', '/etc/redis/redis.conf'],
    ],
    ['the redis image with another command as args', { name: 'c', image: 'redis', args: ['redis-cli', 'ping'] }, ['redis-cli', 'ping']],
    ['another image without command cannot run', { name: 'c', image: 'busybox' }, /cannot run image busybox/],
    ['the exporter image without command: its entrypoint', { name: 'c', image: 'oliver006/redis_exporter:v1.45.0' }, ['/redis_exporter']],
    [
      'the exporter image: args go to the entrypoint',
      { name: 'c', image: 'redis_exporter', args: ['-redis.addr', '$(CONF)'] },
      ['/redis_exporter', '-redis.addr', '/etc/redis/redis.conf'],
    ],
    ['the exporter image with a command runs it', { name: 'c', image: 'redis_exporter', command: ['sh', '-c', 'true'] }, ['sh', '-c', 'true']],
  ];
  for (const [name, container, want] of cases) {
    test(name, () => {
      const got = containerArgv(container, env);
      if (want instanceof RegExp) assert.match((got as { error: string }).error, want);
      else assert.deepEqual(got, want);
    });
  }
  test('isRedisImage', () => {
    assert.deepEqual(
      ['redis', 'redis:7.2', 'library/redis:7', 'quay.io/x/redis:1', 'redis@sha256:1', 'redisinsight:1', 'bitnami/redis-sentinel'].map(isRedisImage),
      [true, true, true, true, true, false, false],
    );
  });
  test('isOperatorImage: the operator image from any registry, never redis itself', () => {
    const cases: Array<[string | undefined, boolean]> = [
      ['redis-operator:0.1.0', true],
      ['registry.example.com:5000/team/redis-operator:0.1.0', true],
      ['redis-operator@sha256:abc', true],
      ['redis-operator', true],
      ['redis:7.2', false],
      ['redis-operator-bundle:1', false],
      ['my-redis-operator:1', false],
      [undefined, false],
    ];
    for (const [image, want] of cases) assert.equal(isOperatorImage(image), want, String(image));
    assert.equal(isRedisImage('redis-operator:0.1.0'), false);
  });
  test("isExporterImage: the repository's last path component is redis_exporter, any registry, tag or digest", () => {
    const cases: Array<[string | undefined, boolean]> = [
      ['oliver006/redis_exporter:v1.45.0', true],
      ['quay.io/oliver006/redis_exporter:v1.62.0-alpine', true],
      ['registry.example.com:5000/mirror/redis_exporter@sha256:0123abcd', true],
      ['oliver006/redis_exporter:v1.45.0@sha256:0123abcd', true],
      ['redis_exporter', true],
      ['redis_exporter:latest', true],
      ['oliver006/redis_exporter-foo:1', false],
      ['redis_exporter/other:1', false],
      ['bitnami/redis-exporter:1.45.0', false],
      ['redis:7.2', false],
      ['redis-operator:0.1.0', false],
      [undefined, false],
    ];
    for (const [image, want] of cases) assert.equal(isExporterImage(image), want, String(image));
    assert.equal(isRedisImage('oliver006/redis_exporter:v1.45.0'), false);
  });
});

describe('mapPath', () => {
  const mounts = [
    { containerPath: '/data', hostPath: '/h/data' },
    { containerPath: '/etc/redis/', hostPath: '/h/cfg' },
    { containerPath: '/etc/redis/extra', hostPath: '/h/extra' },
  ];
  const cases: Array<[string, string | undefined]> = [
    ['/data', '/h/data'],
    ['/data/appendonly.aof', '/h/data/appendonly.aof'],
    ['/database', undefined],
    ['/etc/redis/redis.conf', '/h/cfg/redis.conf'],
    ['/etc/redis/extra/x.conf', '/h/extra/x.conf'],
    ['/usr/bin/redis-server', undefined],
  ];
  for (const [input, want] of cases) test(input, () => assert.equal(mapPath(mounts, input), want));
});

describe('redisShim', () => {
  test('maps the config path and its dir to the volumes, keeps every other argument, forces the pod address', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'shim-'));
    try {
      const cfg = path.join(root, 'cfg');
      const data = path.join(root, 'data');
      mkdirSync(cfg);
      mkdirSync(data);
      writeFileSync(
        path.join(cfg, 'redis.conf'),
        'bind 0.0.0.0\ndir /data\nDIR  "/data/sub"  \nsave ""\nappendonly yes\nport 0\ntls-port 6379\ntls-cert-file /etc/redis/tls.crt\ntls-replication yes',
      );
      const fake = path.join(root, 'fake-redis-server');
      writeFileSync(fake, '#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n');
      chmodSync(fake, 0o755);
      const rewritten = path.join(root, 'rewritten.conf');
      const shim = path.join(root, 'redis-server');
      writeFileSync(
        shim,
        redisShim({
          realBinary: fake,
          mounts: [
            { containerPath: '/etc/redis', hostPath: cfg },
            { containerPath: '/data', hostPath: data },
          ],
          podIP: '127.0.49.9',
          rewrittenConf: rewritten,
        }),
      );
      chmodSync(shim, 0o755);
      const out = execFileSync('sh', ['-c', 'exec redis-server /etc/redis/redis.conf --requirepass "$P" --masterauth "$P" --logfile /data/r.log'], {
        env: { PATH: `${root}:/usr/bin:/bin`, P: 'p w' },
        encoding: 'utf8',
      });
      assert.deepEqual(out.trimEnd().split('\n'), [
        rewritten,
        '--requirepass',
        'p w',
        '--masterauth',
        'p w',
        '--logfile',
        `${data}/r.log`,
        '--bind',
        '127.0.49.9',
        '--bind-source-addr',
        '127.0.49.9',
      ]);
      assert.equal(
        readFileSync(rewritten, 'utf8'),
        `bind 0.0.0.0\ndir "${data}"\ndir "${data}/sub"\nsave ""\nappendonly yes\nport 0\ntls-port 6379\ntls-cert-file "${cfg}/tls.crt"\ntls-replication yes\n`,
        'dir and TLS file paths mapped; the port left as the file says (0 with TLS)',
      );
      // The operator's own command: config lines on stdin (`-`), which must stay the last argument.
      const fromStdin = execFileSync('sh', ['-c', REDIS_START_SCRIPT], { env: { PATH: `${root}:/usr/bin:/bin`, REDIS_PASSWORD: 'p w' }, encoding: 'utf8' });
      assert.deepEqual(fromStdin.trimEnd().split('\n'), [rewritten, '--bind', '127.0.49.9', '--bind-source-addr', '127.0.49.9', '-']);
      // A pod with a network namespace of its own also listens on its loopback (the exporter's 127.0.0.1).
      writeFileSync(shim, redisShim({ realBinary: fake, mounts: [], podIP: '198.18.90.2', rewrittenConf: rewritten, ownNetns: true }));
      const own = execFileSync('sh', ['-c', 'exec redis-server --port 6379'], { env: { PATH: `${root}:/usr/bin:/bin` }, encoding: 'utf8' });
      assert.deepEqual(own.trimEnd().split('\n'), ['--port', '6379', '--bind', '198.18.90.2', '127.0.0.1', '--bind-source-addr', '198.18.90.2']);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('mapPathsInText (exec probe commands)', () => {
  const mounts = [
    { containerPath: '/tls', hostPath: '/h/tls' },
    { containerPath: '/data', hostPath: '/h/d' },
  ];
  const cases: Array<[string, string]> = [
    ['redis-cli --tls --cacert /tls/ca.crt -h "$POD_IP"', 'redis-cli --tls --cacert /h/tls/ca.crt -h "$POD_IP"'],
    ['x=/data/a "/data/b" /data', 'x=/h/d/a "/h/d/b" /h/d'],
    ['/tlsx /opt/tls/ca.crt', '/tlsx /opt/tls/ca.crt'],
  ];
  for (const [input, want] of cases) test(input, () => assert.equal(mapPathsInText(mounts, input), want));
});

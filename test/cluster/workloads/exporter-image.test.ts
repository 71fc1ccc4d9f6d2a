// The exporter image as the runners run it (exporter-image.ts): the address rewrite for pods that
// share the host's network namespace (pure), the entrypoint mapped to the host's binary, and a
// missing binary as a start refusal naming REDIS_EXPORTER_BIN. No network, no redis-server. The
// binary is test/monitoring/tools.ts's (`node test/monitoring/tools.ts` fetches it).
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { nodeBinary } from '../../support/host.ts';
import { exporterBinary, exporterImageID, exporterProcess, podListenAddr, podRedisAddr, sharedNetnsArgs, sharedNetnsEnv } from './exporter-image.ts';

const IP = '127.0.88.7';

describe('podRedisAddr: the pod loopback becomes the pod IP, nothing else moves', () => {
  const cases: Array<[string, string]> = [
    ['redis://127.0.0.1:6379', `redis://${IP}:6379`],
    ['rediss://127.0.0.1:6379', `rediss://${IP}:6379`],
    ['redis://localhost:6379', `redis://${IP}:6379`],
    ['redis://[::1]:6379', `redis://${IP}:6379`],
    ['redis://redis-operator:pw@127.0.0.1:6379/0', `redis://redis-operator:pw@${IP}:6379/0`],
    ['127.0.0.1:6379', `${IP}:6379`],
    ['localhost:6380', `${IP}:6380`],
    ['redis://:6379', `redis://${IP}:6379`],
    ['redis://localhost', `redis://${IP}`],
    ['redis://127.0.0.10:6379', 'redis://127.0.0.10:6379'],
    ['redis://127.0.88.3:6379', 'redis://127.0.88.3:6379'],
    ['redis://localhost.example:6379', 'redis://localhost.example:6379'],
    ['redis://my-redis-master:6379', 'redis://my-redis-master:6379'],
    ['unix:///run/redis.sock', 'unix:///run/redis.sock'],
    ['', ''],
  ];
  for (const [value, want] of cases) test(JSON.stringify(value), () => assert.equal(podRedisAddr(value, IP), want));
});

describe('podListenAddr: every interface or loopback becomes <pod IP>:<port>', () => {
  const cases: Array<[string, string]> = [
    [':9121', `${IP}:9121`],
    ['0.0.0.0:9121', `${IP}:9121`],
    ['[::]:9200', `${IP}:9200`],
    ['127.0.0.1:9121', `${IP}:9121`],
    ['localhost:9121', `${IP}:9121`],
    ['127.0.88.3:9121', '127.0.88.3:9121'],
    ['9121', '9121'],
  ];
  for (const [value, want] of cases) test(JSON.stringify(value), () => assert.equal(podListenAddr(value, IP), want));
});

test("sharedNetnsEnv: the hook's env rewritten, the rest verbatim; unset addresses get the defaults, rewritten", () => {
  const env: Array<[string, string]> = [
    ['REDIS_ADDR', 'rediss://127.0.0.1:6379'],
    ['REDIS_USER', 'redis-operator'],
    ['REDIS_PASSWORD', 'p w'],
    ['REDIS_EXPORTER_WEB_LISTEN_ADDRESS', ':9121'],
    ['REDIS_EXPORTER_SKIP_TLS_VERIFICATION', 'true'],
  ];
  assert.deepEqual(sharedNetnsEnv(env, IP), [
    ['REDIS_ADDR', `rediss://${IP}:6379`],
    ['REDIS_USER', 'redis-operator'],
    ['REDIS_PASSWORD', 'p w'],
    ['REDIS_EXPORTER_WEB_LISTEN_ADDRESS', `${IP}:9121`],
    ['REDIS_EXPORTER_SKIP_TLS_VERIFICATION', 'true'],
  ]);
  assert.deepEqual(sharedNetnsEnv([['X', ':9121']], IP), [
    ['X', ':9121'],
    ['REDIS_ADDR', `redis://${IP}:6379`],
    ['REDIS_EXPORTER_WEB_LISTEN_ADDRESS', `${IP}:9121`],
  ]);
});

test("sharedNetnsArgs: Go's flag forms for the two addresses; other flags and what follows -- stay", () => {
  assert.deepEqual(
    sharedNetnsArgs(['-redis.addr', 'redis://localhost:6379', '--web.listen-address=:9200', '-debug', '-namespace', ':x', '--', '-redis.addr', ':1'], IP),
    ['-redis.addr', `redis://${IP}:6379`, `--web.listen-address=${IP}:9200`, '-debug', '-namespace', ':x', '--', '-redis.addr', ':1'],
  );
  assert.deepEqual(sharedNetnsArgs(['-web.listen-address'], IP), ['-web.listen-address'], 'a flag without its value is left for the exporter to refuse');
});

describe('exporterProcess with the host binary', () => {
  // As every monitoring test: without the binary this fails, naming what to run (never skips).
  const found = exporterBinary();
  before(() => assert.equal(typeof found, 'string', typeof found === 'object' ? found.error : ''));
  const bin = found as string;
  const env: Array<[string, string]> = [
    ['REDIS_ADDR', 'redis://127.0.0.1:6379'],
    ['REDIS_EXPORTER_WEB_LISTEN_ADDRESS', ':9121'],
  ];

  test('the entrypoint is the binary, args appended and rewritten, env rewritten (a shared network namespace)', () => {
    assert.deepEqual(exporterProcess(['/redis_exporter', '-web.listen-address', ':9300'], env, { podIP: IP, sharedNetns: true }), {
      argv: [bin, '-web.listen-address', `${IP}:9300`],
      env: [
        ['REDIS_ADDR', `redis://${IP}:6379`],
        ['REDIS_EXPORTER_WEB_LISTEN_ADDRESS', `${IP}:9121`],
      ],
    });
  });

  test('a pod with its own network namespace: nothing rewritten; an explicit command that is not the entrypoint runs as written', () => {
    assert.deepEqual(exporterProcess(['/redis_exporter', '-debug'], env, { podIP: '198.18.92.2', sharedNetns: false }), { argv: [bin, '-debug'], env });
    assert.deepEqual(exporterProcess(['sh', '-c', 'true'], env, { podIP: IP, sharedNetns: false }), { argv: ['sh', '-c', 'true'], env });
  });

  test('imageID: the binary digest, hashed once', () => {
    const id = exporterImageID('node-agent://');
    assert.match(id, /^node-agent:\/\/redis_exporter@sha256:[0-9a-f]{64}$/);
    assert.equal(exporterImageID('standin://'), id.replace('node-agent://', 'standin://'));
    assert.match(execFileSync(bin, ['-version'], { encoding: 'utf8' }), /1\.45\.0/);
  });
});

test('a missing binary: a refusal naming REDIS_EXPORTER_BIN, no exception, no imageID', () => {
  // In a fresh process: the module keeps the binary it found.
  const module = fileURLToPath(new URL('./exporter-image.ts', import.meta.url));
  const script = `import(${JSON.stringify(module)}).then((m) => console.log(JSON.stringify([m.exporterProcess(['/redis_exporter'], [], { podIP: '${IP}', sharedNetns: true }), m.exporterImageID('x://')])))`;
  const out = execFileSync(nodeBinary(), ['--input-type=module', '-e', script], {
    env: { PATH: '/nonexistent', REDIS_EXPORTER_BIN: '/nonexistent/redis_exporter' },
    encoding: 'utf8',
  });
  const [refusal, imageID] = JSON.parse(out) as [{ error: string }, string];
  assert.match(refusal.error, /\/redis_exporter is the host's redis_exporter, which is missing/);
  assert.match(refusal.error, /REDIS_EXPORTER_BIN/);
  assert.equal(imageID, '');
});

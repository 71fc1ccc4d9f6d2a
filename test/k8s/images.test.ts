// The test images (images.ts) as a node would get them: each archive names its refs the way
// containerd imports them, its config runs what the pods expect (entry point, user, working
// directory), its binaries are the right versions when run inside it, and a second call builds
// nothing. Skipped, with the reason, where images cannot be built (not root, no buildah, ...).
// A cold cache builds everything first (about two minutes here); the assertions take seconds.
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { DEFAULT_EXPORTER_IMAGE } from '../../src/api/monitoring-schema.ts';
import { REDIS_UID } from '../../src/hook/common/pod-template.ts';
import {
  ensureImages,
  imagesMissing,
  METACONTROLLER_IMAGE,
  PAUSE_IMAGE,
  runInImage,
  type BuiltImage,
} from './images.ts';
import { normalizeRef } from './images/buildah.ts';

interface ImageConfig {
  User?: string;
  Entrypoint?: string[] | null;
  Cmd?: string[] | null;
  WorkingDir?: string;
  Env?: string[];
}

function member(archive: string, name: string): string {
  return execFileSync('tar', ['-xOf', archive, name], { encoding: 'utf8', maxBuffer: 16 * 2 ** 20 });
}

/** manifest.json's names and the image config, as `ctr images import` reads them. */
function inspect(archive: string): { repoTags: string[]; config: ImageConfig } {
  const [manifest] = JSON.parse(member(archive, 'manifest.json')) as Array<{ Config: string; RepoTags: string[] }>;
  assert.ok(manifest, `${archive} has a manifest`);
  const config = (JSON.parse(member(archive, manifest.Config)) as { config: ImageConfig }).config;
  return { repoTags: manifest.RepoTags, config };
}

// The engines and Metacontroller come from ../shared: without them their tests skip, not these.
const why = imagesMissing([PAUSE_IMAGE, 'redis:7.0', DEFAULT_EXPORTER_IMAGE, 'redis-operator:0.1.0']);
const uid = `${REDIS_UID}:${REDIS_UID}`;

describe('test images', { skip: why }, () => {
  let images: Record<string, BuiltImage> = {};
  const image = (ref: string) => {
    const i = images[ref];
    assert.ok(i, `${ref} was built`);
    return i;
  };

  before(
    async () => {
      images = await ensureImages((l) => console.log(l));
    },
    { timeout: 1_800_000 },
  );

  test('every archive names each of its refs, normalized as containerd and the kubelet name them', () => {
    for (const { ref, archive } of Object.values(images))
      assert.ok(inspect(archive).repoTags.includes(normalizeRef(ref)), `${archive} names ${ref}`);
    for (const ref of [PAUSE_IMAGE, 'redis:7.0', 'redis:7.0.15', DEFAULT_EXPORTER_IMAGE, 'redis-operator:0.1.0'])
      image(ref);
    assert.equal(image('redis:7.0').archive, image('redis:7.0.15').archive, 'aliases share one archive');
  });

  test('pause: /pause as the entry point, as nobody', () => {
    const { config } = inspect(image(PAUSE_IMAGE).archive);
    assert.deepEqual(config.Entrypoint, ['/pause']);
    assert.equal(config.User, '65535:65535');
  });

  const engines = [
    { refs: ['redis:7.0', 'redis:7.0.15'], version: '7.0.15', server: 'redis-server' },
    { refs: ['redis:7.2', 'redis:7.2.6'], version: '7.2.6', server: 'redis-server' },
    { refs: ['valkey/valkey:8.0', 'valkey/valkey:8.0.1'], version: '8.0.1', server: 'valkey-server' },
  ];
  for (const e of engines) {
    test(`${e.refs[0]}: laid out as the official image, redis-server ${e.version} and the start scripts' tools run as uid ${REDIS_UID}`, async (t) => {
      if (!images[e.refs[0]!]) return t.skip(`${e.refs[0]} not built here (no ../shared engines)`);
      const { archive } = image(e.refs[0]!);
      assert.equal(image(e.refs[1]!).archive, archive);
      const { config } = inspect(archive);
      assert.deepEqual(config.Entrypoint, ['docker-entrypoint.sh']);
      assert.deepEqual(config.Cmd, [e.server]);
      assert.equal(config.WorkingDir, '/data');
      // The operator's start script, probes and cluster restart hold (src/hook) need these.
      const script = [
        'set -e',
        'redis-server --version',
        'redis-cli --version',
        'for t in sh sed awk grep timeout date sleep redis-check-aof redis-check-rdb; do command -v "$t" >/dev/null || echo "missing $t"; done',
        'id -u; id -g; stat -c %u:%g /data',
      ].join('\n');
      const out = await runInImage(archive, ['sh', '-c', script], uid);
      assert.match(out, new RegExp(`server v=${e.version.replace(/\./g, '\\.')} `));
      assert.match(out, new RegExp(`(redis|valkey)-cli ${e.version.replace(/\./g, '\\.')}`));
      assert.doesNotMatch(out, /missing/);
      assert.match(out, new RegExp(`^${REDIS_UID}\\n${REDIS_UID}\\n${uid}$`, 'm'), 'uid/gid 999 and /data owned by it');
    });
  }

  test('exporter: /redis_exporter as the entry point (the pods give no command), the pinned release', async () => {
    const { archive } = image(DEFAULT_EXPORTER_IMAGE);
    assert.deepEqual(inspect(archive).config.Entrypoint, ['/redis_exporter']);
    const out = await runInImage(archive, ['/bin/sh', '-c', '/redis_exporter --version 2>&1'], uid);
    assert.match(out, new RegExp(`Exporter ${DEFAULT_EXPORTER_IMAGE.split(':v')[1]!.replace(/\./g, '\\.')}`));
  });

  test('operator: runs as 1000:1000 on Node 24 from /app, the hook service by default', async () => {
    const { archive } = image('redis-operator:0.1.0');
    const { config } = inspect(archive);
    assert.equal(config.User, '1000:1000');
    assert.equal(config.WorkingDir, '/app');
    assert.deepEqual(config.Cmd, ['node', '--lite-mode', 'dist/server/main.js']);
    const out = await runInImage(
      archive,
      ['sh', '-c', 'node --version; id -u; test -f dist/server/main.js && test -f src/sidecar/main.ts && echo files'],
      '1000:1000',
    );
    assert.match(out, /^v24\.\d+\.\d+\n1000\nfiles$/m);
  });

  test('metacontroller: the binary as the entry point, non-root', (t) => {
    if (!images[METACONTROLLER_IMAGE]) return t.skip('no ../shared/metacontroller binary');
    const { config } = inspect(image(METACONTROLLER_IMAGE).archive);
    assert.deepEqual(config.Entrypoint, ['/usr/bin/metacontroller']);
    assert.equal(config.User, '65532:65532');
  });

  test('a warm call builds nothing and returns at once; `only` returns just the image asked for', async () => {
    // Up to date first: the repository (the operator image's context) may have changed since.
    const first = await ensureImages(() => {});
    const mtimes = Object.values(first).map((i) => statSync(i.archive).mtimeMs);
    const lines: string[] = [];
    const t0 = Date.now();
    const again = await ensureImages((l) => lines.push(l));
    assert.ok(Date.now() - t0 < 10_000, `warm call took ${Date.now() - t0} ms`);
    assert.deepEqual(again, first);
    assert.deepEqual(
      lines.filter((l) => /building|built in/.test(l)),
      [],
    );
    assert.deepEqual(
      Object.values(first).map((i) => statSync(i.archive).mtimeMs),
      mtimes,
    );
    const one = await ensureImages(() => {}, ['redis:7.0']);
    assert.deepEqual(Object.keys(one).sort(), ['redis:7.0', 'redis:7.0.15']);
  });
});

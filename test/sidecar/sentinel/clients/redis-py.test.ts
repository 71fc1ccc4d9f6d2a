// redis-py (redis.sentinel.Sentinel from PyPI, installed by .ci/run into .cache/py) through the endpoint: finds the
// master the view publishes, writes SET + WAIT 1, follows a failover the next view announces, and the new master holds
// every acknowledged write. Skipped, saying why, when redis-py is not installed.
// Loopback octet: 127.0.217.x (.1, .2 the Redis nodes, .100 the endpoint).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { TEST_PASSWORD } from '../../../support/redis-server.ts';
import { MASTER_NAME, SENTINEL_PASSWORD, runClient, startFixture } from './fixture.ts';

const N = 217;
const PYTHON = path.resolve(import.meta.dirname, '../../../../.cache/py/bin/python');
const SCRIPT = path.join(import.meta.dirname, 'redis_py_client.py');

function missing(): string | undefined {
  const r = spawnSync(PYTHON, ['-c', 'import redis.sentinel; print(redis.__version__)'], { encoding: 'utf8' });
  if (r.status === 0) return undefined;
  const why = r.error?.message ?? r.stderr.trim().split('\n').at(-1);
  return `redis-py is not installed in .cache/py (.ci/run installs it from PyPI): ${why}`;
}

const skip = missing();

test(
  'redis-py through the endpoint: finds the master, follows a failover, keeps every acknowledged write',
  { skip },
  async (t) => {
    const f = await startFixture(t, N);
    const first = f.master();
    const client = runClient(t, PYTHON, [SCRIPT, f.host, String(f.server.port), MASTER_NAME], {
      SENTINEL_PASSWORD,
      REDIS_PASSWORD: TEST_PASSWORD,
    });
    const ready = await client.next('ready');
    assert.equal(ready['event'], 'ready');
    assert.equal(ready['discovered'], `${first.ip}:6379`, 'the master the view publishes');
    assert.equal(ready['master'], `${first.ip}:6379`, 'the first write landed there');
    assert.equal(ready['acked'], 1, 'SET + WAIT 1 acknowledged by the replica');

    await f.failover();
    client.send('go');
    const moved = await client.next('moved', 30_000);
    assert.equal(moved['event'], 'moved', JSON.stringify(moved));
    const second = f.master();
    assert.notEqual(second.ip, first.ip);
    assert.equal(moved['master'], `${second.ip}:6379`, 'the client writes on the master the view announced');
    const acked = moved['acked'] as number;
    assert.ok(acked > 1, 'writes were acknowledged after the failover');
    const stored = Number(await f.admins[f.nodes.indexOf(second)]!.get('k'));
    assert.ok(stored >= acked, `the new master holds k=${stored}, the last acknowledged write was ${acked}`);
  },
);

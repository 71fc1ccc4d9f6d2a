// redis-py (redis.sentinel.Sentinel from PyPI, installed by .ci/run into the clients cache: cache.ts) through
// the endpoint: finds the
// master the view publishes, writes SET + WAIT 1, follows a failover the next view announces, and the new master holds
// every acknowledged write. Skipped, saying why, when redis-py is not installed.
// Loopback octet: 127.0.217.x (.1, .2 the Redis nodes, .100 the endpoint).
import { test } from 'node:test';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { followsFailover } from './fixture.ts';
import { CLIENTS_CACHE } from './cache.ts';

const N = 217;
const PYTHON = path.join(CLIENTS_CACHE, 'py', 'bin', 'python');
const SCRIPT = path.join(import.meta.dirname, 'redis_py_client.py');

function missing(): string | undefined {
  const r = spawnSync(PYTHON, ['-c', 'import redis.sentinel'], { encoding: 'utf8' });
  if (r.status === 0) return undefined;
  const why = r.error?.message ?? r.stderr.trim().split('\n').at(-1);
  return `redis-py is not installed in ${path.join(CLIENTS_CACHE, 'py')} (.ci/run installs it from PyPI): ${why}`;
}

test(
  'redis-py through the endpoint: finds the master, follows a failover, keeps every acknowledged write',
  { skip: missing() },
  // redis-py does not subscribe: it leaves a demoted master on its READONLY reply and asks the endpoint again.
  (t) => followsFailover(t, N, (host, port) => [PYTHON, [SCRIPT, host, String(port)]], { subscribes: false }),
);

// Where .ci/run installs the real Sentinel clients the tests drive (redis-py's venv, Jedis's jars):
// the user's cache, outside the checkout, so a clean clone finds what an earlier run installed.
// Invariant: the same path as .ci/run's `clients_cache`.
import os from 'node:os';
import path from 'node:path';

export const CLIENTS_CACHE = path.join(
  process.env['XDG_CACHE_HOME'] ?? path.join(os.homedir(), '.cache'),
  'redis-operator-clients',
);

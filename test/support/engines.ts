// The engines the real-server tests run: Debian's redis-server 7.0.15 from PATH (the default),
// and Redis 7.2.6 and Valkey 8.0.1 from ../shared/engines next to the repository (built from their
// release tags; read there, never copied into the repository). REDIS_OPERATOR_TEST_ENGINE picks one
// for a whole test process; test/sidecar/engines/*.test.ts run chosen suites per engine (runOnEngine).
// Invariants:
// - Each engine owns a second loopback octet (127.<net>.<octet>.<host>): a suite run under two
//   engines at once (the unit phase runs files side by side) never shares an address or an
//   iptables tag with itself. The default engine keeps 127.0.x.y, the addresses the brief allots.
// - An engine whose binaries are absent is never replaced by another: whoever needs it skips with
//   `missing` as the one-line reason.
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ENGINE_ENV = 'REDIS_OPERATOR_TEST_ENGINE';

export type EngineId = 'redis-7.0' | 'redis-7.2' | 'valkey-8.0';

export interface TestEngine {
  id: EngineId;
  /** What INFO server says it is: Valkey adds server_name:valkey. */
  engine: 'redis' | 'valkey';
  /** The version it reports (Valkey's valkey_version; its redis_version stays 7.2.4). */
  version: string;
  /** INFO server's redis_version: the version itself for Redis, the Redis it is compatible with for Valkey. */
  redisVersion: string;
  /** For bench figure names: redis_7_0, redis_7_2, valkey_8_0. */
  label: string;
  /** The server and cli binaries: a path, or a name looked up on PATH. */
  server: string;
  cli: string;
  /** Second octet of every loopback address while this engine runs. */
  net: number;
  /**
   * The runtime-managed directives (src/api/config-directives.ts) whose compiled-in default differs
   * from the table's (Redis 7's), as CONFIG GET '*' on a fresh server of each binary showed. The
   * operator keeps the table's value on every engine, so a fresh node of this engine gets these
   * CONFIG SET back to the table's values.
   */
  ownDefaults: Readonly<Record<string, string>>;
}

const REPO = fileURLToPath(new URL('../../', import.meta.url));
/** ../shared/engines next to the repository (as test/k8s/images/recipes.ts reads it). */
export const SHARED_ENGINES = path.resolve(REPO, '..', 'shared', 'engines');

export const ENGINES: Readonly<Record<EngineId, TestEngine>> = {
  'redis-7.0': {
    id: 'redis-7.0',
    engine: 'redis',
    version: '7.0.15',
    redisVersion: '7.0.15',
    label: 'redis_7_0',
    server: 'redis-server',
    cli: 'redis-cli',
    net: 0,
    ownDefaults: {},
  },
  'redis-7.2': {
    id: 'redis-7.2',
    engine: 'redis',
    version: '7.2.6',
    redisVersion: '7.2.6',
    label: 'redis_7_2',
    server: path.join(SHARED_ENGINES, 'redis-7.2.6', 'redis-server'),
    cli: path.join(SHARED_ENGINES, 'redis-7.2.6', 'redis-cli'),
    net: 1,
    ownDefaults: {},
  },
  'valkey-8.0': {
    id: 'valkey-8.0',
    engine: 'valkey',
    version: '8.0.1',
    redisVersion: '7.2.4',
    label: 'valkey_8_0',
    server: path.join(SHARED_ENGINES, 'valkey-8.0.1', 'valkey-server'),
    cli: path.join(SHARED_ENGINES, 'valkey-8.0.1', 'valkey-cli'),
    net: 2,
    ownDefaults: {
      'lazyfree-lazy-eviction': 'yes',
      'lazyfree-lazy-expire': 'yes',
      'lazyfree-lazy-server-del': 'yes',
      'lazyfree-lazy-user-del': 'yes',
      'lazyfree-lazy-user-flush': 'yes',
      'repl-backlog-size': '10485760',
    },
  },
};

export const DEFAULT_ENGINE: EngineId = 'redis-7.0';

export function isEngineId(s: string): s is EngineId {
  return Object.hasOwn(ENGINES, s);
}

/** The engine REDIS_OPERATOR_TEST_ENGINE names (read on every call), the default when unset. */
export function selectedEngine(env: NodeJS.ProcessEnv = process.env): TestEngine {
  const id = env[ENGINE_ENV] || DEFAULT_ENGINE;
  if (!isEngineId(id)) throw new Error(`${ENGINE_ENV}=${id} is not one of ${Object.keys(ENGINES).join(', ')}`);
  return ENGINES[id];
}

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(name: string): boolean {
  return (process.env['PATH'] ?? '').split(path.delimiter).some((d) => d !== '' && executable(path.join(d, name)));
}

/** Why this engine cannot run here (a one-line skip reason), or undefined when its binaries are there. */
export function engineMissing(engine: TestEngine): string | undefined {
  for (const bin of [engine.server, engine.cli]) {
    const there = path.isAbsolute(bin) ? executable(bin) : onPath(bin);
    if (!there) return `${engine.id}: no ${bin}${path.isAbsolute(bin) ? '' : ' on PATH'}`;
  }
  return undefined;
}

/**
 * Runs a suite file (a path from the repository's root) in this process under engine id, its tests
 * nested under "on <id>": what each file of test/sidecar/engines is. Skips with the reason when the
 * engine's binaries are absent.
 */
export async function runOnEngine(id: EngineId, suite: string): Promise<void> {
  const engine = ENGINES[id];
  const missing = engineMissing(engine);
  const name = `${suite} on ${id}`;
  if (missing !== undefined) {
    test(name, { skip: missing }, () => undefined);
    return;
  }
  process.env[ENGINE_ENV] = id;
  const url = pathToFileURL(path.join(REPO, suite)).href;
  await describe(name, async () => {
    await import(url);
  });
}

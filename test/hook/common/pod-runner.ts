// Runs the redis container the hook generated, as the kubelet would, against a real redis-server:
// the ConfigMap's redis.conf in a temp dir (its `dir` and `bind` swapped for the temp dir and a
// loopback address, as redis/probes.test.ts does), the container's own `sh -c` script with its
// config path swapped for that file, in the data directory (its workingDir), with the env the pod
// would have (Secrets resolved from a map, fieldRefs from the pod). Says whether redis-server
// came to serve or the container exited, with everything the container printed.
// Invariants: no process outlives the test (killed in stop(), and by pdeathsig if node dies);
// nothing addresses anything outside 127.0.0.0/8.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONFIG_KEY, CONFIG_MOUNT } from '../../../src/api/labels.ts';
import type { KubeObject } from '../../../src/hook/index.ts';
import { get, type Json } from './helpers.ts';

/** What each env var read from a Secret holds, by env var name (REDIS_PASSWORD, OPERATOR_PASSWORD). */
export type Secrets = Record<string, string>;

export interface Pod {
  ip: string;
  /** 'serving': redis-server answered the operator's PING; 'exited': the container stopped first. */
  outcome: 'serving' | 'exited';
  exitCode: number | null;
  /** stdout and stderr so far (what `kubectl logs` would show). */
  output: () => string;
  stop: () => Promise<string>;
}

/** The redis container of the first StatefulSet among `children`, and the one ConfigMap's redis.conf. */
export function podParts(children: readonly KubeObject[]): { conf: string; container: Json } {
  const configMap = children.find((c) => c.kind === 'ConfigMap' && typeof get(c, 'data', CONFIG_KEY) === 'string');
  const set = children.find((c) => c.kind === 'StatefulSet');
  const containers = get(set, 'spec', 'template', 'spec', 'containers') as Json[] | undefined;
  const container = containers?.find((c) => c['name'] === 'redis');
  if (!configMap || !container)
    throw new Error(`no ConfigMap with ${CONFIG_KEY} or no redis container among the children`);
  return { conf: get(configMap, 'data', CONFIG_KEY) as string, container };
}

function podEnv(container: Json, ip: string, secrets: Secrets): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env['PATH'] ?? '/usr/bin:/bin' };
  for (const e of (container['env'] as Json[] | undefined) ?? []) {
    const name = e['name'] as string;
    if (typeof e['value'] === 'string') env[name] = e['value'];
    if (get(e, 'valueFrom', 'secretKeyRef') !== undefined) {
      const value = secrets[name];
      // As the kubelet does: an optional reference the test gives no value for leaves the variable unset.
      if (value === undefined && get(e, 'valueFrom', 'secretKeyRef', 'optional') === true) continue;
      if (value === undefined) throw new Error(`the pod reads ${name} from a Secret, which the test did not give`);
      env[name] = value;
    }
    const field = get(e, 'valueFrom', 'fieldRef', 'fieldPath');
    if (field === 'status.podIP') env[name] = ip;
    if (field === 'metadata.name') env[name] = 'pod-0';
  }
  return env;
}

/** redis-cli against the pod, with `password` (REDISCLI_AUTH) or none. */
export function redisCli(ip: string, password: string | undefined, ...args: string[]): Promise<string> {
  return new Promise((resolve) => {
    const env = {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      ...(password !== undefined ? { REDISCLI_AUTH: password } : {}),
    };
    execFile('redis-cli', ['-h', ip, '-p', '6379', ...args], { env, timeout: 5000 }, (_e, stdout, stderr) =>
      resolve(`${stdout}${stderr}`),
    );
  });
}

/**
 * Starts the container with `secrets`; resolves once redis-server serves the operator's user, or the container exited.
 */
export async function startPod(children: readonly KubeObject[], ip: string, secrets: Secrets): Promise<Pod> {
  const { conf, container } = podParts(children);
  const dir = mkdtempSync(join(tmpdir(), 'redis-pod-'));
  writeFileSync(join(dir, 'redis.conf'), conf.replace(/^dir .*$/m, `dir ${dir}`).replace(/^bind .*$/m, `bind ${ip}`));
  const script = (container['command'] as string[])[2]!.replace(`${CONFIG_MOUNT}/${CONFIG_KEY}`, `${dir}/redis.conf`);
  let output = '';
  let exitCode: number | null = null;
  const child: ChildProcess = spawn('setpriv', ['--pdeathsig', 'KILL', 'sh', '-c', script], {
    cwd: dir,
    env: { ...podEnv(container, ip, secrets), RESTART_HOLD_SECONDS: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code) => {
      exitCode = code;
      resolve();
    }),
  );
  child.stdout?.on('data', (c: Buffer) => (output += c.toString('latin1')));
  child.stderr?.on('data', (c: Buffer) => (output += c.toString('latin1')));
  const stop = async () => {
    if (exitCode === null) child.kill('SIGKILL');
    await exited;
    rmSync(dir, { recursive: true, force: true });
    return output;
  };
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (exitCode !== null) return { ip, outcome: 'exited', exitCode, output: () => output, stop };
    if ((await redisCli(ip, secrets['OPERATOR_PASSWORD'], '--user', 'redis-operator', 'ping')).includes('PONG'))
      return { ip, outcome: 'serving', exitCode: null, output: () => output, stop };
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`the pod neither served nor exited within 10 s: ${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

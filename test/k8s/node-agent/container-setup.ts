// What one container instance needs before its process starts, as the runtime would create the
// container: its environment (container.ts's resolveEnv), mounts (volume directories and the
// instance's own termination message file at terminationMessagePath), argv, working directory,
// and its bin directory (the redis-server shim; `node` for the operator image, whose env paths
// are mapped: operator-image.ts; the host's redis_exporter for the exporter image, its addresses
// rewritten on loopback pods: exporter-image.ts). Also where an instance's log and termination
// message are read.
// Invariants: an instance's files are named by its restartCount (logs/<container>/<n>.log,
// containers/<container>/termination-log/<n>), so a restart never sees the last one's message;
// nothing is written unless the container can start.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  containerArgv,
  isExporterImage,
  isOperatorImage,
  isRedisImage,
  mapPath,
  redisShim,
  resolveEnv,
  type Mount,
} from '../../cluster/workloads/container.ts';
import { exporterImageID, exporterProcess } from '../../cluster/workloads/exporter-image.ts';
import type { ContainerHost, ContainerRuntime } from './containers.ts';
import { IMAGE_ENV, installNode, mapEnvPaths, operatorImageID, operatorMounts, operatorWorkingDir } from './operator-image.ts';
import { DEFAULT_MESSAGE_PATH, joinMessages, MAX_LOG_BYTES, MAX_MESSAGE_BYTES, readTail, terminationMessage } from './termination-message.ts';

const BASE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** containerStatuses[].imageID's prefix for what the agent runs. */
export const IMAGE_ID_SCHEME = 'node-agent://';

export function logFile(podDir: string, container: string, restartCount: number): string {
  return path.join(podDir, 'logs', container, `${restartCount}.log`);
}

export interface ProcessPlan {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  /** Volume mounts and the termination message file (for exec probes' path mapping). */
  mounts: Mount[];
  messageFile: string;
  log: string;
}

export type Refusal = { reason: 'CreateContainerConfigError' | 'CreateContainerError'; message: string };

function volumeMounts(h: ContainerHost, c: ContainerRuntime): Mount[] | string {
  const mounts: Mount[] = [];
  for (const m of c.spec.volumeMounts ?? []) {
    const host = h.volumes.hostPaths?.get(m.name);
    if (host === undefined) return `volumeMount "${m.name}" names no volume of the pod`;
    const hostPath = m.subPath ? path.join(host, m.subPath) : host;
    if (m.subPath) mkdirSync(hostPath, { recursive: true });
    mounts.push({ containerPath: m.mountPath, hostPath });
  }
  return mounts;
}

/** Instance `instance` (its restartCount) of container `c`, ready to spawn, or why it cannot start. */
export function planProcess(h: ContainerHost, c: ContainerRuntime, instance: number): ProcessPlan | Refusal {
  const ip = h.ip!;
  const { secrets, configMaps } = h.volumes.sources;
  const lookup = { secret: (n: string) => secrets.get(n), configMap: (n: string) => configMaps.get(n) };
  const env = resolveEnv(h.pod, c.spec, lookup, { podIP: ip, hostIP: h.node.hostIP }, h.node.machine);
  if (!env.ok) return { reason: 'CreateContainerConfigError', message: env.message };
  const mounts = volumeMounts(h, c);
  if (typeof mounts === 'string') return { reason: 'CreateContainerError', message: mounts };
  const cdir = path.join(h.dir, 'containers', c.spec.name);
  // The kubelet bind-mounts a fresh file at terminationMessagePath for each instance.
  const messageFile = path.join(cdir, 'termination-log', String(instance));
  const messagePath = c.spec.terminationMessagePath ?? DEFAULT_MESSAGE_PATH;
  if (messagePath) mounts.push({ containerPath: messagePath, hostPath: messageFile });
  const operator = isOperatorImage(c.spec.image);
  const envMounts = operator ? operatorMounts(mounts) : mounts;
  // No mount namespace: the operator's program could not open /tls/ca.crt, so its env names host paths.
  const containerEnv = operator ? mapEnvPaths(env.env, envMounts) : env.env;
  const command = containerArgv(c.spec, containerEnv);
  if (!Array.isArray(command)) return { reason: 'CreateContainerError', message: command.error };
  // Loopback pods share the host's network namespace: the exporter's 127.0.0.1 and :9121 are rewritten.
  const sharedNetns = (h.sandbox?.exec ?? []).length === 0;
  const exporter = isExporterImage(c.spec.image) ? exporterProcess(command, containerEnv, { podIP: ip, sharedNetns }) : undefined;
  if (exporter && 'error' in exporter) return { reason: 'CreateContainerError', message: exporter.error };
  const argv = exporter?.argv ?? command;

  const bin = path.join(cdir, 'bin');
  const rootfs = path.join(cdir, 'rootfs');
  mkdirSync(bin, { recursive: true });
  mkdirSync(rootfs, { recursive: true });
  mkdirSync(path.dirname(messageFile), { recursive: true });
  writeFileSync(messageFile, '');
  const shim = path.join(bin, 'redis-server');
  writeFileSync(shim, redisShim({ realBinary: h.node.redisServer, mounts, podIP: ip, rewrittenConf: path.join(cdir, 'redis.conf'), ownNetns: !sharedNetns }));
  chmodSync(shim, 0o755);
  if (operator) {
    installNode(bin);
    operatorImageID(); // hashed once, here rather than in the middle of a status write
  }
  if (exporter) exporterImageID(IMAGE_ID_SCHEME);
  const workDir = operator
    ? operatorWorkingDir(c.spec.workingDir, envMounts)
    : mapPath(mounts, c.spec.workingDir ?? (isRedisImage(c.spec.image) ? '/data' : '/'));
  const cwd = workDir ?? rootfs;
  mkdirSync(cwd, { recursive: true });
  const processEnv: Record<string, string> = { PATH: `${bin}:${BASE_PATH}`, HOSTNAME: h.pod.spec?.hostname ?? h.name, HOME: rootfs };
  for (const [k, v] of [...(operator ? IMAGE_ENV : []), ...(exporter?.env ?? containerEnv)]) processEnv[k] = v;
  const log = logFile(h.dir, c.spec.name, instance);
  mkdirSync(path.dirname(log), { recursive: true });
  return { argv, env: processEnv, cwd, mounts, messageFile, log };
}

/** The exited instance's message: the runtime's (a start error) joined with its termination message. */
export function instanceMessage(h: ContainerHost, c: ContainerRuntime, exitCode: number, runtimeMessage: string | undefined): string | undefined {
  return joinMessages(
    runtimeMessage,
    terminationMessage({
      file: c.messageFile === undefined ? undefined : readTail(c.messageFile, MAX_MESSAGE_BYTES),
      policy: c.spec.terminationMessagePolicy,
      exitCode,
      logTail: () => readTail(logFile(h.dir, c.spec.name, c.restartCount), MAX_LOG_BYTES),
    }),
  );
}

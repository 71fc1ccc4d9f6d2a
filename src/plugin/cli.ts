// `kubectl redis cli NAME [--pod POD] [-- ARGS]`: a redis-cli session on a node of a Redis or a
// RedisCluster, as the operator's ACL user, through `kubectl exec` into the pod's redis container.
// Which pod (the master by the role label the sidecar keeps, or the one named), how it is reached
// (TLS when the pod mounts the TLS files, `-c` on a cluster node) and kubectl's argv are decided
// here without I/O; cliCommand at the bottom lists the pods and runs kubectl.
// Invariants:
// - No password passes through this process or appears on any command line: the plugin never
//   reads a Secret (it needs only `list pods` and `create pods/exec`); the container's shell
//   expands OPERATOR_PASSWORD, which the pod has from Secret <name>-operator, into REDISCLI_AUTH
//   and `exec`s redis-cli, so kubectl's argv, the shell's and redis-cli's (`ps` in the pod) carry
//   only the literal text `$OPERATOR_PASSWORD`.
// - The user's arguments are never read by a shell: no shell runs between this process and
//   kubectl (spawn, not exec), and in the pod they are the script's positional parameters,
//   passed on as "$@", one argv element each, exactly as given. The script itself is a constant.
// - The connection is the probes' (statefulset.ts redisCli): the same user, host, port and CA file.
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { OPERATOR_USER } from '../api/auth.ts';
import { REDIS_CLUSTER_APP_NAME as CLUSTER_APP_NAME, SHARD_LABEL } from '../api/rediscluster-names.ts';
import {
  APP_NAME,
  INSTANCE_LABEL,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  NAME_LABEL,
  REDIS_CONTAINER,
  REDIS_PORT,
  ROLE_LABEL,
  ROLE_MASTER,
  TLS_MOUNT,
} from '../api/labels.ts';
import { TLS_FILE_DIRECTIVES } from '../api/tls.ts';

/** The pods of a Redis or a RedisCluster called `name`: never its backup or restore Jobs' pods. */
export function cliPodSelector(name: string): string {
  return `${INSTANCE_LABEL}=${name},${MANAGED_BY_LABEL}=${MANAGED_BY},${NAME_LABEL} in (${APP_NAME},${CLUSTER_APP_NAME})`;
}

export interface CliPod {
  metadata?: { name?: string; labels?: Record<string, string> };
  spec?: { containers?: Array<{ name?: string; volumeMounts?: Array<{ mountPath?: string }> }> };
  status?: { conditions?: Array<{ type?: string; status?: string }> };
}

export interface Node {
  pod: string;
  /** The pod's redis container mounts the TLS files: redis-server there serves TLS only. */
  tls: boolean;
  /** A RedisCluster node: redis-cli follows MOVED and ASK (`-c`). */
  cluster: boolean;
}

export type NodeChoice = { ok: true; node: Node } | { ok: false; reason: string; exit: number };

const podName = (p: CliPod) => p.metadata?.name ?? '';
const ready = (p: CliPod) => (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
const isMaster = (p: CliPod) => p.metadata?.labels?.[ROLE_LABEL] === ROLE_MASTER;
const shardOf = (p: CliPod) => Number(p.metadata?.labels?.[SHARD_LABEL] ?? Number.MAX_SAFE_INTEGER);

/** What the pod itself says, not the spec: during a change the pod's own template is what it serves. */
function nodeOf(p: CliPod): Node {
  const redis = (p.spec?.containers ?? []).find((c) => c.name === REDIS_CONTAINER);
  return {
    pod: podName(p),
    tls: (redis?.volumeMounts ?? []).some((m) => m.mountPath === TLS_MOUNT),
    cluster: p.metadata?.labels?.[NAME_LABEL] === CLUSTER_APP_NAME,
  };
}

/**
 * The pod to run redis-cli in: `wanted` when it is one of `pods` (the pods cliPodSelector lists),
 * else the master. A Redis has one pod labelled master; a RedisCluster has one per shard, and any
 * will do with `-c`: the Ready one of the lowest shard, so repeated runs land on the same node.
 */
export function chooseNode(
  name: string,
  namespace: string,
  pods: readonly CliPod[],
  wanted: string | undefined,
): NodeChoice {
  const names = pods.map(podName).sort();
  if (pods.length === 0)
    return {
      ok: false,
      exit: 3,
      reason: `no pod of a Redis or RedisCluster "${name}" in namespace "${namespace}" (no such name, or hibernated)`,
    };
  const kinds = new Set(pods.map((p) => nodeOf(p).cluster));
  if (wanted !== undefined) {
    const p = pods.find((q) => podName(q) === wanted);
    return p
      ? { ok: true, node: nodeOf(p) }
      : { ok: false, exit: 1, reason: `${wanted} is not a pod of "${name}" (its pods: ${names.join(', ')})` };
  }
  if (kinds.size > 1)
    return {
      ok: false,
      exit: 1,
      reason: `both a Redis and a RedisCluster are named "${name}": give --pod (one of ${names.join(', ')})`,
    };
  const masters = pods.filter(isMaster);
  if (masters.length === 0)
    return {
      ok: false,
      exit: 1,
      reason: `no pod of "${name}" is labelled master yet (a bootstrap or failover under way): wait, or give --pod (one of ${names.join(', ')})`,
    };
  if (kinds.has(true)) {
    const best = [...masters].sort(
      (a, b) => Number(ready(b)) - Number(ready(a)) || shardOf(a) - shardOf(b) || podName(a).localeCompare(podName(b)),
    )[0]!;
    return { ok: true, node: nodeOf(best) };
  }
  // The sidecar never labels two masters; should a hand edit do it, say so rather than guess.
  if (masters.length > 1)
    return {
      ok: false,
      exit: 1,
      reason: `${masters.map(podName).sort().join(' and ')} are both labelled master: give --pod`,
    };
  return { ok: true, node: nodeOf(masters[0]!) };
}

/**
 * The script the pod's shell runs, a constant per transport: the operator's password from the
 * container's env into REDISCLI_AUTH (exported: an assignment before the special builtin `exec`
 * is not exported by every shell), then redis-cli replaces the shell (`exec`), with the caller's
 * arguments last so they may add to or override these flags.
 */
export function cliScript(node: Pick<Node, 'tls' | 'cluster'>): string {
  const flags = [
    ...(node.cluster ? ['-c'] : []),
    ...(node.tls ? ['--tls', '--cacert', TLS_FILE_DIRECTIVES['tls-ca-cert-file']!] : []),
  ];
  return `export REDISCLI_AUTH="$OPERATOR_PASSWORD"; exec redis-cli ${[...flags, '--user', OPERATOR_USER, '-h', '"$POD_IP"', '-p', String(REDIS_PORT)].join(' ')} "$@"`;
}

export interface ExecOptions {
  namespace: string;
  context?: string | undefined;
  kubeconfig?: string | undefined;
  /**
   * stdin and stdout are terminals: an interactive session (`-t`); otherwise stdin is streamed (`-i`) for pipes and
   * scripts.
   */
  tty: boolean;
  /** The redis-cli arguments the user gave after `--`. */
  args: readonly string[];
}

/**
 * kubectl's argv. Every flag carries its value in the same element (`--namespace=x`), so no value
 * can be read as a flag; `--` ends kubectl's flags; the shell's `$0` is `redis-cli`, what an
 * error message from the shell names.
 */
export function kubectlExecArgs(node: Node, o: ExecOptions): string[] {
  return [
    'exec',
    o.tty ? '-it' : '-i',
    `--namespace=${o.namespace}`,
    ...(o.context !== undefined ? [`--context=${o.context}`] : []),
    ...(o.kubeconfig !== undefined ? [`--kubeconfig=${o.kubeconfig}`] : []),
    `--container=${REDIS_CONTAINER}`,
    node.pod,
    '--',
    'sh',
    '-c',
    cliScript(node),
    'redis-cli',
    ...o.args,
  ];
}

/** A refusal before anything runs: the message and the exit code (3 nothing to connect to, 2 usage, 1 otherwise). */
export class CliRefused extends Error {
  readonly code: number;
  constructor(message: string, code: number) {
    super(message);
    this.code = code;
  }
}

export interface CliCommandOptions {
  pod?: string | undefined;
  context?: string | undefined;
  kubeconfig?: string | undefined;
  /** Positionals after NAME and before `--`: redis-cli's arguments belong after `--`. */
  stray: readonly string[];
  args: readonly string[];
}

/**
 * Lists the pods, picks the node and runs kubectl with this process's terminal; resolves to kubectl's exit code
 * (redis-cli's, through exec).
 */
export async function cliCommand(
  k: { namespace: string; podsSelected: (selector: string) => Promise<CliPod[]> },
  name: string,
  o: CliCommandOptions,
): Promise<number> {
  if (o.stray.length > 0)
    throw new CliRefused(
      `cli ${name}: redis-cli's arguments go after --, e.g. kubectl redis cli ${name} -- ${o.stray.join(' ')}`,
      2,
    );
  const choice = chooseNode(name, k.namespace, await k.podsSelected(cliPodSelector(name)), o.pod);
  if (!choice.ok) throw new CliRefused(`cli ${name}: ${choice.reason}`, choice.exit);
  const tty = process.stdin.isTTY === true && process.stdout.isTTY === true;
  const argv = kubectlExecArgs(choice.node, {
    namespace: k.namespace,
    context: o.context,
    kubeconfig: o.kubeconfig,
    tty,
    args: o.args,
  });
  return new Promise((resolve, reject) => {
    const child = spawn('kubectl', argv, { stdio: 'inherit' });
    // Ctrl-C without a terminal reaches the whole process group: kubectl ends the session and its
    // exit code is the answer; this process must not die first.
    const ignore = () => undefined;
    process.on('SIGINT', ignore);
    child.once('error', (err: NodeJS.ErrnoException) => {
      process.off('SIGINT', ignore);
      reject(err.code === 'ENOENT' ? new CliRefused('cli: kubectl is not on PATH', 1) : err);
    });
    child.once('exit', (code, signal) => {
      process.off('SIGINT', ignore);
      resolve(code ?? 128 + (signal ? constants.signals[signal] : 0));
    });
  });
}

// `kubectl redis`: argument parsing, the commands and their wait loops. The views and decisions
// are view.ts and ops.ts; the API is kube.ts. node:util parseArgs: no argument parser is a direct
// dependency (commander is only a transitive one), and kubectl's few global flags fit it.
// Invariant: every error is printed as one line naming the problem, with a non-zero exit code.
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect, KubeError, type BackupLike, type Kube } from './kube.ts';
import * as clusterOps from './cluster-ops.ts';
import { MAX_REDISCLUSTER_BACKUP_NAME_LENGTH } from '../api/backup.ts';
import * as status from './status.ts';
import { coloured, eventLines, eventViews, plain } from './view.ts';
import * as ops from './ops.ts';
import { SWITCHOVER_STATUS_ANNOTATION } from '../api/labels.ts';
import { cliCommand, CliRefused } from './cli.ts';

const USAGE = `usage: kubectl redis <command> [flags]
  status NAME [-o json|leader]   the Redis (or RedisCluster) at a glance: pods, roles, lag, the sidecar leading it
                                 (-o leader: that sidecar's pod alone; rediscluster/NAME when a Redis has the name too)
  events NAME                    the operator's events for that Redis, oldest first
  cli NAME [--pod POD] [-- ARGS] redis-cli on the master (or POD) as the operator's user, over TLS when the Redis uses it
  switchover NAME [--to POD]     a planned switchover (to the best replica without --to)
  switchover rediscluster/NAME --shard N | --to POD
                                 a RedisCluster shard's master moves to its best replica (or POD)
  hibernate NAME | wake NAME     stop every pod keeping the volumes | bring them back (a RedisCluster too:
                                 rediscluster/NAME when a Redis has the name too)
  bootstrap-without NAME POD...  a bootstrap stops waiting for these pods, gone for good (their newest writes are lost)
  backup NAME [--backup-name B]  an on-demand RedisBackup (of a RedisCluster: one snapshot per shard,
                                 with its slots; rediscluster/NAME when a Redis has the name too)
  restore NEW --from-backup B | --from-location URL [--like REDIS] [--tls-secret S]
                                 a new Redis restored from a backup, shaped like REDIS (without its
                                 restore, hibernate and TLS Secret: the command says what it left out);
                                 from a backup of a RedisCluster, a new RedisCluster with its shards'
                                 slots, shaped like --like RC
flags: -n/--namespace, --context, --kubeconfig, --timeout 5m, --no-wait,
  --operator-namespace NS (default: found, from the Redis CompositeController or the operator's Deployment)`;

class Exit extends Error {
  readonly code: number;
  constructor(message: string, code: number) {
    super(message);
    this.code = code;
  }
}

export function duration(text: string): number {
  const m = /^(\d+)(ms|s|m|h)?$/.exec(text);
  if (!m) throw new Exit(`--timeout ${text}: not a duration (e.g. 90s, 5m)`, 2);
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms']!;
}

async function waitFor(
  what: string,
  timeoutMs: number,
  out: (l: string) => void,
  poll: () => Promise<ops.Progress>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    const p = await poll();
    if (p.line !== last) out(`${what}: ${p.line}`);
    last = p.line;
    if (p.state === 'done') return;
    if (p.state === 'refused') throw new Exit(`${what} refused: ${p.line}`, 1);
    if (Date.now() > deadline) throw new Exit(`${what} timed out after ${timeoutMs / 1000} s: ${p.line}`, 6);
    await sleep(1000);
  }
}

async function requireOperator(k: Kube) {
  const o = await k.operator();
  const r = ops.operatorRunning(o.deployment, o.leases, ops.clusterNow(o.serverDate, Date.now()));
  if (!r.running) throw new Exit(r.reason, 5);
}

async function clusterSwitchover(
  k: Kube,
  name: string,
  values: { to?: string | undefined; shard?: string | undefined },
  wait: boolean,
  timeout: number,
  out: (l: string) => void,
): Promise<number> {
  const target = ops.clusterSwitchoverTarget(values.to, values.shard);
  if (!target.ok) throw new Exit(`switchover ${name}: ${target.reason}`, 2);
  const cluster = await k.getCluster(name);
  await requireOperator(k);
  const record = () => k.getCluster(name).then((c) => c.metadata.annotations?.[SWITCHOVER_STATUS_ANNOTATION]);
  const current = cluster.metadata.annotations?.[SWITCHOVER_STATUS_ANNOTATION]?.split(': ')[0];
  const request = ops.switchoverRequest(target.target, current, Date.now().toString(36));
  await k.patchCluster(name, ops.switchoverPatch(request));
  out(`switchover rediscluster/${name}: requested ${request}`);
  if (wait)
    await waitFor(`switchover rediscluster/${name}`, timeout, out, async () =>
      ops.switchoverRecordProgress(request, await record()),
    );
  return 0;
}

export async function run(
  argv: string[],
  env: NodeJS.ProcessEnv,
  out: (l: string) => void,
  tty: boolean,
): Promise<number> {
  const { values, positionals, tokens } = parseArgs({
    args: argv,
    allowPositionals: true,
    tokens: true,
    options: {
      namespace: { type: 'string', short: 'n' },
      context: { type: 'string' },
      kubeconfig: { type: 'string' },
      output: { type: 'string', short: 'o' },
      to: { type: 'string' },
      shard: { type: 'string' },
      timeout: { type: 'string', default: '5m' },
      'operator-namespace': { type: 'string' },
      'backup-name': { type: 'string' },
      'from-backup': { type: 'string' },
      'from-location': { type: 'string' },
      like: { type: 'string' },
      pod: { type: 'string' },
      'tls-secret': { type: 'string' },
      'no-wait': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [command, name] = positionals;
  if (values.help || !command) return (out(USAGE), values.help ? 0 : 2);
  if (!name) throw new Exit(`${command}: a Redis name is required\n${USAGE}`, 2);
  const paint = tty && env['NO_COLOR'] === undefined ? coloured : plain;
  const timeout = duration(values.timeout);
  const k = connect({
    kubeconfig: values.kubeconfig,
    context: values.context,
    namespace: values.namespace,
    operatorNamespace: values['operator-namespace'],
  });
  const wait = !values['no-wait'];
  switch (command) {
    case 'status':
      return status.run(k, name, values.output, out, paint).catch((err: unknown) => {
        throw err instanceof status.UsageError ? new Exit(err.message, 2) : err;
      });
    case 'events':
      await k.getRedis(name);
      eventLines(eventViews(await k.events(name)), paint).forEach((l) => out(l));
      return 0;
    case 'switchover': {
      const picked = await status.target(k, name).catch((err: unknown) => {
        throw err instanceof status.UsageError ? new Exit(err.message.replace(/^status/, 'switchover'), 2) : err;
      });
      if (picked.kind === 'RedisCluster') return clusterSwitchover(k, picked.name, values, wait, timeout, out);
      const redis = await k.getRedis(name);
      await requireOperator(k);
      const request = ops.switchoverRequest(
        values.to,
        redis.status?.switchover?.split(': ')[0],
        Date.now().toString(36),
      );
      await k.patchRedis(name, ops.switchoverPatch(request));
      out(`switchover ${name}: requested ${request}`);
      if (wait)
        await waitFor(`switchover ${name}`, timeout, out, async () =>
          ops.switchoverProgress(request, (await k.getRedis(name)).status),
        );
      return 0;
    }
    case 'hibernate':
    case 'wake': {
      const on = command === 'hibernate';
      const what = await status.target(k, name).catch((err: unknown) => {
        throw err instanceof status.UsageError ? new Exit(err.message.replace(/^status/, command), 2) : err;
      });
      await requireOperator(k);
      const cluster = what.kind === 'RedisCluster';
      const label = cluster ? `rediscluster/${what.name}` : name;
      await (cluster ? k.patchCluster(what.name, ops.hibernatePatch(on)) : k.patchRedis(name, ops.hibernatePatch(on)));
      out(`${command} ${label}: spec.hibernate is ${String(on)}`);
      if (wait)
        await waitFor(`${command} ${label}`, timeout, out, async () =>
          ops.hibernateProgress(on, (cluster ? await k.getCluster(what.name) : await k.getRedis(name)).status),
        );
      return 0;
    }
    case 'bootstrap-without': {
      const redis = await k.getRedis(name);
      const verdict = ops.bootstrapWithout(redis, positionals.slice(2));
      if (!verdict.ok) throw new Exit(`bootstrap-without ${name}: ${verdict.reason}`, 1);
      await requireOperator(k);
      out(verdict.warning);
      await k.patchRedis(name, verdict.patch);
      out(`bootstrap-without ${name}: gave up on ${verdict.pods.join(', ')}`);
      if (wait)
        await waitFor(`bootstrap ${name}`, timeout, out, async () =>
          ops.bootstrapProgress((await k.getRedis(name)).status),
        );
      return 0;
    }
    case 'backup': {
      const what = await status.target(k, name).catch((err: unknown) => {
        throw err instanceof status.UsageError ? new Exit(err.message.replace(/^status/, 'backup'), 2) : err;
      });
      if (what.kind === 'RedisCluster') return clusterBackup(k, what.name, values['backup-name'], wait, timeout, out);
      const refusal = ops.backupRefusal(what.object);
      if (refusal !== undefined) throw new Exit(`backup ${name}: ${refusal}`, 1);
      await requireOperator(k);
      const bname =
        values['backup-name'] ??
        `${name}-${new Date()
          .toISOString()
          .replace(/[^0-9]/g, '')
          .slice(0, 14)}`;
      await k.createBackup(ops.backupObject(name, k.namespace, bname));
      out(`backup ${name}: created RedisBackup ${bname}`);
      if (wait)
        await waitFor(`backup ${bname}`, timeout, out, async () =>
          ops.backupProgress((await k.getBackup(bname)).status),
        );
      return 0;
    }
    case 'restore': {
      const from = { backup: values['from-backup'], location: values['from-location'] };
      if (!from.backup === !from.location)
        throw new Exit('restore: give exactly one of --from-backup or --from-location', 2);
      // A backup of a RedisCluster restores into a RedisCluster; any other (or one not readable) as before.
      const backup = from.backup !== undefined ? await k.getBackup(from.backup).catch(() => undefined) : undefined;
      if (backup?.spec?.redisCluster !== undefined)
        return clusterRestore(k, name, from.backup!, backup, values.like, wait, timeout, out);
      const source = values.like ? ((await k.getRedis(values.like)).spec ?? {}) : {};
      const like = ops.likeSpec(values.like ?? '', source, { name, namespace: k.namespace }, values['tls-secret']);
      if (!like.ok) throw new Exit(`restore ${name}: ${like.reason}`, 2);
      await requireOperator(k);
      await k.createRedis(
        ops.restoreObject(name, k.namespace, from as { backup?: string; location?: string }, like.spec),
      );
      out(`restore ${name}: created Redis ${name} from ${from.backup ?? from.location}`);
      for (const left of like.leftOut) out(`restore ${name}: left out ${left}`);
      if (wait)
        await waitFor(`restore ${name}`, timeout, out, async () =>
          ops.restoreProgress((await k.getRedis(name)).status),
        );
      return 0;
    }
    case 'cli': {
      const dash = tokens.find((t) => t.kind === 'option-terminator');
      const args = dash ? argv.slice(dash.index + 1) : [];
      const { pod, context, kubeconfig } = values;
      return cliCommand(k, name, {
        pod,
        context,
        kubeconfig,
        args,
        stray: positionals.slice(2, positionals.length - args.length),
      });
    }
    default:
      throw new Exit(`unknown command ${command}\n${USAGE}`, 2);
  }
}

function backupName(name: string, given: string | undefined): string {
  return (
    given ??
    `${name}-${new Date()
      .toISOString()
      .replace(/[^0-9]/g, '')
      .slice(0, 14)}`
  );
}

async function clusterBackup(
  k: Kube,
  name: string,
  given: string | undefined,
  wait: boolean,
  timeout: number,
  out: (l: string) => void,
): Promise<number> {
  const refusal = clusterOps.clusterBackupRefusal(await k.getCluster(name));
  if (refusal !== undefined) throw new Exit(`backup ${name}: ${refusal}`, 1);
  await requireOperator(k);
  const bname = backupName(name, given);
  if (bname.length > MAX_REDISCLUSTER_BACKUP_NAME_LENGTH)
    throw new Exit(
      `backup ${name}: RedisBackup ${bname} is longer than ${MAX_REDISCLUSTER_BACKUP_NAME_LENGTH} characters (its Jobs are <name>-backup-<shard>): give --backup-name`,
      2,
    );
  await k.createBackup(clusterOps.clusterBackupObject(name, k.namespace, bname));
  out(`backup ${name}: created RedisBackup ${bname} of RedisCluster ${name}`);
  if (wait)
    await waitFor(`backup ${bname}`, timeout, out, async () =>
      clusterOps.clusterBackupProgress((await k.getBackup(bname)).status),
    );
  return 0;
}

async function clusterRestore(
  k: Kube,
  name: string,
  from: string,
  backup: BackupLike,
  like: string | undefined,
  wait: boolean,
  timeout: number,
  out: (l: string) => void,
): Promise<number> {
  const likeSpec = like !== undefined ? ((await k.getCluster(like)).spec ?? {}) : {};
  const made = clusterOps.clusterRestoreSpec(
    { name: from, redisCluster: backup.spec?.redisCluster, status: backup.status },
    like ?? '',
    likeSpec,
  );
  if (!made.ok) throw new Exit(`restore ${name}: ${made.reason}`, 2);
  await requireOperator(k);
  await k.createCluster(clusterOps.clusterRestoreObject(name, k.namespace, made.spec));
  out(`restore ${name}: created RedisCluster ${name} from ${from}`);
  for (const left of made.leftOut) out(`restore ${name}: left out ${left}`);
  if (wait)
    await waitFor(`restore ${name}`, timeout, out, async () =>
      clusterOps.clusterRestoreProgress((await k.getCluster(name)).status),
    );
  return 0;
}

/** The one place errors become a message and an exit code. */
export function report(err: unknown): { message: string; exit: number } {
  if (err instanceof Exit || err instanceof CliRefused) return { message: err.message, exit: err.code };
  if (err instanceof KubeError) return ops.explain(err.failure, err.target);
  const e = err as { code?: string; message?: string };
  if (e?.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' || e?.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE')
    return { message: `${e.message}\n${USAGE}`, exit: 2 };
  return { message: e?.message ?? String(err), exit: 1 };
}

export async function main(): Promise<void> {
  try {
    process.exitCode = await run(
      process.argv.slice(2),
      process.env,
      (l) => process.stdout.write(`${l}\n`),
      process.stdout.isTTY === true,
    );
  } catch (err) {
    const r = report(err);
    process.stderr.write(`error: ${r.message}\n`);
    process.exitCode = r.exit;
  }
}

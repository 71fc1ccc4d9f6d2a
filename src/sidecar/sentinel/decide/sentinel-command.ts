// SENTINEL <subcommand>: the answers Sentinel-aware clients read (the master's address, the replicas, the other
// Sentinels), in the field names and order redis-sentinel uses, from the view alone.
// Invariants: pure (no clock: the timing fields a real Sentinel fills from its pings are 0 here, since the operator's
// probes, not this endpoint, watch the nodes); a Redis the session may not see answers exactly as an unknown name
// does, except that NOAUTH says a password would help; a command that would change the topology is refused with an
// error naming the operator's way to do it: the operator alone fails over, and a Sentinel-driven change would fight it.
import { array, bulk, bulks, error, ok, simple, type Reply } from './resp.ts';
import { maySee, type Session } from './session.ts';
import { lookup, type Instance, type MonitoredMaster, type SentinelView } from './view.ts';

/** Sentinel's default timings, reported as a real Sentinel reports its configuration (clients only display them). */
const DOWN_AFTER_MS = '30000';
const FAILOVER_TIMEOUT_MS = '180000';

export interface SentinelContext {
  view: SentinelView;
  /** This instance's Sentinel id: 40 hex digits, stable for the process. */
  myid: string;
}

const NO_SUCH_MASTER = error('ERR No such master with that name');
const NOAUTH = error('NOAUTH Authentication required.');

/** The flags field: redis-py and ioredis skip instances whose flags hold s_down, o_down or disconnected. */
function masterFlags(m: Instance): string {
  return m.up ? 'master' : 'master,s_down,o_down';
}

export function masterFields(m: MonitoredMaster, view: SentinelView, name: string): string[] {
  const master = m.master!;
  return [
    ...['name', name, 'ip', master.ip, 'port', String(master.port), 'runid', '', 'flags', masterFlags(master)],
    ...['link-pending-commands', '0', 'link-refcount', '1', 'last-ping-sent', '0', 'last-ok-ping-reply', '0'],
    ...['last-ping-reply', '0', 'down-after-milliseconds', DOWN_AFTER_MS, 'info-refresh', '0'],
    ...['role-reported', 'master', 'role-reported-time', '0', 'config-epoch', String(m.epoch)],
    ...['num-slaves', String(m.replicas.length), 'num-other-sentinels', String(view.peers.length), 'quorum', '1'],
    ...['failover-timeout', FAILOVER_TIMEOUT_MS, 'parallel-syncs', '1'],
  ];
}

export function replicaFields(r: Instance, m: MonitoredMaster): string[] {
  const master = m.master!;
  return [
    ...['name', `${r.ip}:${r.port}`, 'ip', r.ip, 'port', String(r.port), 'runid', ''],
    ...['flags', r.up ? 'slave' : 'slave,s_down', 'link-pending-commands', '0', 'link-refcount', '1'],
    ...['last-ping-sent', '0', 'last-ok-ping-reply', '0', 'last-ping-reply', '0'],
    ...['down-after-milliseconds', DOWN_AFTER_MS, 'info-refresh', '0', 'role-reported', 'slave'],
    ...['role-reported-time', '0', 'master-link-down-time', '0', 'master-link-status', r.up ? 'ok' : 'err'],
    ...['master-host', master.ip, 'master-port', String(master.port), 'slave-priority', '100'],
    ...['slave-repl-offset', '0', 'replica-announced', '1'],
  ];
}

function peerFields(p: SentinelView['peers'][number], m: MonitoredMaster): string[] {
  return [
    ...['name', p.runid, 'ip', p.ip, 'port', String(p.port), 'runid', p.runid, 'flags', 'sentinel'],
    ...['link-pending-commands', '0', 'link-refcount', '1', 'last-ping-sent', '0', 'last-ok-ping-reply', '0'],
    ...['last-ping-reply', '0', 'down-after-milliseconds', DOWN_AFTER_MS, 'last-hello-message', '0'],
    ...['voted-leader', '?', 'voted-leader-epoch', String(m.epoch)],
  ];
}

/** The master a name means for this session, or the reply that says why there is none. */
function resolve(ctx: SentinelContext, session: Session, name: string): MonitoredMaster | Reply {
  const m = lookup(ctx.view, name);
  if (m === undefined || m.master === undefined) return NO_SUCH_MASTER;
  return maySee(session, m) ? m : NOAUTH;
}

const isReply = (x: MonitoredMaster | Reply): x is Reply => 't' in x;

/** The topology-changing subcommands, each refused with what to do instead. */
const REFUSED = new Map<string, string>([
  ['failover', 'use the redis.example.com/switchover annotation on the Redis'],
  ['set', 'set it in the Redis spec'],
  ['remove', 'delete the Redis'],
  ['monitor', 'create a Redis (its master name is spec.sentinel.masterName)'],
  ['reset', 'the operator keeps the replica list'],
  ['flushconfig', 'the configuration is the Redis spec'],
  ['config', 'the configuration is the Redis spec'],
  ['is-master-down-by-addr', 'this endpoint takes no part in Sentinel elections: the operator decides failovers'],
  ['simulate-failure', 'no failure to simulate: the operator watches the nodes'],
  ['debug', 'no Sentinel timers to tune: the operator watches the nodes'],
]);

function withName(args: readonly string[], run: (name: string) => Reply): Reply {
  if (args.length !== 2) return error(`ERR wrong number of arguments for 'sentinel|${args[0]!.toLowerCase()}' command`);
  return run(args[1]!);
}

export function sentinelCommand(ctx: SentinelContext, session: Session, args: readonly string[]): Reply {
  if (args.length === 0) return error("ERR wrong number of arguments for 'sentinel' command");
  const sub = args[0]!.toLowerCase();
  const refused = REFUSED.get(sub);
  if (refused !== undefined) {
    return error(`ERR SENTINEL ${sub.toUpperCase()} is refused: the operator owns the topology (${refused})`);
  }
  const visible = (): MonitoredMaster[] => ctx.view.masters.filter((m) => m.master !== undefined && maySee(session, m));
  switch (sub) {
    case 'get-master-addr-by-name':
      return withName(args, (name) => {
        const m = resolve(ctx, session, name);
        if (m === NO_SUCH_MASTER) return array(null);
        return isReply(m) ? m : bulks([m.master!.ip, String(m.master!.port)]);
      });
    case 'masters':
      return array(visible().flatMap((m) => m.servedAs.map((n) => bulks(masterFields(m, ctx.view, n)))));
    case 'master':
      return withName(args, (name) => {
        const m = resolve(ctx, session, name);
        return isReply(m) ? m : bulks(masterFields(m, ctx.view, name));
      });
    case 'replicas':
    case 'slaves':
      return withName(args, (name) => {
        const m = resolve(ctx, session, name);
        return isReply(m) ? m : array(m.replicas.map((r) => bulks(replicaFields(r, m))));
      });
    case 'sentinels':
      return withName(args, (name) => {
        const m = resolve(ctx, session, name);
        return isReply(m) ? m : array(ctx.view.peers.map((p) => bulks(peerFields(p, m))));
      });
    case 'ckquorum':
      return withName(args, (name) => {
        const m = resolve(ctx, session, name);
        if (isReply(m)) return m;
        const usable = ctx.view.peers.length + 1;
        return simple(`OK ${usable} usable Sentinels. The operator decides failovers: no quorum is needed`);
      });
    case 'myid':
      return args.length === 1 ? bulk(ctx.myid) : error("ERR wrong number of arguments for 'sentinel|myid' command");
    case 'ping':
      return ok;
    default:
      return error(`ERR Unknown sentinel subcommand '${args[0]!}'`);
  }
}

/**
 * INFO as a Sentinel answers it (clients' ready checks read it; `loading:0` lets them on): the server, and the
 * masters this session may see. The section argument picks one section, as in Redis; unknown ones give nothing.
 */
export function infoReply(ctx: SentinelContext, session: Session, section: string | undefined, version: string): Reply {
  const masters = ctx.view.masters.filter((m) => m.master !== undefined && maySee(session, m));
  const sections: Array<[string, string[]]> = [
    ['server', [`redis_version:${version}`, 'redis_mode:sentinel', `run_id:${ctx.myid}`, 'tcp_port:26379']],
    ['persistence', ['loading:0']],
    [
      'sentinel',
      [
        `sentinel_masters:${masters.length}`,
        'sentinel_tilt:0',
        'sentinel_running_scripts:0',
        'sentinel_scripts_queue_length:0',
        ...masters.map((m, i) => {
          const master = m.master!;
          const status = master.up ? 'ok' : 'odown';
          const where = `address=${master.ip}:${master.port},slaves=${m.replicas.length}`;
          return `master${i}:name=${m.servedAs[0]!},status=${status},${where},sentinels=${ctx.view.peers.length + 1}`;
        }),
      ],
    ],
  ];
  const wanted = section?.toLowerCase();
  const chosen = sections.filter(
    ([name]) => wanted === undefined || ['all', 'default', 'everything'].includes(wanted) || name === wanted,
  );
  const title = (name: string): string => name[0]!.toUpperCase() + name.slice(1);
  return bulk(chosen.map(([name, lines]) => [`# ${title(name)}`, ...lines].join('\r\n') + '\r\n').join('\r\n'));
}

/** ROLE on a Sentinel: the names of the masters it watches (those this session may see). */
export function roleReply(ctx: SentinelContext, session: Session): Reply {
  const names = ctx.view.masters.filter((m) => m.master !== undefined && maySee(session, m)).map((m) => m.servedAs[0]!);
  return array([bulk('sentinel'), bulks(names)]);
}

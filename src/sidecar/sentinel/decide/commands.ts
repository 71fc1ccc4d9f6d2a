// The Sentinel endpoint's commands: (view, session, request) -> replies and the next session. The TCP adapter only
// carries bytes; every answer is decided here.
// Invariants: pure; RESP2 only (HELLO 3 is refused with NOPROTO, as a server without RESP3 does, and clients fall
// back); in subscribed mode only the commands Redis allows there run; the number of subscriptions per connection is
// bounded (a client cannot grow the instance's memory by subscribing); no reply ever carries a password.
import { array, bulk, bulks, error, int, ok, simple, type Reply } from './resp.ts';
import { infoReply, sentinelCommand, roleReply, type SentinelContext } from './sentinel-command.ts';
import { passwordKnown, subscriptions, type Session } from './session.ts';

export type { SentinelContext } from './sentinel-command.ts';

/** The version HELLO and INFO report: the protocol this endpoint speaks is Sentinel's of Redis 7.2. */
export const SENTINEL_VERSION = '7.2.4';
export const MAX_SUBSCRIPTIONS = 64;

export interface Outcome {
  replies: Reply[];
  session: Session;
  /** Close the connection once the replies are written (QUIT). */
  close: boolean;
}

const WRONGPASS = error('WRONGPASS invalid username-password pair or user is disabled.');
const arity = (cmd: string): Reply => error(`ERR wrong number of arguments for '${cmd}' command`);
const one = (reply: Reply, session: Session, close = false): Outcome => ({ replies: [reply], session, close });

function auth(ctx: SentinelContext, session: Session, args: readonly string[]): Outcome {
  if (args.length < 1 || args.length > 2) return one(arity('auth'), session);
  // Sentinel knows one user; `AUTH default <password>` is the ACL form of the same thing.
  if (args.length === 2 && args[0] !== 'default') return one(WRONGPASS, session);
  const password = args.at(-1)!;
  if (!passwordKnown(ctx.view, password)) return one(WRONGPASS, session);
  return one(ok, { ...session, password });
}

function hello(ctx: SentinelContext, session: Session, args: readonly string[]): Outcome {
  let next = session;
  if (args.length > 0) {
    const proto = /^\d+$/.test(args[0]!) ? Number(args[0]) : NaN;
    if (Number.isNaN(proto)) return one(error('ERR Protocol version is not an integer or out of range'), session);
    if (proto !== 2) return one(error('NOPROTO unsupported protocol version'), session);
  }
  for (let i = 1; i < args.length; i++) {
    const opt = args[i]!.toLowerCase();
    if (opt === 'auth' && args[i + 2] !== undefined) {
      const r = auth(ctx, next, [args[i + 1]!, args[i + 2]!]);
      if (r.replies[0]!.t === 'error') return r;
      next = r.session;
      i += 2;
    } else if (opt === 'setname' && args[i + 1] !== undefined) {
      const name = args[++i]!;
      if (/[\s]/.test(name))
        return one(error('ERR Client names cannot contain spaces, newlines or special characters.'), session);
      next = { ...next, name: name === '' ? null : name };
    } else return one(error(`ERR Syntax error in HELLO option '${args[i]!}'`), session);
  }
  const fields: Reply[] = [
    ...[bulk('server'), bulk('redis'), bulk('version'), bulk(SENTINEL_VERSION), bulk('proto'), int(2)],
    // No `role` field: a real Sentinel leaves it out of HELLO (it has no replication role).
    ...[bulk('id'), int(next.id), bulk('mode'), bulk('sentinel'), bulk('modules'), array([])],
  ];
  return one(array(fields), next);
}

function client(session: Session, args: readonly string[]): Outcome {
  const sub = (args[0] ?? '').toLowerCase();
  if (sub === 'setname' && args.length === 2) {
    const name = args[1]!;
    if (/[\s]/.test(name))
      return one(error('ERR Client names cannot contain spaces, newlines or special characters.'), session);
    return one(ok, { ...session, name: name === '' ? null : name });
  }
  if (sub === 'getname' && args.length === 1) return one(bulk(session.name), session);
  if (sub === 'id' && args.length === 1) return one(int(session.id), session);
  return one(error(`ERR unknown subcommand or wrong number of arguments for 'CLIENT|${args[0] ?? ''}'`), session);
}

function subscribe(session: Session, args: readonly string[], kind: 'subscribe' | 'psubscribe'): Outcome {
  if (args.length === 0) return one(arity(kind), session);
  const set = new Set(kind === 'subscribe' ? session.channels : session.patterns);
  const replies: Reply[] = [];
  let next = session;
  for (const name of args) {
    if (!set.has(name) && subscriptions(next) >= MAX_SUBSCRIPTIONS) {
      replies.push(error(`ERR at most ${MAX_SUBSCRIPTIONS} subscriptions per connection`));
      continue;
    }
    set.add(name);
    next = kind === 'subscribe' ? { ...next, channels: new Set(set) } : { ...next, patterns: new Set(set) };
    replies.push(array([bulk(kind), bulk(name), int(subscriptions(next))]));
  }
  return { replies, session: next, close: false };
}

function unsubscribe(session: Session, args: readonly string[], kind: 'unsubscribe' | 'punsubscribe'): Outcome {
  const set = new Set(kind === 'unsubscribe' ? session.channels : session.patterns);
  const names = args.length > 0 ? args : [...set];
  let next = session;
  const replies: Reply[] = [];
  for (const name of names) {
    set.delete(name);
    next = kind === 'unsubscribe' ? { ...next, channels: new Set(set) } : { ...next, patterns: new Set(set) };
    replies.push(array([bulk(kind), bulk(name), int(subscriptions(next))]));
  }
  if (replies.length === 0) replies.push(array([bulk(kind), bulk(null), int(subscriptions(next))]));
  return { replies, session: next, close: false };
}

const SUBSCRIBED_ONLY = new Set(['subscribe', 'psubscribe', 'unsubscribe', 'punsubscribe', 'ping', 'quit', 'reset']);

export function handle(ctx: SentinelContext, session: Session, argv: readonly string[]): Outcome {
  const cmd = argv[0]!.toLowerCase();
  const args = argv.slice(1);
  const subscribed = subscriptions(session) > 0;
  if (subscribed && !SUBSCRIBED_ONLY.has(cmd)) {
    const only = 'only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context';
    return one(error(`ERR Can't execute '${cmd}': ${only}`), session);
  }
  switch (cmd) {
    case 'ping':
      if (args.length > 1) return one(arity('ping'), session);
      if (subscribed) return one(bulks(['pong', args[0] ?? '']), session);
      return one(args.length === 1 ? bulk(args[0]!) : simple('PONG'), session);
    case 'auth':
      return auth(ctx, session, args);
    case 'hello':
      return hello(ctx, session, args);
    case 'client':
      return client(session, args);
    case 'info':
      return one(args.length <= 1 ? infoReply(ctx, session, args[0], SENTINEL_VERSION) : arity('info'), session);
    case 'role':
      return one(args.length === 0 ? roleReply(ctx, session) : arity('role'), session);
    case 'sentinel':
      return one(sentinelCommand(ctx, session, args), session);
    case 'subscribe':
    case 'psubscribe':
      return subscribe(session, args, cmd);
    case 'unsubscribe':
    case 'punsubscribe':
      return unsubscribe(session, args, cmd);
    case 'reset':
      return one(simple('RESET'), { ...session, password: null, name: null, channels: new Set(), patterns: new Set() });
    case 'quit':
      return one(ok, session, true);
    case 'config':
      return one(
        error('ERR CONFIG is refused: the operator owns this endpoint (its settings are the Redis spec)'),
        session,
      );
    default:
      return one(
        error(
          `ERR unknown command '${argv[0]!}', with args beginning with: ${args
            .slice(0, 3)
            .map((a) => `'${a}'`)
            .join(' ')}`,
        ),
        session,
      );
  }
}

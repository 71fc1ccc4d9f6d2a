// The oracle: a real Sentinel (redis-server --sentinel) and our endpoint watch the same real master and replica;
// both get the same commands and their replies are compared: types and lengths always, field names always, and the
// values that are facts (addresses, ports, flags, counts, the configured timings). Where we differ on purpose, the
// table below says so and why; everything else must agree.
// Loopback octet: 127.0.216.x (.1 master, .2 replica, .100 our endpoint, .200 the real Sentinel).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { addr, startRedis, TEST_PASSWORD, type RedisServer } from '../../support/redis-server.ts';
import { until } from '../../support/until.ts';
import { startSentinelServer } from '../../../src/sidecar/sentinel/server.ts';
import { EMPTY_VIEW, buildView } from '../../../src/sidecar/sentinel/decide/view.ts';
import { fields, RawClient, shape, startRealSentinel, type Typed } from './oracle-support.ts';

const N = 216;
const PASSWORD = 'sentinel-oracle-password';
const NAME = 'mymaster';

/**
 * Fields we answer differently on purpose. runid: the endpoint does not connect to the nodes (the operator's probes
 * do), so it has no run id to report; the timing fields: a real Sentinel fills them from its own pings, the endpoint
 * has none and reports 0; slave-repl-offset: the operator, not the endpoint, reads offsets; master-link-down-time:
 * the same.
 */
const OURS_DIFFER = new Set([
  'runid',
  'last-ping-sent',
  'last-ok-ping-reply',
  'last-ping-reply',
  'info-refresh',
  'role-reported-time',
  'slave-repl-offset',
  'master-link-down-time',
]);

async function admin(t: TestContext, s: RedisServer): Promise<Redis> {
  const c = new Redis({ host: s.ip, port: 6379, password: TEST_PASSWORD, lazyConnect: true, maxRetriesPerRequest: 1 });
  t.after(() => c.disconnect());
  await c.connect();
  return c;
}

/** Field lists agree: the same names in the same order, the same values but for the fields we differ in. */
function sameFields(ours: Typed, real: Typed, what: string): void {
  assert.deepEqual(shape(ours), shape(real), `${what}: reply shape`);
  const [o, r] = [fields(ours), fields(real)];
  assert.deepEqual([...o.keys()], [...r.keys()], `${what}: field names`);
  for (const [k, v] of r) if (!OURS_DIFFER.has(k)) assert.equal(o.get(k), v, `${what}: field ${k}`);
}

test('the endpoint answers as a real Sentinel watching the same master', async (t) => {
  const extra = { 'repl-diskless-sync-delay': '0' };
  const [m, r] = await Promise.all([1, 2].map((h) => startRedis(t, { ip: addr(N, h), minReplicasToWrite: 0, extra })));
  const [cm, cr] = [await admin(t, m!), await admin(t, r!)];
  await cm.replicaof('NO', 'ONE');
  await cr.replicaof(m!.ip, 6379);
  await until('the replica linked', async () => /master_link_status:up/.test(await cr.info('replication')));

  const real = await startRealSentinel(t, {
    ip: addr(N, 200),
    masterName: NAME,
    master: m!.ip,
    masterPassword: TEST_PASSWORD,
    password: PASSWORD,
  });
  const server = await startSentinelServer({
    host: addr(N, 100),
    port: 0,
    myid: 'a'.repeat(40),
    logger: pino({ level: 'silent' }),
  });
  t.after(() => server.close());
  // The view as the feed builds it from the pods' role labels; `masterAt` 0: the first node is master.
  let view = EMPTY_VIEW;
  const publish = (masterAt: 0 | 1): void => {
    const pods = [m!, r!].map((s, i) => ({
      name: `cache-${i}`,
      ip: s.ip,
      ready: true,
      role: i === masterAt ? ('master' as const) : ('replica' as const),
    }));
    view = buildView(
      [{ namespace: 'apps', name: 'cache', masterName: NAME, password: PASSWORD, port: 6379, pods }],
      [],
      view,
    );
    server.update(view);
  };
  publish(0);

  const connect = async (host: string, port: number, auth = true): Promise<RawClient> => {
    const c = await RawClient.connect(t, host, port);
    if (auth) assert.deepEqual(await c.call('AUTH', PASSWORD), { t: 'simple', s: 'OK' });
    return c;
  };
  const [ours, theirs] = [await connect(addr(N, 100), server.port), await connect(real.ip, real.port)];
  const both = async (...args: string[]): Promise<[Typed, Typed]> => [
    await ours.call(...args),
    await theirs.call(...args),
  ];
  // The real Sentinel learns the replica from the master's INFO, and its link state from the replica's.
  await until('the real Sentinel sees the replica linked', async () => {
    const replicas = await theirs.call('SENTINEL', 'replicas', NAME);
    return (
      replicas.t === 'array' &&
      replicas.items.length === 1 &&
      fields(replicas.items[0]!).get('master-link-status') === 'ok'
    );
  });

  await t.test('the same replies, value for value', async (t) => {
    const table: string[][] = [
      ['PING'],
      ['PING', 'hello'],
      ['ROLE'],
      ['SENTINEL', 'get-master-addr-by-name', NAME],
      ['SENTINEL', 'get-master-addr-by-name', 'no-such-master'],
      ['SENTINEL', 'sentinels', NAME],
      ['CLIENT', 'SETNAME', 'oracle'],
      ['CLIENT', 'GETNAME'],
    ];
    for (const argv of table) {
      await t.test(argv.join(' '), async () => {
        const [o, r] = await both(...argv);
        assert.deepEqual(o, r);
      });
    }
  });

  await t.test('SENTINEL master, masters, replicas, slaves: the same fields, the facts equal', async () => {
    const [om, rm] = await both('SENTINEL', 'master', NAME);
    sameFields(om, rm, 'master');
    assert.equal(fields(rm).get('num-slaves'), '1', 'the real Sentinel saw the replica (else this compares nothing)');
    // On purpose: each Redis is listed under each name it answers to (here mymaster and apps/mymaster), since
    // redis-py finds a master by its name in this list.
    const [oms, rms] = await both('SENTINEL', 'masters');
    const named = (x: Typed, n: string): Typed | undefined =>
      x.t === 'array' ? x.items.find((e) => fields(e).get('name') === n) : undefined;
    assert.equal(rms.t === 'array' && rms.items.length, 1);
    assert.deepEqual(oms.t === 'array' && oms.items.map((e) => fields(e).get('name')), [NAME, `apps/${NAME}`]);
    sameFields(named(oms, NAME)!, named(rms, NAME)!, 'masters');
    for (const sub of ['replicas', 'slaves']) {
      const [o, r] = await both('SENTINEL', sub, NAME);
      assert.deepEqual(shape(o), shape(r), `${sub}: shape`);
      sameFields((o as { items: Typed[] }).items[0]!, (r as { items: Typed[] }).items[0]!, `${sub}[0]`);
    }
  });

  await t.test('myid, ckquorum, INFO sentinel: the same types, the facts equal', async () => {
    const [oid, rid] = await both('SENTINEL', 'myid');
    for (const id of [oid, rid]) assert.ok(id.t === 'bulk' && /^[0-9a-f]{40}$/.test(id.s), JSON.stringify(id));
    // The first words are what a script reads; the rest says the operator decides failovers, not a quorum.
    const [oq, rq] = await both('SENTINEL', 'ckquorum', NAME);
    const head = (x: Typed): string => (x.t === 'simple' ? x.s.split('.')[0]! : JSON.stringify(x));
    assert.equal(head(oq), head(rq));
    const [oi, ri] = await both('INFO', 'sentinel');
    const line = (x: Typed): string | undefined => (x.t === 'bulk' ? /^master0:.*$/m.exec(x.s)?.[0] : undefined);
    assert.equal(line(oi), line(ri));
    assert.match(line(ri) ?? '', /address=.*,slaves=1,sentinels=1/);
  });

  await t.test('HELLO 2: the same fields; proto, mode and server equal', async () => {
    const [o, r] = await both('HELLO', '2');
    assert.deepEqual([...fields(o).keys()], [...fields(r).keys()]);
    for (const k of ['server', 'proto', 'mode']) assert.equal(fields(o).get(k), fields(r).get(k), k);
  });

  await t.test('Pub/Sub: the same subscribe replies, and PING in subscribed mode', async () => {
    const [os, rs] = [await connect(addr(N, 100), server.port), await connect(real.ip, real.port)];
    for (const argv of [['SUBSCRIBE', '+switch-master'], ['PSUBSCRIBE', '*'], ['PING'], ['UNSUBSCRIBE']]) {
      assert.deepEqual(await os.call(...argv), await rs.call(...argv), argv.join(' '));
    }
  });

  await t.test('errors: the same prefixes for unknown commands, missing auth, wrong passwords', async () => {
    const prefix = (x: Typed): string => (x.t === 'error' ? x.s.split(' ')[0]! : `not an error: ${JSON.stringify(x)}`);
    for (const argv of [
      ['SET', 'a', 'b'],
      ['SENTINEL', 'master', 'no-such-master'],
      ['SENTINEL', 'no-such-sub'],
    ]) {
      const [o, r] = await both(...argv);
      assert.equal(prefix(o), prefix(r), argv.join(' '));
    }
    const [on, rn] = [await connect(addr(N, 100), server.port, false), await connect(real.ip, real.port, false)];
    const unauth = ['SENTINEL', 'get-master-addr-by-name', NAME];
    assert.deepEqual(prefix(await on.call(...unauth)), prefix(await rn.call(...unauth)));
    assert.equal(prefix(await on.call('AUTH', 'wrong')), prefix(await rn.call('AUTH', 'wrong')));
  });

  await t.test('where we differ on purpose', async () => {
    // RESP3: the endpoint speaks RESP2 only and says so as a server without RESP3 does; clients fall back.
    const [o3, r3] = await both('HELLO', '3');
    assert.equal(r3.t, 'map');
    assert.ok(o3.t === 'error' && o3.s.startsWith('NOPROTO'), JSON.stringify(o3));
    // A topology change: the real Sentinel would act; the endpoint refuses with an error naming the operator's way.
    const [of] = await both('SENTINEL', 'failover', 'no-such-master');
    assert.ok(of.t === 'error' && of.s.includes('the operator owns the topology'), JSON.stringify(of));
  });

  // Last: it changes the topology. The real Sentinel fails over the real nodes; the endpoint is told as the operator
  // tells it, by the next view once the replica is master; both push the same message, then give the same address.
  await t.test('a failover: the same +switch-master message, then the same address', async () => {
    const [os, rs] = [await connect(addr(N, 100), server.port), await connect(real.ip, real.port)];
    for (const c of [os, rs]) await c.call('SUBSCRIBE', '+switch-master');
    const [oa, ra] = [await connect(addr(N, 100), server.port), await connect(real.ip, real.port)];
    assert.deepEqual(await ra.call('SENTINEL', 'failover', NAME), { t: 'simple', s: 'OK' });
    const theirMessage = await rs.next(30_000);
    assert.deepEqual(theirMessage, {
      t: 'array',
      items: [
        { t: 'bulk', s: 'message' },
        { t: 'bulk', s: '+switch-master' },
        { t: 'bulk', s: `${NAME} ${m!.ip} 6379 ${r!.ip} 6379` },
      ],
    });
    publish(1);
    // The endpoint says it once per name the Redis answers to: the bare name first.
    assert.deepEqual(await os.next(), theirMessage);
    const ask = ['SENTINEL', 'get-master-addr-by-name', NAME];
    assert.deepEqual(await oa.call(...ask), await ra.call(...ask));
  });
});

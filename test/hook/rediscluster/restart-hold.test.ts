// The restart hold of a RedisCluster pod (RESTART_HOLD_SCRIPT, the first part of its start
// script) run as the pod runs it, with sh, redis-cli and awk, against real cluster-mode
// redis-servers: a node that stopped as a master with slots starts again only once a peer shows
// another node serving them, or when RESTART_HOLD_SECONDS is up. What it decided is read from
// what it prints, never from how long it took.
// Network: 127.0.91.x (three nodes at .1, .2, .3).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { RESTART_HOLD_SCRIPT } from '../../../src/hook/rediscluster/statefulset.ts';
import { addr, startRedis, TEST_OPERATOR_PASSWORD, TEST_PASSWORD } from '../../support/redis-server.ts';
import { until } from '../../support/until.ts';

const N = 91;

/** Runs the hold in a data directory holding `nodesConf`, as the container would (cwd = /data). */
function hold(nodesConf: string, seconds: number): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'restart-hold-'));
  try {
    writeFileSync(path.join(dir, 'nodes.conf'), nodesConf);
    const r = spawnSync('sh', ['-c', RESTART_HOLD_SCRIPT], {
      cwd: dir,
      env: {
        PATH: process.env['PATH'],
        RESTART_HOLD_SECONDS: String(seconds),
        OPERATOR_PASSWORD: TEST_OPERATOR_PASSWORD,
      },
      encoding: 'utf8',
      timeout: (seconds + 30) * 1000,
    });
    assert.equal(r.error, undefined);
    return `${r.stdout}${r.stderr}`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test(
  'restart hold: a former master waits for its slots to be served elsewhere, or for RESTART_HOLD_SECONDS',
  { timeout: 120_000 },
  async (t) => {
    const servers = await Promise.all(
      [1, 2, 3].map((i) => startRedis(t, { ip: addr(N, i), cluster: { nodeTimeoutMs: 1000 } })),
    );
    const conns = servers.map(
      (s) => new Redis({ host: s.ip, port: 6379, password: TEST_PASSWORD, maxRetriesPerRequest: 1 }),
    );
    t.after(() => conns.forEach((c) => c.disconnect()));
    const [a, b, c] = conns as [Redis, Redis, Redis];
    await a.call('CLUSTER', 'ADDSLOTSRANGE', '0', '99');
    await b.call('CLUSTER', 'ADDSLOTSRANGE', '100', '8191');
    await c.call('CLUSTER', 'ADDSLOTSRANGE', '8192', '16383');
    for (const s of servers.slice(1)) await a.call('CLUSTER', 'MEET', s.ip, '6379');
    await until(
      'three nodes that agree',
      async () => {
        for (const conn of conns)
          if (!String(await conn.call('CLUSTER', 'INFO')).includes('cluster_known_nodes:3')) return false;
        return true;
      },
      20_000,
      { everyMs: 100 },
    );
    const aId = String(await a.call('CLUSTER', 'MYID'));
    // A's nodes.conf as it left it: its own line says myself,master with slots 0-99.
    const conf = `${String(await a.call('CLUSTER', 'NODES')).trim()}\nvars currentEpoch 3 lastVoteEpoch 0\n`;
    assert.match(conf, /myself,master .* connected 0-99/);

    await t.test('RESTART_HOLD_SECONDS 0 (a shard without replicas): no hold', () => {
      assert.equal(hold(conf, 0), '');
    });

    await t.test('a node that was a replica: no hold', () => {
      assert.equal(hold(conf.replace('myself,master', 'myself,slave').replace(/ connected 0-99/, ' connected'), 5), '');
    });

    await t.test('its peers still show it serving its slots: it waits the whole bound, then starts', () => {
      const out = hold(conf, 2);
      assert.match(out, /waiting up to 2 s for another node to serve them/);
      assert.match(out, /no peer showed its slots served elsewhere within 2 s: starting/);
    });

    await t.test(
      'another node took its slots over under a newer epoch: it starts at once, before the bound',
      async () => {
        await servers[0]!.kill();
        // What the cluster's election does for a failed master's replica, done by hand on B.
        const bId = String(await b.call('CLUSTER', 'MYID'));
        const pipe = b.pipeline();
        for (let slot = 0; slot < 100; slot++) pipe.call('CLUSTER', 'SETSLOT', String(slot), 'NODE', bId);
        await pipe.exec();
        await b.call('CLUSTER', 'BUMPEPOCH');
        const line = String(await b.call('CLUSTER', 'NODES'))
          .split('\n')
          .find((l) => l.startsWith(aId))!;
        assert.equal(line.trim().split(' ').length, 8, `B shows A with no slot: ${line}`);
        const out = hold(conf, 60);
        assert.match(
          out,
          /127\.\d+\.91\.[23]:6379 shows another node serving its slots: starting, to rejoin as a replica/,
        );
        assert.doesNotMatch(out, /no peer showed/);
      },
    );
  },
);

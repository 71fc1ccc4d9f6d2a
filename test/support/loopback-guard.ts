// The two safety rules of the redis-server harness and its link cuts, kept in one place: nothing
// is ever addressed outside 127.0.0.0/8 (addr, assertLoopback), and nothing outlives the test
// process: every live server and iptables rule is registered here and removed by the exit and
// signal hooks (installed once, on first use).
// Invariant: whatever may still exist is registered: a server from its start until its cleanup(),
// a rule from its insertion until its removal.
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { selectedEngine } from './engines.ts';
import type { RedisServer } from './redis-server.ts';

/**
 * 127.<net>.<octet>.<host>: each test file owns one third octet (see the brief's allocation); the
 * engine under test owns the second (0 for the default engine, see engines.ts).
 */
export function addr(octet: number, host: number): string {
  const net = selectedEngine().net;
  if (!Number.isInteger(octet) || octet < 0 || octet > 255 || !Number.isInteger(host) || host < 1 || host > 254) {
    throw new Error(`bad loopback address 127.${net}.${octet}.${host}`);
  }
  return `127.${net}.${octet}.${host}`;
}

export function assertLoopback(ip: string): void {
  if (!/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(ip)) throw new Error(`refusing non-loopback address ${ip}`);
}

// ---- exit hooks: nothing may leak ----------------------------------------------------------

export const liveServers = new Set<RedisServer>();
export const liveRules = new Set<string>(); // JSON of the iptables argument list used with -I
let hooksInstalled = false;

function killEverythingSync(): void {
  for (const server of liveServers) server.killSync();
  for (const rule of liveRules) {
    try {
      execFileSync('iptables', ['-w', '-D', ...JSON.parse(rule)], { stdio: 'ignore' });
    } catch {
      // already gone
    }
  }
  liveRules.clear();
}

export function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on('exit', killEverythingSync);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      killEverythingSync();
      process.exit(128 + (os.constants.signals[signal] ?? 1));
    });
  }
}

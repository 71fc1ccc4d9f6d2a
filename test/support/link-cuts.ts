// Network cuts between two loopback addresses: iptables DROP rules in OUTPUT, both directions.
// Invariants: every rule carries a comment naming its first three octets (ruleTag), so rules left by a
// crashed earlier run of the same file can be swept (sweepRules) before new ones are added; every
// rule added is in liveRules until removed, so the exit hooks remove what a test did not.
import { execFileSync } from 'node:child_process';
import type { TestContext } from 'node:test';
import { addr, assertLoopback, installHooks, liveRules } from './loopback-guard.ts';

// ---- network cuts ---------------------------------------------------------------------------

function ruleTag(ip: string): string {
  return `redis-operator-test-${ip.split('.').slice(0, 3).join('.')}`;
}

let iptablesChecked = false;

/** Fails loudly (no skipping) when iptables cannot be used: the partition tests need it. */
export function assertIptablesUsable(): void {
  if (iptablesChecked) return;
  try {
    execFileSync('iptables', ['-w', '-S', 'OUTPUT'], { stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { stderr?: Buffer; message: string };
    throw new Error(
      `iptables is not usable (root and the iptables package are required for partition tests): ${e.stderr?.toString() || e.message}`,
    );
  }
  iptablesChecked = true;
}

/** Removes rules tagged for this octet that a crashed earlier run may have left. */
export function sweepRules(octet: number): void {
  assertIptablesUsable();
  const tag = ruleTag(addr(octet, 1));
  const listing = execFileSync('iptables', ['-w', '-S', 'OUTPUT'], { encoding: 'utf8' });
  for (const line of listing.split('\n')) {
    if (!line.startsWith('-A OUTPUT') || !line.includes(tag)) continue;
    const args =
      line
        .replace(/^-A /, '')
        .match(/"[^"]*"|\S+/g)
        ?.map((a) => a.replace(/^"|"$/g, '')) ?? [];
    execFileSync('iptables', ['-w', '-D', ...args], { stdio: 'ignore' });
  }
}

export interface LinkCut {
  readonly a: string;
  readonly b: string;
  /** Removes both rules; idempotent. */
  restore(): void;
}

/**
 * Drops all traffic between loopback addresses a and b, both directions (connections in progress
 * hang, new connections time out). Removed by restore(), after the test, or at process exit.
 */
export function cutLink(t: TestContext | undefined, a: string, b: string): LinkCut {
  assertLoopback(a);
  assertLoopback(b);
  installHooks();
  assertIptablesUsable();
  const tag = ruleTag(a);
  const rules = [
    ['OUTPUT', '-s', a, '-d', b, '-m', 'comment', '--comment', tag, '-j', 'DROP'],
    ['OUTPUT', '-s', b, '-d', a, '-m', 'comment', '--comment', tag, '-j', 'DROP'],
  ];
  const added: string[] = [];
  try {
    for (const rule of rules) {
      execFileSync('iptables', ['-w', '-I', ...rule], { stdio: ['ignore', 'ignore', 'pipe'] });
      const key = JSON.stringify(rule);
      liveRules.add(key);
      added.push(key);
    }
  } catch (err) {
    for (const key of added) {
      execFileSync('iptables', ['-w', '-D', ...JSON.parse(key)], { stdio: 'ignore' });
      liveRules.delete(key);
    }
    const e = err as { stderr?: Buffer; message: string };
    throw new Error(`iptables refused to add a DROP rule between ${a} and ${b}: ${e.stderr?.toString() || e.message}`);
  }
  const cut: LinkCut = {
    a,
    b,
    restore() {
      for (const key of added) {
        if (!liveRules.has(key)) continue;
        execFileSync('iptables', ['-w', '-D', ...JSON.parse(key)], { stdio: 'ignore' });
        liveRules.delete(key);
      }
    },
  };
  t?.after(() => cut.restore());
  return cut;
}

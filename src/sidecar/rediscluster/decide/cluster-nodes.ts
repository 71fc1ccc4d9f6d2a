// Reading what a cluster node answers: CLUSTER NODES lines and the INFO fields the decisions use.
// Pure text parsing (it lives beside the decisions because they are its only readers, and tests
// feed it real Redis output).
// Invariants: never throws; a line that is not a node line is skipped; a slot or range outside
// 0..16383 is dropped rather than trusted.
import { engineFromInfo } from '../../../api/node-engine.ts';
import type { NodeInfo, NodeLine } from './types.ts';

const ID = /^[0-9a-f]{40}$/;
const LAST_SLOT = 16383;

const num = (v: string | undefined) => {
  const n = Number(v);
  return Number.isFinite(n) ? n : 0;
};

function slotOk(n: number): boolean {
  return Number.isInteger(n) && n >= 0 && n <= LAST_SLOT;
}

/** One CLUSTER NODES line; null when it is not one. */
export function parseNodeLine(line: string): NodeLine | null {
  const parts = line.trim().split(/\s+/);
  if (parts.length < 8) return null;
  const [id, address, flagText, master, pingSent, pongRecv, epoch, link] = parts as [
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  if (!ID.test(id)) return null;
  // ip:port@cport[,hostname]; ':0@0' (or ':6379@...') when the address is unknown.
  const hostPart = address.split(',')[0]!.split('@')[0]!;
  const colon = hostPart.lastIndexOf(':');
  const ip = colon >= 0 ? hostPart.slice(0, colon) : '';
  const port = colon >= 0 ? Number(hostPart.slice(colon + 1)) : 0;
  const flags = new Set(flagText.split(','));
  const out: NodeLine = {
    id,
    ip,
    port: Number.isFinite(port) ? port : 0,
    myself: flags.has('myself'),
    role: flags.has('slave') ? 'replica' : 'master',
    masterId: ID.test(master) ? master : null,
    fail: flags.has('fail'),
    pfail: flags.has('fail?'),
    handshake: flags.has('handshake'),
    noaddr: flags.has('noaddr') || ip === '',
    configEpoch: Number(epoch) || 0,
    connected: link === 'connected',
    pingSent: num(pingSent),
    pongRecv: num(pongRecv),
    slots: [],
    migrating: [],
    importing: [],
  };
  for (const token of parts.slice(8)) {
    let m = /^\[(\d+)->-([0-9a-f]{40})\]$/.exec(token);
    if (m) {
      if (slotOk(Number(m[1]))) out.migrating.push([Number(m[1]), m[2]!]);
      continue;
    }
    m = /^\[(\d+)-<-([0-9a-f]{40})\]$/.exec(token);
    if (m) {
      if (slotOk(Number(m[1]))) out.importing.push([Number(m[1]), m[2]!]);
      continue;
    }
    m = /^(\d+)(?:-(\d+))?$/.exec(token);
    if (!m) continue;
    const a = Number(m[1]);
    const b = m[2] === undefined ? a : Number(m[2]);
    if (slotOk(a) && slotOk(b) && a <= b) out.slots.push([a, b]);
  }
  return out;
}

/** Every node line of a CLUSTER NODES reply. */
export function parseClusterNodes(text: string): NodeLine[] {
  const out: NodeLine[] = [];
  for (const line of text.split('\n')) {
    const parsed = parseNodeLine(line);
    if (parsed) out.push(parsed);
  }
  return out;
}

/** `field:value` lines of an INFO reply. */
export function infoFields(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    if (line.startsWith('#')) continue;
    const i = line.indexOf(':');
    if (i > 0) out.set(line.slice(0, i), line.slice(i + 1).trim());
  }
  return out;
}

/** NodeInfo from INFO server, replication, memory and keyspace, and CLUSTER INFO. */
export function parseNodeInfo(text: string, clusterInfo = ''): NodeInfo {
  const f = infoFields(text);
  const replica = f.get('role') === 'slave';
  let keys = 0;
  for (const [k, v] of f) {
    if (!/^db\d+$/.test(k)) continue;
    const m = /(?:^|,)keys=(\d+)/.exec(v);
    if (m) keys += Number(m[1]);
  }
  const engine = engineFromInfo(f);
  return {
    role: replica ? 'replica' : 'master',
    linkUp: replica && f.get('master_link_status') === 'up',
    masterHost: replica ? (f.get('master_host') ?? null) : null,
    syncing: replica && f.get('master_sync_in_progress') === '1',
    offset: replica ? num(f.get('slave_repl_offset')) : num(f.get('master_repl_offset')),
    usedMemory: num(f.get('used_memory')),
    maxMemory: num(f.get('maxmemory')),
    keys,
    clusterOk: infoFields(clusterInfo).get('cluster_state') === 'ok',
    // Only with INFO server (the probe asks for it): a text without it says nothing of the engine.
    ...(engine !== null ? { engine } : {}),
  };
}

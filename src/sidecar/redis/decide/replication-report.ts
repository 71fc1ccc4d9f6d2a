// Which pods get their replication annotation (api/labels.ts REPLICATION_ANNOTATION) written
// now, and with what: the figures `kubectl redis status` shows per pod. Pure.
// Invariants:
// - A pod is written when it has no record yet, or when its record is at least REPORT_EVERY_MS
//   old and the offset moved by REPORT_MIN_BYTES or more since. A Redis at rest (only the
//   master's pings, 14 bytes every 10 s, move its offsets) costs no API write at all, and a busy
//   fleet at most one write per pod per minute.
// - Only nodes answering now, not loading, are reported; a replica's lag is the master's own
//   view (its offset minus the replica's acknowledged one, from one INFO of the master), null
//   when the master does not list it.
import type { ReplicationRecord } from '../../../api/labels.ts';
import { currentFacts } from './observe.ts';
import type { DecideInput } from './types.ts';

export const REPORT_EVERY_MS = 60_000;
export const REPORT_MIN_BYTES = 64 * 1024;

export interface ReplicationReport {
  pod: string;
  record: ReplicationRecord;
  reason: string;
}

/**
 * published: the record each pod carries now (by pod name; the informer's copy, or what this
 * instance wrote since). wallNow: the wall clock (the records are for humans and other instances).
 */
export function decideReplicationReports(
  input: DecideInput,
  master: string,
  published: ReadonlyMap<string, ReplicationRecord | null>,
  wallNow: number,
): ReplicationReport[] {
  const masterPod = input.pods.find((p) => p.name === master);
  const masterFacts = masterPod ? currentFacts(masterPod, input.now, input.config) : null;
  const out: ReplicationReport[] = [];
  for (const pod of input.pods) {
    const facts = currentFacts(pod, input.now, input.config);
    if (!facts || facts.loading) continue;
    const r = facts.replication;
    const isMaster = pod.name === master;
    const offset = isMaster ? r.masterReplOffset : (r.slaveReplOffset ?? r.masterReplOffset);
    const line = !isMaster && masterFacts ? masterFacts.replication.replicas.find((l) => l.ip === pod.ip) : undefined;
    const lagBytes = line && masterFacts ? Math.max(0, masterFacts.replication.masterReplOffset - line.offset) : null;
    const record = { offset, lagBytes, at: new Date(wallNow).toISOString() };
    const before = published.get(pod.name) ?? null;
    if (before === null) {
      out.push({ pod: pod.name, record, reason: 'no replication record yet' });
      continue;
    }
    const age = wallNow - Date.parse(before.at);
    const moved = Math.abs(offset - before.offset);
    if (age >= REPORT_EVERY_MS && moved >= REPORT_MIN_BYTES)
      out.push({ pod: pod.name, record, reason: `the offset moved ${moved} bytes in ${Math.round(age / 1000)} s` });
  }
  return out;
}

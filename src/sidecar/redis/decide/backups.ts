// Which backup Events to send for a Redis, from what the hook wrote in status.backup (the hook is
// pure and sends none; Metacontroller sends none for status). Pure.
// Invariants: an outcome is told once: the first status this instance sees only sets the memory
// (a new leader, or a restart, does not repeat old news); afterwards a new success or a new
// failure (a different location, or a different Job and time) is one Event each.

export interface BackupMemory {
  success: string | null;
  failure: string | null;
}

export interface BackupEvent {
  type: 'Normal' | 'Warning';
  reason: 'BackupCompleted' | 'BackupFailed';
  message: string;
}

const rec = (v: unknown): Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
const text = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

export function backupEvents(
  memory: BackupMemory | null,
  status: unknown,
): { memory: BackupMemory; events: BackupEvent[] } {
  const backup = rec(rec(status)['backup']);
  const success = rec(backup['lastSuccessful']);
  const failure = rec(backup['lastFailure']);
  const now: BackupMemory = {
    success: text(success['location']),
    failure: text(failure['job']) === null ? null : `${String(failure['job'])}@${String(failure['time'] ?? '')}`,
  };
  if (memory === null) return { memory: now, events: [] };
  const events: BackupEvent[] = [];
  if (now.success !== null && now.success !== memory.success) {
    const size = typeof success['sizeBytes'] === 'number' ? `, ${success['sizeBytes']} bytes` : '';
    const offset = typeof success['replicationOffset'] === 'number' ? ` at offset ${success['replicationOffset']}` : '';
    events.push({ type: 'Normal', reason: 'BackupCompleted', message: `stored ${now.success}${size}${offset}` });
  }
  if (now.failure !== null && now.failure !== memory.failure) {
    events.push({
      type: 'Warning',
      reason: 'BackupFailed',
      message: `${String(failure['job'])}: ${text(failure['message']) ?? 'the backup failed'}`,
    });
  }
  return { memory: now, events };
}

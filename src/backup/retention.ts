// Which backups retention removes. Pure.
// Invariants: `days` counts whole days of age (the design article's `retention: 7`), `count` the
// newest backups kept; a backup is removed only when it is outside every limit given; the newest
// backup is never removed (a clock gone wrong or a retention of 0 must not leave nothing); only
// objects this operator wrote (parsed by the caller) are ever candidates.

export interface StoredBackup {
  key: string;
  /** When the snapshot was taken (ms since the epoch). */
  takenAt: number;
}

export interface Retention {
  days?: number | undefined;
  count?: number | undefined;
}

const DAY_MS = 86_400_000;

export function backupsToPrune(
  backups: readonly StoredBackup[],
  now: number,
  retention: Retention,
): { prune: string[]; reason: string } {
  const newestFirst = [...backups].sort((a, b) => b.takenAt - a.takenAt || (a.key < b.key ? 1 : -1));
  if (retention.days === undefined && retention.count === undefined)
    return { prune: [], reason: 'no retention set: every backup is kept' };
  const prune = newestFirst
    .slice(1)
    .filter((b, i) => {
      const tooOld = retention.days !== undefined && now - b.takenAt > retention.days * DAY_MS;
      const beyondCount = retention.count !== undefined && i + 1 >= retention.count;
      // Outside every limit given: with both, a backup goes only when it is both too old and beyond the count.
      if (retention.days !== undefined && retention.count !== undefined) return tooOld && beyondCount;
      return tooOld || beyondCount;
    })
    .map((b) => b.key);
  const limits = [
    retention.days !== undefined ? `${retention.days} days` : '',
    retention.count !== undefined ? `the newest ${retention.count}` : '',
  ]
    .filter(Boolean)
    .join(' and ');
  return { prune, reason: `${prune.length} of ${backups.length} backups outside ${limits}; the newest is always kept` };
}

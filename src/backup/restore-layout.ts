// Where a restored RDB snapshot must be put in a data directory so that Redis 7 loads it. Pure.
// Why not always dump.rdb: with `appendonly yes`, Redis 7 (checked on 7.0.15) ignores a dump.rdb
// when it finds no AOF, starts empty and writes an empty AOF base, so the restored data would be
// silently dropped and then overwritten. Its multi-part AOF takes an RDB as the base file instead:
// the snapshot becomes `appendonlydir/appendonly.aof.1.base.rdb` with a one-line manifest, Redis
// loads it and appends new writes after it.
// Invariant: the names follow Redis' defaults (appenddirname appendonlydir, appendfilename
// appendonly.aof, dbfilename dump.rdb), which spec.config cannot change (reserved directives).

export interface RestoreFile {
  /** Relative to the data directory. */
  path: string;
  /** The snapshot's bytes go here (exactly one file), or this fixed text. */
  content: { snapshot: true } | { text: string };
}

export const AOF_DIR = 'appendonlydir';
export const AOF_BASE = 'appendonly.aof.1.base.rdb';

export function restoreFiles(appendOnly: boolean): RestoreFile[] {
  if (!appendOnly) return [{ path: 'dump.rdb', content: { snapshot: true } }];
  return [
    { path: `${AOF_DIR}/${AOF_BASE}`, content: { snapshot: true } },
    { path: `${AOF_DIR}/appendonly.aof.manifest`, content: { text: `file ${AOF_BASE} seq 1 type b\n` } },
  ];
}

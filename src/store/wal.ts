/**
 * SQLite write-ahead logs left by a killed run (issue 24 §3). The caches (`embeddings.sqlite`, `rerank.sqlite`,
 * `chat.sqlite`) run in WAL mode: committed rows sit in `<file>-wal` (with its index `<file>-shm`) until a checkpoint
 * copies them into the database, which the last connection does when it closes. A run killed with the cache open
 * leaves both side files; they hold committed data, so they must be merged, never deleted. A run that opens the cache
 * merges them when it closes it; a run that never opens it (every unit read back from checkpoints) left them for ever.
 * {@link mergeLeftoverWal} opens and closes such a database once, which checkpoints the log and removes the side files.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

const require = createRequire(import.meta.url);

/**
 * When `<file>-wal` exists beside the SQLite database `file`: opens the database, checkpoints its log
 * (`wal_checkpoint(TRUNCATE)`) and closes it, so SQLite removes `-wal` and `-shm` (it keeps them while another
 * connection, such as another sweep sharing the cache, has the database open; that one merges them when it closes).
 * Never throws: a database that cannot be opened (locked, damaged, no permission) is left for the cache's own open,
 * which reports it. Returns true when the side files are gone afterwards.
 */
export function mergeLeftoverWal(file: string): boolean {
  if (!existsSync(`${file}-wal`) || !existsSync(file)) return !existsSync(`${file}-wal`);
  try {
    const Database = require('better-sqlite3') as typeof BetterSqlite3;
    const db = new Database(file, { fileMustExist: true, timeout: 1000 });
    try {
      db.pragma('wal_checkpoint(TRUNCATE)');
    } finally {
      db.close();
    }
  } catch {
    /* left for the cache's own open */
  }
  return !existsSync(`${file}-wal`);
}

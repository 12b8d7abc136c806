/**
 * The one way this tool opens a SQLite cache file (better-sqlite3 v12), shared by the embedding cache
 * (src/embed/cache.ts) and the rerank pair-score cache (src/rerank/cache.ts):
 *
 * - folders are created as needed; WAL journal, `synchronous = NORMAL`, `busy_timeout` (default 10 000 ms), so two
 *   sweeps can share one file (a writer waits for the other instead of failing);
 * - a `meta(key, value)` table holds `schema_version`; when the stored version differs from the caller's, the caller's
 *   `onSchemaMismatch` drops its tables (inside the same `BEGIN IMMEDIATE` transaction) and the new version is stored;
 *   then `createTables` runs (`CREATE ... IF NOT EXISTS`);
 * - every failure is `HarnessError('CACHE_FAILED')` naming the file, with the remedy.
 *
 * better-sqlite3 is a native addon, loaded on first use, so commands that need no cache never load it.
 */
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { HarnessError } from '../errors.js';

/** An open better-sqlite3 connection. */
export type Database = BetterSqlite3.Database;

const require = createRequire(import.meta.url);
let ctor: typeof BetterSqlite3 | undefined;
function sqlite(): typeof BetterSqlite3 {
  ctor ??= require('better-sqlite3') as typeof BetterSqlite3;
  return ctor;
}

/**
 * `CACHE_FAILED` for `<label> <file>: <what>: <cause's message>`, with the remedy every cache gives.
 * @param label e.g. `embedding cache`, `rerank cache`.
 */
export function cacheError(label: string, file: string, what: string, cause: unknown): HarnessError {
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new HarnessError('CACHE_FAILED', `${label} ${file}: ${what}: ${detail}`, {
    location: { file },
    remedy: 'check that the folder is writable and the disk not full; delete the file to start an empty cache',
    cause,
  });
}

/** What {@link openSqliteCache} needs to know of a cache. */
export interface SqliteCacheSchema {
  /** Names the cache in errors, e.g. `embedding cache`. */
  label: string;
  /** The layout version this code writes; an integer. */
  version: number;
  /** Drops the caller's tables (and resets its meta rows) when the file holds another version or none. */
  onSchemaMismatch(db: Database): void;
  /** Creates the caller's tables and indexes if they do not exist. */
  createTables(db: Database): void;
}

/**
 * Opens (creating folders and the file as needed) the SQLite cache at `file` by the rules in this module's header.
 * @param file path; resolved against the working directory.
 * @param busyTimeoutMs how long a writer waits for another connection's lock; default 10 000 ms.
 * @returns the absolute path and the open connection.
 * @throws HarnessError `CACHE_FAILED` naming the file (not a SQLite file, no permission, disk full, locked longer
 *   than the timeout).
 */
export function openSqliteCache(file: string, schema: SqliteCacheSchema, busyTimeoutMs = 10_000): { file: string; db: Database } {
  const abs = path.resolve(file);
  let db: Database | undefined;
  try {
    mkdirSync(path.dirname(abs), { recursive: true });
    const Ctor = sqlite();
    db = new Ctor(abs, { timeout: busyTimeoutMs });
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    const conn = db;
    conn
      .transaction(() => {
        conn.exec('CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID');
        const row = conn.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: unknown } | undefined;
        if (row === undefined || Number(row.value) !== schema.version) {
          schema.onSchemaMismatch(conn);
          conn.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)").run(schema.version);
        }
        schema.createTables(conn);
      })
      .immediate();
  } catch (e) {
    try {
      db?.close();
    } catch {
      // already failing; keep the first error
    }
    throw cacheError(schema.label, abs, 'cannot open', e);
  }
  return { file: abs, db };
}

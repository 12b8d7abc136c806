/**
 * The embedding cache's schema-2 layout (sessions 9-11: `embeddings (key TEXT PRIMARY KEY, vec, sum, last_used)` and
 * `lru`) and its put, frozen here for the benches that measure the current code (schema 3, src/embed/cache.ts) beside
 * it: bench/embed-cache.ts and bench/embed-cache-writes.ts. The current code migrates such a file when it opens it.
 */
import Database from 'better-sqlite3';
import { rowChecksum } from '../src/embed/cache.js';

/** Creates the schema-2 tables in a new file (WAL, the cache's checkpoint size) and returns the open connection. */
export function schema2File(file: string): Database.Database {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('wal_autocheckpoint = 16384');
  db.pragma(`journal_size_limit = ${16384 * 4096}`);
  db.exec("CREATE TABLE meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID; INSERT INTO meta VALUES ('schema_version', 2), ('clock', 0)");
  db.exec('CREATE TABLE embeddings (key TEXT PRIMARY KEY, vec BLOB NOT NULL, sum INTEGER NOT NULL, last_used INTEGER NOT NULL)');
  db.exec('CREATE TABLE lru (id INTEGER PRIMARY KEY, last_used INTEGER NOT NULL); CREATE INDEX lru_last_used ON lru (last_used)');
  return db;
}

/** The put of sessions 9-11 on a schema-2 file: one transaction, the row by its text key, then its lru entry. */
export function schema2Put(db: Database.Database, entries: readonly (readonly [string, Float32Array])[]): void {
  db.transaction(() => {
    const now = Number((db.prepare("UPDATE meta SET value = value + 1 WHERE key = 'clock' RETURNING value").get() as { value: number }).value);
    const stmt = db.prepare(
      'INSERT INTO embeddings (key, vec, sum, last_used) VALUES (?, ?, ?, ?) ' +
        'ON CONFLICT (key) DO UPDATE SET vec = excluded.vec, sum = excluded.sum, last_used = excluded.last_used RETURNING rowid',
    );
    const used = db.prepare('INSERT INTO lru (id, last_used) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET last_used = excluded.last_used');
    for (const [key, vec] of entries) {
      const bytes = Buffer.from(vec.buffer, vec.byteOffset, vec.byteLength);
      const { rowid } = stmt.get(key, bytes, rowChecksum(key, bytes), now) as { rowid: number };
      used.run(rowid, now);
    }
  }).immediate();
}

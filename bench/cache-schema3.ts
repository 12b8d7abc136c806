/**
 * The embedding cache's schema-3 layout (sessions 12-18: keys as `(model, digest)` under the unique index
 * `embeddings_key`, whole rows staged in `staged` and merged in key order every 2^20 rows) and its put and merge,
 * frozen here so that bench/embed-cache-writes.ts measures the current code (schema 4, src/embed/cache.ts) beside it.
 * The current code migrates such a file when it opens it.
 */
import Database from 'better-sqlite3';
import { rowChecksum, splitCacheKey } from '../src/embed/cache.js';

/** Rows staged before a merge in schema 3 (its `MERGE_ROWS`). */
export const SCHEMA3_MERGE_ROWS = 1 << 20;

/** Creates the schema-3 tables in a new file (WAL, the cache's checkpoint size, 64 MiB page cache); returns the connection. */
export function schema3File(file: string): Database.Database {
  const db = new Database(file, { timeout: 10_000 });
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('wal_autocheckpoint = 16384');
  db.pragma(`journal_size_limit = ${16384 * 4096}`);
  db.pragma('cache_size = -65536');
  db.exec("CREATE TABLE meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID; INSERT INTO meta VALUES ('schema_version', 3), ('clock', 0)");
  db.exec('CREATE TABLE models (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE)');
  db.exec('CREATE TABLE embeddings (model INTEGER NOT NULL, digest BLOB NOT NULL, vec BLOB NOT NULL, sum INTEGER NOT NULL, last_used INTEGER NOT NULL)');
  db.exec('CREATE UNIQUE INDEX embeddings_key ON embeddings (model, digest)');
  db.exec('CREATE TABLE staged (model INTEGER NOT NULL, digest BLOB NOT NULL, vec BLOB NOT NULL, sum INTEGER NOT NULL, last_used INTEGER NOT NULL)');
  db.exec('CREATE TABLE lru (id INTEGER PRIMARY KEY, last_used INTEGER NOT NULL); CREATE INDEX lru_last_used ON lru (last_used)');
  return db;
}

/** The merge of sessions 12-18: staged rows into `embeddings` in key order, then their lru entries. In a transaction. */
export function schema3Merge(db: Database.Database): void {
  db.exec(
    'INSERT INTO embeddings (model, digest, vec, sum, last_used) SELECT model, digest, vec, sum, last_used FROM staged WHERE true ' +
      'ORDER BY model, digest, rowid ON CONFLICT (model, digest) DO UPDATE SET vec = excluded.vec, sum = excluded.sum, last_used = excluded.last_used',
  );
  db.exec(
    'INSERT INTO lru (id, last_used) SELECT e.rowid, MAX(s.last_used) FROM staged s JOIN embeddings e ON e.model = s.model AND e.digest = s.digest ' +
      'GROUP BY e.rowid ORDER BY e.rowid ON CONFLICT (id) DO UPDATE SET last_used = excluded.last_used',
  );
  db.exec('DELETE FROM staged');
}

/**
 * A schema-3 writer on an open file: `put` stages whole rows in one transaction and merges every
 * {@link SCHEMA3_MERGE_ROWS}; `close` merges the rest and closes the connection.
 */
export function schema3Writer(db: Database.Database): { put(entries: readonly (readonly [string, Float32Array])[]): void; close(): void } {
  const models = new Map<string, number>();
  const modelId = (m: string): number => {
    let id = models.get(m);
    if (id === undefined) {
      db.prepare('INSERT OR IGNORE INTO models (key) VALUES (?)').run(m);
      id = Number((db.prepare('SELECT id FROM models WHERE key = ?').get(m) as { id: number }).id);
      models.set(m, id);
    }
    return id;
  };
  const tick = db.prepare("UPDATE meta SET value = value + 1 WHERE key = 'clock' RETURNING value");
  const stage = db.prepare('INSERT INTO staged (model, digest, vec, sum, last_used) VALUES (?, ?, ?, ?, ?)');
  let staged = 0;
  return {
    put(entries) {
      db.transaction(() => {
        const now = Number((tick.get() as { value: number }).value);
        for (const [key, vec] of entries) {
          const { model, digest } = splitCacheKey(key);
          const bytes = Buffer.from(vec.buffer, vec.byteOffset, vec.byteLength);
          stage.run(modelId(model), digest, bytes, rowChecksum(key, bytes), now);
        }
        staged += entries.length;
        if (staged >= SCHEMA3_MERGE_ROWS) {
          schema3Merge(db);
          staged = 0;
        }
      }).immediate();
    },
    close() {
      if (staged > 0) db.transaction(() => schema3Merge(db)).immediate();
      db.close();
    },
  };
}

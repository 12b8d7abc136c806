/**
 * Tests that alter an embedding cache file by hand (damaged rows, a previous version's writes) address rows by their
 * key string. Schema 3 and 4 (src/embed/cache.ts) store a key as `(model id, digest)`; this helper gives a connection the
 * TEMP view `keyed (rowid, key, vec, sum, last_used)` over `embeddings` joined with `models`, the key rebuilt exactly
 * as `joinCacheKey` does (provider part + NUL + lower-case hex of a 32-byte digest; the provider part alone for an empty
 * digest), with INSTEAD OF triggers so that `UPDATE keyed ... WHERE key = ?`, `DELETE FROM keyed WHERE key = ?` and
 * `INSERT INTO keyed (key, vec, sum, last_used)` change the stored rows (an insert also stages its key in
 * `staged_keys`, as a put does, so the next read merges it into `keys`; a delete also deletes its entry in `keys`). Written in SQL of its own (not the module's),
 * so a mistake in the module's split is not repeated here.
 */
import type Database from 'better-sqlite3';

// SQLite's length() and substr() of a TEXT stop at its first NUL: work on the key's bytes.
const bytes = (k: string): string => `CAST(${k} AS BLOB)`;
const tail = (k: string): string => `CAST(substr(${bytes(k)}, -64) AS TEXT)`;
const SPLITS = (k: string): string => `(length(${bytes(k)}) >= 65 AND substr(${bytes(k)}, -65, 1) = x'00' AND NOT ${tail(k)} GLOB '*[^0-9a-f]*')`;
const MODEL = (k: string): string => `(CASE WHEN ${SPLITS(k)} THEN CAST(substr(${bytes(k)}, 1, length(${bytes(k)}) - 65) AS TEXT) ELSE ${k} END)`;
const DIGEST = (k: string): string => `(CASE WHEN ${SPLITS(k)} THEN unhex(${tail(k)}) ELSE x'' END)`;

/** Creates the TEMP view `keyed` and its triggers on `db` (see the module doc); returns `db`. */
export function keyedView<T extends Database.Database>(db: T): T {
  db.exec(`
    CREATE TEMP VIEW IF NOT EXISTS keyed AS
      SELECT e.rowid AS rowid,
             CASE WHEN length(e.digest) = 0 THEN m.key ELSE m.key || char(0) || lower(hex(e.digest)) END AS key,
             e.vec AS vec, e.sum AS sum, e.last_used AS last_used
      FROM main.embeddings e JOIN main.models m ON m.id = e.model;
    CREATE TEMP TRIGGER IF NOT EXISTS keyed_update INSTEAD OF UPDATE ON keyed BEGIN
      UPDATE main.embeddings SET vec = NEW.vec, sum = NEW.sum, last_used = NEW.last_used WHERE rowid = OLD.rowid;
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS keyed_delete INSTEAD OF DELETE ON keyed BEGIN
      DELETE FROM main.keys WHERE id = OLD.rowid;
      DELETE FROM main.embeddings WHERE rowid = OLD.rowid;
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS keyed_insert INSTEAD OF INSERT ON keyed BEGIN
      INSERT OR IGNORE INTO main.models (key) VALUES (${MODEL('NEW.key')});
      INSERT INTO main.embeddings (model, digest, vec, sum, last_used)
        VALUES ((SELECT id FROM main.models WHERE key = ${MODEL('NEW.key')}), ${DIGEST('NEW.key')}, NEW.vec, NEW.sum, NEW.last_used);
      INSERT INTO main.staged_keys (model, digest, id, last_used)
        SELECT model, digest, rowid, last_used FROM main.embeddings WHERE rowid = last_insert_rowid();
    END;
  `);
  return db;
}

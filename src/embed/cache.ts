/**
 * The on-disk embedding cache: one SQLite file (better-sqlite3 v12, WAL mode) mapping a key to the exact bytes of a
 * `Float32Array`.
 *
 * - Key: `provider.cacheKey(role) + '\u0000' + sha256(text)` (built by `embedTexts`, see {@link embeddingCacheKey}).
 *   The provider part names the model, its file hash, dtype, pooling, normalisation, role prefix and max length, so
 *   a vector is never reused across models or settings.
 * - Stored key (schema 3, issue 25): a key is kept as `(model, digest)`: `model` the id of its provider part in the
 *   table `models (id, key)`, `digest` the 32 bytes of its SHA-256 hex ({@link splitCacheKey}); a key of another form
 *   is kept whole as a model with an empty digest, so any string round-trips ({@link joinCacheKey}). The unique index
 *   on `(model, digest)` then holds ~45-byte entries where schema 2 indexed the ~270-byte text key: at 10M documents
 *   (17.6 million keys) its inserts dirtied a page of a 4.5 GB index per row, and the sweep's writes were bound by
 *   them (docs/scale.md "10M (session 11)"). A schema-2 file is migrated in place on open, vectors and checksums kept.
 * - Layout (schema 4, issue 25): a put appends each vector once, to `embeddings (model, digest, vec, sum, last_used)`
 *   (no index), and its key to the narrow table `staged_keys (model, digest, id, last_used)`; a merge sorts only the
 *   staged keys into `keys (model, digest) → id` (a WITHOUT ROWID table: the index of schema 3 as a table). Schema 3
 *   staged whole rows and its merge copied every 400-byte vector a second time through the sorter and the WAL: a cold
 *   fill of 2,097,152 glove-100d vectors took 54.0 s and 49.1 s of CPU there, 29.7 s and 26.2 s in a replay of this
 *   layout, and a cold fill of 4,194,304 took 0.73× the wall time and 0.78× the CPU through this code
 *   (docs/scale.md "The cache's writes: vectors written once (session 19)"). Reads go through `keys` and check that
 *   the row found holds the same (model, digest). A schema-3 file is migrated in place on open (its `keys` built from
 *   its index, its staged rows kept as puts not yet merged).
 * - Value: the vector's bytes exactly as returned (little-endian float32), so a round trip is bit-exact.
 * - Checksum (issue 24): each row's `sum` is the CRC-32 of its key's UTF-8 bytes (the whole key string, as in schema 2)
 *   followed by its vector's bytes ({@link rowChecksum}), checked on every read: a vector altered, or moved to another
 *   key, fails it. A row that fails, or that holds a NaN or an infinity, is not served (a miss, so it is recomputed and
 *   overwritten) and is counted in `discarded`, with its key kept in {@link EmbeddingCache.discardedKeys}; the sweep
 *   warns naming the file.
 * - Schema version: a row in `meta`; versions 2 and 3 are migrated (above), any other version drops and recreates the tables
 *   (so the vectors of a schema-1 file, which carry no checksum, are recomputed once).
 * - Concurrency: WAL journal + `busy_timeout` (default 10 s); every write runs in a `BEGIN IMMEDIATE` transaction,
 *   so two sweeps can share one file (a writer waits for the other instead of failing).
 * - Bounded: `maxEntries` prunes after each `put` to the most recently used entries. "Recently used" is a logical
 *   clock stored in the file (one tick per `get`/`put` call, shared by all connections), not wall time, so ties
 *   inside one millisecond and clock skew cannot reorder entries; ties within one call are broken by the provider
 *   part of the key, then the digest (for keys of one provider: key order).
 *   Each row's clock lives in the narrow table `lru (id = the row's rowid, last_used)`, indexed by last_used, so that a
 *   read marking its hits rewrites small entries, not the vector rows (docs/scale.md, "Warm cache reads").
 *
 * Default location, chosen by the sweep: `<cacheDir>/embeddings.sqlite`, cacheDir default the user's cache folder (config/cache-dir.ts).
 */
import { crc32 } from 'node:zlib';
import { HarnessError } from '../errors.js';
import type BetterSqlite3 from 'better-sqlite3';
import { cacheError as sqliteCacheError, openSqliteCache, type Database } from '../store/sqlite.js';
import { sha256Text } from './hash.js';
import type { EmbeddingSpec } from './spec.js';

/** Bump when the table layout or value encoding changes; a mismatch recreates the table. */
export const CACHE_SCHEMA_VERSION = 4;

/** Options of {@link EmbeddingCache.open}. */
export interface EmbeddingCacheOptions {
  /** Keep at most this many vectors (least recently used are dropped after each put). Default: unbounded. */
  maxEntries?: number;
  /** How long a writer waits for another connection's lock, in milliseconds. Default 10 000. */
  busyTimeoutMs?: number;
  /**
   * Staged puts that trigger a merge (see {@link EmbeddingCache.put}), ≥ 0; 0 merges every put in its own
   * transaction (as with `maxEntries`). Default {@link MERGE_ROWS}.
   */
  mergeRows?: number;
  /**
   * SQLite page cache of this connection, bytes (rounded down to whole KiB), ≥ 64 KiB. Default
   * {@link DEFAULT_PAGE_CACHE_BYTES} (64 MiB). The sweep passes `memoryShares(limits.memory).embeddingCachePageBytes`.
   * It also bounds the memory the merge of staged keys sorts in before SQLite spills the sort to temporary files.
   */
  pageCacheBytes?: number;
}

/** Counters of one open cache (this connection only, since it was opened) plus the file's size. */
export interface EmbeddingCacheStats {
  file: string;
  schemaVersion: number;
  /** Vectors in the file now (all connections). */
  entries: number;
  /** Keys found by `get` on this connection. */
  hits: number;
  /** Keys not found by `get` on this connection. */
  misses: number;
  /** Vectors written by `put` on this connection. */
  puts: number;
  /** Vectors removed by pruning on this connection. */
  pruned: number;
  /** Rows found by a read on this connection that failed their checksum or held a non-finite value (served as misses). */
  discarded: number;
  maxEntries: number | null;
}

/**
 * The checksum stored beside a vector: CRC-32 (zlib's, IEEE polynomial) of `key` as UTF-8, continued over the vector's
 * bytes (`vec`: the stored little-endian float32 bytes). An unsigned 32-bit integer. Binding the key makes a vector
 * moved to another row fail as surely as an altered one; CRC-32 detects every burst of up to 32 changed bits and any
 * other change with probability 1 − 2⁻³², at zlib's native speed (about 6 GB/s here), cheap enough for every read.
 */
export function rowChecksum(key: string, vec: Uint8Array): number {
  return crc32(vec, crc32(key));
}

/** True when every entry of `v` is finite (no NaN, no ±Infinity). */
function allFinite(v: Float32Array): boolean {
  for (let i = 0; i < v.length; i++) if (!Number.isFinite(v[i])) return false;
  return true;
}

/**
 * {@link embeddingCacheKey} from the text's SHA-256 of its UTF-8 (`digest`, its first 32 bytes) instead of the text:
 * for callers that keep digests, not texts (embed-texts.ts, validate's estimate).
 */
export function embeddingCacheKeyOfDigest(providerKey: string, digest: Uint8Array): string {
  return `${providerKey}\u0000${Buffer.from(digest.buffer, digest.byteOffset, 32).toString('hex')}`;
}

/** `providerKey + '\u0000' + sha256(text)`: the cache key of one text for one provider role. */
export function embeddingCacheKey(providerKey: string, text: string): string {
  return `${providerKey}\u0000${sha256Text(text)}`;
}

/** A cache key as stored (schema 3): the provider part and the digest's 32 bytes (empty for a key of another form). */
export interface SplitCacheKey {
  /** The provider part (`models.key`): the key without `'\u0000' + 64 hex digits`, or the whole key. */
  model: string;
  /** 32 bytes (the SHA-256 hex decoded), or 0 bytes when the key does not end in NUL + 64 lower-case hex digits. */
  digest: Buffer;
}

const EMPTY = Buffer.alloc(0);
/** True when the 64 characters of `key` from `from` are lower-case hex digits (the form sha256Text writes). */
function lowerHexTail(key: string, from: number): boolean {
  for (let i = from; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 102))) return false;
  }
  return true;
}

/**
 * Splits a cache key into what schema 3 stores: a key `P + '\u0000' + H` with H 64 lower-case hex digits becomes
 * `{ model: P, digest: bytes of H }`; any other key K becomes `{ model: K, digest: empty }`. {@link joinCacheKey}
 * inverts it exactly, so two keys never share a stored pair.
 */
export function splitCacheKey(key: string): SplitCacheKey {
  const cut = key.length - 65;
  if (cut >= 0 && key.charCodeAt(cut) === 0 && lowerHexTail(key, cut + 1)) {
    return { model: key.slice(0, cut), digest: Buffer.from(key.slice(cut + 1), 'hex') };
  }
  return { model: key, digest: EMPTY };
}

/** The key of a stored pair: `model + '\u0000' + hex(digest)` for a 32-byte digest, `model` for an empty one. */
export function joinCacheKey(model: string, digest: Uint8Array): string {
  return digest.length === 0 ? model : `${model}\u0000${Buffer.from(digest.buffer, digest.byteOffset, digest.byteLength).toString('hex')}`;
}

/** One model's measured embedding speed, as stored by {@link EmbeddingCache.recordThroughput}. */
export interface ThroughputRecord {
  /** {@link embeddingSpecKey} of the model's resolved spec. */
  specKey: string;
  /** The provider's `cacheKey('document')` when it was measured. */
  documentKey: string;
  /** The provider's `cacheKey('query')` when it was measured. */
  queryKey: string;
  /** Texts embedded (cache misses), ≥ 1. */
  texts: number;
  /** Seconds of inference for those texts, > 0. */
  seconds: number;
  /** texts / seconds. */
  textsPerSecond: number;
  /** ISO 8601 time of the record. */
  recordedAt: string;
}

/**
 * The identity of a model setting for throughput records: the resolved spec's fields that change the vectors
 * (model, dtype, pooling, normalize, prefixes, maxLength), as JSON. Batch size and workers change speed only, and
 * the label is a name, so they are left out.
 */
export function embeddingSpecKey(spec: EmbeddingSpec): string {
  return JSON.stringify({
    model: spec.model,
    dtype: spec.dtype,
    pooling: spec.pooling,
    normalize: spec.normalize,
    queryPrefix: spec.queryPrefix,
    documentPrefix: spec.documentPrefix,
    maxLength: spec.maxLength,
  });
}

type Statement = BetterSqlite3.Statement;

/**
 * Makes `lru` hold exactly one entry per row of `embeddings` (rows written or deleted by a version before session 9
 * sharing the file): drops entries of rows gone, and adds the rows missing with their `last_used` column. O(rows);
 * call inside a write transaction.
 */
function reconcileLru(db: Database): void {
  db.exec('DELETE FROM lru WHERE id NOT IN (SELECT rowid FROM embeddings)');
  db.exec('INSERT INTO lru (id, last_used) SELECT rowid, last_used FROM embeddings WHERE rowid NOT IN (SELECT id FROM lru)');
}

/** True when `table` exists and has a column `column`. */
function hasColumn(db: Database, table: string, column: string): boolean {
  return (db.prepare(`SELECT name FROM pragma_table_info(?)`).all(table) as { name: string }[]).some((c) => c.name === column);
}

/** The TEXT column `k` as its bytes: SQLite's length() and substr() of a TEXT stop at its first NUL. */
const B = (k: string): string => `CAST(${k} AS BLOB)`;
/** SQL true when the TEXT column `k` ends in NUL + 64 lower-case hex digits (the form {@link splitCacheKey} splits). */
const SPLITS = (k: string): string =>
  `(length(${B(k)}) >= 65 AND substr(${B(k)}, -65, 1) = x'00' AND NOT CAST(substr(${B(k)}, -64) AS TEXT) GLOB '*[^0-9a-f]*')`;
/** SQL of {@link SplitCacheKey.model} for the TEXT column `k`. */
const MODEL_OF = (k: string): string => `(CASE WHEN ${SPLITS(k)} THEN CAST(substr(${B(k)}, 1, length(${B(k)}) - 65) AS TEXT) ELSE ${k} END)`;

/**
 * Rewrites a schema-2 file (`embeddings (key TEXT PRIMARY KEY, vec, sum, last_used)`) into schema 3 inside the open
 * transaction, keeping every row: same rowid (so `lru` stays valid), vector and checksum (it covers the whole key
 * string, unchanged); the key split as {@link splitCacheKey} does, in SQL (`unhex`, SQLite ≥ 3.41). The unique index is
 * built after the rows (a sort, not 17 million random inserts). A file of a version before session 9 (no `lru`) gets
 * its `lru` filled from `last_used`. O(rows), once.
 */
function migrateFromSchema2(db: Database): void {
  db.exec('DROP INDEX IF EXISTS embeddings_last_used');
  db.exec('ALTER TABLE embeddings RENAME TO embeddings_v2');
  db.exec('CREATE TABLE IF NOT EXISTS models (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE)');
  db.exec(
    'CREATE TABLE embeddings (model INTEGER NOT NULL, digest BLOB NOT NULL, vec BLOB NOT NULL, sum INTEGER NOT NULL, last_used INTEGER NOT NULL)',
  );
  db.exec(`INSERT OR IGNORE INTO models (key) SELECT DISTINCT ${MODEL_OF('key')} FROM embeddings_v2`);
  db.exec(
    'INSERT INTO embeddings (rowid, model, digest, vec, sum, last_used) ' +
      `SELECT o.rowid, m.id, CASE WHEN ${SPLITS('o.key')} THEN unhex(CAST(substr(CAST(o.key AS BLOB), -64) AS TEXT)) ELSE x'' END, o.vec, o.sum, o.last_used ` +
      `FROM embeddings_v2 o JOIN models m ON m.key = ${MODEL_OF('o.key')}`,
  );
  db.exec('DROP TABLE embeddings_v2');
  db.exec('CREATE TABLE IF NOT EXISTS lru (id INTEGER PRIMARY KEY, last_used INTEGER NOT NULL)');
  reconcileLru(db);
}

/**
 * Rewrites a schema-3 file (`embeddings` with the unique index `embeddings_key (model, digest)`, whole rows staged in
 * `staged`) into schema 4 inside the open transaction: `keys` is filled from the rows in key order (read through the
 * index when present, so no sort), the index dropped; rows still staged (a killed run's puts) are appended to
 * `embeddings` in the order they were put, with their keys in `staged_keys`, so the next read merges them as any
 * put. Vectors, checksums, rowids and `lru` are kept. O(rows), once. Also the last step of a schema-2 migration.
 */
function migrateFromSchema3(db: Database): void {
  db.exec('CREATE TABLE IF NOT EXISTS keys (model INTEGER NOT NULL, digest BLOB NOT NULL, id INTEGER NOT NULL, PRIMARY KEY (model, digest)) WITHOUT ROWID');
  db.exec('INSERT INTO keys (model, digest, id) SELECT model, digest, rowid FROM embeddings WHERE true ORDER BY model, digest');
  db.exec('DROP INDEX IF EXISTS embeddings_key');
  db.exec('CREATE TABLE IF NOT EXISTS staged_keys (model INTEGER NOT NULL, digest BLOB NOT NULL, id INTEGER NOT NULL, last_used INTEGER NOT NULL)');
  if (hasColumn(db, 'staged', 'vec')) {
    const { before } = db.prepare('SELECT COALESCE(MAX(rowid), 0) AS before FROM embeddings').get() as { before: number };
    db.exec('INSERT INTO embeddings (model, digest, vec, sum, last_used) SELECT model, digest, vec, sum, last_used FROM staged ORDER BY rowid');
    db.prepare('INSERT INTO staged_keys (model, digest, id, last_used) SELECT model, digest, rowid, last_used FROM embeddings WHERE rowid > ? ORDER BY rowid').run(before);
    db.exec('DROP TABLE staged');
  }
}

/** `keys` split ({@link splitCacheKey}) and grouped by provider part, digests in the keys' order within a group. */
function groupByModel(keys: readonly string[]): Map<string, Buffer[]> {
  const out = new Map<string, Buffer[]>();
  for (const k of keys) {
    const { model, digest } = splitCacheKey(k);
    const list = out.get(model);
    if (list) list.push(digest);
    else out.set(model, [digest]);
  }
  return out;
}

/**
 * The key {@link EmbeddingCache.verifyAll} reports for a row whose model id has no row in `models` (the file was
 * edited): `'\u0000model#' + id + '\u0000' + hex(digest)`, a form no provider key starts with (they never start with
 * NUL), which {@link EmbeddingCache.remove} recognises.
 */
function orphanKey(id: number, digest: Uint8Array): string {
  return `\u0000model#${id}\u0000${Buffer.from(digest.buffer, digest.byteOffset, digest.byteLength).toString('hex')}`;
}

/** The model id and digest of an {@link orphanKey}, or undefined for any other key. */
function parseOrphanKey(key: string): { id: number; digest: Buffer } | undefined {
  const m = /^\u0000model#(\d+)\u0000((?:[0-9a-f]{2})*)$/.exec(key);
  return m === null ? undefined : { id: Number(m[1]), digest: Buffer.from(m[2], 'hex') };
}

const IN_CHUNK = 500;
/**
 * Staged keys that trigger a merge into `keys` ({@link EmbeddingCache.put}): 2^20 keys, ~50 MB to sort (SQLite's
 * sorter keeps the page cache's worth in memory and spills the rest to temporary files). Measured on a file of 8
 * million rows, 524,288 puts of 32 (docs/scale.md "The embedding cache's writes (session 12)", schema 3): direct
 * indexed inserts 22.1 KB written a row, merges every 2^18 rows 7.1 KB, one merge of 2^19 rows 4.9 KB.
 */
export const MERGE_ROWS = 1 << 20;
/** Default SQLite page cache of the embedding cache's connection: 64 MiB (SQLite's default is 2 MB). */
export const DEFAULT_PAGE_CACHE_BYTES = 64 * 1024 * 1024;
/** Smallest `pageCacheBytes` accepted: 64 KiB. */
const MIN_PAGE_CACHE_BYTES = 64 * 1024;
/** WAL pages between automatic checkpoints of the embedding cache (SQLite's default is 1,000). */
export const WAL_CHECKPOINT_PAGES = 16384;

function cacheError(file: string, what: string, cause: unknown): HarnessError {
  return sqliteCacheError('embedding cache', file, what, cause);
}

/** A vector store on SQLite. Not safe to share one instance between worker threads; open one per thread/process. */
export class EmbeddingCache {
  readonly file: string;
  private readonly db: Database;
  private maxEntries: number | null;
  private hits = 0;
  private misses = 0;
  private puts = 0;
  private pruned = 0;
  private discarded = 0;
  private readonly discardedList: string[] = [];
  /** Ids of provider parts in `models` (see {@link EmbeddingCache.modelId}). */
  private readonly models = new Map<string, number>();
  /** Keys this connection staged since its last merge (a trigger only: a merge takes every staged key). */
  private staged = 0;
  /** Prepared SELECTs by their number of digests. */
  private readonly selects = new Map<number, Statement>();

  private readonly mergeRows: number;

  private constructor(file: string, db: Database, maxEntries: number | null, mergeRows: number) {
    this.file = file;
    this.db = db;
    this.maxEntries = maxEntries;
    this.mergeRows = mergeRows;
  }

  /**
   * Opens (creating folders and file as needed) the cache at `file`. Sets WAL mode and the busy timeout, creates the
   * tables, and recreates the `embeddings` table when the stored schema version differs from
   * {@link CACHE_SCHEMA_VERSION}. Throws `HarnessError('CACHE_FAILED')` naming the file when it cannot be opened
   * (not a SQLite file, no permission) and `HarnessError('CONFIG_INVALID')` for a `maxEntries` below 1, a `mergeRows` below 0
   * or a `pageCacheBytes` below 64 KiB.
   */
  static open(file: string, opts: EmbeddingCacheOptions = {}): EmbeddingCache {
    const maxEntries = opts.maxEntries ?? null;
    const mergeRows = opts.mergeRows ?? MERGE_ROWS;
    if (!Number.isInteger(mergeRows) || mergeRows < 0) {
      throw new HarnessError('CONFIG_INVALID', `embedding cache mergeRows (${mergeRows}) must be a whole number ≥ 0`, {
        remedy: `leave it out for the default (${MERGE_ROWS}), or give 0 to write every put straight into the index`,
      });
    }
    const pageCacheBytes = opts.pageCacheBytes ?? DEFAULT_PAGE_CACHE_BYTES;
    if (!Number.isInteger(pageCacheBytes) || pageCacheBytes < MIN_PAGE_CACHE_BYTES) {
      throw new HarnessError('CONFIG_INVALID', `embedding cache pageCacheBytes (${pageCacheBytes}) must be a whole number ≥ ${MIN_PAGE_CACHE_BYTES}`, {
        remedy: `leave it out for the default (${DEFAULT_PAGE_CACHE_BYTES}), or give a larger limits.memory`,
      });
    }
    if (maxEntries !== null && (!Number.isInteger(maxEntries) || maxEntries < 1)) {
      throw new HarnessError('CONFIG_INVALID', `embedding cache maxEntries (${maxEntries}) must be a whole number ≥ 1`, {
        remedy: 'leave it out for an unbounded cache, or give a positive number',
      });
    }
    const { file: abs, db } = openSqliteCache(
      file,
      {
        label: 'embedding cache',
        version: CACHE_SCHEMA_VERSION,
        onSchemaMismatch: (conn) => {
          const stored = conn.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: unknown } | undefined;
          if (stored !== undefined && Number(stored.value) === 2 && hasColumn(conn, 'embeddings', 'key')) {
            migrateFromSchema2(conn);
            migrateFromSchema3(conn);
            return;
          }
          if (stored !== undefined && Number(stored.value) === 3 && hasColumn(conn, 'embeddings', 'digest')) {
            migrateFromSchema3(conn);
            return;
          }
          conn.exec('DROP TABLE IF EXISTS embeddings');
          conn.exec('DROP TABLE IF EXISTS lru');
          conn.exec('DROP TABLE IF EXISTS models');
          conn.exec('DROP TABLE IF EXISTS staged');
          conn.exec('DROP TABLE IF EXISTS keys');
          conn.exec('DROP TABLE IF EXISTS staged_keys');
          conn.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('clock', 0)").run();
        },
        createTables: (conn) => {
          conn.exec('CREATE TABLE IF NOT EXISTS models (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE)');
          conn.exec(
            'CREATE TABLE IF NOT EXISTS embeddings (model INTEGER NOT NULL, digest BLOB NOT NULL, vec BLOB NOT NULL, ' +
              'sum INTEGER NOT NULL, last_used INTEGER NOT NULL)',
          );
          // The index of the rows: key → rowid of `embeddings`, filled by merges (see put).
          conn.exec(
            'CREATE TABLE IF NOT EXISTS keys (model INTEGER NOT NULL, digest BLOB NOT NULL, id INTEGER NOT NULL, PRIMARY KEY (model, digest)) WITHOUT ROWID',
          );
          // The keys of the rows put since the last merge, unindexed, merged into `keys` in key order (see put).
          conn.exec(
            'CREATE TABLE IF NOT EXISTS staged_keys (model INTEGER NOT NULL, digest BLOB NOT NULL, id INTEGER NOT NULL, last_used INTEGER NOT NULL)',
          );
          // The LRU clock of each row lives in the narrow table `lru` (id = the row's rowid), indexed by last_used: a
          // read marks its hits there, rewriting ~16-byte entries instead of the vector rows (docs/scale.md, "Warm
          // cache reads"). embeddings.last_used is kept, and written by put, so the column stays meaningful.
          conn.exec('CREATE TABLE IF NOT EXISTS lru (id INTEGER PRIMARY KEY, last_used INTEGER NOT NULL)');
          conn.exec('CREATE INDEX IF NOT EXISTS lru_last_used ON lru (last_used)');
          conn.exec("INSERT OR IGNORE INTO meta (key, value) VALUES ('clock', 0)");
          conn.exec(
            'CREATE TABLE IF NOT EXISTS throughput (spec TEXT PRIMARY KEY, document_key TEXT NOT NULL, query_key TEXT NOT NULL, ' +
              'texts INTEGER NOT NULL, seconds REAL NOT NULL, recorded_at TEXT NOT NULL) WITHOUT ROWID',
          );
        },
      },
      opts.busyTimeoutMs,
    );
    // Checkpoint the WAL every 16,384 pages (64 MB) instead of SQLite's 1,000: each checkpoint syncs the file, and a
    // sweep's puts of random keys dirty many pages per batch; 200k puts of 32 vectors: 67 -> 40 µs a vector (same
    // durability: synchronous stays NORMAL). The WAL is cut back to 64 MB after a checkpoint.
    try {
      db.pragma(`wal_autocheckpoint = ${WAL_CHECKPOINT_PAGES}`);
      db.pragma(`journal_size_limit = ${WAL_CHECKPOINT_PAGES * 4096}`);
      // a negative cache_size is in KiB
      db.pragma(`cache_size = -${Math.floor(pageCacheBytes / 1024)}`);
    } catch (e) {
      db.close();
      throw cacheError(abs, 'could not set the WAL checkpoint size and page cache', e);
    }
    return new EmbeddingCache(abs, db, maxEntries, mergeRows);
  }

  /** Advances the shared logical clock by one tick and returns the new value. Call inside a write transaction. */
  private tick(): number {
    const row = this.db
      .prepare("UPDATE meta SET value = value + 1 WHERE key = 'clock' RETURNING value")
      .get() as { value: number | bigint };
    return Number(row.value);
  }

  /**
   * Looks up `keys`; returns a new `Float32Array` (a copy of the stored bytes) per key, or `undefined` when absent,
   * aligned with `keys`. Found entries are marked as used now. Throws `HarnessError('CACHE_FAILED')`.
   */
  get(keys: readonly string[]): (Float32Array | undefined)[] {
    const out: (Float32Array | undefined)[] = new Array<Float32Array | undefined>(keys.length).fill(undefined);
    const copies = new Map<string, Float32Array>();
    this.visit(keys, (i, vec) => {
      let copy = copies.get(keys[i]);
      if (copy === undefined) {
        copy = vec.slice();
        copies.set(keys[i], copy);
      }
      out[i] = copy;
    });
    return out;
  }

  /**
   * Looks up `keys` and calls `onFound(i, vec)` for every position i whose key is stored, without allocating a
   * vector per key: `vec` views the row's bytes as read from SQLite (or a reused scratch copy when they are not
   * 4-byte aligned), valid only during the call, so copy what you keep (e.g. into a `VectorMatrix` row). Returns how
   * many positions were found. Same marking, counters and errors as {@link EmbeddingCache.get}; an error thrown by
   * `onFound` rolls the marking back and is rethrown unchanged.
   */
  visit(keys: readonly string[], onFound: (i: number, vec: Float32Array) => void): number {
    if (keys.length === 0) return 0;
    // distinct keys by provider part, each digest with the positions asking for it
    const groups = new Map<string, Map<string, { digest: Buffer; at: number[] }>>();
    keys.forEach((k, i) => {
      const { model, digest } = splitCacheKey(k);
      let group = groups.get(model);
      if (group === undefined) groups.set(model, (group = new Map()));
      const id = digest.toString('latin1');
      const entry = group.get(id);
      if (entry) entry.at.push(i);
      else group.set(id, { digest, at: [i] });
    });
    return this.visitGroups(keys.length, groups, onFound);
  }

  /**
   * {@link EmbeddingCache.visit} for the keys `model + '\u0000' + hex(digestAt(i))`, i in [0, count), without building
   * the key strings (the sweep's lookup of millions of chunk texts: 17 µs a key through `visit`, docs/scale.md "The
   * embedding cache's writes (session 12)"). `digestAt(i)` gives 32 bytes (a view is fine; it is copied). Same
   * results, marking, counters and errors as `visit` over those keys.
   */
  visitDigests(model: string, count: number, digestAt: (i: number) => Uint8Array, onFound: (i: number, vec: Float32Array) => void): number {
    if (count === 0) return 0;
    const group = new Map<string, { digest: Buffer; at: number[] }>();
    for (let i = 0; i < count; i++) {
      const d = digestAt(i);
      if (d.length !== 32) throw new RangeError(`visitDigests: digest ${i} has ${d.length} bytes (32 needed)`);
      const view = Buffer.from(d.buffer, d.byteOffset, 32);
      const id = view.toString('latin1');
      const entry = group.get(id);
      if (entry) entry.at.push(i);
      else group.set(id, { digest: Buffer.from(view), at: [i] });
    }
    return this.visitGroups(count, new Map([[model, group]]), onFound);
  }

  /** The body of {@link EmbeddingCache.visit}: `asked` positions in all, grouped by provider part and digest. */
  private visitGroups(
    asked: number,
    groups: Map<string, Map<string, { digest: Buffer; at: number[] }>>,
    onFound: (i: number, vec: Float32Array) => void,
  ): number {
    let found = 0;
    let callerError: { e: unknown } | undefined;
    try {
      this.db
        .transaction(() => {
          this.mergeInside(); // reads see every put
          const now = this.tick();
          let distinct = 0;
          for (const g of groups.values()) distinct += g.size;
          // The rowids of the rows served, marked in `lru` after all reads, in rowid order (lru's order): each of its
          // pages is then rewritten about once, where marking 500 random keys at a time in the vector rows and the old
          // (last_used, key) index rewrote pages per key (docs/scale.md, "Warm cache reads"). One transaction, so the
          // result is the same.
          let hitRowids = new Float64Array(Math.min(distinct, 1 << 16));
          let nHit = 0;
          let scratch = new Float32Array(0);
          for (const [model, group] of groups) {
            const id = this.modelId(model, false);
            if (id === undefined) continue; // no vector of this provider part in the file: all misses
            const entries = [...group.values()];
            for (let s = 0; s < entries.length; s += IN_CHUNK) {
              const part = entries.slice(s, s + IN_CHUNK);
              const rows = this.selectStatement(part.length).all(id, ...part.map((e) => e.digest)) as { rowid: number; digest: Uint8Array; vec: Uint8Array; sum: number }[];
              for (const row of rows) {
                const key = joinCacheKey(model, row.digest);
                const bytes = row.vec;
                // Not a float32 array, altered, moved from another key: a miss (recomputed, and a put overwrites it).
                if (bytes.byteLength % 4 !== 0 || rowChecksum(key, bytes) !== row.sum) {
                  this.discard(key);
                  continue;
                }
                let vec: Float32Array;
                if (bytes.byteOffset % 4 === 0) {
                  vec = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
                } else {
                  if (scratch.length !== bytes.byteLength / 4) scratch = new Float32Array(bytes.byteLength / 4);
                  new Uint8Array(scratch.buffer).set(bytes);
                  vec = scratch;
                }
                if (!allFinite(vec)) {
                  this.discard(key);
                  continue;
                }
                const d = row.digest;
                for (const i of group.get(Buffer.from(d.buffer, d.byteOffset, d.byteLength).toString('latin1'))?.at ?? []) {
                  try {
                    onFound(i, vec);
                  } catch (e) {
                    callerError = { e };
                    throw e;
                  }
                  found++;
                }
                if (nHit === hitRowids.length) {
                  const grown = new Float64Array(Math.min(distinct, hitRowids.length * 2));
                  grown.set(hitRowids);
                  hitRowids = grown;
                }
                hitRowids[nHit++] = row.rowid;
              }
            }
          }
          const marked = hitRowids.subarray(0, nHit).sort();
          const mark = nHit > 0 ? this.markStatement(Math.min(IN_CHUNK, nHit)) : undefined;
          for (let s = 0; s < nHit; s += IN_CHUNK) {
            const part = Array.from(marked.subarray(s, s + IN_CHUNK));
            (part.length === IN_CHUNK || s === 0 ? mark! : this.markStatement(part.length)).run(now, ...part);
          }
        })
        .immediate();
    } catch (e) {
      if (callerError !== undefined) throw callerError.e; // onFound's own error (the transaction was rolled back)
      throw cacheError(this.file, 'read failed', e);
    }
    this.hits += found;
    this.misses += asked - found;
    return found;
  }

  /**
   * `SELECT rowid, digest, vec, sum` of the rows `keys` names for `model = ? AND digest IN (n placeholders)`, n ≥ 1,
   * each row checked to hold that same key; prepared once per n.
   */
  private selectStatement(n: number): Statement {
    let stmt = this.selects.get(n);
    if (stmt === undefined) {
      stmt = this.db.prepare(
        'SELECT e.rowid AS rowid, k.digest AS digest, e.vec AS vec, e.sum AS sum FROM keys k ' +
          `JOIN embeddings e ON e.rowid = k.id AND e.model = k.model AND e.digest = k.digest WHERE k.model = ? AND k.digest IN (${'?,'.repeat(n - 1)}?)`,
      );
      if (this.selects.size < 4) this.selects.set(n, stmt);
    }
    return stmt;
  }

  /**
   * The id of `model` (a provider part, {@link SplitCacheKey.model}) in `models`, or undefined when absent and
   * `create` is false; with `create`, inserted when absent (call inside a write transaction). Ids found are memoised
   * (a row of `models` is never changed; a file recreated under this connection is not supported, as for rowids).
   */
  private modelId(model: string, create: boolean): number | undefined {
    const known = this.models.get(model);
    if (known !== undefined) return known;
    let row = this.db.prepare('SELECT id FROM models WHERE key = ?').get(model) as { id: number } | undefined;
    if (row === undefined && create) row = this.db.prepare('INSERT INTO models (key) VALUES (?) RETURNING id').get(model) as { id: number };
    if (row !== undefined) this.models.set(model, row.id);
    return row?.id;
  }

  /** `UPDATE lru SET last_used = ? WHERE id IN (n placeholders)`, n ≥ 1. */
  private markStatement(n: number): Statement {
    return this.db.prepare(`UPDATE lru SET last_used = ? WHERE id IN (${'?,'.repeat(n - 1)}?)`);
  }

  /**
   * Stores vectors (replacing existing keys) in one transaction, marked as used now; then prunes to `maxEntries`
   * when set. Stores the bytes of each array view exactly. Throws `HarnessError('CACHE_FAILED')`.
   *
   * Each vector is appended once to `embeddings` (no index, so no random page) and its key to `staged_keys`. The keys
   * are merged into `keys` in key order ({@link EmbeddingCache.merge}) once {@link MERGE_ROWS} are staged (at every put
   * with `maxEntries` or `mergeRows` 0), and before any read, count, check, prune or close: so every read sees every
   * put. The merge writes each page of `keys` it touches once for up to {@link MERGE_ROWS} keys, where an indexed
   * insert of a random digest dirtied about one page a row (docs/scale.md "The embedding cache's writes (session 12)").
   * Staged keys are committed with their rows: a killed run's are merged by the next connection that reads.
   */
  put(entries: readonly (readonly [string, Float32Array])[]): void {
    if (entries.length === 0) return;
    try {
      this.db
        .transaction(() => {
          const now = this.tick();
          const { row, key } = this.putStatements();
          for (const [k, vec] of entries) {
            const { model, digest } = splitCacheKey(k);
            const bytes = Buffer.from(vec.buffer, vec.byteOffset, vec.byteLength);
            const id = this.modelId(model, true);
            const { rowid } = row.get(id, digest, bytes, rowChecksum(k, bytes), now) as { rowid: number };
            key.run(id, digest, rowid, now);
          }
          this.staged += entries.length;
          if (this.maxEntries !== null || this.staged >= this.mergeRows) this.mergeInside();
        })
        .immediate();
    } catch (e) {
      throw cacheError(this.file, 'write failed', e);
    }
    this.puts += entries.length;
  }

  private puts_?: { row: Statement; key: Statement };
  /** The prepared statements of {@link EmbeddingCache.put}, made once per connection. */
  private putStatements(): { row: Statement; key: Statement } {
    this.puts_ ??= {
      row: this.db.prepare('INSERT INTO embeddings (model, digest, vec, sum, last_used) VALUES (?, ?, ?, ?, ?) RETURNING rowid'),
      key: this.db.prepare('INSERT INTO staged_keys (model, digest, id, last_used) VALUES (?, ?, ?, ?)'),
    };
    return this.puts_;
  }

  /**
   * Merges every staged key (this connection's and any other's, a killed run's included) into `keys`, in key order;
   * of one key staged twice the later put wins, as with two puts. The rows a merged key replaces (the row its key
   * pointed to before, and the earlier puts of a key staged twice) are deleted with their `lru` entries; each kept
   * row gets its `lru` entry. Then prunes to `maxEntries` when set. Call inside a write transaction. Sorts only the
   * staged keys (about 50 bytes each); O(staged · log rows).
   */
  private mergeInside(): void {
    this.staged = 0;
    if (this.db.prepare('SELECT 1 FROM staged_keys LIMIT 1').get() === undefined) return;
    const db = this.db;
    // The staged keys, one per key (its latest put), in key order.
    db.exec('CREATE TEMP TABLE IF NOT EXISTS merging (model INTEGER NOT NULL, digest BLOB NOT NULL, id INTEGER NOT NULL, puts INTEGER NOT NULL)');
    db.exec('CREATE TEMP TABLE IF NOT EXISTS replaced (id INTEGER PRIMARY KEY)');
    db.exec('DELETE FROM temp.merging');
    db.exec('DELETE FROM temp.replaced');
    db.exec('INSERT INTO temp.merging (model, digest, id, puts) SELECT model, digest, MAX(id), COUNT(*) FROM staged_keys GROUP BY model, digest ORDER BY model, digest');
    // Rows replaced: the row a key held before (when it still holds that key: a row deleted by hand may have left
    // its rowid to a later row), probed in key order; and earlier puts of a key staged more than once.
    db.exec(
      'INSERT OR IGNORE INTO temp.replaced (id) SELECT k.id FROM temp.merging s JOIN keys k ON k.model = s.model AND k.digest = s.digest ' +
        'JOIN embeddings e ON e.rowid = k.id AND e.model = k.model AND e.digest = k.digest WHERE k.id <> s.id',
    );
    if (db.prepare('SELECT 1 FROM temp.merging WHERE puts > 1 LIMIT 1').get() !== undefined) {
      db.exec(
        'INSERT OR IGNORE INTO temp.replaced (id) SELECT st.id FROM staged_keys st JOIN temp.merging s ON s.model = st.model AND s.digest = st.digest ' +
          'WHERE s.puts > 1 AND st.id <> s.id',
      );
    }
    db.exec(
      'INSERT INTO keys (model, digest, id) SELECT model, digest, id FROM temp.merging WHERE true ORDER BY model, digest ' +
        'ON CONFLICT (model, digest) DO UPDATE SET id = excluded.id',
    );
    db.exec(
      'INSERT INTO lru (id, last_used) SELECT id, last_used FROM staged_keys WHERE true ORDER BY id ON CONFLICT (id) DO UPDATE SET last_used = excluded.last_used',
    );
    if (db.prepare('SELECT 1 FROM temp.replaced LIMIT 1').get() !== undefined) {
      db.exec('DELETE FROM embeddings WHERE rowid IN (SELECT id FROM temp.replaced)');
      db.exec('DELETE FROM lru WHERE id IN (SELECT id FROM temp.replaced)');
      db.exec('DELETE FROM temp.replaced');
    }
    db.exec('DELETE FROM staged_keys');
    db.exec('DELETE FROM temp.merging');
    if (this.maxEntries !== null) this.pruned += this.pruneInside(this.maxEntries);
  }

  /** {@link EmbeddingCache.mergeInside} in its own write transaction. Throws `HarnessError('CACHE_FAILED')`. */
  private merge(): void {
    try {
      this.db.transaction(() => this.mergeInside()).immediate();
    } catch (e) {
      throw cacheError(this.file, 'write failed', e);
    }
  }

  /** Counts a row not served by a read; keeps the first 100 keys for messages. */
  private discard(key: string): void {
    this.discarded++;
    if (this.discardedList.length < 100) this.discardedList.push(key);
  }

  /**
   * True when the file has ever stored a vector under the provider part `model` (a row of `models`; such a row is
   * written with the first put and never removed, so false means no key of this provider is stored, staged or not).
   * Lets a caller skip the lookup of millions of keys on a cold cache. Throws `HarnessError('CACHE_FAILED')`.
   */
  hasModel(model: string): boolean {
    try {
      return this.modelId(model, false) !== undefined;
    } catch (e) {
      throw cacheError(this.file, 'read failed', e);
    }
  }

  /** Rows this connection found damaged so far (served as misses; see the module doc); `stats().discarded` without its count of the file. */
  get discardedCount(): number {
    return this.discarded;
  }

  /** Keys of the first (at most 100) rows this connection found damaged (see the module doc); provider key + text hash. */
  discardedKeys(): string[] {
    return [...this.discardedList];
  }

  /**
   * Checks every row of the file without serving or marking any (for `doctor`): the keys whose vector fails its
   * checksum, is not a float32 array, or holds a non-finite value, and the keys of `keys` that name no row holding
   * them ('key names no row'), in key order. `rows` counts the rows of `embeddings`. Reads the rows 500 at a time.
   * Throws `HarnessError('CACHE_FAILED')`.
   */
  verifyAll(): { rows: number; bad: { key: string; reason: string }[] } {
    this.merge();
    const bad: { key: string; reason: string }[] = [];
    let rows = 0;
    try {
      const stmt = this.db.prepare(
        'SELECT e.rowid AS rowid, e.model AS id, m.key AS model, e.digest AS digest, e.vec AS vec, e.sum AS sum ' +
          'FROM embeddings e LEFT JOIN models m ON m.id = e.model WHERE e.rowid > ? ORDER BY e.rowid LIMIT 500',
      );
      let after = -Infinity;
      for (;;) {
        const part = stmt.all(after) as { rowid: number; id: number; model: string | null; digest: Uint8Array; vec: Uint8Array; sum: number }[];
        if (part.length === 0) break;
        for (const r of part) {
          rows++;
          if (r.model === null) {
            bad.push({ key: orphanKey(r.id, r.digest), reason: `model id ${r.id} has no row in models` });
            continue;
          }
          const key = joinCacheKey(r.model, r.digest);
          if (r.digest.byteLength !== 0 && r.digest.byteLength !== 32) bad.push({ key, reason: `digest of ${r.digest.byteLength} bytes, not 32` });
          else if (r.vec.byteLength % 4 !== 0) bad.push({ key, reason: `${r.vec.byteLength} bytes, not float32` });
          else if (rowChecksum(key, r.vec) !== r.sum) bad.push({ key, reason: 'checksum mismatch' });
          else if (!allFinite(new Float32Array(Uint8Array.from(r.vec).buffer))) bad.push({ key, reason: 'non-finite value' });
        }
        after = part[part.length - 1].rowid;
      }
      // keys whose row is gone or holds another key (rows deleted or rewritten by hand): served as misses
      const dangling = this.db
        .prepare(
          'SELECT k.model AS id, m.key AS model, k.digest AS digest FROM keys k LEFT JOIN models m ON m.id = k.model ' +
            'WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.rowid = k.id AND e.model = k.model AND e.digest = k.digest)',
        )
        .all() as { id: number; model: string | null; digest: Uint8Array }[];
      for (const r of dangling) {
        bad.push({ key: r.model === null ? orphanKey(r.id, r.digest) : joinCacheKey(r.model, r.digest), reason: 'key names no row' });
      }
    } catch (e) {
      throw cacheError(this.file, 'read failed', e);
    }
    bad.sort((x, y) => (x.key < y.key ? -1 : x.key > y.key ? 1 : 0));
    return { rows, bad };
  }

  /**
   * Deletes the rows of `keys` (those {@link verifyAll} found bad) and their entries in `keys`; returns how many keys
   * were deleted. A key no merge named (a row written by hand) is found by a scan of the rows.
   */
  remove(keys: readonly string[]): number {
    let n = 0;
    try {
      this.db
        .transaction(() => {
          this.mergeInside();
          const unkey = this.db.prepare('DELETE FROM keys WHERE model = ? AND digest = ? RETURNING id');
          const byId = this.db.prepare('DELETE FROM embeddings WHERE rowid = ? AND model = ? AND digest = ? RETURNING rowid');
          // a row no key names (written by hand, never merged): found by a scan, as rare as such a file
          const byScan = this.db.prepare('DELETE FROM embeddings WHERE model = ? AND digest = ? RETURNING rowid');
          const used = this.db.prepare('DELETE FROM lru WHERE id = ?');
          for (const k of keys) {
            const orphan = parseOrphanKey(k);
            const { model, digest } = orphan === undefined ? splitCacheKey(k) : { model: '', digest: orphan.digest };
            const id = orphan === undefined ? this.modelId(model, false) : orphan.id;
            if (id === undefined) continue;
            const named = unkey.get(id, digest) as { id: number } | undefined;
            const rows = (named === undefined ? byScan.all(id, digest) : byId.all(named.id, id, digest)) as { rowid: number }[];
            if (named === undefined && rows.length === 0) continue;
            for (const r of rows) used.run(r.rowid);
            n++;
          }
        })
        .immediate();
    } catch (e) {
      throw cacheError(this.file, 'write failed', e);
    }
    return n;
  }

  /**
   * Deletes the `excess` least recently used rows (by `lru.last_used`, ties by provider part then digest) and their
   * `lru` entries. First reconciles `lru` with the rows ({@link reconcileLru}) when their counts differ. Call inside a
   * write transaction.
   */
  private pruneInside(maxEntries: number): number {
    // entries counted in the narrow `keys` (merged above), not by a scan of the vectors
    const { n } = this.db.prepare('SELECT COUNT(*) AS n FROM keys').get() as { n: number };
    const excess = n - maxEntries;
    if (excess <= 0) return 0;
    const { u } = this.db.prepare('SELECT COUNT(*) AS u FROM lru').get() as { u: number };
    if (u !== n) reconcileLru(this.db);
    const ids = (
      this.db
        .prepare(
          'SELECT l.id AS id FROM lru l JOIN embeddings e ON e.rowid = l.id LEFT JOIN models m ON m.id = e.model ' +
            'ORDER BY l.last_used ASC, m.key ASC, e.digest ASC LIMIT ?',
        )
        .all(excess) as { id: number }[]
    ).map((r) => r.id);
    let removed = 0;
    const unkey = this.db.prepare('DELETE FROM keys WHERE model = ? AND digest = ? AND id = ?');
    for (let s = 0; s < ids.length; s += IN_CHUNK) {
      const part = ids.slice(s, s + IN_CHUNK);
      const marks = `${'?,'.repeat(part.length - 1)}?`;
      const gone = this.db.prepare(`DELETE FROM embeddings WHERE rowid IN (${marks}) RETURNING rowid, model, digest`).all(...part) as { rowid: number; model: number; digest: Uint8Array }[];
      for (const g of gone) unkey.run(g.model, g.digest, g.rowid);
      removed += gone.length;
      this.db.prepare(`DELETE FROM lru WHERE id IN (${marks})`).run(...part);
    }
    return removed;
  }

  /**
   * Deletes the least recently used entries until at most `maxEntries` (≥ 0) remain; returns how many were deleted.
   * Ties in last use are broken by key (smaller key deleted first). Throws `HarnessError('CACHE_FAILED')`.
   */
  prune(maxEntries: number): number {
    if (!Number.isInteger(maxEntries) || maxEntries < 0) {
      throw new HarnessError('CONFIG_INVALID', `prune(${maxEntries}): maxEntries must be a whole number ≥ 0`);
    }
    let removed = 0;
    try {
      this.db.transaction(() => {
        this.mergeInside();
        removed = this.pruneInside(maxEntries);
      }).immediate();
    } catch (e) {
      throw cacheError(this.file, 'prune failed', e);
    }
    this.pruned += removed;
    return removed;
  }

  /**
   * How many of the distinct `texts` have a vector stored under `providerKey` (the provider's `cacheKey(role)`).
   * Read-only: does not mark entries as used and does not count as hits or misses. Duplicate texts count once.
   * Throws `HarnessError('CACHE_FAILED')`.
   */
  countPresent(providerKey: string, texts: readonly string[]): number {
    return this.countPresentKeys([...new Set(texts)].map((t) => embeddingCacheKey(providerKey, t)));
  }

  /**
   * {@link countPresent} over cache keys ({@link embeddingCacheKey}) instead of texts: how many of `keys` hold a
   * vector (a key given twice in one call counts once per `IN` group of 500). Throws `HarnessError('CACHE_FAILED')`.
   */
  countPresentKeys(keys: readonly string[]): number {
    this.merge();
    let n = 0;
    try {
      for (const [model, group] of groupByModel(keys)) {
        const id = this.modelId(model, false);
        if (id === undefined) continue;
        for (let s = 0; s < group.length; s += IN_CHUNK) {
          const part = group.slice(s, s + IN_CHUNK);
          const row = this.db
            .prepare(
              'SELECT COUNT(*) AS n FROM keys k JOIN embeddings e ON e.rowid = k.id AND e.model = k.model AND e.digest = k.digest ' +
                `WHERE k.model = ? AND k.digest IN (${part.map(() => '?').join(',')}) AND length(e.vec) % 4 = 0`,
            )
            .get(id, ...part) as { n: number };
          n += row.n;
        }
      }
    } catch (e) {
      throw cacheError(this.file, 'read failed', e);
    }
    return n;
  }

  /**
   * Records the embedding throughput of one model (identified by {@link embeddingSpecKey}) measured by a sweep:
   * `texts` texts embedded (cache misses only) in `seconds` of inference. Replaces the earlier record of that model;
   * ignored when `texts` < 1 or `seconds` ≤ 0 (nothing was measured). The provider keys let a later
   * {@link countPresent} find this model's vectors without loading it. Throws `HarnessError('CACHE_FAILED')`.
   */
  recordThroughput(record: Omit<ThroughputRecord, 'textsPerSecond' | 'recordedAt'>, now: Date = new Date()): void {
    if (!(record.texts >= 1) || !(record.seconds > 0)) return;
    try {
      this.db
        .prepare(
          'INSERT OR REPLACE INTO throughput (spec, document_key, query_key, texts, seconds, recorded_at) VALUES (?, ?, ?, ?, ?, ?)',
        )
        .run(record.specKey, record.documentKey, record.queryKey, Math.round(record.texts), record.seconds, now.toISOString());
    } catch (e) {
      throw cacheError(this.file, 'write failed', e);
    }
  }

  /** The last throughput recorded for the model `specKey` ({@link embeddingSpecKey}), or undefined. */
  throughput(specKey: string): ThroughputRecord | undefined {
    let row: { document_key: string; query_key: string; texts: number; seconds: number; recorded_at: string } | undefined;
    try {
      row = this.db
        .prepare('SELECT document_key, query_key, texts, seconds, recorded_at FROM throughput WHERE spec = ?')
        .get(specKey) as typeof row;
    } catch (e) {
      throw cacheError(this.file, 'read failed', e);
    }
    if (!row) return undefined;
    return {
      specKey,
      documentKey: row.document_key,
      queryKey: row.query_key,
      texts: row.texts,
      seconds: row.seconds,
      textsPerSecond: row.texts / row.seconds,
      recordedAt: row.recorded_at,
    };
  }

  /**
   * Counters of this connection and the current entry count of the file: the keys in `keys` after a merge (counted
   * in that narrow table, not by a scan of the vectors; a row deleted by hand leaves its key counted until it is put
   * again or removed).
   */
  stats(): EmbeddingCacheStats {
    this.merge();
    const { n } = this.db.prepare('SELECT COUNT(*) AS n FROM keys').get() as { n: number };
    return {
      file: this.file,
      schemaVersion: CACHE_SCHEMA_VERSION,
      entries: n,
      hits: this.hits,
      misses: this.misses,
      puts: this.puts,
      pruned: this.pruned,
      discarded: this.discarded,
      maxEntries: this.maxEntries,
    };
  }

  /**
   * Merges the staged keys ({@link EmbeddingCache.put}) and closes the connection. Idempotent. Throws
   * `HarnessError('CACHE_FAILED')` when the merge fails (the connection is closed all the same; the rows and staged keys stay
   * committed and the next connection that reads merges them).
   */
  close(): void {
    if (!this.db.open) return;
    try {
      if (this.staged > 0) this.merge();
    } finally {
      this.db.close();
    }
  }
}

/**
 * Where rerank pair scores are kept, so that each (question, chunk text) pair is scored once per reranker across the
 * whole grid and across runs.
 *
 * - Key: `(reranker.cacheKey(), sha256(question text), sha256(chunk text))`. The reranker part names the model, its
 *   file hash, dtype, max length and truncation rule (local) or the server's URL, protocol and model (servers), so a
 *   score is never reused across models or settings.
 * - Value: the score as a float64 (SQLite REAL is an IEEE 754 double), so a round trip is bit-exact.
 * - Two stores implement {@link PairScoreStore}: {@link RerankCache} (SQLite, on disk) and {@link MemoryPairScores}
 *   (one process, for `cache: false` runs, so two retrievers' overlapping lists still score a pair once).
 *
 * The SQLite file is its own (default `<cacheDir>/rerank.sqlite`, chosen by the sweep), not a table in the embedding
 * cache: it has its own schema version (a mismatch drops only the scores), and the embedding cache's LRU pruning
 * (`maxEntries`) must not evict scores or count them. It follows the embedding cache's rules (src/embed/cache.ts):
 * better-sqlite3, WAL journal, `busy_timeout` (default 10 s), every write in a `BEGIN IMMEDIATE` transaction, so two
 * sweeps can share one file. Scores are small (about 150 bytes a row), so there is no pruning; delete the file to
 * start empty. Tables: `meta(key, value)`, `models(id, key)` (one row per reranker cache key) and
 * `scores(model, query_sha, text_sha, score)`.
 */
import { sha256Text } from '../embed/hash.js';
import { HarnessError } from '../errors.js';
import { cacheError as sqliteCacheError, openSqliteCache, type Database } from '../store/sqlite.js';

/** Bump when the table layout or value encoding changes; a mismatch recreates the tables. */
export const RERANK_CACHE_SCHEMA_VERSION = 1;

/** One pair by its hashes: sha256 hex of the question text and of the chunk text (UTF-8). */
export interface PairHash {
  query: string;
  text: string;
}

/** The hashes of one (question, chunk text) pair. */
export function pairHash(query: string, text: string): PairHash {
  return { query: sha256Text(query), text: sha256Text(text) };
}

/** A store of pair scores for one or more rerankers. */
export interface PairScoreStore {
  /** The stored score of each pair under `modelKey` (a `Reranker.cacheKey()`), or undefined, aligned with `pairs`. */
  get(modelKey: string, pairs: readonly PairHash[]): (number | undefined)[];
  /** Stores scores (finite numbers; replacing existing ones) under `modelKey`. */
  put(modelKey: string, entries: readonly (readonly [PairHash, number])[]): void;
}

function checkFinite(entries: readonly (readonly [PairHash, number])[], where: string): void {
  for (const [, s] of entries) {
    if (!Number.isFinite(s)) {
      throw new HarnessError('CACHE_FAILED', `${where}: refusing to store a non-finite score (${s})`, {
        remedy: 'this is a bug: rerank scores are checked before they are cached',
      });
    }
  }
}

/** Pair scores in memory (this process only). */
export class MemoryPairScores implements PairScoreStore {
  private readonly map = new Map<string, number>();

  get(modelKey: string, pairs: readonly PairHash[]): (number | undefined)[] {
    return pairs.map((p) => this.map.get(`${modelKey}\u0000${p.query}\u0000${p.text}`));
  }

  put(modelKey: string, entries: readonly (readonly [PairHash, number])[]): void {
    checkFinite(entries, 'in-memory rerank scores');
    for (const [p, s] of entries) this.map.set(`${modelKey}\u0000${p.query}\u0000${p.text}`, s);
  }

  /** Scores held. */
  get size(): number {
    return this.map.size;
  }
}

function cacheError(file: string, what: string, cause: unknown): HarnessError {
  return sqliteCacheError('rerank cache', file, what, cause);
}

/** Counters of one open {@link RerankCache} (this connection, since it was opened) and the file's row count. */
export interface RerankCacheStats {
  file: string;
  schemaVersion: number;
  /** Scores in the file now (all connections, all rerankers). */
  entries: number;
  hits: number;
  misses: number;
  puts: number;
}

const IN_CHUNK = 400;

/** Pair scores on SQLite. One instance per thread/process. */
export class RerankCache implements PairScoreStore {
  readonly file: string;
  private readonly db: Database;
  private readonly modelIds = new Map<string, number>();
  private hits = 0;
  private misses = 0;
  private puts = 0;

  private constructor(file: string, db: Database) {
    this.file = file;
    this.db = db;
  }

  /**
   * Opens (creating folders and file as needed) the cache at `file`; sets WAL and the busy timeout
   * (`busyTimeoutMs`, default 10 000 ms); recreates the tables when the stored schema version differs from
   * {@link RERANK_CACHE_SCHEMA_VERSION}. Throws `HarnessError('CACHE_FAILED')` naming the file.
   */
  static open(file: string, opts: { busyTimeoutMs?: number } = {}): RerankCache {
    const { file: abs, db } = openSqliteCache(
      file,
      {
        label: 'rerank cache',
        version: RERANK_CACHE_SCHEMA_VERSION,
        onSchemaMismatch: (conn) => {
          conn.exec('DROP TABLE IF EXISTS scores');
          conn.exec('DROP TABLE IF EXISTS models');
        },
        createTables: (conn) => {
          conn.exec('CREATE TABLE IF NOT EXISTS models (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE)');
          conn.exec(
            'CREATE TABLE IF NOT EXISTS scores (model INTEGER NOT NULL, query_sha TEXT NOT NULL, text_sha TEXT NOT NULL, ' +
              'score REAL NOT NULL, PRIMARY KEY (model, query_sha, text_sha)) WITHOUT ROWID',
          );
        },
      },
      opts.busyTimeoutMs,
    );
    return new RerankCache(abs, db);
  }

  /** The row id of a reranker key, created when `create` (inside a write transaction), else undefined when absent. */
  private modelId(key: string, create: boolean): number | undefined {
    const known = this.modelIds.get(key);
    if (known !== undefined) return known;
    const row = this.db.prepare('SELECT id FROM models WHERE key = ?').get(key) as { id: number } | undefined;
    let id = row?.id;
    if (id === undefined && create) id = Number(this.db.prepare('INSERT INTO models (key) VALUES (?)').run(key).lastInsertRowid);
    if (id !== undefined) this.modelIds.set(key, id);
    return id;
  }

  /** See {@link PairScoreStore.get}. Throws `HarnessError('CACHE_FAILED')`. */
  get(modelKey: string, pairs: readonly PairHash[]): (number | undefined)[] {
    const out = new Array<number | undefined>(pairs.length).fill(undefined);
    if (pairs.length === 0) return out;
    try {
      const model = this.modelId(modelKey, false);
      if (model !== undefined) {
        const byQuery = new Map<string, number[]>();
        pairs.forEach((p, i) => {
          const list = byQuery.get(p.query);
          if (list) list.push(i);
          else byQuery.set(p.query, [i]);
        });
        for (const [query, idx] of byQuery) {
          for (let s = 0; s < idx.length; s += IN_CHUNK) {
            const part = idx.slice(s, s + IN_CHUNK);
            const texts = [...new Set(part.map((i) => pairs[i].text))];
            const rows = this.db
              .prepare(`SELECT text_sha, score FROM scores WHERE model = ? AND query_sha = ? AND text_sha IN (${texts.map(() => '?').join(',')})`)
              .all(model, query, ...texts) as { text_sha: string; score: number }[];
            const found = new Map(rows.map((r) => [r.text_sha, r.score]));
            for (const i of part) out[i] = found.get(pairs[i].text);
          }
        }
      }
    } catch (e) {
      throw cacheError(this.file, 'read failed', e);
    }
    for (const v of out) {
      if (v === undefined) this.misses++;
      else this.hits++;
    }
    return out;
  }

  /** See {@link PairScoreStore.put}; one transaction. Throws `HarnessError('CACHE_FAILED')`. */
  put(modelKey: string, entries: readonly (readonly [PairHash, number])[]): void {
    if (entries.length === 0) return;
    checkFinite(entries, `rerank cache ${this.file}`);
    try {
      this.db
        .transaction(() => {
          const model = this.modelId(modelKey, true)!;
          const stmt = this.db.prepare(
            'INSERT INTO scores (model, query_sha, text_sha, score) VALUES (?, ?, ?, ?) ' +
              'ON CONFLICT (model, query_sha, text_sha) DO UPDATE SET score = excluded.score',
          );
          for (const [p, s] of entries) stmt.run(model, p.query, p.text, s);
        })
        .immediate();
    } catch (e) {
      this.modelIds.delete(modelKey); // the id may have been rolled back with the transaction
      throw cacheError(this.file, 'write failed', e);
    }
    this.puts += entries.length;
  }

  /** Counters of this connection and the file's row count. */
  stats(): RerankCacheStats {
    const { n } = this.db.prepare('SELECT COUNT(*) AS n FROM scores').get() as { n: number };
    return { file: this.file, schemaVersion: RERANK_CACHE_SCHEMA_VERSION, entries: n, hits: this.hits, misses: this.misses, puts: this.puts };
  }

  /** Closes the connection. Idempotent. */
  close(): void {
    if (this.db.open) this.db.close();
  }
}

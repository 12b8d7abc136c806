/**
 * Sessions 12 and 19 (issue 25): the embedding cache's staged puts. Keys are stored as (model id, digest)
 * (`splitCacheKey` / `joinCacheKey`). Schema 3 staged whole rows and merged them into the indexed `embeddings`;
 * schema 4 appends each vector once to `embeddings` and stages only its key, merged into the table `keys` in key order.
 * A differential test against a merge at every put (`mergeRows: 0`, as with `maxEntries`): the same random sequence
 * of puts, reads, prunes and removals on two files gives the same vectors bit for bit, the same misses, entries, LRU
 * clocks and verify results, with merges forced at every few rows and with none before a read (so a key put twice
 * is replaced within one merge on one file and across merges on the other). And the migration of a schema-3 file.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { seededRandom } from '../../src/score/stats.js';
import { isHarnessError } from '../../src/errors.js';
import { EmbeddingCache, joinCacheKey, MERGE_ROWS, rowChecksum, splitCacheKey } from '../../src/embed/cache.js';
import { keyedView } from '../helpers/embed-cache-sql.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'rs-staged-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const rng = seededRandom;

const hex = (n: number): string => n.toString(16).padStart(64, '0');
/** Keys of three forms: two providers with digests, and bare keys (no digest). */
function keyOf(n: number): string {
  if (n % 7 === 0) return `bare-${n}`;
  return `${n % 2 === 0 ? 'glove-100d|{"t":1}' : 'bag-v1:document'}\u0000${hex(n * 2654435761)}`;
}
const bits = (v: Float32Array | undefined): number[] | undefined => (v === undefined ? undefined : Array.from(new Uint32Array(v.buffer, v.byteOffset, v.length)));

/** key → [last_used in lru, last_used in the row] of every stored row. */
function clocks(file: string): Map<string, [number, number]> {
  const db = keyedView(new Database(file, { readonly: true }));
  try {
    const rows = db.prepare('SELECT k.key AS key, l.last_used AS l, k.last_used AS r FROM keyed k JOIN lru l ON l.id = k.rowid').all() as { key: string; l: number; r: number }[];
    return new Map(rows.map((x) => [x.key, [x.l, x.r]]));
  } finally {
    db.close();
  }
}

describe('splitCacheKey / joinCacheKey', () => {
  it('split a key of the form provider + NUL + 64 lower-case hex digits, keep any other key whole, and invert exactly', () => {
    const d = hex(0xabcdef);
    expect(splitCacheKey(`p\u0000${d}`)).toEqual({ model: 'p', digest: Buffer.from(d, 'hex') });
    expect(splitCacheKey(`\u0000${d}`)).toEqual({ model: '', digest: Buffer.from(d, 'hex') });
    for (const k of [`p\u0000${d.toUpperCase()}`, `p\u0000${d.slice(1)}`, `p-${d}`, `p\u0000${d}x`, '', 'k', `a\u0000b\u0000${d}`, `é😀\u0000${d}`]) {
      const s = splitCacheKey(k);
      expect(joinCacheKey(s.model, s.digest)).toBe(k);
    }
    expect(splitCacheKey(`p\u0000${d.toUpperCase()}`).digest.length).toBe(0);
    expect(splitCacheKey(`a\u0000b\u0000${d}`)).toEqual({ model: 'a\u0000b', digest: Buffer.from(d, 'hex') });
    const next = rng(5);
    for (let i = 0; i < 2000; i++) {
      const chars = Array.from({ length: Math.floor(next() * 80) }, () => String.fromCharCode(next() < 0.2 ? 0 : next() < 0.5 ? 48 + Math.floor(next() * 55) : Math.floor(next() * 0x10000)));
      const k = next() < 0.5 ? `${chars.join('')}\u0000${hex(Math.floor(next() * 2 ** 48))}` : chars.join('');
      const s = splitCacheKey(k);
      expect(joinCacheKey(s.model, s.digest)).toBe(k);
    }
  });
});

describe('staged puts against direct writes (mergeRows 0)', () => {
  for (const [seed, mergeRows] of [[1, 7], [2, 50], [3, MERGE_ROWS]] as const) {
    it(`seed ${seed}, merge every ${mergeRows} rows: same vectors, misses, entries, clocks and checks after 300 random operations`, () => {
      const next = rng(seed);
      const refFile = path.join(dir, 'ref.sqlite');
      const stFile = path.join(dir, 'staged.sqlite');
      const ref = EmbeddingCache.open(refFile, { mergeRows: 0 });
      const st = EmbeddingCache.open(stFile, { mergeRows });
      const d = 3;
      for (let op = 0; op < 300; op++) {
        const r = next();
        if (r < 0.5) {
          // a put of 1-40 vectors; keys drawn from 400, so some are replaced, and some repeat within the call
          const entries = Array.from({ length: 1 + Math.floor(next() * 40) }, () => {
            const v = new Float32Array(d);
            for (let j = 0; j < d; j++) v[j] = Math.fround((next() - 0.5) * 1e3);
            return [keyOf(Math.floor(next() * 400)), v] as const;
          });
          ref.put(entries);
          st.put(entries);
        } else if (r < 0.9) {
          const keys = Array.from({ length: 1 + Math.floor(next() * 60) }, () => keyOf(Math.floor(next() * 450)));
          expect(st.get(keys).map(bits)).toEqual(ref.get(keys).map(bits));
        } else if (r < 0.95) {
          const keep = Math.floor(next() * 300);
          expect(st.prune(keep)).toBe(ref.prune(keep));
        } else {
          const keys = Array.from({ length: 5 }, () => keyOf(Math.floor(next() * 400)));
          expect(st.remove(keys)).toBe(ref.remove(keys));
        }
      }
      expect(st.stats().entries).toBe(ref.stats().entries);
      expect(st.verifyAll()).toEqual(ref.verifyAll());
      const all = Array.from({ length: 450 }, (_, n) => keyOf(n));
      expect(st.countPresentKeys(all)).toBe(ref.countPresentKeys(all));
      ref.close();
      st.close();
      expect(clocks(stFile)).toEqual(clocks(refFile));
      const staged = new Database(stFile, { readonly: true });
      expect(staged.prepare('SELECT COUNT(*) AS n FROM staged_keys').get()).toEqual({ n: 0 }); // close merged the rest
      staged.close();
    });
  }

  it('one key put twice before a merge: the later vector wins, as with two direct puts', () => {
    const file = path.join(dir, 'c.sqlite');
    const cache = EmbeddingCache.open(file);
    cache.put([[keyOf(1), new Float32Array([1])], [keyOf(2), new Float32Array([2])]]);
    cache.put([[keyOf(1), new Float32Array([10])]]);
    cache.put([[keyOf(3), new Float32Array([3])], [keyOf(3), new Float32Array([30])]]);
    expect(cache.get([1, 2, 3].map(keyOf)).map((v) => v?.[0])).toEqual([10, 2, 30]);
    expect(cache.stats().entries).toBe(3);
    cache.close();
  });

  it("a writer that never closes (killed): its staged rows are committed, and another connection's read merges and serves them", () => {
    const file = path.join(dir, 'c.sqlite');
    const writer = EmbeddingCache.open(file);
    writer.put(Array.from({ length: 20 }, (_, i) => [keyOf(i), new Float32Array([i, -i])] as const));
    const raw = new Database(file, { readonly: true });
    // schema 4: the vectors are in `embeddings` at once, their keys staged and not yet in `keys`
    expect(raw.prepare('SELECT (SELECT COUNT(*) FROM staged_keys) AS s, (SELECT COUNT(*) FROM embeddings) AS e, (SELECT COUNT(*) FROM keys) AS k').get()).toEqual({ s: 20, e: 20, k: 0 });
    raw.close();
    const reader = EmbeddingCache.open(file);
    expect(reader.get([keyOf(0), keyOf(19), keyOf(20)]).map((v) => v?.[1])).toEqual([-0, -19, undefined]);
    expect(reader.stats().entries).toBe(20);
    reader.close();
    writer.close(); // its merge finds nothing left: no error, nothing doubled
    const check = EmbeddingCache.open(file);
    expect(check.stats().entries).toBe(20);
    check.close();
  });

  it('a schema-3 file (sessions 12-18) with a killed run\'s staged rows is migrated on open: every vector, checksum, rowid and clock kept', () => {
    const file = path.join(dir, 'v3.sqlite');
    // Schema 3 as sessions 12-18 wrote it, by hand: merged rows under the unique index, and whole rows still staged
    // (one of them a new vector for a merged key, which must win as a later put).
    const raw = new Database(file);
    raw.exec(`
      CREATE TABLE meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;
      INSERT INTO meta VALUES ('schema_version', 3), ('clock', 9);
      CREATE TABLE models (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE);
      CREATE TABLE embeddings (model INTEGER NOT NULL, digest BLOB NOT NULL, vec BLOB NOT NULL, sum INTEGER NOT NULL, last_used INTEGER NOT NULL);
      CREATE UNIQUE INDEX embeddings_key ON embeddings (model, digest);
      CREATE TABLE staged (model INTEGER NOT NULL, digest BLOB NOT NULL, vec BLOB NOT NULL, sum INTEGER NOT NULL, last_used INTEGER NOT NULL);
      CREATE TABLE lru (id INTEGER PRIMARY KEY, last_used INTEGER NOT NULL);
      CREATE INDEX lru_last_used ON lru (last_used);
    `);
    const modelIds = new Map<string, number>();
    const idOf = (m: string): number => {
      if (!modelIds.has(m)) modelIds.set(m, Number((raw.prepare('INSERT INTO models (key) VALUES (?) RETURNING id').get(m) as { id: number }).id));
      return modelIds.get(m)!;
    };
    const row = (n: number, value: number, used: number): [number, Buffer, Buffer, number, number] => {
      const k = keyOf(n);
      const { model, digest } = splitCacheKey(k);
      const vec = Buffer.from(new Float32Array([value, -value]).buffer);
      return [idOf(model), digest, vec, rowChecksum(k, vec), used];
    };
    for (const n of [1, 2, 3, 7]) {
      const { rowid } = raw.prepare('INSERT INTO embeddings (model, digest, vec, sum, last_used) VALUES (?, ?, ?, ?, ?) RETURNING rowid').get(...row(n, n, n)) as { rowid: number };
      raw.prepare('INSERT INTO lru (id, last_used) VALUES (?, ?)').run(rowid, n);
    }
    for (const [n, value] of [[4, 4], [2, 20], [5, 5]]) raw.prepare('INSERT INTO staged (model, digest, vec, sum, last_used) VALUES (?, ?, ?, ?, ?)').run(...row(n, value, 8));
    raw.close();

    const cache = EmbeddingCache.open(file);
    expect(cache.verifyAll()).toEqual({ rows: 6, bad: [] }); // 4 merged + 3 staged − the replaced row of key 2
    expect(cache.get([1, 2, 3, 4, 5, 7, 6].map(keyOf)).map((v) => v?.[0])).toEqual([1, 20, 3, 4, 5, 7, undefined]);
    expect(cache.stats().entries).toBe(6);
    cache.close();
    const after = new Database(file, { readonly: true });
    const tables = (after.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]).map((r) => r.name);
    const indexes = (after.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name").all() as { name: string }[]).map((r) => r.name);
    const version = after.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get();
    const lruRows = after.prepare('SELECT COUNT(*) AS n FROM lru l JOIN embeddings e ON e.rowid = l.id').get();
    after.close();
    expect(tables).toEqual(['embeddings', 'keys', 'lru', 'meta', 'models', 'staged_keys', 'throughput']);
    expect(indexes).toEqual(['lru_last_used']);
    expect(version).toEqual({ value: 4 });
    expect(lruRows).toEqual({ n: 6 });
  });

  it('a row deleted by hand: its key is a miss (not damage), verifyAll names it, remove drops it; its rowid reused by another key is not served under the old one', () => {
    const file = path.join(dir, 'd.sqlite');
    const cache = EmbeddingCache.open(file);
    cache.put([1, 2, 3].map((n) => [keyOf(n), new Float32Array([n])] as const));
    expect(cache.stats().entries).toBe(3);
    // delete the last row behind the cache's back: `keys` still names rowid 3, which SQLite gives to the next row
    const raw = new Database(file);
    expect(raw.prepare('DELETE FROM embeddings WHERE rowid = (SELECT MAX(rowid) FROM embeddings) RETURNING rowid').get()).toEqual({ rowid: 3 });
    raw.close();
    cache.put([[keyOf(4), new Float32Array([4])]]);
    expect(cache.get([1, 2, 3, 4].map(keyOf)).map((v) => v?.[0])).toEqual([1, 2, undefined, 4]);
    expect(cache.discardedCount).toBe(0);
    const check = new Database(file, { readonly: true });
    expect(check.prepare('SELECT rowid FROM embeddings WHERE rowid = 3').get()).toEqual({ rowid: 3 }); // key 4's row now
    check.close();
    expect(cache.verifyAll()).toEqual({ rows: 3, bad: [{ key: keyOf(3), reason: 'key names no row' }] });
    expect(cache.stats().entries).toBe(4); // the dangling key still counted, as documented
    expect(cache.remove([keyOf(3)])).toBe(1);
    expect(cache.verifyAll()).toEqual({ rows: 3, bad: [] });
    expect(cache.stats().entries).toBe(3);
    expect(cache.get([1, 2, 4].map(keyOf)).map((v) => v?.[0])).toEqual([1, 2, 4]); // key 4's row survived the removal
    cache.close();
  });

  it('mergeRows must be a whole number ≥ 0', () => {
    for (const bad of [-1, 1.5, Number.NaN]) {
      let err: unknown;
      try {
        EmbeddingCache.open(path.join(dir, 'x.sqlite'), { mergeRows: bad });
      } catch (e) {
        err = e;
      }
      expect(isHarnessError(err) && err.code === 'CONFIG_INVALID' && err.message.includes('mergeRows')).toBe(true);
    }
  });
});

describe('visitDigests against visit', () => {
  it('the same hits, positions, vectors, discards and marking as visit over the keys built from the digests', () => {
    const next = rng(11);
    const model = 'glove-100d|{"t":1}';
    const digest = (n: number): Buffer => Buffer.from(hex(n * 2654435761), 'hex');
    const key = (n: number): string => `${model}\u0000${hex(n * 2654435761)}`;
    const a = path.join(dir, 'a.sqlite');
    const c = EmbeddingCache.open(a, { mergeRows: 0 });
    c.put(Array.from({ length: 300 }, (_, n) => [key(n), new Float32Array([n, Math.fround(next())])] as const));
    c.close();
    // damage two rows: a flipped byte (checksum fails) and a NaN with a valid checksum
    const raw = keyedView(new Database(a));
    const row = raw.prepare('SELECT vec FROM keyed WHERE key = ?').get(key(7)) as { vec: Buffer };
    row.vec[0] ^= 1;
    raw.prepare('UPDATE keyed SET vec = ? WHERE key = ?').run(row.vec, key(7));
    raw.close();
    const b = path.join(dir, 'b.sqlite');
    copyFileSync(a, b);
    // 1,000 asked: stored, never stored, repeated
    const asked = Array.from({ length: 1000 }, () => Math.floor(next() * 400));
    const byKeys = EmbeddingCache.open(a);
    const seenKeys: [number, number[]][] = [];
    const nKeys = byKeys.visit(asked.map(key), (i, v) => seenKeys.push([i, Array.from(v)]));
    const statsKeys = byKeys.stats();
    byKeys.close();
    const byDigests = EmbeddingCache.open(b);
    const seenDigests: [number, number[]][] = [];
    const nDigests = byDigests.visitDigests(model, asked.length, (i) => digest(asked[i]), (i, v) => seenDigests.push([i, Array.from(v)]));
    const statsDigests = byDigests.stats();
    byDigests.close();
    const order = (x: [number, number[]][]) => [...x].sort((p, q) => p[0] - q[0]);
    expect(nDigests).toBe(nKeys);
    expect(nKeys).toBe(asked.filter((n) => n < 300 && n !== 7).length);
    expect(order(seenDigests)).toEqual(order(seenKeys));
    expect({ ...statsDigests, file: '' }).toEqual({ ...statsKeys, file: '' });
    expect(statsKeys.discarded).toBe(asked.includes(7) ? 1 : 0);
    expect(clocks(b)).toEqual(clocks(a));
  });
});

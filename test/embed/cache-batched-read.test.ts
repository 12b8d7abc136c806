/**
 * Session 9, "Warm cache reads": EmbeddingCache.visit/get read 500 keys a statement and mark the hits' last use after
 * all reads, in rowid order, in the narrow table `lru`. A differential test against the plainest reader there
 * is: one `SELECT ... WHERE key = ?` per key with the checks the module doc states (length a multiple of 4, CRC-32 of
 * key + bytes equal to `sum`, every value finite). Same vectors bit for bit, same misses, same rows discarded, same
 * marking (every served row gets the call's tick, nothing else changes), on random keys with hits, misses, duplicates
 * and damaged rows mixed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EmbeddingCache, rowChecksum } from '../../src/embed/cache.js';
import { keyedView } from '../helpers/embed-cache-sql.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'cache-batched-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A small seeded generator (mulberry32), so a failure reproduces. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The oracle: one point read per key, the checks of the module doc, a copy of the vector or undefined. */
function pointReads(file: string, keys: readonly string[]): (Float32Array | undefined)[] {
  const db = keyedView(new Database(file, { readonly: true }));
  try {
    const stmt = db.prepare('SELECT vec, sum FROM keyed WHERE key = ?');
    return keys.map((k) => {
      const row = stmt.get(k) as { vec: Uint8Array; sum: number } | undefined;
      if (row === undefined || row.vec.byteLength % 4 !== 0 || rowChecksum(k, row.vec) !== row.sum) return undefined;
      const v = new Float32Array(Uint8Array.from(row.vec).buffer);
      return v.every((x) => Number.isFinite(x)) ? v : undefined;
    });
  } finally {
    db.close();
  }
}

/** key → last_used of every row. */
function lastUsed(file: string): Map<string, number> {
  const db = keyedView(new Database(file, { readonly: true }));
  try {
    return new Map((db.prepare('SELECT e.key AS key, l.last_used AS last_used FROM keyed e JOIN lru l ON l.id = e.rowid').all() as { key: string; last_used: number }[]).map((r) => [r.key, r.last_used]));
  } finally {
    db.close();
  }
}

/** The bits of a vector, for exact comparison (NaN payloads and -0 included). */
const bits = (v: Float32Array | undefined): number[] | undefined => (v === undefined ? undefined : Array.from(new Uint32Array(v.buffer, v.byteOffset, v.length)));

const key = (i: number): string => `glove-100d|{"table":"t"}\u0000${i.toString(16).padStart(64, '0')}`;

describe('EmbeddingCache batched reads against one point read per key', () => {
  it.each([1, 2, 3])('seed %i: 1,300 stored, 2,000 asked (hits, misses, duplicates, damaged rows): same vectors, misses, discards and marking', (seed) => {
    const next = rng(seed);
    const file = path.join(dir, 'e.sqlite');
    const cache = EmbeddingCache.open(file);
    const d = 1 + Math.floor(next() * 8);
    const stored: number[] = [];
    for (let i = 0; i < 1300; i++) stored.push(Math.floor(next() * 1e9));
    const uniq = [...new Set(stored)];
    // several puts, so rows carry different ticks and rowid order differs from key order
    for (let s = 0; s < uniq.length; s += 97) {
      cache.put(
        uniq.slice(s, s + 97).map((n) => {
          const v = new Float32Array(d);
          const u = new Uint32Array(v.buffer);
          for (let j = 0; j < d; j++) {
            do u[j] = Math.floor(next() * 2 ** 32);
            while (!Number.isFinite(v[j]));
          }
          return [key(n), v] as const;
        }),
      );
    }
    cache.close();
    // damage some rows: a flipped byte, a vector moved to another key, a NaN with a valid checksum, 2 bytes too many
    const raw = keyedView(new Database(file));
    const [flip, movedTo, movedFrom, nan, long] = [uniq[3], uniq[10], uniq[11], uniq[600], uniq[1100]];
    const row = (n: number) => raw.prepare('SELECT vec, sum FROM keyed WHERE key = ?').get(key(n)) as { vec: Buffer; sum: number };
    const f = row(flip);
    f.vec[0] ^= 0x10;
    raw.prepare('UPDATE keyed SET vec = ? WHERE key = ?').run(f.vec, key(flip));
    const m = row(movedFrom);
    raw.prepare('UPDATE keyed SET vec = ?, sum = ? WHERE key = ?').run(m.vec, m.sum, key(movedTo));
    const nanVec = Buffer.from(new Float32Array(d).fill(Number.NaN).buffer);
    raw.prepare('UPDATE keyed SET vec = ?, sum = ? WHERE key = ?').run(nanVec, rowChecksum(key(nan), nanVec), key(nan));
    const longVec = Buffer.concat([row(long).vec, Buffer.from([1, 2])]);
    raw.prepare('UPDATE keyed SET vec = ?, sum = ? WHERE key = ?').run(longVec, rowChecksum(key(long), longVec), key(long));
    raw.close();
    const damaged = new Set([flip, movedTo, nan, long].map(key));

    // 2,000 asked: stored keys (the damaged ones always among them), keys never stored, and repeats, shuffled
    const asked: string[] = [...damaged];
    while (asked.length < 2000) {
      const r = next();
      if (r < 0.6) asked.push(key(uniq[Math.floor(next() * uniq.length)]));
      else if (r < 0.85) asked.push(key(2e9 + Math.floor(next() * 1e9)));
      else asked.push(asked[Math.floor(next() * asked.length)]);
    }
    for (let i = asked.length - 1; i > 0; i--) {
      const j = Math.floor(next() * (i + 1));
      [asked[i], asked[j]] = [asked[j], asked[i]];
    }

    const expected = pointReads(file, asked);
    const before = lastUsed(file);
    const c = EmbeddingCache.open(file);
    const got = c.get(asked);
    const stats = c.stats();
    c.close();

    expect(got.map(bits)).toEqual(expected.map(bits));
    const hits = expected.filter((v) => v !== undefined).length;
    expect(stats.hits).toBe(hits);
    expect(stats.misses).toBe(asked.length - hits);
    expect(stats.discarded).toBe(damaged.size);
    // marking: the rows served now carry one tick, later than every tick before; no other row changed
    const after = lastUsed(file);
    const served = new Set(asked.filter((_, i) => expected[i] !== undefined));
    const tick = Math.max(...after.values());
    expect(tick).toBeGreaterThan(Math.max(...before.values()));
    for (const [k, t] of after) expect([k, t]).toEqual([k, served.has(k) ? tick : before.get(k)]);
  });

  it('visit reads past one 500-key statement and calls onFound once per position, duplicates included', () => {
    const file = path.join(dir, 'e.sqlite');
    const cache = EmbeddingCache.open(file);
    cache.put(Array.from({ length: 1201 }, (_, i) => [key(i), new Float32Array([i, -i])] as const));
    const asked = [...Array.from({ length: 1201 }, (_, i) => key(1200 - i)), key(5), key(99999), key(5)];
    const seen: [number, number][] = [];
    const found = cache.visit(asked, (i, v) => seen.push([i, v[0]]));
    cache.close();
    expect(found).toBe(1203);
    seen.sort((a, b) => a[0] - b[0]);
    expect(seen).toEqual([...Array.from({ length: 1201 }, (_, i) => [i, 1200 - i]), [1201, 5], [1203, 5]]);
  });

  it('an error thrown by onFound rolls the marking back: no row changes its last use', () => {
    const file = path.join(dir, 'e.sqlite');
    const cache = EmbeddingCache.open(file);
    cache.put(Array.from({ length: 700 }, (_, i) => [key(i), new Float32Array([i])] as const));
    const before = lastUsed(file);
    const boom = new Error('boom');
    expect(() => cache.visit(Array.from({ length: 700 }, (_, i) => key(i)), (i) => {
      if (i === 650) throw boom;
    })).toThrow(boom);
    cache.close();
    expect(lastUsed(file)).toEqual(before);
  });

  /** A schema-2 file as session 9-11 wrote it (`lru` true) or as a version before session 9 did (no lru, index (last_used, key)). */
  function schema2File(file: string, rows: readonly [string, Float32Array, number][], lru: boolean): void {
    const raw = new Database(file);
    raw.exec("CREATE TABLE meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID; INSERT INTO meta VALUES ('schema_version', 2), ('clock', 10)");
    raw.exec('CREATE TABLE embeddings (key TEXT PRIMARY KEY, vec BLOB NOT NULL, sum INTEGER NOT NULL, last_used INTEGER NOT NULL)');
    if (lru) raw.exec('CREATE TABLE lru (id INTEGER PRIMARY KEY, last_used INTEGER NOT NULL); CREATE INDEX lru_last_used ON lru (last_used)');
    else raw.exec('CREATE INDEX embeddings_last_used ON embeddings (last_used, key)');
    for (const [k, v, used] of rows) {
      const bytes = Buffer.from(v.buffer);
      const { rowid } = raw.prepare('INSERT INTO embeddings (key, vec, sum, last_used) VALUES (?, ?, ?, ?) RETURNING rowid').get(k, bytes, rowChecksum(k, bytes), used) as { rowid: number };
      if (lru) raw.prepare('INSERT INTO lru (id, last_used) VALUES (?, ?)').run(rowid, used);
    }
    raw.close();
  }

  for (const lru of [true, false]) {
    it(`a schema-2 file ${lru ? '(sessions 9-11)' : 'of the layout before session 9 (no lru)'} is migrated on open: every vector, checksum and LRU order kept`, () => {
      const file = path.join(dir, 'e.sqlite');
      // keys of the split form (two providers), a key of another form (upper-case hex), and a bare key; last uses 1..5
      const upper = `glove-100d|{"table":"t"}\u0000${'AB'.repeat(32)}`;
      const other = `bag-v1:document\u0000${'0'.repeat(63)}7`;
      const rows: [string, Float32Array, number][] = [
        [key(1), new Float32Array([1.5, -2]), 4],
        [key(2), new Float32Array([2]), 1],
        [other, new Float32Array([3, 3, 3]), 5],
        [upper, new Float32Array([4]), 2],
        ['bare key', new Float32Array([5]), 3],
      ];
      schema2File(file, rows, lru);
      const cache = EmbeddingCache.open(file);
      const got = cache.get(rows.map((r) => r[0]));
      rows.forEach((r, i) => expect(bits(got[i])).toEqual(bits(r[1])));
      expect(cache.verifyAll()).toEqual({ rows: 5, bad: [] });
      // the read above gave all five one tick; order among them is then by provider part, then digest
      cache.close();
      const raw = keyedView(new Database(file, { readonly: true }));
      const models = (raw.prepare('SELECT key FROM models ORDER BY key').all() as { key: string }[]).map((r) => r.key);
      const columns = (raw.prepare('SELECT name FROM pragma_table_info(?)').all('embeddings') as { name: string }[]).map((c) => c.name);
      const indexes = (raw.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name").all() as { name: string }[]).map((r) => r.name);
      const digests = raw.prepare('SELECT length(digest) AS n, COUNT(*) AS c FROM embeddings GROUP BY n ORDER BY n').all();
      const lruRows = raw.prepare('SELECT COUNT(*) AS n FROM lru l JOIN embeddings e ON e.rowid = l.id').get();
      const keyed = raw.prepare('SELECT COUNT(*) AS n FROM keys k JOIN embeddings e ON e.rowid = k.id AND e.model = k.model AND e.digest = k.digest').get();
      raw.close();
      expect(models).toEqual(['bag-v1:document', 'bare key', 'glove-100d|{"table":"t"}', upper].sort());
      expect(columns).toEqual(['model', 'digest', 'vec', 'sum', 'last_used']);
      expect(indexes).toEqual(['lru_last_used']); // schema 4: the key index is the table `keys`
      expect(keyed).toEqual({ n: 5 });
      expect(digests).toEqual([{ n: 0, c: 2 }, { n: 32, c: 3 }]);
      expect(lruRows).toEqual({ n: 5 });
    });
  }

  it('a migrated file keeps the LRU order it had: prune drops the least recently used first', () => {
    const file = path.join(dir, 'e.sqlite');
    schema2File(file, [[key(1), new Float32Array([1]), 7], [key(2), new Float32Array([2]), 3], [key(3), new Float32Array([3]), 9], [key(4), new Float32Array([4]), 5]], true);
    const cache = EmbeddingCache.open(file);
    expect(cache.prune(2)).toBe(2); // last uses 3 (key 2) and 5 (key 4) are the oldest
    expect(cache.get([1, 2, 3, 4].map(key)).map((v) => v?.[0])).toEqual([1, undefined, 3, undefined]);
    cache.close();
  });

  it('a file of another version (1) is emptied, not migrated', () => {
    const file = path.join(dir, 'e.sqlite');
    schema2File(file, [[key(1), new Float32Array([1]), 1]], true);
    const raw = new Database(file);
    raw.exec("UPDATE meta SET value = 1 WHERE key = 'schema_version'");
    raw.close();
    const cache = EmbeddingCache.open(file);
    expect(cache.get([key(1)])).toEqual([undefined]);
    expect(cache.stats().entries).toBe(0);
    cache.close();
  });

  it('prune repairs lru when rows were written or deleted without it (by hand)', () => {
    const file = path.join(dir, 'e.sqlite');
    const cache = EmbeddingCache.open(file);
    cache.put([[key(1), new Float32Array([1])]]);
    cache.put([[key(2), new Float32Array([2])]]);
    cache.put([[key(3), new Float32Array([3])]]);
    expect(cache.stats().entries).toBe(3); // stats merges the staged puts into embeddings, where the view looks
    const raw = keyedView(new Database(file));
    // key 2 deleted (its lru entry stays), keys 4 and 5 written (no lru entries), last of all: lru no longer matches
    // the rows (3 entries, 4 rows)
    raw.prepare('DELETE FROM keyed WHERE key = ?').run(key(2));
    for (const n of [4, 5]) {
      const v = Buffer.from(new Float32Array([n]).buffer);
      raw.prepare('INSERT INTO keyed (key, vec, sum, last_used) VALUES (?, ?, ?, 1000)').run(key(n), v, rowChecksum(key(n), v));
    }
    raw.close();
    expect(cache.prune(3)).toBe(1); // 4 rows: key 1 (oldest) goes
    expect(cache.get([1, 3, 4, 5].map(key)).map((x) => x?.[0])).toEqual([undefined, 3, 4, 5]);
    cache.close();
    const check = new Database(file, { readonly: true });
    expect(check.prepare('SELECT COUNT(*) AS n FROM lru l JOIN embeddings e ON e.rowid = l.id').get()).toEqual({ n: 3 });
    expect(check.prepare('SELECT COUNT(*) AS n FROM lru').get()).toEqual({ n: 3 });
    check.close();
  });

  it('prune still breaks ties in last use by key (smaller key first), with the clock in lru', () => {
    const file = path.join(dir, 'e.sqlite');
    const cache = EmbeddingCache.open(file);
    cache.put([5, 3, 9, 1, 7].map((n) => [key(n), new Float32Array([n])] as const)); // one tick for all five
    expect(cache.prune(2)).toBe(3);
    expect(cache.get([1, 3, 5, 7, 9].map(key)).map((v) => v?.[0])).toEqual([undefined, undefined, undefined, 7, 9]);
    cache.close();
  });
});

import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isHarnessError } from '../../src/errors.js';
import { CACHE_SCHEMA_VERSION, EmbeddingCache, embeddingCacheKey, embeddingSpecKey, WAL_CHECKPOINT_PAGES } from '../../src/embed/cache.js';
import { resolveEmbeddingSpec } from '../../src/embed/spec.js';
import { sha256Text } from '../../src/embed/hash.js';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);

let dir: string;
let file: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'rs-cache-'));
  file = path.join(dir, 'sub', 'embeddings.sqlite');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function bits(v: Float32Array): number[] {
  return Array.from(new Uint32Array(v.buffer, v.byteOffset, v.length));
}

describe('EmbeddingCache', () => {
  it('round trip is bit-exact, including -0, subnormals and extremes', () => {
    const raw = new Uint32Array([0x80000000, 0x00000001, 0x7f7fffff, 0xff7fffff, 0x3eaaaaab]);
    const v = new Float32Array(raw.buffer);
    const cache = EmbeddingCache.open(file);
    cache.put([['k', v]]);
    const [back] = cache.get(['k']);
    expect(back).toBeInstanceOf(Float32Array);
    expect(bits(back!)).toEqual(Array.from(raw));
    cache.close();
  });

  it('a stored vector holding a NaN is never served (issue 24): a miss, counted as discarded', () => {
    const raw = new Uint32Array([0x3f800000, 0x7fc12345]);
    const cache = EmbeddingCache.open(file);
    cache.put([['nan', new Float32Array(raw.buffer)], ['ok', Float32Array.from([1, 0])]]);
    const [nan, ok] = cache.get(['nan', 'ok']);
    expect(nan).toBe(undefined);
    expect(Array.from(ok!)).toEqual([1, 0]);
    expect(cache.stats()).toMatchObject({ hits: 1, misses: 1, discarded: 1 });
    expect(cache.discardedKeys()).toEqual(['nan']);
    cache.close();
  });

  it('checkpoints the WAL every 16,384 pages (not SQLite\'s 1,000) and limits it to 64 MB afterwards', () => {
    const cache = EmbeddingCache.open(file);
    try {
      const db = (cache as unknown as { db: { pragma(q: string, o: { simple: true }): unknown } }).db;
      expect(WAL_CHECKPOINT_PAGES).toBe(16384);
      expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(16384);
      expect(db.pragma('journal_size_limit', { simple: true })).toBe(16384 * 4096);
      expect(db.pragma('synchronous', { simple: true })).toBe(1); // NORMAL
    } finally {
      cache.close();
    }
  });

  it('the page cache is 64 MiB by default, pageCacheBytes sets it in whole KiB, and below 64 KiB is a config error', () => {
    const pragma = (c: EmbeddingCache) => (c as unknown as { db: { pragma(q: string, o: { simple: true }): unknown } }).db.pragma('cache_size', { simple: true });
    const byDefault = EmbeddingCache.open(file);
    expect(pragma(byDefault)).toBe(-(64 * 1024)); // negative: KiB
    byDefault.close();
    const small = EmbeddingCache.open(file, { pageCacheBytes: 16 * 1024 * 1024 + 1000 });
    expect(pragma(small)).toBe(-(16 * 1024)); // 1,000 bytes short of a KiB more: rounded down
    small.close();
    let err: unknown;
    try {
      EmbeddingCache.open(file, { pageCacheBytes: 64 * 1024 - 1 });
    } catch (e) {
      err = e;
    }
    expect(isHarnessError(err, 'CONFIG_INVALID')).toBe(true);
    expect((err as Error).message).toContain('65535');
  });

  it('stores only the bytes of a view (subarray), not the whole underlying buffer', () => {
    const big = Float32Array.from([1, 2, 3, 4, 5]);
    const cache = EmbeddingCache.open(file);
    cache.put([['view', big.subarray(1, 3)]]);
    expect(Array.from(cache.get(['view'])[0]!)).toEqual([2, 3]);
    cache.close();
  });

  it('get returns undefined for missing keys, aligned with the keys, and counts hits and misses', () => {
    const cache = EmbeddingCache.open(file);
    cache.put([['a', Float32Array.from([1])]]);
    const got = cache.get(['x', 'a', 'y', 'a']);
    expect(got.map((v) => (v === undefined ? null : v[0]))).toEqual([null, 1, null, 1]);
    const s = cache.stats();
    expect([s.hits, s.misses, s.entries, s.puts]).toEqual([2, 2, 1, 1]);
    cache.close();
  });

  it('the key is the provider key, a NUL, and the sha256 of the text', () => {
    expect(embeddingCacheKey('p{"a":1}', 'hello')).toBe(`p{"a":1}\u0000${sha256Text('hello')}`);
    expect(sha256Text('hello')).toBe('2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824');
  });

  it('reopening sees what another connection wrote (data is on disk, WAL mode)', () => {
    const a = EmbeddingCache.open(file);
    a.put([['k', Float32Array.from([7])]]);
    const b = EmbeddingCache.open(file);
    expect(b.get(['k'])[0]![0]).toBe(7);
    a.close();
    b.close();
    const db = new Database(file);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.close();
  });

  it('two processes writing at once both succeed and nothing is lost', async () => {
    EmbeddingCache.open(file).close();
    const helper = path.join(repoRoot, 'test/embed/helpers/cache-writer.ts');
    const n = 1500;
    const outs = await Promise.all(
      ['A', 'B'].map((tag) => run(process.execPath, ['--import', 'tsx', helper, file, tag, String(n)], { cwd: repoRoot })),
    );
    expect(outs.map((o) => o.stdout.trim())).toEqual([`ok ${n}`, `ok ${n}`]);
    const cache = EmbeddingCache.open(file);
    expect(cache.stats().entries).toBe(2 * n);
    const [a, b] = cache.get([`A-${n - 1}`, `B-7`]);
    expect(Array.from(a!)).toEqual([n - 1, n - 1 + 0.5, -(n - 1)]);
    expect(Array.from(b!)).toEqual([7, 7.5, -7]);
    cache.close();
  });

  it('a writer blocked past busy_timeout gets CACHE_FAILED, not a hang or a silent loss', () => {
    const a = EmbeddingCache.open(file, { busyTimeoutMs: 50 });
    const other = new Database(file);
    other.exec('BEGIN IMMEDIATE');
    let err: unknown;
    try {
      a.put([['k', Float32Array.from([1])]]);
    } catch (e) {
      err = e;
    }
    other.exec('ROLLBACK');
    other.close();
    expect(isHarnessError(err, 'CACHE_FAILED')).toBe(true);
    a.put([['k', Float32Array.from([1])]]);
    expect(a.get(['k'])[0]![0]).toBe(1);
    a.close();
  });

  it('prune keeps the most recently used entries (a get counts as use)', () => {
    const cache = EmbeddingCache.open(file);
    cache.put([['a', Float32Array.from([1])]]);
    cache.put([['b', Float32Array.from([2])]]);
    cache.put([['c', Float32Array.from([3])]]);
    cache.get(['a']); // a is now the most recent, b the least
    expect(cache.prune(2)).toBe(1);
    expect(cache.get(['a', 'b', 'c']).map((v) => v?.[0] ?? null)).toEqual([1, null, 3]);
    cache.close();
  });

  it('maxEntries prunes after each put, least recently used first', () => {
    const cache = EmbeddingCache.open(file, { maxEntries: 2 });
    cache.put([['a', Float32Array.from([1])]]);
    cache.put([['b', Float32Array.from([2])]]);
    cache.get(['a']);
    cache.put([['c', Float32Array.from([3])]]);
    const s = cache.stats();
    expect([s.entries, s.pruned]).toEqual([2, 1]);
    expect(cache.get(['a', 'b', 'c']).map((v) => v?.[0] ?? null)).toEqual([1, null, 3]);
    cache.close();
  });

  it('LRU order is shared between connections (one clock in the file)', () => {
    const a = EmbeddingCache.open(file);
    const b = EmbeddingCache.open(file);
    a.put([['x', Float32Array.from([1])]]);
    b.put([['y', Float32Array.from([2])]]);
    a.get(['x']); // x used after y was written by the other connection
    expect(b.prune(1)).toBe(1);
    expect(a.get(['x', 'y']).map((v) => v?.[0] ?? null)).toEqual([1, null]);
    a.close();
    b.close();
  });

  it('a schema version mismatch drops the stored vectors and records the current version', () => {
    const c1 = EmbeddingCache.open(file);
    c1.put([['k', Float32Array.from([1])]]);
    c1.close();
    const db = new Database(file);
    db.prepare("UPDATE meta SET value = ? WHERE key = 'schema_version'").run(CACHE_SCHEMA_VERSION + 1);
    db.close();
    const c2 = EmbeddingCache.open(file);
    expect(c2.stats().entries).toBe(0);
    expect(c2.get(['k'])[0]).toBeUndefined();
    c2.close();
    const db2 = new Database(file);
    expect(db2.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get()).toEqual({ value: CACHE_SCHEMA_VERSION });
    db2.close();
  });

  it('a file that is not SQLite gives CACHE_FAILED naming the file', () => {
    const bad = path.join(dir, 'not-a-db.sqlite');
    writeFileSync(bad, 'this is not a database, just text that is long enough to fill a header page '.repeat(20));
    let err: unknown;
    try {
      EmbeddingCache.open(bad);
    } catch (e) {
      err = e;
    }
    expect(isHarnessError(err, 'CACHE_FAILED')).toBe(true);
    expect((err as Error).message).toContain(bad);
  });

  it('maxEntries below 1 is a config error', () => {
    let err: unknown;
    try {
      EmbeddingCache.open(file, { maxEntries: 0 });
    } catch (e) {
      err = e;
    }
    expect(isHarnessError(err, 'CONFIG_INVALID')).toBe(true);
  });
});

describe('EmbeddingCache: presence counts and throughput records (for validate)', () => {
  it('countPresent counts distinct texts stored under that provider key, without touching hits or last use', () => {
    const cache = EmbeddingCache.open(file);
    cache.put([
      [embeddingCacheKey('A', 'x'), Float32Array.from([1])],
      [embeddingCacheKey('A', 'y'), Float32Array.from([2])],
      [embeddingCacheKey('B', 'z'), Float32Array.from([3])],
    ]);
    // x and y under A (x listed twice counts once); z is under B, w nowhere.
    expect(cache.countPresent('A', ['x', 'x', 'y', 'z', 'w'])).toBe(2);
    expect(cache.countPresent('B', ['x', 'z'])).toBe(1);
    expect(cache.stats()).toMatchObject({ hits: 0, misses: 0 });
    cache.close();
  });

  it('countPresent works past the 500-key IN chunk (1,200 texts: 700 stored)', () => {
    const cache = EmbeddingCache.open(file);
    const texts = Array.from({ length: 1200 }, (_, i) => `t${i}`);
    cache.put(texts.slice(0, 700).map((t) => [embeddingCacheKey('A', t), Float32Array.from([0])] as const));
    expect(cache.countPresent('A', texts)).toBe(700);
    cache.close();
  });

  it('recordThroughput replaces the record of a model; texts/s = texts / seconds; nothing measured is not recorded', () => {
    const spec = embeddingSpecKey(resolveEmbeddingSpec('use-lite'));
    const cache = EmbeddingCache.open(file);
    expect(cache.throughput(spec)).toBeUndefined();
    cache.recordThroughput({ specKey: spec, documentKey: 'd1', queryKey: 'q1', texts: 100, seconds: 8 }, new Date('2026-01-01T00:00:00Z'));
    cache.recordThroughput({ specKey: spec, documentKey: 'd2', queryKey: 'q2', texts: 0, seconds: 0 });
    expect(cache.throughput(spec)).toEqual({
      specKey: spec, documentKey: 'd1', queryKey: 'q1', texts: 100, seconds: 8, textsPerSecond: 100 / 8, recordedAt: '2026-01-01T00:00:00.000Z',
    });
    cache.recordThroughput({ specKey: spec, documentKey: 'd2', queryKey: 'q2', texts: 30, seconds: 2 });
    expect(cache.throughput(spec)).toMatchObject({ documentKey: 'd2', textsPerSecond: 15 });
    cache.close();
    // Survives reopening; the batch size and worker count do not change the model's identity, a prefix does.
    const again = EmbeddingCache.open(file);
    expect(again.throughput(embeddingSpecKey(resolveEmbeddingSpec({ model: 'use-lite', workers: 1, batchSize: 8 })))?.texts).toBe(30);
    expect(again.throughput(embeddingSpecKey(resolveEmbeddingSpec({ model: 'use-lite', queryPrefix: 'q: ' })))).toBeUndefined();
    again.close();
  });
});

/**
 * Issue 24 §2: vectors read back from the embedding cache are checked row by row (CRC-32 over key and bytes, finite
 * values). Each test alters the SQLite cache in one way, re-runs the tiny fixture's semantic sweep without
 * checkpoints (so the vectors are read back), and asserts: a warning naming the cache file, the altered vectors
 * recomputed by the provider, and every metric equal to the reference run's.
 */
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { parseConfig } from '../../src/config/schema.js';
import { runSweep } from '../../src/run/sweep.js';
import { EmbeddingCache, rowChecksum } from '../../src/embed/cache.js';
import { keyedView } from '../helpers/embed-cache-sql.js';
import type { EmbeddingProvider, EmbedRole } from '../../src/embed/provider.js';
import type { SweepResult } from '../../src/types.js';
import { bagVector } from '../helpers/bag.js';

const here = path.dirname(new URL(import.meta.url).pathname);
const tiny = path.resolve(here, '../fixtures/sweep/tiny');
const D = 16;

/** A deterministic bag-of-words provider (word → bucket by its characters); counts the texts it embeds. */
function bagProvider(): EmbeddingProvider & { embedded: number } {
  const p = {
    name: 'bag',
    label: 'bag',
    dimensions: D,
    embedded: 0,
    cacheKey: (role: EmbedRole) => `bag-v1:${role}`,
    async embedBatch(texts: readonly string[]): Promise<Float32Array[]> {
      p.embedded += texts.length;
      return texts.map((t) => bagVector(t, D));
    },
    truncatedCount: () => 0,
    describe: () => ({ provider: 'bag' }),
    close: async () => {},
  };
  return p;
}

async function sweep(cacheDir: string, provider = bagProvider()): Promise<SweepResult> {
  const config = parseConfig({
    name: 'tiny',
    dataset: { path: tiny },
    chunking: { sizes: ['none', 16], overlap: 4 },
    topK: [1, 3, 5],
    modes: ['semantic'],
    embeddings: [],
    primaryMetric: 'ndcg@3',
    cacheDir,
  });
  const { result } = await runSweep(config, { providers: [provider], resume: false, now: () => new Date('2026-01-01T00:00:00Z') });
  return result;
}

function metricsOf(r: SweepResult): Record<string, unknown> {
  expect(r.configs.length).toBe(6);
  for (const c of r.configs) expect(c.status).toBe('ok');
  return Object.fromEntries(r.configs.map((c) => [c.config.id, { means: c.means, perQuery: c.perQuery.map((q) => [q.qid, q.retrieved]) }]));
}

let reference: SweepResult;
let warm: string;

beforeAll(async () => {
  warm = path.join(mkdtempSync(path.join(tmpdir(), 'rs-vec-')), 'c');
  reference = await sweep(warm);
});

function copy(): { cacheDir: string; file: string } {
  const cacheDir = path.join(mkdtempSync(path.join(tmpdir(), 'rs-vec-')), 'c');
  cpSync(warm, cacheDir, { recursive: true });
  return { cacheDir, file: path.join(cacheDir, 'embeddings.sqlite') };
}

/** Alters the rows with `alter(db, rows)`, where rows are the document vectors in key order. */
function alter(file: string, f: (db: Database.Database, rows: { key: string; vec: Buffer; sum: number }[]) => void): void {
  const db = keyedView(new Database(file));
  const rows = db.prepare("SELECT key, vec, sum FROM keyed WHERE key LIKE 'bag-v1:document%' ORDER BY key").all() as { key: string; vec: Buffer; sum: number }[];
  expect(rows.length).toBeGreaterThan(2);
  f(db, rows);
  db.close();
}

async function expectRecomputed(cacheDir: string, file: string, altered: number): Promise<void> {
  const provider = bagProvider();
  const r = await sweep(cacheDir, provider);
  const w = (r.manifest.warnings as string[]).find((m) => m.includes(file));
  expect(w).toMatch(new RegExp(`${altered} stored vector\\(s\\) failed their checksum or held a non-finite value`));
  expect(w).toMatch(/discarded and recomputed/);
  // The provider embedded exactly the altered documents again, beyond what a clean warm run embeds (the queries).
  const cleanProvider = bagProvider();
  const clean = await sweep(cacheDir, cleanProvider);
  expect(provider.embedded - cleanProvider.embedded).toBe(altered);
  expect((clean.manifest.warnings as string[]).some((m) => m.includes(file))).toBe(false);
  expect(metricsOf(r)).toEqual(metricsOf(reference));
  expect(metricsOf(clean)).toEqual(metricsOf(reference));
}

describe('cached vectors are verified on read (issue 24)', () => {
  it('two vectors swapped between rows (checksums left in place): both discarded, recomputed, equal metrics', async () => {
    const { cacheDir, file } = copy();
    alter(file, (db, rows) => {
      const [a, b] = [rows[0], rows[1]];
      const up = db.prepare('UPDATE keyed SET vec = ? WHERE key = ?');
      up.run(b.vec, a.key);
      up.run(a.vec, b.key);
    });
    await expectRecomputed(cacheDir, file, 2);
  });

  it('one byte of a vector flipped: discarded, recomputed, equal metrics', async () => {
    const { cacheDir, file } = copy();
    alter(file, (db, rows) => {
      const v = Buffer.from(rows[2].vec);
      v[5] ^= 0x40;
      db.prepare('UPDATE keyed SET vec = ? WHERE key = ?').run(v, rows[2].key);
    });
    await expectRecomputed(cacheDir, file, 1);
  });

  it('a NaN stored with a valid checksum: discarded as non-finite, recomputed, equal metrics', async () => {
    const { cacheDir, file } = copy();
    alter(file, (db, rows) => {
      const v = Buffer.from(rows[0].vec);
      v.writeFloatLE(Number.NaN, 0);
      db.prepare('UPDATE keyed SET vec = ?, sum = ? WHERE key = ?').run(v, rowChecksum(rows[0].key, v), rows[0].key);
    });
    await expectRecomputed(cacheDir, file, 1);
  });

  it('verifyAll lists exactly the altered rows and remove() drops them', () => {
    const { file } = copy();
    let bad = '';
    alter(file, (db, rows) => {
      bad = rows[1].key;
      db.prepare('UPDATE keyed SET sum = sum + 1 WHERE key = ?').run(bad);
    });
    const cache = EmbeddingCache.open(file);
    const before = cache.verifyAll();
    expect(before.bad).toEqual([{ key: bad, reason: 'checksum mismatch' }]);
    expect(cache.remove(before.bad.map((b) => b.key))).toBe(1);
    const after = cache.verifyAll();
    expect([after.rows, after.bad]).toEqual([before.rows - 1, []]);
    cache.close();
  });
});

describe('the closing merge of staged vectors (session 12)', () => {
  it("a merge that fails when the sweep closes the cache is a warning naming the file; results are returned and the next run merges the staged rows", async () => {
    const cacheDir = path.join(mkdtempSync(path.join(tmpdir(), 'rs-vec-merge-')), 'c');
    const file = path.join(cacheDir, 'embeddings.sqlite');
    const provider = bagProvider();
    // When the sweep closes the cache, take the index table away first: the rows still staged (the last puts) cannot
    // be merged, and the close fails as a full disk would make it fail.
    const close = EmbeddingCache.prototype.close;
    const spy = vi.spyOn(EmbeddingCache.prototype, 'close').mockImplementation(function (this: EmbeddingCache) {
      const db = new Database(file);
      db.exec('DROP TABLE keys');
      db.close();
      spy.mockRestore();
      close.call(this);
    });
    const r = await sweep(cacheDir, provider);
    expect(metricsOf(r)).toEqual(metricsOf(reference));
    const w = (r.manifest.warnings as string[]).find((m) => m.includes(file));
    expect(w).toMatch(/embedding cache .*: write failed: no such table: keys/);
    expect(w).toMatch(/stay in the file and the next run that reads it merges them/);
    // the next run: the table is made again on open, the staged question vectors are merged and served from it
    const next = bagProvider();
    const again = await sweep(cacheDir, next);
    expect(metricsOf(again)).toEqual(metricsOf(reference));
    const check = new Database(file, { readonly: true });
    const staged = check.prepare('SELECT COUNT(*) AS n FROM staged_keys').get();
    check.close();
    expect(staged).toEqual({ n: 0 });
  });
});

/**
 * Issue 25 item 1 on real data: SciFact swept with the default `limits.memory` (documents in memory) and with 32 MiB
 * (its document share, 32 MiB / 8 = 4 MiB, is below corpus.jsonl's 8,041,421 bytes, so the documents are loaded into
 * a text store and every document and chunk text is read back from the file): keyword + semantic (glove-100d) +
 * hybrid, chunking none and 256/32, k 1/5/10. runs/, per-query.jsonl and every metric identical
 * (scripts/compare-results.ts); the store is removed when the sweep ends, and a killed run's store by the next run.
 * A second stored run reads its chunks back from the chunking checkpoints the first wrote (`chunkOf` on stored
 * documents) and must agree too.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/schema.js';
import { analyze, withStatistics } from '../../src/report/analyze.js';
import { renderReports } from '../../src/report/render.js';
import { writeArtifacts } from '../../src/run/artifacts.js';
import { runSweep } from '../../src/run/sweep.js';
import { planSweep } from '../../src/run/plan.js';
import type { SweepResult } from '../../src/types.js';
import { compareResults } from '../../scripts/compare-results.js';
import { loadDataset } from '../../src/load/dataset.js';
import { UTF8_MAX_UNITS } from '../../src/load/text-store.js';
import { storedBytes } from '../helpers/stored-bytes.js';
import { keyedView } from '../helpers/embed-cache-sql.js';

const Database = createRequire(import.meta.url)('better-sqlite3') as typeof import('better-sqlite3');
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const scifact = path.resolve(repo, '../shared/datasets/scifact');
const MiB = 1024 ** 2;

describe.skipIf(!existsSync(path.join(scifact, 'corpus.jsonl')))('documents from a text store on SciFact (../shared/datasets/scifact)', () => {
  let tmp = '';
  const base = {
    dataset: { path: scifact, split: 'test' },
    chunking: { sizes: ['none', 256], overlap: 32 },
    topK: [1, 5, 10],
    modes: ['keyword', 'semantic', 'hybrid'],
    embeddings: ['glove-100d'],
    primaryMetric: 'ndcg@10',
    statistics: { seed: 7, resamples: 1000 },
  };
  const results: Record<string, { result: SweepResult; out: string }> = {};
  const cacheOf = (name: string) => path.join(tmp, `cache-${name}`);
  const leftover = () => path.join(cacheOf('file'), 'texts', 'documents-1.txt.tmp-999999999-1');

  const run = async (name: string, cacheDir: string, extra: object, resume: boolean) => {
    const config = parseConfig({ ...base, cacheDir, ...extra });
    const { result: raw } = await runSweep(config, { resume, now: () => new Date('2026-01-01T00:00:00Z') });
    const analysis = analyze(raw, { seed: 7, resamples: 1000 });
    const result = withStatistics(raw, analysis);
    const out = path.join(tmp, name);
    writeArtifacts(out, result, renderReports(result, analysis) as unknown as Record<string, string>);
    results[name] = { result, out };
  };

  let expectedBytes = 0;

  beforeAll(async () => {
    tmp = mkdtempSync(path.join(tmpdir(), 'rs-textstore-sweep-'));
    for (const d of (await loadDataset({ path: scifact, split: 'test' })).docs) expectedBytes += storedBytes(d.text, UTF8_MAX_UNITS);
    await run('resident', cacheOf('resident'), {}, false);
    // a killed run's text store (owner pid 999999999 is not running): the next stored run removes it
    mkdirSync(path.dirname(leftover()), { recursive: true });
    writeFileSync(leftover(), 'x');
    // resume: true writes the chunking checkpoints (and reads none: the cache folder is new)
    await run('file', cacheOf('file'), { limits: { memory: '32MB' } }, true);
    // the same cache: chunks read back from the checkpoints onto stored documents, rankings recomputed from them
    await run('file-restored', cacheOf('file'), { limits: { memory: '32MB' } }, true);
  }, 900_000);
  afterAll(() => {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  type Docs = { storage: string; file_bytes: number | null; share_bytes: number };
  const docsOf = (r: SweepResult) => (r.manifest.dataset as { documents: Docs }).documents;

  it('the default keeps the documents in memory; 32 MiB puts them in a file (2 MiB share < 8,041,421 bytes)', () => {
    expect(docsOf(results.resident.result)).toEqual({ storage: 'memory', file_bytes: null, share_bytes: (12 * 1024 * MiB) / 16 });
    const stored = docsOf(results.file.result);
    expect(stored.storage).toBe('file');
    expect(stored.share_bytes).toBe((32 * MiB) / 16);
    expect(statSync(path.join(scifact, 'corpus.jsonl')).size).toBeGreaterThan(stored.share_bytes);
    // one byte a code unit for texts all below U+0100, UTF-8 for the other well-formed ones up to UTF8_MAX_UNITS code
    // units, two bytes a code unit for the rest, worked out from the texts as loaded
    expect(stored.file_bytes).toBe(expectedBytes);
  });

  it('runs/, per-query.jsonl and every metric are identical (scripts/compare-results.ts), byte for byte', () => {
    const runs = readdirSync(path.join(results.resident.out, 'runs'));
    expect(runs.length).toBe(3 * 2 * 3); // (keyword, semantic, hybrid) × (none, 256) × 3 k
    expect(compareResults(results.resident.out, results.file.out)).toEqual([]);
    expect(compareResults(results.resident.out, results.file.out.replace(/file$/, 'file-restored'))).toEqual([]);
  });

  it('the stored run embedded the same texts: same embedding stats, and the same cache keys and vector bytes (issue 25 item 1)', () => {
    // The embedding reads stored chunk texts one at a time and deduplicates them by digest: the distinct texts, cache
    // keys and rows must be the resident run's (both caches were new, so both runs embedded every distinct text).
    type Emb = { documents: { requested: number; distinct: number; cacheHits: number; cacheMisses: number } };
    const stats = (r: SweepResult) => {
      const { requested, distinct, cacheHits, cacheMisses } = (r.manifest.embeddings as Emb[])[0].documents;
      return { requested, distinct, cacheHits, cacheMisses };
    };
    const resident = stats(results.resident.result);
    expect(resident.cacheHits).toBe(0);
    expect(resident.distinct).toBe(resident.cacheMisses);
    expect(stats(results.file.result)).toEqual(resident);
    const rows = (cacheDir: string) => {
      const db = keyedView(new Database(path.join(cacheDir, 'embeddings.sqlite'), { readonly: true }));
      try {
        return db.prepare('SELECT key, vec FROM keyed ORDER BY key').all() as { key: string; vec: Buffer }[];
      } finally {
        db.close();
      }
    };
    const a = rows(cacheOf('resident'));
    const b = rows(cacheOf('file'));
    // the chunk texts of both chunkings plus the questions (another role's keys), each stored once
    expect(a.length).toBeGreaterThan(resident.distinct);
    expect(b.map((r) => r.key)).toEqual(a.map((r) => r.key));
    expect(b.every((r, i) => r.vec.equals(a[i].vec))).toBe(true);
  });

  it('the whole-document keyword nDCG@10 is the reference 0.6958720004492678 with the documents in a file', () => {
    const row = results.file.result.configs.find((c) => c.config.mode === 'keyword' && c.config.chunking.size === null && c.config.k === 10);
    expect(row?.means['ndcg@10']).toBe(0.6958720004492678);
  });

  it('validate plans the same chunks from the store, and removes the store when it is done', async () => {
    const plans = [];
    for (const extra of [{}, { limits: { memory: '32MB' } }]) plans.push(await planSweep(parseConfig({ ...base, cacheDir: cacheOf('plan'), ...extra })));
    expect(plans[1].chunkings).toEqual(plans[0].chunkings);
    expect(plans[0].chunkings.length).toBe(2);
    expect(readdirSync(path.join(cacheOf('plan'), 'texts'))).toEqual([]);
  }, 300_000);

  it('the store is removed when the sweep ends, and so is a killed run\'s leftover', () => {
    expect(existsSync(leftover())).toBe(false);
    expect(readdirSync(path.join(cacheOf('file'), 'texts'))).toEqual([]);
    expect(existsSync(path.join(cacheOf('resident'), 'texts'))).toBe(false);
  });
});

/**
 * Issue 25 item 1 on real data: SciFact (whole documents, glove-100d, semantic + hybrid) with the default
 * `limits.memory` (vectors resident) and with 8 MiB (a quarter of it, 2 MiB, is below the 5,183 × 112 float32 matrix,
 * so the vectors go to a file the exact search streams through in 128 KiB shards, 18 of them): runs/ and per-query.jsonl
 * byte-identical, every metric equal (scripts/compare-results.ts). Also: the files are gone after the run, a killed
 * run's leftover is removed, and a budget below the plan's floor is refused before any work. And the same on the
 * bundled helpdesk demo with bag-of-words vectors (many exact ties) in 64 KiB shards, which always runs.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/schema.js';
import { isHarnessError, type HarnessError } from '../../src/errors.js';
import { analyze, withStatistics } from '../../src/report/analyze.js';
import { renderReports } from '../../src/report/render.js';
import { writeArtifacts } from '../../src/run/artifacts.js';
import { planSweep } from '../../src/run/plan.js';
import { runSweep } from '../../src/run/sweep.js';
import type { SweepResult } from '../../src/types.js';
import type { EmbeddingProvider, EmbedRole } from '../../src/embed/provider.js';
import { bagVector } from '../helpers/bag.js';
import { compareResults } from '../../scripts/compare-results.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const helpdesk = path.join(repo, 'datasets/helpdesk');
const scifact = path.resolve(repo, '../shared/datasets/scifact');
const MiB = 1024 ** 2;

describe.skipIf(!existsSync(path.join(scifact, 'corpus.jsonl')))('dense vectors from a file on SciFact (../shared/datasets/scifact)', () => {
  // made in beforeAll, so that a skipped or filtered suite leaves no folder behind
  let tmp = '';
  const cacheDir = () => path.join(tmp, 'cache');
  const base = {
    dataset: { path: scifact, split: 'test' },
    chunking: { sizes: ['none'] },
    topK: [1, 5, 10],
    modes: ['semantic', 'hybrid'],
    embeddings: ['glove-100d'],
    primaryMetric: 'ndcg@10',
    statistics: { seed: 7, resamples: 1000 },
  };
  const results: Record<string, { result: SweepResult; out: string }> = {};
  const leftover = () => path.join(cacheDir(), 'vectors', 'glove-100d.none.f32.tmp-999999999-1');

  const run = async (name: string, extra: object) => {
    const config = parseConfig({ ...base, cacheDir: cacheDir(), ...extra });
    // resume: false: no checkpoints, so the second run computes its rankings again rather than reading the first's
    const { result: raw } = await runSweep(config, { resume: false, now: () => new Date('2026-01-01T00:00:00Z') });
    const analysis = analyze(raw, { seed: 7, resamples: 1000 });
    const result = withStatistics(raw, analysis);
    const out = path.join(tmp, name);
    writeArtifacts(out, result, renderReports(result, analysis) as unknown as Record<string, string>);
    results[name] = { result, out };
  };

  beforeAll(async () => {
    tmp = mkdtempSync(path.join(tmpdir(), 'rs-vecfile-sweep-'));
    await run('resident', {});
    // a killed run's vector file (owner pid 999999999 is not running): the next file-mode run removes it
    mkdirSync(path.dirname(leftover()), { recursive: true });
    writeFileSync(leftover(), 'x');
    await run('file', { limits: { memory: '8MB' } });
  }, 600_000);
  afterAll(() => {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  type Emb = { vectors: { storage: string; matrix_bytes: number; share_bytes: number; shard_bytes?: number } };
  const vectorsOf = (r: SweepResult) => (r.manifest.embeddings as Emb[])[0].vectors;

  it('the default keeps the vectors in memory; 8 MiB puts them in a file (2 MiB share, 128 KiB shards)', () => {
    const resident = vectorsOf(results.resident.result);
    expect(resident.storage).toBe('memory');
    const file = vectorsOf(results.file.result);
    expect(file).toMatchObject({ storage: 'file', share_bytes: (8 * MiB) / 4, shard_bytes: (8 * MiB) / 64 });
    expect(file.matrix_bytes).toBe(resident.matrix_bytes);
    // 5,183 rows × 112 floats × 4 bytes = 2,322,000 bytes of rows alone, above the 2 MiB share
    expect(file.matrix_bytes).toBeGreaterThan(5183 * 112 * 4);
    expect(5183 * 112 * 4).toBeGreaterThan((8 * MiB) / 4);
  });

  it('runs/, per-query.jsonl and every metric are identical (scripts/compare-results.ts), byte for byte', () => {
    const runs = readdirSync(path.join(results.resident.out, 'runs'));
    expect(runs.length).toBe(2 * 3); // (semantic, hybrid) × 3 k
    expect(compareResults(results.resident.out, results.file.out)).toEqual([]);
  });

  it('the vector files are removed when the sweep ends, and so is a killed run\'s leftover', () => {
    expect(existsSync(leftover())).toBe(false);
    expect(readdirSync(path.join(cacheDir(), 'vectors'))).toEqual([]);
  });

  it('validate and run refuse a budget below the floor, naming limits.memory, before any work', async () => {
    // 6 configurations × 300 scored questions × 4 KB = 7.03 MiB of rankings, + 64 KiB of shard buffer at 4 MiB
    const config = parseConfig({ ...base, cacheDir: cacheDir(), limits: { memory: '4MB' } });
    for (const attempt of [() => planSweep(config), () => runSweep(config, { resume: false })]) {
      const e = await attempt().then(
        () => null,
        (x: unknown) => x,
      );
      expect(isHarnessError(e, 'CONFIG_INVALID')).toBe(true);
      expect((e as HarnessError).location?.path).toBe('limits.memory');
      expect((e as Error).message).toContain(`limits.memory (${4 * MiB} bytes, 4 MiB) is below the plan's memory floor`);
      expect((e as Error).message).toContain('6 configurations × 300 scored questions × 4 KB of rankings (7.0 MiB)');
    }
  });
});

/** Bag-of-words vectors of 512 dimensions (test/helpers/bag.ts): 2 KB a row, and many exactly tied scores. */
function bagProvider(): EmbeddingProvider {
  const D = 512;
  return {
    name: 'bag',
    label: 'bag',
    dimensions: D,
    cacheKey: (role: EmbedRole) => `bag-vecfile-v1:${role}`,
    async embedBatch(texts: readonly string[]): Promise<Float32Array[]> {
      return texts.map((t) => bagVector(t, D));
    },
    truncatedCount: () => 0,
    describe: () => ({ provider: 'bag' }),
    close: async () => {},
  };
}

describe('dense vectors from a file on the helpdesk demo (bag-of-words vectors, ties across 64 KiB shards)', () => {
  it('2 MB budget: vectors in a file, runs/ and per-query.jsonl identical to the resident default', async () => {
    const tmp = mkdtempSync(path.join(tmpdir(), 'rs-vecfile-helpdesk-'));
    try {
      const outs: Record<string, { out: string; result: SweepResult }> = {};
      for (const [name, extra] of [['resident', {}], ['file', { limits: { memory: '2MB' } }]] as const) {
        const config = parseConfig({
          name: 'vecfile',
          dataset: { path: helpdesk },
          chunking: { sizes: [32], overlap: 0 },
          topK: [5],
          modes: ['semantic', 'hybrid'],
          embeddings: [],
          primaryMetric: 'ndcg@5',
          cacheDir: path.join(tmp, `cache-${name}`),
          ...extra,
        });
        const { result: raw } = await runSweep(config, { providers: [bagProvider()], resume: false, now: () => new Date('2026-01-01T00:00:00Z') });
        const analysis = analyze(raw, { seed: 7, resamples: 1000 });
        const result = withStatistics(raw, analysis);
        const out = path.join(tmp, name);
        writeArtifacts(out, result, renderReports(result, analysis) as unknown as Record<string, string>);
        outs[name] = { out, result };
      }
      type Emb = { vectors: { storage: string; matrix_bytes: number; share_bytes: number; shard_bytes?: number } };
      const v = (outs.file.result.manifest.embeddings as Emb[])[0].vectors;
      // 2 MiB: a 512 KiB share (2 MiB / 4 / min(concurrency 2, 1 model)), shards of 64 KiB (2 MiB / 64 = 32 KiB → 64 KiB)
      expect(v).toMatchObject({ storage: 'file', share_bytes: (2 * MiB) / 4, shard_bytes: 64 * 1024 });
      // each row is 512 floats = 2 KiB, so more than 256 chunks exceed the share
      expect(v.matrix_bytes).toBeGreaterThan((2 * MiB) / 4);
      expect((outs.resident.result.manifest.embeddings as Emb[])[0].vectors.storage).toBe('memory');
      expect(readdirSync(path.join(outs.file.out, 'runs')).length).toBe(2);
      expect(compareResults(outs.resident.out, outs.file.out)).toEqual([]);
      expect(readdirSync(path.join(tmp, 'cache-file', 'vectors'))).toEqual([]);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }, 120_000);
});


/**
 * What the benchmark runs: the SciFact grid as a resolved sweep config, and (re-exported) the deterministic corpus
 * subset rule.
 * Pure apart from {@link benchConfig} resolving paths; no clock, no disk writes.
 */
import type { Mode } from '../src/types.js';
import { parseConfig, type SweepConfig } from '../src/config/schema.js';

/** The grid of the issue: chunking none, 128 and 256 tokens (overlap 16) × k 1, 3, 5, 10 × 3 modes × 2 models. */
export const BENCH_GRID = {
  sizes: ['none', 128, 256] as (number | 'none')[],
  overlap: 16,
  topK: [1, 3, 5, 10],
  modes: ['keyword', 'semantic', 'hybrid'] as Mode[],
  embeddings: ['glove-100d', 'use-lite'],
  hybrid: { rrfK: 60, depth: 50 },
};

/** Options of {@link benchConfig}; every field defaults to {@link BENCH_GRID}. */
export interface BenchConfigOptions {
  /** Absolute dataset folder (BEIR layout, split `test`). */
  datasetPath: string;
  /** Embedding cache folder (the SQLite file and the GloVe binary table live here). */
  cacheDir: string;
  /** Top-k values; default [1, 3, 5, 10]. */
  topK?: number[];
  /** Modes; default all three. */
  modes?: Mode[];
  /** Chunk sizes in tokens (`none` = whole document); default none, 128, 256. */
  sizes?: (number | 'none')[];
  /** Embedding models; default glove-100d, use-lite. */
  embeddings?: string[];
  /** Models run at once in the sweep; default 1, so the per-model embed times do not overlap (see docs/bench.md). */
  concurrency?: number;
}

/**
 * The sweep config of the benchmark, resolved by `parseConfig` (so every default the CLI would fill is filled the
 * same way). Throws `HarnessError('CONFIG_INVALID')` for options the schema rejects (e.g. an empty `topK`).
 */
export function benchConfig(o: BenchConfigOptions): SweepConfig {
  return parseConfig({
    name: 'bench-scifact',
    dataset: { path: o.datasetPath, split: 'test', labels: 'strict' },
    chunking: { sizes: o.sizes ?? BENCH_GRID.sizes, overlap: BENCH_GRID.overlap },
    topK: o.topK ?? BENCH_GRID.topK,
    modes: o.modes ?? BENCH_GRID.modes,
    embeddings: o.embeddings ?? BENCH_GRID.embeddings,
    hybrid: BENCH_GRID.hybrid,
    primaryMetric: 'ndcg@10',
    cacheDir: o.cacheDir,
    concurrency: o.concurrency ?? 1,
  });
}

/**
 * The subset rule lives in src/load/sample.ts (beside the config's seeded `dataset.sample`), unchanged; re-exported
 * here for the bench's phases and tests.
 */
export { subsetDataset, type SubsetInfo } from '../src/load/sample.js';

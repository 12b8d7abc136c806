/**
 * What the benchmark runs: the SciFact grid as a resolved sweep config, and the deterministic corpus subset rule.
 * Pure apart from {@link benchConfig} resolving paths; no clock, no disk writes.
 */
import type { Dataset, Mode } from '../src/types.js';
import { parseConfig, type SweepConfig } from '../src/config/schema.js';
import { fingerprintDataset } from '../src/load/dataset.js';

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

/** The subset actually used, as written into bench.json (`null` there when the whole corpus is used). */
export interface SubsetInfo {
  /** The rule in words. */
  rule: string;
  /** Documents judged relevant (grade ≥ 1) for at least one kept question. */
  judgedDocs: number;
  /** Other documents kept (the first `others` of the rest in id order). */
  otherDocs: number;
  /** Documents in the subset (judgedDocs + otherDocs). */
  docs: number;
  /** Documents in the full corpus. */
  corpusDocs: number;
  /** Questions kept. */
  questions: number;
  /** Questions in the full split. */
  corpusQuestions: number;
}

/**
 * Deterministic subset of a dataset: keeps the first `maxQuestions` questions (file order; all when null), every
 * document judged relevant (grade ≥ 1) for a kept question, plus the first `others` remaining documents in the
 * dataset's document order (ids in code-unit order, as `loadDataset` sorts them). `others: null` keeps every
 * document. Returns the dataset unchanged (same object) and `subset: null` when nothing is left out. The result's
 * fingerprint is recomputed; the input is not changed. `others` and `maxQuestions` are integers ≥ 0 (≥ 1 for
 * questions); anything else is a plain `Error` (a bug in the bench's argument parsing).
 */
export function subsetDataset(
  dataset: Dataset,
  others: number | null,
  maxQuestions: number | null = null,
): { dataset: Dataset; subset: SubsetInfo | null } {
  if (others !== null && (!Number.isInteger(others) || others < 0)) throw new Error(`others must be an integer >= 0, got ${others}`);
  if (maxQuestions !== null && (!Number.isInteger(maxQuestions) || maxQuestions < 1))
    throw new Error(`maxQuestions must be an integer >= 1, got ${maxQuestions}`);
  const questions = maxQuestions === null ? dataset.questions : dataset.questions.slice(0, maxQuestions);
  if (others === null && questions.length === dataset.questions.length) return { dataset, subset: null };
  const judged = new Set<string>();
  for (const q of questions) for (const [doc, grade] of Object.entries(q.relevant)) if (grade >= 1) judged.add(doc);
  const docs = [];
  let taken = 0;
  for (const d of dataset.docs) {
    if (judged.has(d.id)) docs.push(d);
    else if (others === null || taken < others) {
      docs.push(d);
      taken++;
    }
  }
  const judgedDocs = dataset.docs.filter((d) => judged.has(d.id)).length;
  const rule =
    `first ${questions.length} of ${dataset.questions.length} questions (file order); ` +
    (others === null
      ? 'all documents'
      : `all ${judgedDocs} documents judged relevant for them, plus the first ${taken} other documents in id order (code-unit order)`);
  return {
    dataset: { ...dataset, docs, questions, fingerprint: fingerprintDataset(docs, questions) },
    subset: {
      rule,
      judgedDocs,
      otherDocs: taken,
      docs: docs.length,
      corpusDocs: dataset.docs.length,
      questions: questions.length,
      corpusQuestions: dataset.questions.length,
    },
  };
}

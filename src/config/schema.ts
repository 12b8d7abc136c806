/**
 * The sweep configuration: one zod schema is the single source of validation and defaults.
 * `parseConfig` turns what the user wrote (YAML or an object) into a fully resolved {@link SweepConfig}, or throws a
 * `HarnessError('CONFIG_INVALID')` whose message lists every problem as `key.path: problem (got value); allowed ...`.
 *
 * The key names are a contract other tools write to:
 * ```yaml
 * name: scifact
 * dataset: { path: ../shared/datasets/scifact, split: test }
 * chunking: { sizes: [none, 128, 256], overlap: 16 }
 * topK: [1, 3, 5, 10]
 * modes: [keyword, semantic, hybrid]
 * embeddings: [use-lite, glove-100d]
 * hybrid: { rrfK: 60, depth: 50 }
 * primaryMetric: ndcg@10
 * ```
 */
import { readFileSync, existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { z } from 'zod';
import { HarnessError } from '../errors.js';
import { embeddingSpecSchema, type EmbeddingSpec } from '../embed/spec.js';
import { formatMeasure, MEASURE_FAMILIES, parseMeasure } from '../score/measures.js';
import { isHarnessError } from '../errors.js';
import type { ChunkingSpec } from '../types.js';
import type { FusionSetting } from '../retrieve/fusion.js';
import type { RerankSpec } from '../rerank/types.js';
import type { LancedbIndexSetting } from '../retrieve/lancedb.js';
import { rerankEntrySchema, resolveRerankList } from '../rerank/spec.js';
import { MAX_GRADE } from '../score/grades.js';
import { describeIssues } from './issues.js';
import { resolveCacheDir } from './cache-dir.js';
import { MIN_MEMORY_BYTES, parseByteSize } from './memory.js';

/**
 * Default of `limits.maxConfigurations` (the grid guard, src/config/limits.ts): 10,000. Measured on the helpdesk demo
 * (93 questions, k up to 100): a finished sweep holds about 3.9 KB of heap per configuration and question (rankings,
 * per-question details, statistics), so 10,000 configurations of 93 questions take about 3.6 GB, inside the 4.3 GB
 * heap Node 20 gives itself on a 24 GB machine; the 100,000 of issue 24's breaker pass ran out of heap.
 */
export const DEFAULT_MAX_CONFIGURATIONS = 10_000;

/** Largest `statistics.resamples` accepted: 100,000 (50 times the default). */
export const MAX_RESAMPLES = 100_000;
import { maxOf } from '../bounded.js';

const chunkSizeSchema = z.union([
  z.literal('none'),
  z.number().int('must be a whole number of tokens').min(1, 'must be at least 1 token'),
]);

const positiveInt = z.number().int('must be a whole number').min(1, 'must be at least 1');

const oneOrMany = <T extends z.ZodType>(t: T) => z.union([t, z.array(t).min(1, 'must list at least one value')]);
const unitWeight = z.number().min(0, 'must be in [0, 1]').max(1, 'must be in [0, 1]');

/**
 * One `hybrid.fusion` entry: `rrf` (plain RRF with `hybrid.rrfK`), `{method: rrf, k, weights}` (weighted RRF, the
 * semantic list's weight w: w/(k + r_sem) + (1 − w)/(k + r_kw)), or `{method: convex, alpha, normalize}`
 * (α·norm(s_sem) + (1 − α)·norm(s_kw)). Lists are swept as grid axes.
 */
export const fusionEntrySchema = z.union([
  z.literal('rrf'),
  z.literal('convex'),
  z
    .object({
      method: z.literal('rrf'),
      k: oneOrMany(z.number().min(0, 'must be ≥ 0')).optional().describe('RRF constant(s) c, ≥ 0; default hybrid.rrfK.'),
      weights: oneOrMany(unitWeight).optional().describe("The semantic list's weight(s) in [0, 1]; absent = plain (unweighted) RRF."),
    })
    .strict(),
  z
    .object({
      method: z.literal('convex'),
      alpha: oneOrMany(unitWeight).default([0.5]).describe("The semantic list's weight(s) α in [0, 1]."),
      normalize: oneOrMany(z.enum(['minmax', 'zscore', 'dbsf'])).default(['minmax']).describe('Score normalisation(s): min-max, z-score, or distribution-based (μ ± 3σ).'),
    })
    .strict(),
]);

const idPart = z
  .string()
  .regex(/^[A-Za-z0-9_][A-Za-z0-9_-]*$/, 'must use only letters, digits, "_" and "-" (it becomes part of configuration ids)');

/** One `retrievers:` entry: a module of the user's whose default export is a retriever factory (src/retrieve/retriever.ts). */
export const retrieverEntrySchema = z
  .object({
    name: idPart.describe('Becomes the configuration id part, e.g. none.words.k5.'),
    module: z.string().min(1, 'must name a module file').describe('The module file, relative to the config file.'),
    chunking: z.union([z.literal('none'), z.number().int().min(1), z.string().regex(/^cs\d+-ov\d+$/, 'must be none, a size, or a key such as cs256-ov16')]).default('none').describe("Which chunking's chunks it receives: none (default, whole documents), a size in tokens, or a key cs256-ov16."),
    options: z.record(z.string(), z.unknown()).default({}).describe('Passed to the factory untouched.'),
    timeoutMs: z.number().int().min(1).default(60_000).describe("One search may take at most this long (milliseconds) before the retriever's rows fail."),
    concurrency: z.number().int().min(1).default(4).describe('Searches in flight at once.'),
  })
  .strict();

/**
 * One `semantic:` entry: which engine serves the semantic rows. `memory` is the in-memory exact cosine index (ids
 * `<chunking>.semantic.<model>.k<k>`); `lancedb` is the LanceDB table of src/retrieve/lancedb.ts, exact (`index: flat`,
 * the default, id part `semantic-lance`) or approximate (`index: ivf_pq`, id part
 * `semantic-lance-ivfpq[-p<partitions>][-s<subVectors>][-n<nprobes>][-r<refineFactor>]`, only the parameters given).
 */
export const semanticEntrySchema = z.discriminatedUnion('engine', [
  z.object({ engine: z.literal('memory').describe('In-memory exact cosine (the default).') }).strict(),
  z
    .object({
      engine: z.literal('lancedb').describe('LanceDB table under <cacheDir>/lancedb (see docs/lancedb.md).'),
      index: z.enum(['flat', 'ivf_pq']).default('flat').describe('flat: exact search (metrics equal the memory rows); ivf_pq: approximate, rows get ann_recall@k.'),
      partitions: positiveInt.optional().describe('ivf_pq only: IVF partitions, at most the chunk count; default round(√chunks).'),
      subVectors: positiveInt.optional().describe('ivf_pq only: PQ sub-vectors, a divisor of the dimension; default the divisor nearest d/8.'),
      nprobes: positiveInt.optional().describe('ivf_pq only: partitions probed per query; default min(20, partitions).'),
      refineFactor: positiveInt.optional().describe('ivf_pq only: re-rank refineFactor × depth candidates by exact distance; default none.'),
    })
    .strict(),
]);

/**
 * One `keyword:` entry: which engine serves the keyword rows. `bm25` is our BM25 (ids `<chunking>.keyword.k<k>`);
 * `lancedb-fts` is LanceDB's full-text (BM25) search with its own tokenizer (src/retrieve/lancedb.ts, id part
 * `keyword-lance-fts`), a further keyword row, not a check of ours.
 */
export const keywordEntrySchema = z.discriminatedUnion('engine', [
  z.object({ engine: z.literal('bm25').describe('Our BM25 (the default; k1 and b from bm25).') }).strict(),
  z.object({ engine: z.literal('lancedb-fts').describe("LanceDB's full-text search (its tokenizer: simple split, lowercase, English stemming).") }).strict(),
]);

/** A `keyword:` entry (as written; nothing to resolve). */
export type KeywordEngine = z.output<typeof keywordEntrySchema>;

/** The retriever id part of a keyword engine: `keyword` (bm25; today's ids) or `keyword-lance-fts`. */
export function keywordRetrieverName(e: KeywordEngine): string {
  return e.engine === 'bm25' ? 'keyword' : 'keyword-lance-fts';
}

/** One `runs:` entry: a TREC run file (qid Q0 docno rank score tag) of the dataset's document ids, scored as it is. */
export const runEntrySchema = z
  .object({
    name: idPart,
    path: z.string().min(1, 'must name a file').describe('The run file, relative to the config file.'),
  })
  .strict();

/**
 * The written form of a config (defaults applied, before cross-key rules). Every object is strict: an unknown key at
 * any depth is an error naming its full key path and the nearest known key (see ./issues.ts). Each key's
 * `.describe()` text is its documentation: the generated JSON Schema (schema/config.schema.json, editors' hover
 * text) and the README's option table come from it. To add a key, add it here; validation, defaults, unknown-key
 * suggestions and the JSON Schema follow.
 */
export const configSchema = z
  .object({
    name: z
      .string()
      .regex(/^[A-Za-z0-9._-]+$/, 'must use only letters, digits, ".", "_" and "-"')
      .refine((n) => n !== '.' && n !== '..', 'must not be "." or ".." (it names the results folder results/<name>)')
      .default('sweep')
      .describe('Run name; results go to results/<name>/ unless --out is given. Letters, digits, ".", "_", "-".'),
    dataset: z
      .object({
        path: z
          .string()
          .min(1, 'must name a folder')
          .describe('Dataset folder: docs/ + questions.jsonl, or the BEIR layout. Relative to the config file.'),
        split: z.string().min(1).optional().describe('BEIR split (qrels/<split>.tsv); the loader uses test when left out.'),
        labels: z
          .enum(['strict', 'keep', 'drop'])
          .default('strict')
          .describe('Labels naming a document that is not in the corpus: error (strict), keep (unretrievable), or drop.'),
        strictness: z
          .enum(['strict', 'warn'])
          .default('strict')
          .describe(
            'questions.jsonl lines with an unknown key: error naming file, line, key and the nearest known key (strict), ' +
              'or keep the question and warn (warn, for datasets written by other tools).',
          ),
        sample: z
          .object({
            documents: z
              .number()
              .int()
              .min(1, 'must be ≥ 1')
              .describe('Documents kept in total: every judged document plus seeded random others up to this number.'),
            seed: z.number().int().default(42).describe('Seed of the draw of the other documents.'),
          })
          .strict()
          .optional()
          .describe(
            'Run on a sample of the corpus: every document any label names (grade 0 included) plus seeded random others; ' +
              'recorded in the manifest; the report warns that metrics on a sample are optimistic.',
          ),
      })
      .strict()
      .describe('Where the documents and labelled questions are.'),
    chunking: z
      .object({
        sizes: z
          .array(chunkSizeSchema)
          .min(1, 'must list at least one size')
          .default(['none'])
          .describe('Chunk sizes in tokens of the chunking tokenizer, or none for whole documents.'),
        overlap: z
          .union([z.number().int().min(0, 'must be ≥ 0'), z.array(z.number().int().min(0, 'must be ≥ 0')).min(1)])
          .default(0)
          .describe('Overlap in tokens between consecutive chunks (one value, or a list swept as a grid axis).'),
      })
      .strict()
      .default({ sizes: ['none'], overlap: 0 })
      .describe('How documents are split into chunks.'),
    topK: z
      .array(positiveInt)
      .min(1, 'must list at least one k')
      .default([1, 3, 5, 10])
      .describe('Top-k values; each retriever is queried once at the largest and smaller k are prefixes.'),
    modes: z
      .array(z.enum(['keyword', 'semantic', 'hybrid']))
      .default(['keyword', 'semantic', 'hybrid'])
      .describe('Built-in retrieval modes: keyword (BM25), semantic (embeddings), hybrid (fusion of both); may be empty when retrievers or runs are given.'),
    embeddings: z
      .array(embeddingSpecSchema)
      .default([])
      .describe('Embedding models for semantic and hybrid modes (see docs/embeddings.md).'),
    hybrid: z
      .object({
        rrfK: z
          .number()
          .min(0, 'must be ≥ 0')
          .default(60)
          .describe('The RRF constant c in 1/(c + rank) (Cormack, Clarke and Buettcher 2009) of plain rrf fusion.'),
        depth: positiveInt
          .default(50)
          .describe('How many results of each list enter the fusion; at least the largest top-k.'),
        fusion: z
          .array(fusionEntrySchema)
          .min(1, 'must list at least one fusion setting')
          .default(['rrf'])
          .describe(
            'Fusion settings swept for hybrid rows: rrf, {method: rrf, k: [..], weights: [..]} (weighted RRF, semantic weight), ' +
              '{method: convex, alpha: [..], normalize: [minmax, zscore, dbsf]}.',
          ),
      })
      .strict()
      .default({ rrfK: 60, depth: 50, fusion: ['rrf'] })
      .describe('How hybrid rows fuse the keyword and semantic lists.'),
    keyword: z
      .array(keywordEntrySchema)
      .min(1, 'must list at least one engine')
      .default([{ engine: 'bm25' }])
      .describe(
        "Engines of the keyword rows, each a row family: {engine: bm25} (default), {engine: lancedb-fts} (LanceDB's BM25 full-text search, " +
          'rows <chunking>.keyword-lance-fts.k<k>). Hybrid rows always fuse the bm25 lists.',
      ),
    semantic: z
      .array(semanticEntrySchema)
      .min(1, 'must list at least one engine')
      .default([{ engine: 'memory' }])
      .describe(
        'Engines of the semantic rows, each a row family: {engine: memory} (default), {engine: lancedb} (exact), ' +
          '{engine: lancedb, index: ivf_pq, partitions, subVectors, nprobes, refineFactor} (approximate, with ann_recall@k). ' +
          'Hybrid rows always fuse the memory (exact) semantic lists.',
      ),
    retrievers: z
      .array(retrieverEntrySchema)
      .default([])
      .describe('Retriever modules of your own ({name, module, chunking, options, timeoutMs, concurrency}), each a row family.'),
    runs: z
      .array(runEntrySchema)
      .default([])
      .describe('TREC run files made outside the tool ({name, path}), each scored as a row family.'),
    rerank: z
      .array(rerankEntrySchema)
      .min(1, 'must list at least one entry (none for no reranking)')
      .default(['none'])
      .describe('Rerank settings swept over every ranking: none, or {model, depth: [..], ...} (see docs/reranking.md).'),
    bm25: z
      .object({
        k1: z.number().min(0, 'must be ≥ 0').default(1.2).describe('BM25 term-frequency saturation k1.'),
        b: z
          .number()
          .min(0, 'must be between 0 and 1')
          .max(1, 'must be between 0 and 1')
          .default(0.75)
          .describe('BM25 length normalisation b, in [0, 1].'),
      })
      .strict()
      .default({ k1: 1.2, b: 0.75 })
      .describe('BM25 parameters of keyword retrieval.'),
    primaryMetric: z
      .string()
      .default('ndcg@10')
      .describe(
        'The metric (with its k) that ranks configurations, declared before the run; canonical names or ' +
          'ir_measures/ranx aliases (nDCG@10, P@5), stored canonical.',
      ),
    level: z
      .enum(['document', 'chunk', 'evidence'])
      .default('document')
      .describe('Scoring level: document labels, chunk-id labels, or evidence spans projected onto each chunking.'),
    relevanceThreshold: positiveInt
      .max(MAX_GRADE, `must be at most ${MAX_GRADE} (the largest grade)`)
      .default(1)
      .describe('Grades ≥ this count as relevant for the binary measures.'),
    evidenceOverlap: z
      .number()
      .gt(0, 'must be in (0, 1]')
      .max(1, 'must be in (0, 1]')
      .default(0.5)
      .describe('Evidence projection: a chunk is relevant to a span when the overlap covers this share of the span or chunk.'),
    evidenceBudgets: z
      .array(positiveInt)
      .default([512, 1024])
      .describe('Token budgets for the evidence-level view: evidence recall of the top chunks that fit in B tokens.'),
    statistics: z
      .object({
        seed: z.number().int().default(42).describe('Random seed of the bootstrap and permutation tests.'),
        resamples: z
          .number()
          .int()
          .min(1000, 'must be at least 1000')
          .max(MAX_RESAMPLES, `must be at most ${MAX_RESAMPLES} (each resample costs time for every configuration and metric)`)
          .default(2000)
          .describe('Bootstrap resamples for the confidence intervals.'),
        alpha: z.number().gt(0).lt(1).default(0.05).describe('Significance level of the intervals and tiers.'),
        minQuestions: z
          .number()
          .int()
          .min(1, 'must be at least 1')
          .default(30)
          .describe(
            'Below this many judged questions (or when the detectable difference exceeds a tenth of the metric range) the report says there is not enough evidence to choose.',
          ),
        maxResamples: z
          .number()
          .int()
          .min(10000, 'must be at least 10000 (the permutation test starts with 10000 sign patterns)')
          .max(10_000_000, 'must be at most 10000000 (the work grows with it; 200000 decides all but knife-edge verdicts)')
          .default(200000)
          .describe(
            'Bound on the resamples behind one verdict: a tier, † or fusion verdict not decided at the usual resamples (p-value within 3 Monte Carlo errors of its threshold) is resampled further, doubling, up to this many, then reported as undecided.',
          ),
      })
      .strict()
      .refine((s) => s.maxResamples >= s.resamples, {
        message: 'statistics.maxResamples must be at least statistics.resamples',
        path: ['maxResamples'],
      })
      .default({ seed: 42, resamples: 2000, alpha: 0.05, minQuestions: 30, maxResamples: 200000 })
      .describe('Confidence intervals and Holm tiers.'),
    unjudged: z
      .object({
        condensed: z
          .boolean()
          .default(false)
          .describe(
            'Add every row metric on condensed lists (unjudged documents removed first, trec_eval -J): ndcg_condensed@10 and so on, beside the usual columns.',
          ),
        warnBelow: z
          .number()
          .min(0, 'must be in [0, 1]')
          .max(1, 'must be in [0, 1]')
          .default(0.5)
          .describe('The report warns when the primary metric’s row has judged@k (share of its top k with a label) below this.'),
        maxSpread: z
          .number()
          .min(0, 'must be in [0, 1]')
          .max(1, 'must be in [0, 1]')
          .default(0.2)
          .describe('The report warns when the tier-1 rows’ judged@k differ by more than this.'),
      })
      .strict()
      .default({ condensed: false, warnBelow: 0.5, maxSpread: 0.2 })
      .describe('Unjudged documents: condensed-list columns and the report’s judged@k warnings (docs/metrics.md).'),
    cacheDir: z
      .string()
      .min(1, 'must not be empty')
      .optional()
      .describe(
        'Where embedding vectors, model tables and checkpoints are cached; relative to the config file. Default: $RETRIEVAL_SWEEP_CACHE (relative to the working directory), else $XDG_CACHE_HOME/retrieval-sweep, else ~/.cache/retrieval-sweep.',
      ),
    concurrency: positiveInt.default(2).describe('How many retrieval jobs run at once.'),
    limits: z
      .object({
        maxConfigurations: positiveInt
          .default(DEFAULT_MAX_CONFIGURATIONS)
          .describe('Largest grid accepted (configurations = rows); validate and run refuse a larger one before any work, printing the count.'),
        stallSeconds: z
          .number()
          .gt(0, 'must be a number of seconds > 0')
          .default(300)
          .describe(
            "A unit (an index build, a retriever's searches, a LanceDB table) that reports no progress for this many seconds fails its rows with an error naming the unit and what it waited for; the rest of the grid still runs.",
          ),
        memory: z
          .union([z.number(), z.string()])
          // the written default (a string, as users write it), parsed like any value
          .default('12GB')
          .transform((v, ctx) => {
            const bytes = parseByteSize(v);
            if (bytes === null || bytes < MIN_MEMORY_BYTES) {
              ctx.addIssue({
                code: 'custom',
                message: `must be a whole number of bytes >= ${MIN_MEMORY_BYTES} or a size such as "12GB" or "512MB" (units B, KB, MB, GB, TB, powers of 1024); got ${JSON.stringify(v)}`,
              });
              return z.NEVER;
            }
            return bytes;
          })
          .describe(
            'Memory budget of a sweep: bytes, or a size such as "12GB" (powers of 1024). Default 12 GiB. A model\'s dense vectors stay in memory while they fit a quarter of it (shared by the models embedding at once), else they go to a file in the cache folder that exact search reads one shard (1/64 of it, at most 16 MiB) at a time, with identical results; validate and run refuse a plan whose rankings alone (4 KB per configuration and scored question) exceed it (docs/scale.md).',
          ),
      })
      .strict()
      // prefault: an absent `limits` is parsed as {} (every key's default; `memory` goes through its transform)
      .prefault({})
      .describe('Bounds: the grid guard checked before a sweep starts, the stall limit that keeps a unit from waiting forever, and the memory budget.'),
  })
  .strict();

/** The written config (after defaults). */
export type WrittenConfig = z.output<typeof configSchema>;

/** A fully resolved config: defaults filled, paths absolute, overlap as a list, primary metric parsed. */
export interface SweepConfig extends Omit<WrittenConfig, 'chunking' | 'embeddings' | 'hybrid' | 'retrievers' | 'runs' | 'rerank' | 'semantic' | 'cacheDir'> {
  /** Absolute cache folder ({@link resolveCacheDir}: `cacheDir` relative to the config file, else the environment's or the user's). */
  cacheDir: string;
  /** Semantic engines, in config order (default `[{ engine: 'memory' }]`); see {@link SemanticEngine}. */
  semantic: SemanticEngine[];
  chunking: { sizes: (number | 'none')[]; overlaps: number[] };
  /** `fusion` expanded to one setting per grid point (cartesian product of each entry's lists), in config order. */
  hybrid: { rrfK: number; depth: number; fusion: FusionSetting[] };
  /** Retriever entries with `module` absolute and `chunking` resolved to a chunking spec. */
  retrievers: (Omit<WrittenConfig['retrievers'][number], 'chunking'> & { chunking: ChunkingSpec })[];
  /** Run entries with `path` absolute. */
  runs: WrittenConfig['runs'];
  /** Rerank settings (null = `none`), in config order. */
  rerank: (RerankSpec | null)[];
  embeddings: EmbeddingSpec[];
  /** Absolute dataset folder. */
  datasetPath: string;
  /** Family and k of the primary metric (`ndcg`, 10; `ndcg_condensed`, 10 for a condensed one). */
  primary: { family: string; k: number };
  /** Absolute path of the config file, when read from one. */
  configFile?: string;
}

/** Cross-key rules, each returning `[path, message]` pairs (changesets-style named rules). */
const rules: ((c: WrittenConfig) => [string, string][])[] = [
  function overlapSmallerThanSize(c) {
    const overlaps = Array.isArray(c.chunking.overlap) ? c.chunking.overlap : [c.chunking.overlap];
    const out: [string, string][] = [];
    for (const size of c.chunking.sizes) {
      if (size === 'none') continue;
      for (const ov of overlaps) {
        if (ov >= size)
          out.push([
            'chunking.overlap',
            `chunking.overlap (${ov}) must be smaller than chunking.sizes entry (${size}); a window would never move forward`,
          ]);
      }
    }
    return out;
  },
  function primaryMetricKnownAndInGrid(c) {
    let m;
    try {
      m = parseMeasure(c.primaryMetric);
    } catch (e) {
      if (isHarnessError(e)) return [['primaryMetric', `${e.message}`]];
      throw e;
    }
    if (m.k === null) return [['primaryMetric', `primaryMetric (${c.primaryMetric}) needs a cutoff such as ndcg@10`]];
    if (m.family === 'judged')
      return [['primaryMetric', `primaryMetric (${c.primaryMetric}) says how much is labelled, not how good a row is; pick a quality metric such as ndcg@10`]];
    if (m.condensed === true && !c.unjudged.condensed)
      return [['primaryMetric', `primaryMetric (${c.primaryMetric}) is a condensed metric; set unjudged: { condensed: true } so the rows have it`]];
    if (!c.topK.includes(m.k))
      return [['primaryMetric', `primaryMetric (${c.primaryMetric}) has k = ${m.k}, which is not in topK [${c.topK.join(', ')}]; add ${m.k} to topK or pick a listed k`]];
    return [];
  },
  function hybridDepthCoversK(c) {
    const maxK = maxOf(c.topK);
    if (c.modes.includes('hybrid') && c.hybrid.depth < maxK)
      return [['hybrid.depth', `hybrid.depth (${c.hybrid.depth}) must be at least the largest topK (${maxK}); each list fed to fusion needs that many results`]];
    return [];
  },
  function somethingToRun(c) {
    if (c.modes.length === 0 && c.retrievers.length === 0 && c.runs.length === 0)
      return [['modes', 'modes is empty and there are no retrievers or runs: nothing to sweep; list modes such as [keyword]']];
    return [];
  },
  function retrieverAndRunNamesDistinct(c) {
    const out: [string, string][] = [];
    const names = [...c.retrievers.map((r) => r.name), ...c.runs.map((r) => r.name)];
    const seen = new Set<string>();
    for (const n of names) {
      if (n === 'keyword' || n === 'semantic' || n === 'hybrid' || n.startsWith('hybrid-') || n.startsWith('semantic-') || n.startsWith('keyword-'))
        out.push(['retrievers', `retriever or run name ${n} is reserved for a built-in; pick another name`]);
      if (seen.has(n)) out.push(['retrievers', `two retrievers or runs are named ${n}; names must be distinct (they become configuration ids)`]);
      seen.add(n);
    }
    return out;
  },
  function ivfPqSettingsOnlyWithIvfPq(c) {
    const out: [string, string][] = [];
    for (const [i, e] of c.semantic.entries()) {
      if (e.engine !== 'lancedb' || e.index === 'ivf_pq') continue;
      for (const key of ['partitions', 'subVectors', 'nprobes', 'refineFactor'] as const)
        if (e[key] !== undefined) out.push([`semantic.${i}.${key}`, `semantic.${i}.${key} (${e[key]}) applies to index: ivf_pq only; add index: ivf_pq or remove ${key}`]);
    }
    return out;
  },
  function chunkLabelsNeedOneChunking(c) {
    const overlaps = Array.isArray(c.chunking.overlap) ? c.chunking.overlap : [c.chunking.overlap];
    const n = c.chunking.sizes.reduce<number>((sum, size) => sum + (size === "none" ? 1 : overlaps.length), 0);
    if (c.level === 'chunk' && n !== 1)
      return [['level', `level chunk scores chunk-id labels, which are valid for one chunking only, but the grid has ${n} chunkings; use level: evidence to compare chunkings, or list one chunk size and overlap`]];
    return [];
  },
  function distinctValues(c) {
    const out: [string, string][] = [];
    const dup = <T>(xs: T[]) => xs.find((x, i) => xs.indexOf(x) !== i);
    const d1 = dup(c.topK);
    if (d1 !== undefined) out.push(['topK', `topK lists ${d1} twice`]);
    const d5 = Array.isArray(c.chunking.overlap) ? dup(c.chunking.overlap) : undefined;
    if (d5 !== undefined) out.push(['chunking.overlap', `chunking.overlap lists ${d5} twice`]);
    const d2 = dup(c.chunking.sizes);
    if (d2 !== undefined) out.push(['chunking.sizes', `chunking.sizes lists ${d2} twice`]);
    const d3 = dup(c.modes);
    if (d3 !== undefined) out.push(['modes', `modes lists ${d3} twice`]);
    const d6 = dup(c.semantic.map((e) => semanticRetrieverName(resolveSemanticEntry(e))));
    if (d6 !== undefined) out.push(['semantic', `semantic lists the engine ${d6} twice`]);
    const d7 = dup(c.keyword.map((e) => e.engine));
    if (d7 !== undefined) out.push(['keyword', `keyword lists the engine ${d7} twice`]);
    const d4 = dup(c.embeddings.map((e) => e.label));
    if (d4 !== undefined) out.push(['embeddings', `two embedding models share the label ${d4}; give one a distinct label`]);
    return out;
  },
];

/**
 * Validates and resolves a config object.
 * @param input what YAML parsing gave (any shape).
 * @param source the file it came from (for messages and for resolving `dataset.path`, `cacheDir`, `module` and
 *   `runs[].path`); omit for in-memory configs (paths then resolve against the working directory). A config without
 *   `cacheDir` gets the environment's or the user's cache folder (`resolveCacheDir` in config/cache-dir.ts).
 * @throws HarnessError('CONFIG_INVALID') listing every problem with its key path, the bad value and what is allowed.
 */
export function parseConfig(input: unknown, source?: string): SweepConfig {
  const result = configSchema.safeParse(input ?? {});
  const problems: string[] = [];
  if (!result.success) {
    problems.push(...describeIssues(configSchema, input ?? {}, result.error.issues));
  } else {
    for (const rule of rules) for (const [p, m] of rule(result.data)) problems.push(m.startsWith(p) ? m : `${p}: ${m}`);
  }
  if (problems.length > 0 || !result.success) {
    throw new HarnessError('CONFIG_INVALID', `invalid config:\n  - ${problems.join('\n  - ')}`, {
      location: source ? { file: source } : {},
      remedy: 'fix the keys listed above; see README.md ("Configuration") for every key, its default and allowed values',
    });
  }
  const c = result.data;
  const baseDir = source ? path.dirname(path.resolve(source)) : process.cwd();
  const primary = parseMeasure(c.primaryMetric);
  return {
    ...c,
    primaryMetric: formatMeasure(primary),
    chunking: {
      sizes: c.chunking.sizes,
      overlaps: Array.isArray(c.chunking.overlap) ? [...c.chunking.overlap] : [c.chunking.overlap],
    },
    embeddings: c.embeddings,
    hybrid: { rrfK: c.hybrid.rrfK, depth: c.hybrid.depth, fusion: expandFusion(c.hybrid.fusion, c.hybrid.rrfK) },
    retrievers: c.retrievers.map((r) => ({ ...r, module: path.resolve(baseDir, r.module), chunking: resolveChunking(r.chunking, c) })),
    runs: c.runs.map((r) => ({ ...r, path: path.resolve(baseDir, r.path) })),
    rerank: resolveRerankList(c.rerank),
    semantic: c.semantic.map(resolveSemanticEntry),
    datasetPath: path.resolve(baseDir, c.dataset.path),
    cacheDir: resolveCacheDir(c.cacheDir, baseDir),
    primary: { family: primary.condensed === true ? `${primary.family}_condensed` : primary.family, k: primary.k as number },
    ...(source ? { configFile: path.resolve(source) } : {}),
  };
}

/**
 * A resolved `semantic:` entry: the in-memory exact index, or LanceDB with its index setting (the options of
 * `lancedbRetriever`, src/retrieve/lancedb.ts; only the ivf_pq parameters the config gave).
 */
export type SemanticEngine = { engine: 'memory' } | { engine: 'lancedb'; index: LancedbIndexSetting };

/** A written `semantic:` entry as a {@link SemanticEngine} (ivf_pq parameters left out when not given). */
export function resolveSemanticEntry(e: WrittenConfig['semantic'][number]): SemanticEngine {
  if (e.engine === 'memory') return { engine: 'memory' };
  if (e.index === 'flat') return { engine: 'lancedb', index: { type: 'flat' } };
  const index: LancedbIndexSetting = { type: 'ivf_pq' };
  if (e.partitions !== undefined) index.partitions = e.partitions;
  if (e.subVectors !== undefined) index.subVectors = e.subVectors;
  if (e.nprobes !== undefined) index.nprobes = e.nprobes;
  if (e.refineFactor !== undefined) index.refineFactor = e.refineFactor;
  return { engine: 'lancedb', index };
}

/**
 * The retriever id part of a semantic engine: `semantic` (memory; today's ids), `semantic-lance` (LanceDB flat), or
 * `semantic-lance-ivfpq[-p<partitions>][-s<subVectors>][-n<nprobes>][-r<refineFactor>]` (only the parameters set).
 */
export function semanticRetrieverName(e: SemanticEngine): string {
  if (e.engine === 'memory') return 'semantic';
  const ix = e.index;
  if (ix.type === 'flat') return 'semantic-lance';
  return [
    'semantic-lance-ivfpq',
    ...(ix.partitions !== undefined ? [`p${ix.partitions}`] : []),
    ...(ix.subVectors !== undefined ? [`s${ix.subVectors}`] : []),
    ...(ix.nprobes !== undefined ? [`n${ix.nprobes}`] : []),
    ...(ix.refineFactor !== undefined ? [`r${ix.refineFactor}`] : []),
  ].join('-');
}

/** Expands `hybrid.fusion` entries to one setting per grid point, in config order, dropping exact repeats. */
export function expandFusion(entries: WrittenConfig['hybrid']['fusion'], rrfK: number): FusionSetting[] {
  const list = <T>(x: T | T[] | undefined, d: T[]): T[] => (x === undefined ? d : Array.isArray(x) ? x : [x]);
  const out: FusionSetting[] = [];
  const seen = new Set<string>();
  const push = (f: FusionSetting) => {
    const key = JSON.stringify(f);
    if (!seen.has(key)) out.push(f), seen.add(key);
  };
  for (const e of entries) {
    if (e === 'rrf') push({ method: 'rrf', k: rrfK });
    else if (e === 'convex') push({ method: 'convex', alpha: 0.5, normalize: 'minmax' });
    else if (e.method === 'rrf') {
      for (const k of list(e.k, [rrfK])) {
        if (e.weights === undefined) push({ method: 'rrf', k });
        else for (const w of list(e.weights, [])) push({ method: 'rrf', k, weight: w });
      }
    } else for (const n of list(e.normalize, ['minmax' as const])) for (const a of list(e.alpha, [0.5])) push({ method: 'convex', alpha: a, normalize: n });
  }
  return out;
}

/** A retriever entry's `chunking` as a spec: `none`, a size (with the grid's first overlap), or `cs<size>-ov<overlap>`. */
function resolveChunking(v: string | number, c: WrittenConfig): ChunkingSpec {
  if (v === 'none') return { size: null, overlap: 0 };
  if (typeof v === 'number') {
    const overlaps = Array.isArray(c.chunking.overlap) ? c.chunking.overlap : [c.chunking.overlap];
    return { size: v, overlap: overlaps[0] ?? 0 };
  }
  const m = /^cs(\d+)-ov(\d+)$/.exec(v)!;
  return { size: Number(m[1]), overlap: Number(m[2]) };
}


/** At most this many alias expansions per config file (the yaml package's `maxAliasCount`, its default). */
const MAX_YAML_ALIASES = 100;

/**
 * Reads a YAML config file and resolves it with {@link parseConfig}.
 * @throws HarnessError('CONFIG_NOT_FOUND') when the file is missing; ('CONFIG_INVALID') on YAML syntax errors (with the
 *   line), on aliases that cannot be resolved (more than 100 expansions, an alias bomb; an alias before its anchor),
 *   or schema problems.
 */
export function loadConfigFile(file: string): SweepConfig {
  if (!existsSync(file)) {
    throw new HarnessError('CONFIG_NOT_FOUND', `config file not found: ${path.resolve(file)}`, {
      location: { file },
      remedy: 'pass the path of a YAML config, e.g. configs/default.yaml',
    });
  }
  if (!statSync(file).isFile()) {
    throw new HarnessError('CONFIG_NOT_FOUND', `${path.resolve(file)} is a folder, not a config file`, {
      location: { file },
      remedy: 'pass the path of a YAML config file, e.g. configs/default.yaml',
    });
  }
  const text = readFileSync(file, 'utf8');
  let doc: unknown;
  try {
    doc = parseYaml(text, { maxAliasCount: MAX_YAML_ALIASES });
  } catch (e) {
    // The yaml package throws ReferenceError while resolving aliases: an alias expanded too often (an "alias bomb",
    // `a: &a [x, x]  b: &b [*a, *a] ...`), or an alias used before its anchor. Both are the file's fault.
    if (e instanceof ReferenceError) {
      throw new HarnessError('CONFIG_INVALID', `YAML aliases cannot be resolved: ${e.message}`, {
        location: { file },
        remedy:
          `write the values out instead of using anchors (&name) and aliases (*name); a config may expand at most ` +
          `${MAX_YAML_ALIASES} aliases, and each anchor must come before its aliases`,
        cause: e,
      });
    }
    if (e instanceof YAMLParseError) {
      const line = e.linePos?.[0]?.line;
      throw new HarnessError('CONFIG_INVALID', `YAML syntax error: ${e.message.split('\n')[0]}`, {
        location: line === undefined ? { file } : { file, line },
        remedy: 'fix the YAML syntax at that line',
        cause: e,
      });
    }
    throw e;
  }
  return parseConfig(doc, file);
}

/** The measure families every configuration row is scored on. */
/**
 * Semantic and hybrid modes need a model: the config's `embeddings` or providers passed to `runSweep` as objects.
 * @throws HarnessError('CONFIG_INVALID') naming the key and the remedy.
 */
export function checkModelsForDenseModes(config: Pick<SweepConfig, 'modes' | 'embeddings' | 'configFile'>): void {
  const dense = config.modes.filter((m) => m !== 'keyword');
  if (dense.length > 0 && config.embeddings.length === 0)
    throw new HarnessError('CONFIG_INVALID', `invalid config:\n  - embeddings: modes ${dense.join(', ')} need at least one embedding model (e.g. embeddings: [use-lite])`, {
      location: config.configFile ? { file: config.configFile, path: 'embeddings' } : { path: 'embeddings' },
      remedy: 'list a model under embeddings, or drop semantic and hybrid from modes',
    });
}

export const ROW_FAMILIES = MEASURE_FAMILIES.filter((f) => f !== 'r_precision');

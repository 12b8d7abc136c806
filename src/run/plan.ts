/**
 * What a sweep would do, worked out without running it: the configurations, the chunkings, the texts each model
 * would embed, how many the embedding cache already holds, and a time estimate from the throughput the cache
 * recorded on earlier runs. Backs `retrieval-sweep validate CONFIG`.
 *
 * Reads the dataset and (when it exists) the embedding cache; loads no model and writes nothing but the cache's
 * `CREATE TABLE IF NOT EXISTS` on open. Fails with the same HarnessError the sweep would give for the same input
 * (config, dataset, questions with no label at the level, a missing local model folder).
 */
import { preflightTransformersModel } from '../embed/transformers.js';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { SweepConfig } from '../config/schema.js';
import { chunkingKeyOf, expandChunkings } from '../config/expand.js';
import { checkGridSize } from '../config/limits.js';
import { chunkDocuments, defaultTokenizer } from '../chunk/chunker.js';
import { EmbeddingCache, embeddingSpecKey } from '../embed/cache.js';
import { HarnessError } from '../errors.js';
import { loadDataset } from '../load/dataset.js';
import { relevantCount } from '../score/evaluate.js';
import type { Dataset, Level, Question } from '../types.js';
import { loadRetrieverModules, loadRuns } from './inputs.js';
import { planGraph, type Plan } from '../plan/graph.js';
import { planEnv } from '../plan/env.js';

/** One chunking of the plan. */
export interface PlannedChunking {
  /** `none` or `cs<size>-ov<overlap>` (tokens). */
  key: string;
  chunks: number;
  /** Mean chunk length in tokens of the default tokenizer (0 when there are no chunks). */
  meanTokens: number;
  /** Set when chunking failed; the sweep would report that chunking's rows as failed. */
  error?: string;
}

/** What one embedding model would do. */
export interface PlannedModel {
  label: string;
  model: string;
  /** Distinct chunk texts over every chunking that chunked without error. */
  documentTexts: number;
  /** Distinct question texts among the scored questions. */
  queryTexts: number;
  /**
   * Of those, how many the cache holds under the provider keys recorded by the last run of this model
   * (documents + queries); null when the cache has no record of the model (never run with this cache) or no cache.
   */
  cacheHits: number | null;
  /** Texts the sweep would embed: documentTexts + queryTexts − cacheHits (all of them when cacheHits is null). */
  toEmbed: number;
  /** Texts per second recorded by the cache for this model, or null. */
  textsPerSecond: number | null;
  /** toEmbed / textsPerSecond, or null without a recorded throughput. Inference only (model load not included). */
  estimatedSeconds: number | null;
  /** When the throughput was recorded (ISO 8601), or null. */
  recordedAt: string | null;
}

/** The plan of one sweep. */
export interface SweepPlan {
  name: string;
  configFile: string | null;
  datasetPath: string;
  layout: string;
  level: Level;
  primaryMetric: string;
  documents: number;
  questions: number;
  /** Questions that would be scored. */
  scored: number;
  /** Questions left out of the means, with the reason. */
  excluded: { id: string; reason: string }[];
  /** Rows of the grid (configurations). */
  configurations: number;
  /** Rows per mode, in config order. */
  byMode: Record<string, number>;
  /** Top-k values of the grid. */
  topK: number[];
  chunkings: PlannedChunking[];
  /** Empty when no mode needs embeddings. */
  models: PlannedModel[];
  /** The embedding cache file, and whether it exists. */
  cache: { file: string; exists: boolean };
  /** Sum of the models' estimates when every model has one, else null (seconds). */
  estimatedSeconds: number | null;
  /** Dataset warnings and notes (chunkings that fail, questions left out). */
  warnings: string[];
  /** The units the sweep would run, their inputs and checkpoint keys, and each row's units (src/plan/graph.ts). */
  graph: Plan;
  /**
   * Ids of the graph's units whose checkpoint (key known before the run) is already in `<cacheDir>/checkpoints/`: the
   * run would read them back (when intact) instead of computing them. Units with a deferred key are not counted.
   */
  cachedUnits: string[];
}

/** Options of {@link planSweep}. */
export interface PlanOptions {
  /** Use this dataset instead of loading the config's (tests, library use). */
  dataset?: Dataset;
}

/**
 * Why a question cannot be scored at `level` (null when it can): no relevant label with grade ≥ `threshold`
 * (document), no chunk label (chunk), no evidence span (evidence). The same rule as the sweep.
 */
export function unscorableReason(q: Question, level: Level, threshold: number): string | null {
  if (level === 'document')
    return relevantCount(q.relevant, threshold) > 0 ? null : `no relevant label (no grade ≥ ${threshold})`;
  if (level === 'chunk')
    return relevantCount(q.chunkLabels ?? {}, threshold) > 0 ? null : `no chunk label with grade ≥ ${threshold}`;
  return q.evidence.some((s) => s.grade >= threshold) ? null : `no evidence span with grade ≥ ${threshold}`;
}

/**
 * Splits the dataset's questions into scored and excluded at the config's level and threshold.
 * @throws HarnessError('QUESTIONS_INVALID') when none can be scored (the sweep's message and remedy).
 */
export function scorableQuestions(
  dataset: Pick<Dataset, 'questions' | 'root'>,
  level: Level,
  threshold: number,
): { scored: Question[]; excluded: { id: string; reason: string }[] } {
  const scored: Question[] = [];
  const excluded: { id: string; reason: string }[] = [];
  for (const q of dataset.questions) {
    const reason = unscorableReason(q, level, threshold);
    if (reason === null) scored.push(q);
    else excluded.push({ id: q.id, reason });
  }
  if (scored.length === 0) {
    const reasons = [...new Set(excluded.map((e) => e.reason))].join('; ');
    throw new HarnessError(
      'QUESTIONS_INVALID',
      dataset.questions.length === 0
        ? `the dataset has no questions to score`
        : `none of the ${dataset.questions.length} question(s) can be scored at level ${level}: ${reasons}`,
      {
        location: { file: dataset.root },
        remedy:
          level === 'document'
            ? `label at least one relevant document (grade ≥ ${threshold}) per question in questions.jsonl (or the BEIR qrels)`
            : level === 'chunk'
              ? 'give questions "chunks" labels, or use level: document'
              : 'give questions "evidence" passages, or use level: document',
      },
    );
  }
  return { scored, excluded };
}

/** True when a mode of the config needs embeddings. */
function needsEmbeddings(config: Pick<SweepConfig, 'modes'>): boolean {
  return config.modes.some((m) => m === 'semantic' || m === 'hybrid');
}

/**
 * Fails fast on models that cannot load (the sweep's preflight, shared with `validate`): a transformers model, hub id
 * or folder, whose files are missing with remote loading off is the user's mistake (exit 1, nothing run), not a
 * failed row; a hub id with allowRemote: true is downloaded instead. A model that is there but fails to load gives
 * failed rows.
 * @throws HarnessError('MODEL_NOT_FOUND') listing every missing file at once.
 */
export function preflightModels(config: Pick<SweepConfig, 'modes' | 'embeddings' | 'cacheDir'>): void {
  if (!needsEmbeddings(config)) return;
  for (const spec of config.embeddings)
    if (spec.model.startsWith('transformers:')) preflightTransformersModel(spec, path.resolve(config.cacheDir));
}

/** Loads the config's dataset the way the sweep does (relative paths against the config file's folder). */
export function loadConfigDataset(config: SweepConfig): Promise<Dataset> {
  return loadDataset(
    {
      path: config.dataset.path,
      ...(config.dataset.split !== undefined ? { split: config.dataset.split } : {}),
      name: config.name,
      labels: config.dataset.labels,
    },
    { baseDir: config.configFile ? path.dirname(config.configFile) : process.cwd() },
  );
}

/**
 * Works out the plan of `config` (see the module comment). Chunks every document once per chunking (the sweep's
 * chunker and tokenizer), so it takes about as long as the sweep's chunk stage.
 * @throws what loading the dataset throws (DATASET_NOT_FOUND, DOCUMENT_INVALID, QUESTIONS_INVALID, LABEL_INVALID, ...),
 *   HarnessError('QUESTIONS_INVALID') when no question can be scored, ('MODEL_NOT_FOUND') for a missing local model
 *   folder, ('CACHE_FAILED') when the cache file exists but cannot be read.
 */
export async function planSweep(config: SweepConfig, options: PlanOptions = {}): Promise<SweepPlan> {
  // The grid guard first, as the sweep does: a grid past limits.maxConfigurations fails before the dataset is read.
  checkGridSize(config);
  const dataset = options.dataset ?? (await loadConfigDataset(config));
  const warnings = [...dataset.warnings];
  const { scored, excluded } = scorableQuestions(dataset, config.level, config.relevanceThreshold);
  if (excluded.length > 0)
    warnings.push(`${excluded.length} question(s) cannot be scored at level ${config.level} and are left out of the means`);
  preflightModels(config);
  // Retriever modules and run files: the sweep's own checks and messages (a missing module, an export that is not a
  // factory, a run with unknown qids or docnos).
  await loadRetrieverModules(config);
  loadRuns(config, scored, new Set(dataset.docs.map((d) => d.id)), (w) => warnings.push(w));

  // The grid is the plan's: `run` executes these units and scores these rows (src/plan/graph.ts).
  const graph = planGraph(config, dataset, scored, planEnv());
  const grid = graph.rows.map((r) => r.spec);
  const byMode: Record<string, number> = {};
  for (const row of grid) byMode[row.mode] = (byMode[row.mode] ?? 0) + 1;

  const tokenizer = defaultTokenizer();
  const chunkings: PlannedChunking[] = [];
  const docTexts = new Set<string>();
  for (const spec of expandChunkings(config)) {
    const key = chunkingKeyOf(spec);
    try {
      const chunks = chunkDocuments(dataset.docs, spec, tokenizer);
      for (const c of chunks) docTexts.add(c.text);
      const tokens = chunks.reduce((s, c) => s + c.tokens, 0);
      chunkings.push({ key, chunks: chunks.length, meanTokens: chunks.length === 0 ? 0 : tokens / chunks.length });
    } catch (e) {
      const error = `chunking ${key} failed: ${e instanceof Error ? e.message : String(e)}`;
      chunkings.push({ key, chunks: 0, meanTokens: 0, error });
      warnings.push(`${error}; its rows would be reported as failed`);
    }
  }

  const cacheFile = path.join(path.resolve(config.cacheDir), 'embeddings.sqlite');
  const cacheExists = existsSync(cacheFile);
  const models: PlannedModel[] = [];
  if (needsEmbeddings(config)) {
    const documents = [...docTexts];
    const queries = [...new Set(scored.map((q) => q.text))];
    const cache = cacheExists ? EmbeddingCache.open(cacheFile) : undefined;
    try {
      for (const spec of config.embeddings) {
        const record = cache?.throughput(embeddingSpecKey(spec));
        const hits =
          cache && record ? cache.countPresent(record.documentKey, documents) + cache.countPresent(record.queryKey, queries) : null;
        const toEmbed = documents.length + queries.length - (hits ?? 0);
        const rate = record ? record.textsPerSecond : null;
        models.push({
          label: spec.label,
          model: spec.model,
          documentTexts: documents.length,
          queryTexts: queries.length,
          cacheHits: hits,
          toEmbed,
          textsPerSecond: rate,
          estimatedSeconds: rate === null ? (toEmbed === 0 ? 0 : null) : toEmbed / rate,
          recordedAt: record ? record.recordedAt : null,
        });
      }
    } finally {
      cache?.close();
    }
  }
  const estimates = models.map((m) => m.estimatedSeconds);
  return {
    name: config.name,
    configFile: config.configFile ?? null,
    datasetPath: dataset.root,
    layout: dataset.layout,
    level: config.level,
    primaryMetric: config.primaryMetric,
    documents: dataset.docs.length,
    questions: dataset.questions.length,
    scored: scored.length,
    excluded,
    configurations: grid.length,
    byMode,
    topK: [...config.topK],
    chunkings,
    models,
    cache: { file: cacheFile, exists: cacheExists },
    estimatedSeconds: estimates.some((e) => e === null) ? null : estimates.reduce<number>((sum, e) => sum + (e ?? 0), 0),
    warnings,
    graph,
    cachedUnits: graph.units
      .filter((u) => u.key !== null && existsSync(path.join(path.resolve(config.cacheDir), 'checkpoints', `${u.key}.${u.kind === 'chunking' ? 'chunks' : 'json'}`)))
      .map((u) => u.id),
  };
}

/** `1 h 02 min`, `3 min 05 s`, `12 s`, `0.4 s`. */
export function formatDuration(seconds: number): string {
  if (seconds < 10) return `${seconds.toFixed(1)} s`;
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
}

/** The plan as the text `validate` prints (ends with a newline). */
export function formatPlan(plan: SweepPlan): string {
  const lines: string[] = [];
  lines.push(`${plan.name}: config ${plan.configFile ?? '(in memory)'} is valid`);
  lines.push(
    `dataset ${plan.datasetPath} (${plan.layout}): ${plan.documents} documents, ${plan.questions} questions, ` +
      `${plan.scored} scored at level ${plan.level}${plan.excluded.length ? ` (${plan.excluded.length} left out)` : ''}`,
  );
  const modes = Object.entries(plan.byMode)
    .map(([m, n]) => `${n} ${m}`)
    .join(', ');
  lines.push(`${plan.configurations} configurations (${modes}); top-k ${plan.topK.join(', ')}; primary metric ${plan.primaryMetric}`);
  lines.push('chunkings:');
  for (const c of plan.chunkings)
    lines.push(c.error ? `  ${c.key.padEnd(14)} ${c.error}` : `  ${c.key.padEnd(14)} ${c.chunks} chunks, mean ${c.meanTokens.toFixed(1)} tokens`);
  if (plan.models.length > 0) {
    lines.push(`embeddings (cache ${plan.cache.file}${plan.cache.exists ? '' : ', not created yet'}):`);
    for (const m of plan.models) {
      const texts = m.documentTexts + m.queryTexts;
      const hits = m.cacheHits === null ? 'no record of this model in the cache' : `${m.cacheHits} in the cache`;
      const time =
        m.estimatedSeconds === null
          ? 'time unknown (no throughput recorded yet)'
          : `about ${formatDuration(m.estimatedSeconds)}${m.textsPerSecond !== null ? ` at ${m.textsPerSecond.toFixed(1)} texts/s` : ''}`;
      lines.push(`  ${m.label.padEnd(14)} ${texts} texts (${m.documentTexts} chunks + ${m.queryTexts} questions): ${hits}, ${m.toEmbed} to embed, ${time}`);
    }
    lines.push(
      plan.estimatedSeconds === null
        ? 'estimated embedding time: unknown for at least one model (run it once to record its throughput)'
        : `estimated embedding time: about ${formatDuration(plan.estimatedSeconds)} (inference only; model loading and scoring not included)`,
    );
  } else {
    lines.push('embeddings: none needed (keyword only)');
  }
  const kinds = new Map<string, number>();
  for (const u of plan.graph.units) kinds.set(u.kind, (kinds.get(u.kind) ?? 0) + 1);
  lines.push(
    `units: ${plan.graph.units.length} (${[...kinds].map(([k, n]) => `${n} ${k}`).join(', ')}); ` +
      `${plan.graph.units.filter((u) => u.key !== null).length} with a checkpoint key known before the run, ${plan.cachedUnits.length} of them checkpointed`,
  );
  for (const w of plan.warnings) lines.push(`warning: ${w}`);
  return `${lines.join('\n')}\n`;
}

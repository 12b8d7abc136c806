/**
 * What a sweep would do, worked out without running it: the configurations, the chunkings, the texts each model
 * would embed, how many the embedding cache already holds, and a time estimate from the throughput the cache
 * recorded on earlier runs. Backs `retrieval-sweep validate CONFIG`.
 *
 * `validate` is the run's own front half (src/run/front.ts) and prints the run's own plan (src/plan/graph.ts): no code
 * here re-derives the grid. Reads the dataset and (when it exists) the embedding cache; loads no model and writes
 * nothing but the cache's `CREATE TABLE IF NOT EXISTS` on open. Fails with the same HarnessError, and the same message,
 * the sweep would give for the same input.
 */
import { existsSync } from 'node:fs';
import { BYTES_PER_CONFIGURATION_QUESTION, DEFAULT_MEMORY_BYTES, memoryFloor } from '../config/memory.js';
import path from 'node:path';
import type { SweepConfig } from '../config/schema.js';
import { defaultTokenizer, forEachChunk } from '../chunk/chunker.js';
import { EmbeddingCache, embeddingCacheKeyOfDigest, embeddingSpecKey } from '../embed/cache.js';
import { TextDigests } from '../embed/embed-texts.js';
import type { Dataset, Level } from '../types.js';
import type { Plan, UnitKind } from '../plan/graph.js';
import { corpusResidence, prepareSweep, type Front } from './front.js';
import { UNIT_KINDS } from './units/index.js';

/** Planned memory per configuration and scored question, bytes (the grid guard's figure; src/config/memory.ts). */
export { BYTES_PER_CONFIGURATION_QUESTION } from '../config/memory.js';

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

/** What `validate` prints: the plan of one sweep with its counts and estimates. */
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
  /** Each unit's cost estimate from its kind (seconds or null when unknown) and where the figure comes from. */
  unitEstimates: { id: string; kind: UnitKind; seconds: number | null; basis: string }[];
  /** Planned memory for the rankings and scores: configurations × scored questions × 4 KB (bytes). */
  plannedMemoryBytes: number;
  /**
   * `limits.memory` (bytes) and the plan's floor under it (src/config/memory.ts): the rankings plus, when a mode is
   * dense, the file-backed search's shard buffer. `validate` fails before this is returned when the floor is above.
   */
  memory: { limitBytes: number; floorBytes: number };
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

export { loadConfigDataset, preflightModels, scorableQuestions, unscorableReason } from './front.js';

/**
 * Works out the plan of `config` (see the module comment): the sweep's own front half (src/run/front.ts, the same
 * checks, dataset options and messages as `run`) and its plan (src/plan/graph.ts); then, without running any unit,
 * chunks every document once per chunking unit of the plan (the sweep's chunker and tokenizer, so it takes about as
 * long as the sweep's chunk stage), counts each embedding unit's texts and the cache's hits, and asks each unit's kind
 * for its cost estimate.
 * @throws what `prepareSweep` throws (CONFIG_INVALID for names, models, the grid guard, 0 configurations or a cacheDir
 *   that is a file; the loader's codes; QUESTIONS_INVALID when no question can be scored; MODEL_NOT_FOUND; a retriever
 *   module's or run file's error), HarnessError('CACHE_FAILED') when the cache file exists but cannot be read.
 */
export async function planSweep(inputConfig: SweepConfig, options: PlanOptions = {}): Promise<SweepPlan> {
  const warnings: string[] = [];
  const front = await prepareSweep(inputConfig, {
    ...(options.dataset ? { dataset: options.dataset } : {}),
    onEvent: (e) => {
      if (e.kind === 'warning') warnings.push(e.message);
    },
  });
  try {
    return planFrom(front, warnings);
  } finally {
    front.release(); // the documents' text store, when the corpus was loaded into one
  }
}

/** {@link planSweep} after the front half. */
function planFrom(front: Front, warnings: string[]): SweepPlan {
  const { config, dataset, scored, excluded, plan: graph } = front;
  // The grid is the plan's: `run` executes these units and scores these rows (src/plan/graph.ts).
  const grid = graph.rows.map((r) => r.spec);
  const byMode: Record<string, number> = {};
  for (const row of grid) byMode[row.mode] = (byMode[row.mode] ?? 0) + 1;

  const tokenizer = defaultTokenizer();
  const chunkings: PlannedChunking[] = [];
  const embeddingUnits = graph.units.filter((u) => u.kind === 'embedding');
  // Per embedding unit, the distinct chunk texts of the chunkings it serves, by digest (embed-texts.ts's identity):
  // no chunk and no text is kept, so a corpus of any size is counted in the memory of its distinct texts' digests.
  const distinctOf = new Map(embeddingUnits.map((u) => [u.id, new TextDigests()]));
  for (const u of graph.units.filter((x) => x.kind === 'chunking')) {
    const key = u.id.slice('chunking:'.length);
    const tables = embeddingUnits.filter((e) => e.inputs.includes(u.id)).map((e) => distinctOf.get(e.id)!);
    try {
      let count = 0;
      let tokens = 0;
      forEachChunk(dataset.docs, { size: u.params.size as number | null, overlap: u.params.overlap as number }, tokenizer, {}, (c) => {
        count++;
        tokens += c.tokens;
        for (const t of tables) t.add(c.text);
      });
      chunkings.push({ key, chunks: count, meanTokens: count === 0 ? 0 : tokens / count });
    } catch (e) {
      const error = `chunking ${key} failed: ${e instanceof Error ? e.message : String(e)}`;
      chunkings.push({ key, chunks: 0, meanTokens: 0, error });
      warnings.push(`${error}; its rows would be reported as failed`);
    }
  }

  const cacheFile = path.join(path.resolve(config.cacheDir), 'embeddings.sqlite');
  const cacheExists = existsSync(cacheFile);
  const models: PlannedModel[] = [];
  if (embeddingUnits.length > 0) {
    const queries = [...new Set(scored.map((q) => q.text))];
    const cache = cacheExists ? EmbeddingCache.open(cacheFile) : undefined;
    try {
      for (const u of embeddingUnits) {
        const spec = config.embeddings.find((e) => e.label === u.params.label)!;
        // The texts its embedding unit embeds: every distinct chunk text of the chunkings it serves.
        const distinct = distinctOf.get(u.id)!;
        const documents = distinct.size;
        const record = cache?.throughput(embeddingSpecKey(spec));
        const hits =
          cache && record ? countPresentDigests(cache, record.documentKey, distinct) + cache.countPresent(record.queryKey, queries) : null;
        const toEmbed = documents + queries.length - (hits ?? 0);
        const rate = record ? record.textsPerSecond : null;
        models.push({
          label: spec.label,
          model: spec.model,
          documentTexts: documents,
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
  // Each unit's cost from its kind (src/run/units/): recorded throughput where the cache has one, else a stated default.
  const est = {
    models: new Map(models.map((m) => [m.label, { toEmbed: m.toEmbed, textsPerSecond: m.textsPerSecond }])),
    documents: dataset.docs.length,
    questions: scored.length,
  };
  const unitEstimates = graph.units.map((u) => ({ id: u.id, kind: u.kind, ...(UNIT_KINDS.get(u.kind)?.estimate?.(u, est) ?? { seconds: null, basis: 'not estimated' }) }));
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
    unitEstimates,
    plannedMemoryBytes: grid.length * scored.length * BYTES_PER_CONFIGURATION_QUESTION,
    memory: {
      limitBytes: config.limits?.memory ?? DEFAULT_MEMORY_BYTES,
      floorBytes: memoryFloor(grid.length, scored.length, embeddingUnits.length > 0, config.limits?.memory ?? DEFAULT_MEMORY_BYTES, corpusResidence(dataset, graph)).totalBytes,
    },
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

/** `512 B`, `3.4 MB`, `1.2 GB` (powers of 1024). */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let v = bytes;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
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
  const known = plan.unitEstimates.filter((u) => u.seconds !== null);
  const unknown = plan.unitEstimates.filter((u) => u.seconds === null);
  lines.push(
    `planned: ${plan.configurations} configurations, memory about ${formatBytes(plan.plannedMemoryBytes)} (4 KB per configuration and scored question), ` +
      `time about ${formatDuration(known.reduce((s, u) => s + (u.seconds ?? 0), 0))} for ${known.length} unit(s) with an estimate` +
      (unknown.length > 0 ? ` (${unknown.length} not estimated: ${[...new Set(unknown.map((u) => u.kind))].join(', ')})` : ''),
  );
  lines.push(
    `memory: limits.memory ${formatBytes(plan.memory.limitBytes)}, floor ${formatBytes(plan.memory.floorBytes)} (rankings` +
      `${plan.models.length > 0 ? ' + one shard buffer of the dense search' : ''}); dense vectors over a quarter of the limit are searched from a file`,
  );
  for (const w of plan.warnings) lines.push(`warning: ${w}`);
  return `${lines.join('\n')}\n`;
}

/**
 * How many of an embedding unit's distinct chunk texts (`distinct`) hold a vector under `providerKey` in `cache`:
 * their keys are rebuilt from the digests 65,536 at a time, so no more than that many key strings (about 270 bytes
 * each) live at once.
 */
function countPresentDigests(cache: EmbeddingCache, providerKey: string, distinct: TextDigests): number {
  const SLICE = 1 << 16;
  let n = 0;
  for (let from = 0; from < distinct.size; from += SLICE) {
    const keys: string[] = [];
    for (let s = from; s < Math.min(distinct.size, from + SLICE); s++) keys.push(embeddingCacheKeyOfDigest(providerKey, distinct.cacheDigest(s)));
    n += cache.countPresentKeys(keys);
  }
  return n;
}

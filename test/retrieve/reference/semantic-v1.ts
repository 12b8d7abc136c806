/**
 * FROZEN REFERENCE: src/retrieve/semantic.ts as of commit 17ab99e (one matrix, hand-assembled WebAssembly bytes, js
 * fallback beyond 2 GiB), kept unchanged so that tests and bench/dense.ts can prove the sharded, multi-threaded index
 * gives bit-identical scores and rankings. Do not "fix" or reuse this file; only the import paths differ.
 */
/**
 * Semantic retrieval: exact (brute-force) cosine similarity over embedding vectors. No approximate index.
 *
 * Build: every vector is L2-normalised (norm computed in float64) and copied into one contiguous row-major float32
 * matrix of n rows, each padded with zeros to a stride dp = d rounded up to a multiple of 16. A zero vector stays zero:
 * its cosine with every query is 0.
 * Search: the query is L2-normalised the same way (a zero query returns no results); each row's score is its dot
 * product with the query, cos(q, v) = q·v / (|q| |v|), in [-1, 1]. The top k are kept in a bounded heap ordered by
 * the project rule (score desc, then id desc), then returned via `rankByRule`.
 *
 * Arithmetic: float32, as FAISS's flat inner-product index does: 16 running sums per row (4 SIMD accumulators × 4
 * lanes; element j goes to sum j mod 16), products and sums rounded to float32, then the sums combined in a fixed
 * order. Absolute error against float64 ≲ 1e-6. Two engines compute exactly the same float32 values:
 * - `wasm-simd` (default when the runtime validates it): a 340-byte WebAssembly module using 128-bit SIMD, generated
 *   below from named opcodes; about 0.7–1.3 ms per query over 10,000 × 512 on a shared 2-vCPU machine (300 queries,
 *   k = 50: 0.2–0.4 s in total), bound by reading the 20 MB matrix once per query.
 * - `js`: the same operations emulated with `Math.fround` (used when WebAssembly SIMD is unavailable, or asked for);
 *   about 20 times slower.
 */
import { HarnessError } from '../../../src/errors.js';
import type { Hit } from '../../../src/types.js';
import { compareCodePoints, rankByRule } from '../../../src/retrieve/rank.js';

/** A built exact-cosine index. */
export interface VectorIndex {
  /** Number of vectors (n). */
  readonly size: number;
  /** Vector length (d); 0 for an empty index. */
  readonly dimensions: number;
  /** Which engine computes the dot products (identical results). */
  readonly engine: VectorEngine;
  /**
   * The `k` most similar items to `query` (a vector of length d, any norm), ordered by `rankByRule`. Every item has a
   * score, so the result has min(k, n) hits. k is an integer ≥ 0. Throws `HarnessError('EMBEDDING_FAILED')` when the
   * query length is not d or it holds a non-finite value, and `HarnessError('CONFIG_INVALID')` when k is not an
   * integer ≥ 0.
   */
  search(query: Float32Array, k: number): Hit[];
}

/** Dot-product engines; see the module header. */
export type VectorEngine = 'wasm-simd' | 'js';

/** Options of {@link buildVectorIndex}. */
export interface VectorIndexOptions {
  /** Force an engine; default: `wasm-simd` when available (and the matrix fits in 2 GiB), else `js`. */
  engine?: VectorEngine;
}

// ---------------------------------------------------------------------------------------------------------------
// The WebAssembly module: one export, dots(m, q, out, n, dp), all byte offsets into the imported memory `env.memory`.
// For each of n rows of dp float32 (dp a multiple of 16) starting at m, stores the row's dot product with the dp
// float32 at q as a float32 at out, out + 4, ...  In WebAssembly text format:
//
//   (func (param $m i32) (param $q i32) (param $out i32) (param $n i32) (param $dp i32)
//         (local $end i32) (local $qp i32) (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
//     (block $done (loop $rows
//       (br_if $done (i32.eqz (local.get $n)))
//       (local.set $a0 (v128.const i32x4 0 0 0 0)) ... $a3
//       (local.set $qp (local.get $q))
//       (local.set $end (i32.add (local.get $m) (i32.shl (local.get $dp) (i32.const 2))))
//       (loop $cols
//         ;; for k in 0..3: $ak += load(m + 16k) * load(qp + 16k)
//         (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (v128.load offset=0 (local.get $m))
//                                                             (v128.load offset=0 (local.get $qp))))) ...
//         (local.set $qp (i32.add (local.get $qp) (i32.const 64)))
//         (br_if $cols (i32.lt_u (local.tee $m (i32.add (local.get $m) (i32.const 64))) (local.get $end))))
//       (local.set $a0 (f32x4.add (f32x4.add (local.get $a0) (local.get $a1)) (f32x4.add (local.get $a2) (local.get $a3))))
//       (f32.store (local.get $out) (lane0 + lane1) + lane2) + lane3 of $a0)
//       (local.set $out (i32.add (local.get $out) (i32.const 4)))
//       (local.set $n (i32.sub (local.get $n) (i32.const 1)))
//       (br $rows))))
// ---------------------------------------------------------------------------------------------------------------

const uleb = (n: number): number[] => {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
};
const sleb = (n: number): number[] => {
  const out: number[] = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0)) return [...out, b];
    out.push(b | 0x80);
  }
};

/** The module's bytes (see the text above). */
export function dotsModuleBytes(): Uint8Array {
  const I32 = 0x7f, V128 = 0x7b, BLOCK = 0x02, LOOP = 0x03, END = 0x0b, BR = 0x0c, BR_IF = 0x0d, VOID = 0x40;
  const I32_EQZ = 0x45, I32_LT_U = 0x49, I32_ADD = 0x6a, I32_SUB = 0x6b, I32_SHL = 0x74, F32_ADD = 0x92, F32_STORE = 0x38;
  const get = (i: number) => [0x20, i], set = (i: number) => [0x21, i], tee = (i: number) => [0x22, i];
  const i32 = (v: number) => [0x41, ...sleb(v)];
  const simd = (op: number, ...imm: number[]) => [0xfd, ...uleb(op), ...imm];
  const v128Load = (offset: number) => simd(0x00, 4, ...uleb(offset)); // align 2^4
  const v128Zero = simd(0x0c, ...new Array<number>(16).fill(0));
  const f32x4Add = simd(0xe4), f32x4Mul = simd(0xe6);
  const lane = (l: number) => simd(0x1f, l); // f32x4.extract_lane
  const [M, Q, OUT, N, DP, ENDP, QP, A] = [0, 1, 2, 3, 4, 5, 6, 7];
  const body = [
    BLOCK, VOID, LOOP, VOID,
    ...get(N), I32_EQZ, BR_IF, 1,
    ...[0, 1, 2, 3].flatMap((k) => [...v128Zero, ...set(A + k)]),
    ...get(Q), ...set(QP),
    ...get(M), ...get(DP), ...i32(2), I32_SHL, I32_ADD, ...set(ENDP),
    LOOP, VOID,
    ...[0, 1, 2, 3].flatMap((k) => [
      ...get(A + k), ...get(M), ...v128Load(16 * k), ...get(QP), ...v128Load(16 * k), ...f32x4Mul, ...f32x4Add, ...set(A + k),
    ]),
    ...get(QP), ...i32(64), I32_ADD, ...set(QP),
    ...get(M), ...i32(64), I32_ADD, ...tee(M), ...get(ENDP), I32_LT_U, BR_IF, 0,
    END,
    ...get(OUT),
    ...get(A), ...get(A + 1), ...f32x4Add, ...get(A + 2), ...get(A + 3), ...f32x4Add, ...f32x4Add, ...tee(A),
    ...lane(0), ...get(A), ...lane(1), F32_ADD, ...get(A), ...lane(2), F32_ADD, ...get(A), ...lane(3), F32_ADD,
    F32_STORE, 2, 0,
    ...get(OUT), ...i32(4), I32_ADD, ...set(OUT),
    ...get(N), ...i32(1), I32_SUB, ...set(N),
    BR, 0,
    END, END,
    END,
  ];
  const func = [2, 2, I32, 4, V128, ...body]; // locals: 2 × i32, 4 × v128
  const section = (id: number, content: number[]) => [id, ...uleb(content.length), ...content];
  const name = (s: string) => [...uleb(s.length), ...Array.from(s, (c) => c.charCodeAt(0))];
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0, // "\0asm", version 1
    ...section(1, [1, 0x60, 5, I32, I32, I32, I32, I32, 0]), // type: (i32 × 5) -> ()
    ...section(2, [1, ...name('env'), ...name('memory'), 0x02, 0x00, 1]), // import env.memory, min 1 page
    ...section(3, [1, 0]), // one function of type 0
    ...section(7, [1, ...name('dots'), 0x00, 0]), // export "dots"
    ...section(10, [1, ...uleb(func.length), ...func]),
  ]);
}

/** The part of the WebAssembly JS API used here (the project's TypeScript lib has no DOM/WebAssembly typings). */
interface WasmApi {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => WasmModule;
  Instance: new (module: WasmModule, imports: Record<string, Record<string, unknown>>) => { exports: Record<string, unknown> };
  Memory: new (descriptor: { initial: number }) => { buffer: ArrayBuffer };
}
type WasmModule = { readonly __brand: 'WebAssembly.Module' };
const wasmApi = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;

let dotsModule: WasmModule | null | undefined;

/** The compiled module, or null when this runtime lacks WebAssembly SIMD. Compiled once. */
function wasmModule(): WasmModule | null {
  if (dotsModule === undefined) {
    const bytes = dotsModuleBytes();
    dotsModule = wasmApi !== undefined && wasmApi.validate(bytes) ? new wasmApi.Module(bytes) : null;
  }
  return dotsModule;
}

/** Largest matrix (bytes) given to the WebAssembly engine; bigger ones use the `js` engine. */
const WASM_MAX_BYTES = 2 ** 31;

const fround = Math.fround;

/** The `js` engine: the WebAssembly arithmetic emulated exactly with float32 rounding. */
function dotsJs(matrix: Float32Array, q: Float32Array, out: Float32Array, n: number, dp: number): void {
  const acc = new Float64Array(16);
  for (let i = 0, o = 0; i < n; i++, o += dp) {
    acc.fill(0);
    for (let j = 0; j < dp; j += 16) {
      for (let t = 0; t < 16; t++) acc[t] = fround(acc[t] + fround(matrix[o + j + t] * q[j + t]));
    }
    // accumulator k, lane l is acc[4k + l]
    const v0 = fround(fround(acc[0] + acc[4]) + fround(acc[8] + acc[12]));
    const v1 = fround(fround(acc[1] + acc[5]) + fround(acc[9] + acc[13]));
    const v2 = fround(fround(acc[2] + acc[6]) + fround(acc[10] + acc[14]));
    const v3 = fround(fround(acc[3] + acc[7]) + fround(acc[11] + acc[15]));
    out[i] = fround(fround(fround(v0 + v1) + v2) + v3);
  }
}

/** L2 norm in float64. */
function norm(v: ArrayLike<number>): number {
  let s = 0;
  for (let j = 0; j < v.length; j++) s += v[j] * v[j];
  return Math.sqrt(s);
}

function checkFinite(v: ArrayLike<number>, what: string): void {
  for (let j = 0; j < v.length; j++) {
    if (!Number.isFinite(v[j])) {
      throw new HarnessError('EMBEDDING_FAILED', `${what} has a non-finite value (${String(v[j])}) at position ${j}`, {
        remedy: 'check the embedding model output; vectors must hold finite numbers',
      });
    }
  }
}

/**
 * Builds an exact-cosine index: `vectors[i]` is the embedding of item `ids[i]`. All vectors must have the same
 * length d ≥ 1. Copies and normalises the vectors (the inputs are not changed). Memory: 4 · n · dp bytes.
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
  const dp = Math.max(16, Math.ceil(d / 16) * 16);
  // Layout (float32 units): matrix [0, n·dp), query [n·dp, n·dp + dp), scores [n·dp + dp, n·dp + dp + n).
  const qOffset = n * dp;
  const outOffset = qOffset + dp;
  const totalBytes = (outOffset + n) * 4;
  const module = options.engine === 'js' || totalBytes > WASM_MAX_BYTES ? null : wasmModule();
  if (options.engine === 'wasm-simd' && module === null) {
    throw new HarnessError('CONFIG_INVALID', 'the wasm-simd vector engine is not available in this runtime or for this size', {
      remedy: 'use the js engine',
    });
  }
  let floats: Float32Array;
  let dots: () => void;
  if (module !== null && wasmApi !== undefined) {
    const memory = new wasmApi.Memory({ initial: Math.max(1, Math.ceil(totalBytes / 65536)) });
    const instance = new wasmApi.Instance(module, { env: { memory } });
    const fn = instance.exports.dots as (m: number, q: number, out: number, n: number, dp: number) => void;
    floats = new Float32Array(memory.buffer, 0, outOffset + n);
    dots = () => fn(0, qOffset * 4, outOffset * 4, n, dp);
  } else {
    floats = new Float32Array(outOffset + n);
    const matrix = floats.subarray(0, qOffset);
    const q = floats.subarray(qOffset, outOffset);
    const out = floats.subarray(outOffset);
    dots = () => dotsJs(matrix, q, out, n, dp);
  }

  const seen = new Set<string>();
  for (let i = 0; i < n; i++) {
    const id = ids[i];
    if (seen.has(id)) throw new Error(`buildVectorIndex: duplicate id ${JSON.stringify(id)}`);
    seen.add(id);
    const v = vectors[i];
    if (v.length !== d) {
      throw new HarnessError(
        'EMBEDDING_FAILED',
        `vector of ${JSON.stringify(id)} has length ${v.length}, but the first vector (${JSON.stringify(ids[0])}) has ${d}`,
        { remedy: 'embed all chunks with the same model; do not mix cached vectors of different models' },
      );
    }
    checkFinite(v, `vector of ${JSON.stringify(id)}`);
    const len = norm(v);
    const inv = len === 0 ? 0 : 1 / len;
    const o = i * dp;
    for (let j = 0; j < d; j++) floats[o + j] = v[j] * inv;
  }
  const idList = [...ids];
  const engine: VectorEngine = module !== null ? 'wasm-simd' : 'js';

  return {
    size: n,
    dimensions: d,
    engine,
    search(query: Float32Array, k: number): Hit[] {
      if (!Number.isInteger(k) || k < 0) {
        throw new HarnessError('CONFIG_INVALID', `top-k (${String(k)}) must be an integer >= 0`, {
          location: { path: 'k' },
          remedy: 'use a whole number such as 5 or 10',
        });
      }
      if (n === 0 || k === 0) return [];
      if (query.length !== d) {
        throw new HarnessError('EMBEDDING_FAILED', `query vector has length ${query.length}, the index has ${d}`, {
          remedy: 'embed the query with the same model as the chunks',
        });
      }
      checkFinite(query, 'query vector');
      const qn = norm(query);
      // A zero query vector (e.g. GloVe on a text with no known word) carries no information: every cosine would be 0
      // and the "ranking" would be the tie rule's id order. Return nothing, as BM25 does for a query with no known term.
      if (qn === 0) return [];
      const inv = 1 / qn;
      for (let j = 0; j < d; j++) floats[qOffset + j] = query[j] * inv;
      dots();
      const scores = floats.subarray(outOffset, outOffset + n);

      const cap = Math.min(k, n);
      // Bounded min-heap (the worst kept item at the root) of row indices.
      const heap = new Int32Array(cap);
      let size = 0;
      // true when row a ranks below row b under the project rule (score desc, then id desc).
      const worse = (a: number, b: number): boolean =>
        scores[a] < scores[b] || (scores[a] === scores[b] && compareCodePoints(idList[a], idList[b]) < 0);
      for (let i = 0; i < n; i++) {
        if (size < cap) {
          let pos = size++;
          heap[pos] = i;
          while (pos > 0) {
            const parent = (pos - 1) >> 1;
            if (!worse(heap[pos], heap[parent])) break;
            [heap[pos], heap[parent]] = [heap[parent], heap[pos]];
            pos = parent;
          }
        } else if (worse(heap[0], i)) {
          heap[0] = i;
          let pos = 0;
          for (;;) {
            const l = 2 * pos + 1;
            if (l >= size) break;
            const r = l + 1;
            const m = r < size && worse(heap[r], heap[l]) ? r : l;
            if (!worse(heap[m], heap[pos])) break;
            [heap[m], heap[pos]] = [heap[pos], heap[m]];
            pos = m;
          }
        }
      }
      const hits: Hit[] = [];
      for (let t = 0; t < size; t++) hits.push({ id: idList[heap[t]], score: scores[heap[t]] });
      return rankByRule(hits);
    },
  };
}

/**
 * The exact dot-product kernels of the semantic index, shared by the index (src/retrieve/semantic.ts), its worker
 * threads and the bench. Two engines compute exactly the same float32 values (the arithmetic is spelled out in
 * dots.wat): `wasm-simd`, the WebAssembly module compiled from dots.wat (bytes in the generated dots-wasm.ts), and
 * `js`, the same operations emulated with `Math.fround`.
 */
import { DOTS_WASM_BASE64 } from './dots-wasm.js';

/** The part of the WebAssembly JS API used here (the project's TypeScript lib has no DOM/WebAssembly typings). */
export interface WasmApi {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => WasmModule;
  Instance: new (module: WasmModule, imports: Record<string, Record<string, unknown>>) => { exports: Record<string, unknown> };
  Memory: new (descriptor: { initial: number; maximum?: number; shared?: boolean }) => WasmMemory;
}
/** A compiled module (structured-cloneable to worker threads). */
export type WasmModule = { readonly __brand: 'WebAssembly.Module' };
/** A WebAssembly memory; shared ones have a `SharedArrayBuffer` buffer and can be posted to worker threads. */
export interface WasmMemory {
  readonly buffer: ArrayBufferLike;
}
/** `dots(m, q, out, n, dp)`: byte offsets m, q, out into the instance's memory; see dots.wat. */
export type DotsFn = (m: number, q: number, out: number, n: number, dp: number) => void;

export const wasmApi = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;

/** The bytes of the kernel (dots.wat compiled by scripts/build-wasm.ts). */
export function dotsWasmBytes(): Uint8Array {
  return Uint8Array.from(Buffer.from(DOTS_WASM_BASE64, 'base64'));
}

let compiled: WasmModule | null | undefined;

/**
 * The compiled kernel, or null when this runtime lacks WebAssembly SIMD or shared memory (then the `js` engine is
 * used). Compiled once per thread.
 */
export function dotsModule(): WasmModule | null {
  if (compiled === undefined) {
    const bytes = dotsWasmBytes();
    compiled = wasmApi !== undefined && typeof SharedArrayBuffer === 'function' && wasmApi.validate(bytes)
      ? new wasmApi.Module(bytes)
      : null;
  }
  return compiled;
}

/** An instance of the kernel over `memory` (which must be shared: the module imports a shared memory). */
export function instantiateDots(module: WasmModule, memory: WasmMemory): DotsFn {
  if (wasmApi === undefined) throw new Error('instantiateDots: no WebAssembly in this runtime');
  return new wasmApi.Instance(module, { env: { memory } }).exports.dots as DotsFn;
}

const fround = Math.fround;

/**
 * The `js` engine: `out[i] = row i of matrix (n rows of dp floats, dp a multiple of 16) · q`, the WebAssembly
 * arithmetic emulated exactly with float32 rounding (accumulator k, lane l of dots.wat is acc[4k + l]).
 */
export function dotsJs(matrix: Float32Array, q: Float32Array, out: Float32Array, n: number, dp: number): void {
  const acc = new Float64Array(16);
  for (let i = 0, o = 0; i < n; i++, o += dp) {
    acc.fill(0);
    for (let j = 0; j < dp; j += 16) {
      for (let t = 0; t < 16; t++) acc[t] = fround(acc[t] + fround(matrix[o + j + t] * q[j + t]));
    }
    const v0 = fround(fround(acc[0] + acc[4]) + fround(acc[8] + acc[12]));
    const v1 = fround(fround(acc[1] + acc[5]) + fround(acc[9] + acc[13]));
    const v2 = fround(fround(acc[2] + acc[6]) + fround(acc[10] + acc[14]));
    const v3 = fround(fround(acc[3] + acc[7]) + fround(acc[11] + acc[15]));
    out[i] = fround(fround(fround(v0 + v1) + v2) + v3);
  }
}

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileWat, DOTS_WAT, renderGenerated, DOTS_GENERATED } from '../../scripts/build-wasm.js';
import { dotsJs, dotsModule, dotsWasmBytes, instantiateDots, wasmApi } from '../../src/retrieve/kernels/dots.js';
import { dotsModuleBytes as handAssembledBytes } from './reference/semantic-v1.js';
import { seededRandom } from '../../src/score/stats.js';

const root = path.resolve(import.meta.dirname, '../..');
const watText = readFileSync(path.join(root, DOTS_WAT), 'utf8');

/** mulberry32 (src/score/stats.ts), so failures reproduce. */
const rng = seededRandom;

describe('the WebAssembly kernel is the readable dots.wat', () => {
  it('the committed bytes (dots-wasm.ts) are exactly what wabt compiles from dots.wat: they cannot drift', async () => {
    const bytes = await compileWat(DOTS_WAT, watText);
    expect(Buffer.from(dotsWasmBytes()).toString('hex')).toBe(Buffer.from(bytes).toString('hex'));
    // and the generated file is byte for byte what the build script writes
    expect(readFileSync(path.join(root, DOTS_GENERATED), 'utf8')).toBe(renderGenerated(DOTS_WAT, bytes));
  });

  it('with a non-shared memory import, dots.wat compiles to the 340 hand-assembled bytes of the old index', async () => {
    // Same instructions as the kernel every earlier result was computed with; only the import became shared.
    const unshared = watText.replace('(memory 1 65536 shared)', '(memory 1)');
    expect(unshared).not.toBe(watText);
    const bytes = await compileWat('unshared.wat', unshared);
    expect(bytes.length).toBe(340);
    expect(Buffer.from(bytes).toString('hex')).toBe(Buffer.from(handAssembledBytes()).toString('hex'));
  });

  it('wasm and js kernels give bit-identical float32 dot products (random rows, strides 16, 48, 784)', () => {
    const module = dotsModule();
    expect(module).not.toBeNull();
    const random = rng(7);
    for (const [n, dp] of [[1, 16], [37, 48], [200, 784]] as const) {
      const floats = n * dp + dp + n;
      const memory = new wasmApi!.Memory({ initial: Math.ceil((floats * 4) / 65536), maximum: 100, shared: true });
      const all = new Float32Array(memory.buffer, 0, floats);
      for (let i = 0; i < n * dp + dp; i++) all[i] = (random() * 2 - 1) * (random() < 0.1 ? 1e3 : 1);
      const dots = instantiateDots(module!, memory);
      dots(0, n * dp * 4, (n * dp + dp) * 4, n, dp);
      const wasmOut = all.slice(n * dp + dp);
      const jsOut = new Float32Array(n);
      dotsJs(all.subarray(0, n * dp), all.subarray(n * dp, n * dp + dp), jsOut, n, dp);
      expect(new Uint32Array(wasmOut.buffer)).toEqual(new Uint32Array(jsOut.buffer));
      // and the js kernel is float32 arithmetic, not float64: row 0 by the 16-sum rule, by hand
      const acc = new Array<number>(16).fill(0);
      for (let j = 0; j < dp; j++) acc[j % 16] = Math.fround(acc[j % 16] + Math.fround(all[j] * all[n * dp + j]));
      const lanes = [0, 1, 2, 3].map((l) => Math.fround(Math.fround(acc[l] + acc[4 + l]) + Math.fround(acc[8 + l] + acc[12 + l])));
      expect(jsOut[0]).toBe(Math.fround(Math.fround(Math.fround(lanes[0] + lanes[1]) + lanes[2]) + lanes[3]));
    }
  });
});

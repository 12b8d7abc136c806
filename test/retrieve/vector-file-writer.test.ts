/**
 * Issue 25 (docs/scale.md "Vector files written in order"): the in-order writer (per-region buffers, scratch parts,
 * each region written once) leaves exactly the bytes of the per-row writer of sessions 8-11, whatever the arrival
 * order, the duplicates across groups, the region and buffer sizes; its scratch is named on src/store/temp.ts's
 * scheme and removed after the write and on failure.
 */
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isHarnessError } from '../../src/errors.js';
import { embedTextsToFiles } from '../../src/embed/embed-texts.js';
import { createVectorFile, type VectorFile } from '../../src/retrieve/vector-file.js';
import { createOrderedWriter, createPerRowWriter, type OrderedWriteOptions, type SlotLayout, type SlotRowWriter } from '../../src/retrieve/vector-file-writer.js';
import { strideOf } from '../../src/retrieve/vector-matrix.js';
import { removeDeadTemporaries } from '../../src/store/temp.js';
import { FakeEmbedder } from '../helpers/fake-embedder.js';

let dir: string;
let seq = 0;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'rs-vecwrite-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The layout of groups of slot numbers as `dedupe` makes it: slots renumbered in first-seen order. */
function layoutOf(groups: readonly number[][]): SlotLayout {
  const seen = new Map<number, number>();
  const firstGroup: number[] = [];
  const firstRow: number[] = [];
  const where = groups.map((w, g) =>
    Int32Array.from(w, (t, i) => {
      let s = seen.get(t);
      if (s === undefined) {
        s = seen.size;
        seen.set(t, s);
        firstGroup.push(g);
        firstRow.push(i);
      }
      return s;
    }),
  );
  return { slots: seen.size, where, firstGroup: Int32Array.from(firstGroup), firstRow: Int32Array.from(firstRow) };
}

/** A distinct row of dp floats for slot s and put number p (already "normalised": any bits will do). */
function rowOf(s: number, p: number, d: number): Float32Array {
  const row = new Float32Array(strideOf(d));
  for (let j = 0; j < d; j++) row[j] = Math.fround(s * 1000 + j + p / 8 - 0.5);
  return row;
}

/** Writes `puts` (slot, put number) with `make`'s writer into new files; returns each file's bytes. */
function write(layout: SlotLayout, d: number, puts: readonly [number, number][], make: (files: VectorFile[]) => SlotRowWriter): Buffer[] {
  const files = layout.where.map((w) => createVectorFile(path.join(dir, `f${seq++}.f32`), w.length, d));
  try {
    const writer = make(files);
    for (const [s, p] of puts) writer.put(s, rowOf(s, p, d));
    writer.finish();
    for (const f of files) f.close();
    return files.map((f) => readFileSync(f.path));
  } finally {
    for (const f of files) f.remove();
  }
}

const ordered = (layout: SlotLayout, opts: OrderedWriteOptions) => (files: VectorFile[]) =>
  createOrderedWriter(files, layout, { scratchBase: path.join(dir, `s${seq++}`), ...opts });
const perRow = (layout: SlotLayout) => (files: VectorFile[]) => createPerRowWriter(files, layout);

describe('createOrderedWriter', () => {
  it('hand-worked: 2 groups, a shared text, regions of 2 rows, one-record buffers: every row where it belongs', () => {
    // texts: group 0 = [A, B, A], group 1 = [C, A]; slots A=0, B=1, C=2; A's rows: (0,0) first, (0,2) and (1,1) duplicates
    const layout = layoutOf([[10, 11, 10], [12, 10]]);
    expect(Array.from(layout.where[1])).toEqual([2, 0]);
    const d = 1; // dp = 16: 64 bytes a row, regions of 2 rows = 128 bytes
    const scratchBase = path.join(dir, 'hand');
    const files = layout.where.map((w) => createVectorFile(path.join(dir, `hand${seq++}.f32`), w.length, d));
    const w = createOrderedWriter(files, layout, { regionBytes: 128, bufferBytes: 1, scratchBase });
    // regions: 0 = file 0 rows 0-1, 1 = file 0 row 2, 2 = file 1 rows 0-1
    w.put(1, rowOf(1, 0, d)); // B → (0,1): region 0's buffer
    w.put(0, rowOf(0, 0, d)); // A → (0,0): region 0's buffer is full, and B's row 1 does not continue row 0: B spilled;
    // (0,2): region 1; (1,1): region 2
    w.put(2, rowOf(2, 0, d)); // C → (1,0): region 2's buffer holds A's row 1, not row 0: spilled
    const parts = readdirSync(dir).filter((n) => n.startsWith('hand.parts.tmp-'));
    expect(parts.length).toBe(1);
    expect(parts[0]).toMatch(new RegExp(`^hand\\.parts\\.tmp-${process.pid}-\\d+$`));
    expect(readdirSync(path.join(dir, parts[0])).sort()).toEqual(['0', '2']); // regions 0 and 2 ((0,[0,2)) and (1,[0,2)))
    w.finish();
    expect(existsSync(path.join(dir, parts[0]))).toBe(false);
    const value = (f: VectorFile, i: number) => {
      const r = new Float32Array(16);
      f.readRow(i, r);
      return r[0];
    };
    // slot s's row holds s·1000 − 0.5 in its first float
    expect([0, 1, 2].map((i) => value(files[0], i))).toEqual([-0.5, 999.5, -0.5]);
    expect([0, 1].map((i) => value(files[1], i))).toEqual([1999.5, -0.5]);
    for (const f of files) f.remove();
  });

  it('differential: the per-row writer\'s bytes, on random orders with duplicates across 2-3 groups (d = 1, 100, 384)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.integer({ min: 0, max: 40 }), { maxLength: 37 }), { minLength: 1, maxLength: 3 }),
        fc.constantFrom(1, 100, 384),
        fc.integer({ min: 1, max: 9 }), // rows a region
        fc.integer({ min: 0, max: 40 }), // records of all buffers
        fc.integer(),
        fc.boolean(),
        fc.constantFrom('random', 'first-seen', 'nearly'),
        (texts, d, regionRows, bufferRecords, seed, twice, arrival) => {
          const layout = layoutOf(texts);
          // arrival: a random permutation of the slots (a model's misses), first-seen order (a warm cache's hits: rows
          // written in place), or first-seen with a few swaps; a few slots put twice when `twice` (the later put wins)
          let x = seed >>> 0 || 1;
          const rand = (m: number) => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) % m);
          const order = Array.from({ length: layout.slots }, (_, s) => s);
          if (arrival === 'random')
            for (let i = order.length - 1; i > 0; i--) {
              const j = rand(i + 1);
              [order[i], order[j]] = [order[j], order[i]];
            }
          if (arrival === 'nearly')
            for (let k = 0; k < 3 && order.length > 1; k++) {
              const i = rand(order.length - 1);
              [order[i], order[i + 1]] = [order[i + 1], order[i]];
            }
          const puts: [number, number][] = order.map((s) => [s, 0]);
          if (twice) for (let k = 0; k < Math.min(3, layout.slots); k++) puts.push([order[rand(order.length)], k + 1]);
          const rowBytes = 4 * strideOf(d);
          const opts = { regionBytes: regionRows * rowBytes, bufferBytes: bufferRecords * (rowBytes + 4) };
          expect(write(layout, d, puts, ordered(layout, opts))).toEqual(write(layout, d, puts, perRow(layout)));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('n not a multiple of the region rows, page-aligned regions (64 rows), every buffer spilling', () => {
    // 2 groups of 200 and 131 rows; group 1 repeats every third text of group 0; d = 100 (448-byte rows)
    const g0 = Array.from({ length: 200 }, (_, i) => i);
    const g1 = Array.from({ length: 131 }, (_, i) => (i % 3 === 0 ? i : 1000 + i));
    const layout = layoutOf([g0, g1]);
    const puts: [number, number][] = Array.from({ length: layout.slots }, (_, s) => [(s * 37) % layout.slots, 0]);
    expect(new Set(puts.map((p) => p[0])).size).toBe(layout.slots); // 37 is prime to the slot count: a permutation
    // regionBytes of 100 rows → 64 rows a region (page-aligned); 3 regions for 200 rows, 3 for 131
    const opts = { regionBytes: 100 * 448, bufferBytes: 6 * 452 };
    expect(write(layout, 100, puts, ordered(layout, opts))).toEqual(write(layout, 100, puts, perRow(layout)));
  });

  it('rows arriving in row order are written in place: no scratch part, the same bytes', () => {
    const layout = layoutOf([Array.from({ length: 50 }, (_, i) => i)]);
    const puts: [number, number][] = Array.from({ length: 50 }, (_, s) => [s, 0]);
    const scratchBase = path.join(dir, 'inplace');
    // regions of 8 rows, buffers of 2 records: 25 in-place writes of 2 rows; any spill would make the folder
    const opts = { regionBytes: 8 * 448, bufferBytes: 7 * 2 * 452, scratchBase };
    expect(write(layout, 100, puts, (files) => createOrderedWriter(files, layout, opts))).toEqual(write(layout, 100, puts, perRow(layout)));
    expect(readdirSync(dir).filter((n) => n.startsWith('inplace.'))).toEqual([]);
  });

  it('n = 0: empty files, with or without other groups', () => {
    for (const texts of [[[]], [[], [1, 2, 1], []]]) {
      const layout = layoutOf(texts);
      const puts: [number, number][] = Array.from({ length: layout.slots }, (_, s) => [s, 0]);
      const got = write(layout, 100, puts, ordered(layout, { regionBytes: 448, bufferBytes: 1 }));
      expect(got).toEqual(write(layout, 100, puts, perRow(layout)));
      expect(got.map((b) => b.length)).toEqual(texts.map((t) => t.length * 448));
    }
  });

  it('the defaults keep a small write in memory: no scratch folder is made', () => {
    const layout = layoutOf([[1, 2, 3, 2]]);
    const scratchBase = path.join(dir, 'small');
    const puts: [number, number][] = [[2, 0], [0, 0], [1, 0]];
    expect(write(layout, 100, puts, (files) => createOrderedWriter(files, layout, { scratchBase }))).toEqual(write(layout, 100, puts, perRow(layout)));
    expect(readdirSync(dir).filter((n) => n.startsWith('small.'))).toEqual([]);
  });

  it('a scratch folder that cannot be made: EMBEDDING_FAILED naming it, with the remedy', () => {
    const blocker = path.join(dir, `blocker${seq++}`);
    writeFileSync(blocker, 'a file, not a folder');
    const layout = layoutOf([[1, 2, 3]]);
    const files = [createVectorFile(path.join(dir, `f${seq++}.f32`), 3, 2)];
    const w = createOrderedWriter(files, layout, { regionBytes: 192, bufferBytes: 1, scratchBase: path.join(blocker, 'x') });
    w.put(1, rowOf(1, 0, 2));
    const e = (() => {
      try {
        w.put(0, rowOf(0, 0, 2)); // the one-record buffer of region 0 (row 1, not row 0) is spilled: its part needs the folder
        return null;
      } catch (x) {
        return x;
      }
    })();
    expect(isHarnessError(e, 'EMBEDDING_FAILED')).toBe(true);
    expect((e as Error).message).toContain(path.join(blocker, 'x.parts.tmp-'));
    expect((e as { remedy?: string }).remedy).toContain('free disk space');
    w.discard();
    files[0].remove();
  });

  it('the scratch folder defaults to the first file\'s name without its temporary suffix', () => {
    const layout = layoutOf([[1, 2, 3]]);
    const file = path.join(dir, `m.none.f32.tmp-${process.pid}-123`);
    const files = [createVectorFile(file, 3, 2)];
    const w = createOrderedWriter(files, layout, { regionBytes: 192, bufferBytes: 1 });
    w.put(1, rowOf(1, 0, 2));
    w.put(0, rowOf(0, 0, 2));
    expect(readdirSync(dir).filter((n) => n.startsWith('m.none.f32.parts.tmp-')).length).toBe(1);
    w.discard();
    expect(readdirSync(dir).filter((n) => n.startsWith('m.none.f32.parts.'))).toEqual([]);
    files[0].remove();
  });
});

describe('a killed run\'s scratch parts', () => {
  it('are removed by the next run\'s removeDeadTemporaries; a live run\'s are kept', () => {
    const sub = mkdtempSync(path.join(dir, 'killed-'));
    const layout = layoutOf([[1, 2, 3]]);
    const files = [createVectorFile(path.join(sub, `m.none.f32.tmp-${process.pid}-5`), 3, 2)];
    const w = createOrderedWriter(files, layout, { regionBytes: 192, bufferBytes: 1 });
    w.put(1, rowOf(1, 0, 2));
    w.put(0, rowOf(0, 0, 2)); // row 1 then row 0: region 0's buffer spilled, the parts folder made
    const live = readdirSync(sub).filter((n) => n.includes('.parts.'));
    expect(live.length).toBe(1);
    // the same folder left by a process that is gone (pid 999999999)
    const dead = live[0].replace(`.tmp-${process.pid}-`, '.tmp-999999999-');
    cpSync(path.join(sub, live[0]), path.join(sub, dead), { recursive: true });
    expect(removeDeadTemporaries(sub)).toEqual([path.join(sub, dead)]);
    expect(readdirSync(sub).filter((n) => n.includes('.parts.'))).toEqual(live);
    w.discard();
    files[0].remove();
  });
});

describe('embedTextsToFiles: the in-order writer against the per-row reference', () => {
  it('the same bytes and stats (duplicates across three lists, tiny regions and buffers)', async () => {
    const groups = [['a', 'bb', 'a', 'dddd', 'e'], ['bb', 'ccc', 'a', 'dddd', 'ffffff', 'g'], ['g', 'a', 'hh']];
    const names = (tag: string) => groups.map((_, g) => path.join(dir, `${tag}${seq++}-${g}.f32`));
    const ref = await embedTextsToFiles(new FakeEmbedder(), groups, names('ref'), 'document', { batchSize: 2, vectorWrite: 'per-row' });
    const got = await embedTextsToFiles(new FakeEmbedder(), groups, names('new'), 'document', {
      batchSize: 2,
      vectorWrite: { regionBytes: 128, bufferBytes: 1, scratchBase: path.join(dir, `e${seq++}`) },
    });
    expect(got.stats).toEqual({ ...ref.stats, embedSeconds: got.stats.embedSeconds });
    expect(got.files.map((f) => readFileSync(f.path))).toEqual(ref.files.map((f) => readFileSync(f.path)));
    for (const f of [...got.files, ...ref.files]) f.remove();
  });

  it('a failure removes every file and the scratch parts', async () => {
    const names = [path.join(dir, `k${seq++}.f32`), path.join(dir, `k${seq++}.f32`)];
    const scratchBase = path.join(dir, `fail${seq++}`);
    // longest first: dddd (row 3), then ccc (row 2): region 1's one-record buffer (row 3) is spilled; then bad fails
    const groups = [['a', 'bb', 'ccc', 'dddd'], ['bad']];
    const e = await embedTextsToFiles(new FakeEmbedder('bad'), groups, names, 'document', { vectorWrite: { regionBytes: 128, bufferBytes: 1, scratchBase } }).catch((x: unknown) => x);
    expect(isHarnessError(e, 'EMBEDDING_FAILED')).toBe(true);
    expect(names.map((n) => existsSync(n))).toEqual([false, false]);
    expect(readdirSync(dir).filter((n) => n.startsWith(path.basename(scratchBase)))).toEqual([]);
  });
});

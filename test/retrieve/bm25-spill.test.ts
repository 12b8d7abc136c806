/**
 * The spilling BM25 build (bm25-spill.ts, issue 25 item 1): blocks of forward lists sorted into run files and merged
 * k-way into the final postings. The claim is that the index is the in-memory build's, byte for byte in every typed
 * array (and equal dictionary, ids and big term frequencies), whatever the budget and the number of threads; that
 * the merge puts each group where a hand-worked example says; and that run files never outlive their build (removed
 * after the merge, after a failure, and a killed build's by the next build).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isHarnessError } from '../../src/errors.js';
import { beirChunksAndQueries } from '../helpers/datasets.js';
import { buildKeywordIndexParallel, type KeywordIndex } from '../../src/retrieve/bm25.js';
import { createSortScratch, mergeRuns, mergeRunsAsync, TF_ESCAPE, writeRun, type ForwardBlock } from '../../src/retrieve/bm25-spill.js';
import { keywordRetriever } from '../../src/retrieve/builtin.js';
import type { Chunk } from '../../src/types.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const datasets = path.resolve(here, '../../../shared/datasets');

const chunk = (id: string, text: string): Chunk => ({ id, docId: id, ordinal: 0, text, start: 0, end: text.length, tokens: 0 });
const tempDir = (): string => mkdtempSync(path.join(tmpdir(), 'rs-bm25spill-'));
/** The pid of a process that has exited (as test/store/resource-temp.test.ts simulates a killed run's owner). */
const deadPid = (): number => spawnSync(process.execPath, ['-e', '']).pid!;

const TYPED = ['offsets', 'postDoc', 'postTf', 'idf', 'k1norm', 'lengths', 'blockStart', 'blockMax', 'blockLast'] as const;

/** Names of the index's internal arrays (private fields) that differ between `a` and `b`: typed arrays byte for byte. */
function differences(a: KeywordIndex, b: KeywordIndex): string[] {
  const x = a as unknown as Record<string, unknown>;
  const y = b as unknown as Record<string, unknown>;
  const out: string[] = [];
  for (const name of TYPED) {
    const u = x[name] as Int32Array;
    const v = y[name] as Int32Array;
    const bu = Buffer.from(u.buffer, u.byteOffset, u.byteLength);
    const bv = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
    if (u.constructor !== v.constructor || !bu.equals(bv)) out.push(name);
  }
  const sorted = (m: unknown): [number, number][] => [...(m as Map<number, number>)].sort((p, q) => p[0] - q[0]);
  if (JSON.stringify(sorted(x.bigTf)) !== JSON.stringify(sorted(y.bigTf))) out.push('bigTf');
  if (JSON.stringify([...(x.dict as Map<string, number>)]) !== JSON.stringify([...(y.dict as Map<string, number>)])) out.push('dict');
  if (JSON.stringify(x.ids) !== JSON.stringify(y.ids)) out.push('ids');
  if (JSON.stringify(a.params) !== JSON.stringify(b.params)) out.push('params');
  return out;
}

/** A forward block from per-chunk [term, tf] lists (tf ≥ 255 escaped into the side map, as the builder does). */
function block(firstDoc: number, docs: [number, number][][]): ForwardBlock {
  const docStart = new Int32Array(docs.length + 1);
  const term: number[] = [];
  const tf: number[] = [];
  const bigTf = new Map<number, number>();
  docs.forEach((list, i) => {
    for (const [t, f] of list) {
      if (f >= TF_ESCAPE) bigTf.set(term.length, f);
      term.push(t);
      tf.push(Math.min(f, TF_ESCAPE));
    }
    docStart[i + 1] = term.length;
  });
  return { firstDoc, docStart, term: Int32Array.from(term), tf: Uint8Array.from(tf), bigTf };
}

describe('writeRun + mergeRuns: a hand-worked merge', () => {
  it('two runs with overlapping terms, a term in only one run, an empty run, a big tf; groups land by (term, run)', () => {
    const dir = tempDir();
    const scratch = createSortScratch();
    // Run A: chunks 0-1. Chunk 0: term 2 (tf 3), term 0 (tf 1); chunk 1: term 2 (tf 300), term 1 (tf 1).
    // Run B: chunk 2, which has no terms (an empty run: no groups at all).
    // Run C: chunks 3-4. Chunk 3: term 3 (tf 1), term 2 (tf 2); chunk 4: term 0 (tf 5).
    const files = ['a', 'b', 'c'].map((f) => path.join(dir, f));
    writeRun(files[0], block(0, [[[2, 3], [0, 1]], [[2, 300], [1, 1]]]), 4, scratch);
    writeRun(files[1], block(2, [[]]), 4, scratch);
    writeRun(files[2], block(3, [[[3, 1], [2, 2]], [[0, 5]]]), 4, scratch);
    // Each group: 3 int32 of header + 4 bytes a posting + tfs padded to 4 + 4 bytes a big tf.
    // A: term 0 (1 posting), term 1 (1), term 2 (2 postings, one big) → (12+4+4) + (12+4+4) + (12+8+4+4).
    expect(readFileSync(files[0]).length).toBe(12 + 4 + 4 + (12 + 4 + 4) + (12 + 8 + 4 + 4));
    expect(readFileSync(files[1]).length).toBe(0);
    // df: term 0 in chunks 0 and 4, term 1 in chunk 1, term 2 in chunks 0, 1, 3, term 3 in chunk 3.
    const df = Int32Array.from([2, 1, 3, 1]);
    for (const bufferBytes of [1 << 20, 4]) {
      // 4 bytes: every group is read into a buffer grown for it (and moved to its front).
      const m = mergeRuns(files, df, bufferBytes);
      expect(Array.from(m.offsets)).toEqual([0, 2, 2 + 1, 2 + 1 + 3, 2 + 1 + 3 + 1]);
      expect(Array.from(m.postDoc)).toEqual([0, 4, 1, 0, 1, 3, 3]);
      expect(Array.from(m.postTf)).toEqual([1, 5, 1, 3, TF_ESCAPE, 2, 1]);
      // The big tf of chunk 1's term 2 sits at posting 4 (term 2's second posting: offsets[2] + 1).
      expect([...m.bigTf]).toEqual([[2 + 1 + 1, 300]]);
    }
    // Runs that do not hold df's postings are a bug, not a silent index.
    expect(() => mergeRuns(files, Int32Array.from([2, 1, 2, 1]))).toThrow(/term 2 has 3 postings, df says 2/);
  });

  it('mergeRunsAsync: the same postings, with turns of the event loop between groups', async () => {
    const dir = tempDir();
    const scratch = createSortScratch();
    const files = ['a', 'c'].map((f) => path.join(dir, f));
    // The first example's runs A and C: groups in (term, run) order are t0/A (1 posting), t0/C (1), t1/A (1), t2/A (2),
    // t2/C (1), t3/C (1): 6 groups, 7 postings.
    writeRun(files[0], block(0, [[[2, 3], [0, 1]], [[2, 300], [1, 1]]]), 4, scratch);
    writeRun(files[1], block(3, [[[3, 1], [2, 2]], [[0, 5]]]), 4, scratch);
    const df = Int32Array.from([2, 1, 3, 1]);
    const want = mergeRuns(files, df);
    for (const pause of [1, 2, 7, 8]) {
      // A ticker that counts turns of the event loop while the merge runs.
      let turns = 0;
      let running = true;
      const tick = (): void => {
        if (!running) return;
        turns++;
        setImmediate(tick);
      };
      setImmediate(tick);
      const got = await mergeRunsAsync(files, df, 1 << 20, pause);
      running = false;
      expect([Array.from(got.offsets), Array.from(got.postDoc), Array.from(got.postTf), [...got.bigTf]]).toEqual([
        Array.from(want.offsets),
        Array.from(want.postDoc),
        Array.from(want.postTf),
        [...want.bigTf],
      ]);
      // It pauses before a group once `pause` postings were copied since the last pause. pause 1: before each group
      // but the first, 5 pauses; pause 2: after t0/A + t0/C (2), then after t1/A + t2/A (3): 2 pauses; pause 7 and 8:
      // never before the last group (6 postings before it), so the merge runs in one turn.
      const pauses = pause === 1 ? 5 : pause === 2 ? 2 : 0;
      if (pauses > 0) expect(turns).toBeGreaterThanOrEqual(pauses);
      else expect(turns).toBe(0);
    }
    await expect(mergeRunsAsync(files, df, 1 << 20, 0)).rejects.toThrow(/yieldPostings must be >= 1, got 0/);
    // A failing merge still throws (and closes its files): df one posting short.
    await expect(mergeRunsAsync(files, Int32Array.from([2, 1, 2, 1]), 1 << 20, 1)).rejects.toThrow(/term 2 has 3 postings, df says 2/);
  });

  it('a group larger than the write and read buffers (1 MiB), with an odd number of tf bytes, keeps the next group aligned', () => {
    const dir = tempDir();
    const n = 300_001; // 1.2 MB of chunk positions; 300,001 tf bytes need 3 bytes of padding
    // Term 0 in every chunk with tf 1 + (d mod 300) (so tf ≥ 255 for d mod 300 ≥ 254); term 1 in the last chunk, tf 7.
    const docs: [number, number][][] = Array.from({ length: n }, (_, d) => (d === n - 1 ? [[0, 1 + (d % 300)], [1, 7]] : [[0, 1 + (d % 300)]]));
    const file = path.join(dir, 'run');
    writeRun(file, block(0, docs), 2, createSortScratch());
    const m = mergeRuns([file], Int32Array.from([n, 1]));
    expect(Array.from(m.offsets)).toEqual([0, n, n + 1]);
    let wrong = 0;
    for (let d = 0; d < n; d++) if (m.postDoc[d] !== d || m.postTf[d] !== Math.min(1 + (d % 300), TF_ESCAPE)) wrong++;
    expect(wrong).toBe(0);
    expect([m.postDoc[n], m.postTf[n]]).toEqual([n - 1, 7]);
    // Chunks with d mod 300 in 254..299 (46 of every 300) have tf ≥ 255: 1,000 full cycles of 300, then d = 300,000 (tf 1).
    expect(m.bigTf.size).toBe(1000 * 46);
    expect(m.bigTf.get(299)).toBe(300);
  });
});

describe('a spilling build is the in-memory build', () => {
  const WORDS = ['seal', 'kit', 'pump', 'lmp-204', 'the', 'valve', 'seals', 'x86_64', 'café', 'bearing', 'hours', 'replace'];
  const texts = fc.array(
    fc.array(fc.constantFrom(...WORDS), { maxLength: 30 }).map((ws) => ws.join(' ')),
    { minLength: 1, maxLength: 40 },
  );

  it('same arrays for any corpus, batch size and budget (blocks of 1 posting up), runs removed after the merge', async () => {
    const dir = tempDir();
    await fc.assert(
      fc.asyncProperty(texts, fc.integer({ min: 1, max: 200 }), fc.integer({ min: 1, max: 400 }), async (ts, batchChars, spillBytes) => {
        // A tf of 255 or more in one chunk: the side map goes through the runs.
        const chunks = [...ts.map((t, i) => chunk(`c${i}`, t)), chunk('big', 'pump '.repeat(300))];
        const memory = await buildKeywordIndexParallel(chunks, {}, { threads: 1, spillBytes: Infinity });
        let runs = 0;
        const spilled = await buildKeywordIndexParallel(chunks, {}, { threads: 1, batchChars, inProcessChars: 0, spillBytes, spillDir: dir, onSpill: (r) => (runs = r) });
        expect(differences(spilled, memory)).toEqual([]);
        // A block holds max(1, floor(spillBytes / 10)) postings; the last chunk has one posting (pump, tf 300), so the
        // build spills exactly when there are more postings than that.
        const postings = (memory as unknown as { postDoc: Int32Array }).postDoc.length;
        expect(runs > 0).toBe(postings > Math.max(1, Math.floor(spillBytes / 10)));
        expect(readdirSync(dir)).toEqual([]);
      }),
      { numRuns: 100 },
    );
  });

  it('2 threads, a merge that turns the event loop after every posting (mergePause 1): the same arrays', async () => {
    const dir = tempDir();
    const chunks = [...Array.from({ length: 60 }, (_, i) => chunk(`c${i}`, WORDS.filter((_, j) => (i + j) % 3 !== 0).join(' '))), chunk('big', 'pump '.repeat(300))];
    const memory = await buildKeywordIndexParallel(chunks, {}, { threads: 1, spillBytes: Infinity });
    let runs = 0;
    // blockWindowPostings 3: the block-max pass pauses after every 3 postings' terms (a longer term alone).
    const paused = await buildKeywordIndexParallel(chunks, {}, { threads: 2, batchChars: 200, inProcessChars: 0, spillBytes: 200, spillDir: dir, mergePause: 1, blockWindowPostings: 3, onSpill: (r) => (runs = r) });
    expect(runs).toBeGreaterThan(1);
    expect(differences(paused, memory)).toEqual([]);
    expect(readdirSync(dir)).toEqual([]);
    for (const bad of [0, 1.5, -3]) {
      const err = await buildKeywordIndexParallel(chunks, {}, { mergePause: bad }).catch((e: unknown) => e);
      expect(isHarnessError(err) && err.code === 'CONFIG_INVALID' && err.message.includes(`mergePause (${bad})`)).toBe(true);
    }
  });

  it('below the budget nothing is written (the in-memory path)', async () => {
    const dir = path.join(tempDir(), 'runs');
    let runs = 0;
    await buildKeywordIndexParallel([chunk('a', 'pump seal'), chunk('b', 'seal kit')], {}, { threads: 1, spillBytes: 10 * 4, spillDir: dir, onSpill: (r) => (runs = r) });
    expect([runs, existsSync(dir)]).toEqual([0, false]);
  });

  it('spillBytes must be a number of bytes > 0 (CONFIG_INVALID naming the value)', async () => {
    for (const bad of [0, -1, Number.NaN]) {
      const err = await buildKeywordIndexParallel([chunk('a', 'pump')], {}, { spillBytes: bad }).catch((e: unknown) => e);
      expect(isHarnessError(err) && err.code === 'CONFIG_INVALID' && err.message.includes(`spillBytes ${String(bad)}`)).toBe(true);
    }
  });
});

describe('keywordRetriever spills under <cacheDir>/bm25-runs', () => {
  it('with a budget of 100 bytes it writes runs there (the folder is created), removes them, and ranks as without', async () => {
    const cacheDir = tempDir();
    const chunks = Array.from({ length: 40 }, (_, i) => chunk(`c${i}`, `pump seal ${i % 7} kit ${'valve '.repeat(i % 5)}bearing`));
    const ctx = { documents: [], chunks, chunking: { size: null, overlap: 0 }, chunkingKey: 'none', options: {}, signal: new AbortController().signal, cacheDir } as unknown as Parameters<ReturnType<typeof keywordRetriever>>[0];
    const spilled = await keywordRetriever({}, { spillBytes: 100 })(ctx);
    const memory = await keywordRetriever({}, { spillBytes: Infinity })(ctx);
    expect(readdirSync(path.join(cacheDir, 'bm25-runs'))).toEqual([]);
    for (const text of ['pump valve', 'seal 3', 'bearing kit valve valve']) {
      const q = { id: 'q', text };
      expect(await spilled.search(q, 10, ctx.signal)).toEqual(await memory.search(q, 10, ctx.signal));
    }
  });
});

describe('run files do not outlive their build', () => {
  it('a killed build\'s runs are removed by the next build; a live build\'s are kept; ours are removed after the merge', async () => {
    const dir = tempDir();
    const dead = path.join(dir, `bm25-run-0-0.tmp-${deadPid()}-123`);
    const live = path.join(dir, `bm25-run-7-0.tmp-${process.pid}-123`);
    for (const f of [dead, live]) writeFileSync(f, 'x');
    // A build under its budget writes nothing but still clears the dead build's runs.
    await buildKeywordIndexParallel([chunk('a', 'pump seal')], {}, { threads: 1, spillBytes: 1024, spillDir: dir });
    expect(readdirSync(dir).sort()).toEqual([path.basename(live)]);
    const dead2 = path.join(dir, `bm25-run-1-4.tmp-${deadPid()}-456`);
    writeFileSync(dead2, 'x');
    let runs = 0;
    const chunks = Array.from({ length: 50 }, (_, i) => chunk(`c${i}`, `pump seal ${i} kit valve bearing`));
    await buildKeywordIndexParallel(chunks, {}, { threads: 1, batchChars: 40, inProcessChars: 0, spillBytes: 100, spillDir: dir, onSpill: (r) => (runs = r) });
    expect(runs).toBeGreaterThan(5);
    expect(readdirSync(dir)).toEqual([path.basename(live)]);
  });

  it('a build that fails after spilling (here onProgress throws) removes its runs', async () => {
    const dir = tempDir();
    const chunks = Array.from({ length: 50 }, (_, i) => chunk(`c${i}`, `pump seal ${i} kit valve bearing`));
    let calls = 0;
    const onProgress = (): void => {
      if (++calls === 30) {
        expect(readdirSync(dir).length).toBeGreaterThan(3); // runs were written before the failure
        throw new Error('stop here');
      }
    };
    // batchChars 1: one chunk a batch, so onProgress is called 50 times.
    await expect(buildKeywordIndexParallel(chunks, {}, { threads: 1, batchChars: 1, inProcessChars: 0, spillBytes: 100, spillDir: dir, onProgress })).rejects.toThrow('stop here');
    expect(readdirSync(dir)).toEqual([]);
  });
});

/** Builds in memory and spilled (`threads` analysers, a 256 KB budget), checks arrays and depth-100 rankings; returns the runs. */
async function differential(name: string, threads: number): Promise<{ runs: number; queries: number; hits: number }> {
  const { chunks, queries } = await beirChunksAndQueries(path.join(datasets, name));
  const memory = await buildKeywordIndexParallel(chunks, {}, { threads: 1, spillBytes: Infinity });
  const dir = tempDir();
  let runs = 0;
  const spilled = await buildKeywordIndexParallel(chunks, {}, { threads, inProcessChars: 0, batchChars: 64 * 1024, spillBytes: 256 * 1024, spillDir: dir, onSpill: (r) => (runs = r) });
  expect(differences(spilled, memory)).toEqual([]);
  expect(readdirSync(dir)).toEqual([]);
  const mismatches: number[] = [];
  let hits = 0;
  queries.forEach((q, i) => {
    const a = spilled.search(q, 100);
    const b = memory.search(q, 100);
    hits += b.length;
    if (a.length !== b.length || a.some((h, j) => h.id !== b[j].id || !Object.is(h.score, b[j].score))) mismatches.push(i);
  });
  expect(mismatches).toEqual([]);
  return { runs, queries: queries.length, hits };
}

describe.skipIf(!existsSync(path.join(datasets, 'scifact')))('differential on real data: SciFact', () => {
  it('2 worker threads, 256 KB budget: many runs, every array equal, depth-100 rankings equal on all 1,109 queries', async () => {
    const { runs, queries, hits } = await differential('scifact', 2);
    expect(queries).toBe(1109);
    expect(runs).toBeGreaterThan(10);
    expect(hits).toBeGreaterThan(1109 * 50); // most queries fill depth 100: the comparison is not vacuous
  }, 120_000);
});

describe.skipIf(!existsSync(path.join(datasets, 'trec-dl-2019-5k')))('differential on real data: TREC-DL 2019 5k', () => {
  it('one thread, 256 KB budget: many runs, every array equal, depth-100 rankings equal on every query', async () => {
    const { runs, queries, hits } = await differential('trec-dl-2019-5k', 1);
    expect(runs).toBeGreaterThan(3);
    expect(hits).toBeGreaterThan(queries * 50);
  }, 120_000);
});

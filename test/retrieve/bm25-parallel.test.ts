/**
 * buildKeywordIndexParallel: the analysis on worker threads, each numbering terms in a table of its own, merged in
 * chunk order. The claim is that the index is the one buildKeywordIndex builds on one thread, not merely one that
 * ranks alike: same dictionary (term → id, in the same order), same postings, same term frequencies (including the
 * ones of 255 and more kept in a side map), same per-chunk normalisation. Checked on the internal arrays.
 */
import { getEventListeners } from 'node:events';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { analyseBatch, createTermTable } from '../../src/retrieve/bm25-analyse.js';
import { buildKeywordIndex, buildKeywordIndexParallel, type KeywordIndex } from '../../src/retrieve/bm25.js';
import { keywordTokens } from '../../src/retrieve/tokenize.js';
import { isHarnessError } from '../../src/errors.js';
import type { Chunk } from '../../src/types.js';

const chunk = (id: string, text: string): Chunk => ({ id, docId: id, ordinal: 0, text, start: 0, end: text.length, tokens: 0 });

/** The index's internal arrays as plain values (private fields of the compact index). */
function layout(index: KeywordIndex): Record<string, unknown> {
  const x = index as unknown as Record<string, unknown>;
  return {
    ids: x.ids,
    dict: [...(x.dict as Map<string, number>)],
    offsets: Array.from(x.offsets as Int32Array),
    postDoc: Array.from(x.postDoc as Int32Array),
    postTf: Array.from(x.postTf as Uint8Array),
    bigTf: [...(x.bigTf as Map<number, number>)],
    idf: Array.from(x.idf as Float64Array),
    k1norm: Array.from(x.k1norm as Float64Array),
  };
}

const WORDS = ['seal', 'kit', 'pump', 'lmp-204', 'the', 'valve', 'seals', 'x86_64', 'café', 'bearing', 'hours', 'replace'];
const texts = fc.array(fc.array(fc.constantFrom(...WORDS), { maxLength: 30 }).map((ws) => ws.join(' ')), { minLength: 1, maxLength: 40 });

describe('analyseBatch: forward lists over a private term table', () => {
  it('lists each chunk\'s distinct terms in order of first occurrence, with term frequencies and |d|', () => {
    const table = createTermTable();
    const a = analyseBatch(['pump seal pump kit', 'kit the kit'], table);
    // keywordTokens: 'pump seal pump kit' -> pump, seal, pump, kit; 'kit the kit' -> kit, kit ('the' is a stop word)
    expect(a.newTerms).toEqual(['pump', 'seal', 'kit']);
    expect(Array.from(a.lengths)).toEqual([4, 2]);
    expect(Array.from(a.distinct)).toEqual([3, 1]);
    expect(Array.from(a.terms)).toEqual([0, 1, 2, 2]);
    expect(Array.from(a.tfs)).toEqual([2, 1, 1, 2]);
    // A second batch continues the local ids and sends only the terms new to this table.
    const b = analyseBatch(['valve pump'], table);
    expect(b.newTerms).toEqual(['valv']);
    expect(Array.from(b.terms)).toEqual([3, 0]);
    expect(Array.from(b.tfs)).toEqual([1, 1]);
  });
});

describe('buildKeywordIndexParallel builds the one-thread index', () => {
  it('same internal arrays for any corpus and batch size (in-process merge of many batches)', async () => {
    await fc.assert(
      fc.asyncProperty(texts, fc.integer({ min: 1, max: 200 }), (ts, batchChars) => {
        const chunks = ts.map((t, i) => chunk(`c${i}`, t));
        const one = buildKeywordIndex(chunks);
        // threads: 1 merges batch after batch from one table; the worker path is checked below.
        return buildKeywordIndexParallel(chunks, {}, { threads: 1, batchChars, inProcessChars: 0 }).then((par) => {
          expect(layout(par)).toEqual(layout(one));
        });
      }),
      { numRuns: 150 },
    );
  });

  it('same internal arrays with 2 and 3 worker threads, each with its own term table, batches of ~50 characters', async () => {
    const rand = ((s: number) => () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31))(7);
    const chunks: Chunk[] = [];
    for (let i = 0; i < 400; i++) {
      const n = 1 + Math.floor(rand() * 20);
      chunks.push(chunk(`d${i}`, Array.from({ length: n }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(' ')));
    }
    const one = buildKeywordIndex(chunks);
    for (const threads of [2, 3]) {
      const par = await buildKeywordIndexParallel(chunks, {}, { threads, batchChars: 50, inProcessChars: 0 });
      expect(layout(par)).toEqual(layout(one));
    }
  });

  it('term frequencies of 255 and more go through the side map on worker threads too', async () => {
    const big = Array.from({ length: 300 }, () => 'pump').join(' ');
    const edge = Array.from({ length: 255 }, () => 'seal').join(' ');
    const chunks = [chunk('a', big), chunk('b', 'pump seal'), chunk('c', edge), chunk('d', 'kit')];
    const par = await buildKeywordIndexParallel(chunks, {}, { threads: 2, batchChars: 1, inProcessChars: 0 });
    const l = layout(par);
    expect(l).toEqual(layout(buildKeywordIndex(chunks)));
    // Postings of 'pump' (term 0): a with tf 300 (marker 255 + side map), b with 1; 'seal' (term 1): b 1, c 255.
    expect(l.postTf).toEqual([255, 1, 1, 255, 1]);
    expect(l.bigTf).toEqual([
      [0, 300],
      [3, 255],
    ]);
    expect(keywordTokens(big)).toHaveLength(300);
  });

  it('a worker\'s result slot grows when a later batch needs more room than its first (1,024 chunks or entries)', async () => {
    // 40 small chunks first (every slot of both workers is created small), then chunks of 3,000 distinct terms
    // (w0 … w2999): their batches outgrow the entries of the slots they reuse. Then, in batches of 20,000 characters,
    // the wide chunks two a batch and the 2,000 one-word chunks in one batch of more than 1,024 chunks.
    const wide = Array.from({ length: 3000 }, (_, i) => `w${i}`).join(' ');
    const chunks = [
      ...Array.from({ length: 40 }, (_, i) => chunk(`a${i}`, `pump seal ${i}`)),
      ...Array.from({ length: 8 }, (_, i) => chunk(`b${i}`, `${wide} kit${i}`)),
      ...Array.from({ length: 2000 }, (_, i) => chunk(`c${i}`, `x${i}`)),
    ];
    const par = await buildKeywordIndexParallel(chunks, {}, { threads: 2, batchChars: 10, inProcessChars: 0 });
    expect(layout(par)).toEqual(layout(buildKeywordIndex(chunks)));
    const bulk = await buildKeywordIndexParallel(chunks.slice(40), {}, { threads: 2, batchChars: 20_000, inProcessChars: 0 });
    expect(layout(bulk)).toEqual(layout(buildKeywordIndex(chunks.slice(40))));
  });

  it('forward lists denser than the reserve (one posting per 8 characters) grow and give the same index', async () => {
    // 600 chunks of 12 distinct two-character terms: 12 postings per 36 characters, 3 times the reserve's density.
    const chunks = Array.from({ length: 600 }, (_, i) => chunk(`d${i}`, Array.from({ length: 12 }, (_, j) => `${'abcdefghijklmnopqrstuvwxyz'[(i + j) % 26]}${j}`).join(' ')));
    const one = buildKeywordIndex(chunks);
    expect((layout(one).postDoc as number[]).length).toBe(600 * 12);
    expect(600 * 12).toBeGreaterThan(chunks.reduce((n, c) => n + c.text.length, 0) / 8);
    expect(layout(await buildKeywordIndexParallel(chunks, {}, { threads: 2, batchChars: 2000, inProcessChars: 0 }))).toEqual(layout(one));
  });

  it('reports progress per merged batch, ending at (chunks, chunks)', async () => {
    const chunks = Array.from({ length: 30 }, (_, i) => chunk(`c${i}`, `pump seal ${i}`));
    const seen: [number, number][] = [];
    await buildKeywordIndexParallel(chunks, {}, { threads: 2, batchChars: 30, inProcessChars: 0, onProgress: (d, t) => seen.push([d, t]) });
    expect(seen.length).toBeGreaterThan(2);
    expect(seen.at(-1)).toEqual([30, 30]);
    for (let i = 1; i < seen.length; i++) expect(seen[i][0]).toBeGreaterThan(seen[i - 1][0]);
  });

  it('an aborted build rejects with the signal\'s reason', async () => {
    const chunks = Array.from({ length: 2000 }, (_, i) => chunk(`c${i}`, `pump seal valve kit ${i}`));
    const ac = new AbortController();
    const reason = new Error('stop');
    const p = buildKeywordIndexParallel(chunks, {}, { threads: 2, batchChars: 20, inProcessChars: 0, signal: ac.signal, onProgress: (d) => d > 100 && ac.abort(reason) });
    await expect(p).rejects.toBe(reason);
    const already = new AbortController();
    already.abort(reason);
    await expect(buildKeywordIndexParallel(chunks, {}, { signal: already.signal })).rejects.toBe(reason);
  });

  it('a build that fails (here onProgress throws) rejects with that error and leaves no abort listener behind', async () => {
    const chunks = Array.from({ length: 200 }, (_, i) => chunk(`c${i}`, `pump seal ${i}`));
    const ac = new AbortController();
    const boom = new Error('progress failed');
    const p = buildKeywordIndexParallel(chunks, {}, { threads: 2, batchChars: 20, inProcessChars: 0, signal: ac.signal, onProgress: () => { throw boom; } });
    await expect(p).rejects.toBe(boom);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
  });

  it('bad layout options are refused before any work (no progress reported)', async () => {
    const chunks = Array.from({ length: 50 }, (_, i) => chunk(`c${i}`, `pump ${i}`));
    const calls: number[] = [];
    for (const bad of [{ searchBlockDocs: 0 }, { batchChars: 0 }, { batchChars: Number.NaN }, { inProcessChars: -1 }]) {
      await expect(buildKeywordIndexParallel(chunks, {}, { threads: 2, inProcessChars: 0, ...bad, onProgress: (d) => calls.push(d) })).rejects.toThrow(/must be/);
    }
    expect(calls).toEqual([]);
  });

  it('threads must be an integer >= 1 (CONFIG_INVALID naming the value)', async () => {
    const e = await buildKeywordIndexParallel([chunk('a', 'x')], {}, { threads: 0 }).catch((x: unknown) => x);
    expect(isHarnessError(e) && e.code).toBe('CONFIG_INVALID');
    expect((e as Error).message).toContain('(0)');
  });

  it('empty and stop-word-only collections', async () => {
    expect((await buildKeywordIndexParallel([])).size).toBe(0);
    const idx = await buildKeywordIndexParallel([chunk('a', 'the'), chunk('b', 'of the')], {}, { threads: 2, batchChars: 1, inProcessChars: 0 });
    expect(idx.search('the pump', 10)).toEqual([]);
  });
});

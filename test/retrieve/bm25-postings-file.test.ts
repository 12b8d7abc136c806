/**
 * The BM25 index's postings on disk (bm25-postings-file.ts, issue 25 item 1). The claims: the file holds the merged
 * postings as written (a hand-worked example, read back whole and term by term); what is read back is checked
 * (a changed byte and a cut file are errors naming the file and the term, never a wrong ranking); the file leaves
 * nothing in its folder; and an index whose postings are in a file ranks and scores every query as the resident
 * index, bit for bit, with both searches (MaxScore and exhaustive), and holds the same block-max bounds.
 */
import { existsSync, fstatSync, ftruncateSync, mkdtempSync, readdirSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isHarnessError } from '../../src/errors.js';
import { beirChunksAndQueries } from '../helpers/datasets.js';
import { buildKeywordIndexParallel, type KeywordIndex, type TopKStrategy } from '../../src/retrieve/bm25.js';
import { PostingsFileWriter, POSTING_BYTES, type PostingsFile } from '../../src/retrieve/bm25-postings-file.js';
import { TF_ESCAPE } from '../../src/retrieve/bm25-spill.js';
import { keywordRetriever } from '../../src/retrieve/builtin.js';
import type { Chunk, Hit } from '../../src/types.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const datasets = path.resolve(here, '../../../shared/datasets');
const chunk = (id: string, text: string): Chunk => ({ id, docId: id, ordinal: 0, text, start: 0, end: text.length, tokens: 0 });
const tempDir = (): string => mkdtempSync(path.join(tmpdir(), 'rs-bm25file-'));
const fdOf = (f: PostingsFile): number => (f as unknown as { fd: number }).fd;

/** The hand-worked postings of test/retrieve/bm25-spill.test.ts's merge: 4 terms, 7 postings, one escaped tf. */
function example(dir: string): PostingsFile {
  const w = new PostingsFileWriter(dir, 7, 4);
  // Term 0 in chunks 0 (tf 1) and 4 (tf 5), in two groups (two runs); term 1 in chunk 1; term 2 in chunks 0, 1, 3
  // (tf 3, escaped, 2); term 3 in chunk 3.
  w.put(0, Int32Array.of(0), Uint8Array.of(1));
  w.put(0, Int32Array.of(4), Uint8Array.of(5));
  w.put(1, Int32Array.of(1), Uint8Array.of(1));
  w.put(2, Int32Array.of(0, 1), Uint8Array.of(3, TF_ESCAPE));
  w.put(2, Int32Array.of(3), Uint8Array.of(2));
  w.put(3, Int32Array.of(3), Uint8Array.of(1));
  return w.finish(Int32Array.of(0, 2, 3, 6, 7));
}

describe('PostingsFileWriter + PostingsFile: a hand-worked file', () => {
  it('holds 4 bytes of chunk position then 1 of tf per posting, reads back whole and term by term, and is unlinked', () => {
    const dir = tempDir();
    const f = example(dir);
    expect(readdirSync(dir)).toEqual([]); // unlinked as soon as it was open
    expect(fstatSync(fdOf(f)).size).toBe(7 * 4 + 7);
    expect([f.total, f.bytes, POSTING_BYTES]).toEqual([7, 35, 5]);
    const doc = new Int32Array(9).fill(-1);
    const tf = new Uint8Array(9);
    f.read(0, 4, doc, tf, 1);
    expect(Array.from(doc)).toEqual([-1, 0, 4, 1, 0, 1, 3, 3, -1]);
    expect(Array.from(tf)).toEqual([0, 1, 5, 1, 3, TF_ESCAPE, 2, 1, 0]);
    // Term 2 alone, at position 0: its postings are file positions 3..5.
    const d2 = new Int32Array(3);
    const t2 = new Uint8Array(3);
    f.read(2, 3, d2, t2, 0);
    expect([Array.from(d2), Array.from(t2)]).toEqual([[0, 1, 3], [3, TF_ESCAPE, 2]]);
    f.close();
    expect(() => f.read(0, 1, doc, tf, 0)).toThrow(/is closed/);
    f.close(); // idempotent
  });

  it('a changed byte fails the changed term\'s CRC-32 (CACHE_FAILED naming the file and the term); other terms still read', () => {
    const f = example(tempDir());
    // Term 2's first chunk position is file position 3: bytes 12..15. Write 9 over its low byte (0 → 9).
    writeSync(fdOf(f), Uint8Array.of(9), 0, 1, 4 * 3);
    const doc = new Int32Array(7);
    const tf = new Uint8Array(7);
    let err: unknown;
    try {
      f.read(2, 3, doc, tf, 0);
    } catch (e) {
      err = e;
    }
    expect(isHarnessError(err) && err.code === 'CACHE_FAILED').toBe(true);
    expect((err as Error).message).toContain(f.file);
    expect((err as Error).message).toContain("term 2's postings fail their CRC-32");
    f.read(0, 2, doc, tf, 0);
    expect(Array.from(doc.subarray(0, 3))).toEqual([0, 4, 1]);
    // A changed tf byte (term 3's, the last byte of the file: 28 + 6) is caught the same way.
    writeSync(fdOf(f), Uint8Array.of(2), 0, 1, 28 + 6);
    expect(() => f.read(3, 4, doc, tf, 0)).toThrow(/term 3's postings fail their CRC-32/);
  });

  it('a file cut short is an error naming the byte that is missing, not zeros', () => {
    const f = example(tempDir());
    ftruncateSync(fdOf(f), 30); // the tf region starts at byte 28: term 0's two tf bytes are there, term 3's (byte 34) not
    const doc = new Int32Array(7);
    const tf = new Uint8Array(7);
    f.read(0, 1, doc, tf, 0);
    expect(() => f.read(3, 4, doc, tf, 0)).toThrow(/has nothing at byte 34 of its 35 bytes: it was cut short/);
  });

  it('more postings than announced, or fewer at the end, are errors; abort removes the file', () => {
    const dir = tempDir();
    const w = new PostingsFileWriter(dir, 2, 1);
    w.put(0, Int32Array.of(0, 1), Uint8Array.of(1, 1));
    expect(() => {
      w.put(0, Int32Array.of(2), Uint8Array.of(1));
      w.finish(Int32Array.of(0, 3));
    }).toThrow(/more than 2 postings/);
    w.abort();
    const short = new PostingsFileWriter(dir, 3, 1);
    short.put(0, Int32Array.of(0), Uint8Array.of(1));
    expect(() => short.finish(Int32Array.of(0, 3))).toThrow(/1 postings written, 3 expected/);
    short.abort();
    expect(readdirSync(dir)).toEqual([]);
  });

  it('a group larger than the 2^20-posting write buffer goes straight to the file, between buffered ones', () => {
    const n = (1 << 20) + 3;
    const w = new PostingsFileWriter(tempDir(), n + 2, 3);
    w.put(0, Int32Array.of(5), Uint8Array.of(2));
    const big = new Int32Array(n).map((_, i) => i);
    const bigTf = new Uint8Array(n).map((_, i) => 1 + (i % 200));
    w.put(1, big, bigTf);
    w.put(2, Int32Array.of(7), Uint8Array.of(9));
    const f = w.finish(Int32Array.of(0, 1, n + 1, n + 2));
    const doc = new Int32Array(n + 2);
    const tf = new Uint8Array(n + 2);
    f.read(0, 3, doc, tf, 0);
    let wrong = 0;
    for (let i = 0; i < n; i++) if (doc[1 + i] !== i || tf[1 + i] !== 1 + (i % 200)) wrong++;
    expect([doc[0], tf[0], wrong, doc[n + 1], tf[n + 1]]).toEqual([5, 2, 0, 7, 9]);
    f.close();
  });
});

const hitsEqual = (a: Hit[], b: Hit[]): boolean => a.length === b.length && a.every((h, j) => h.id === b[j].id && Object.is(h.score, b[j].score));
const fields = (x: KeywordIndex): Record<string, unknown> => x as unknown as Record<string, unknown>;

describe('an index with its postings in a file is the resident index', () => {
  const WORDS = ['seal', 'kit', 'pump', 'lmp-204', 'the', 'valve', 'seals', 'x86_64', 'café', 'bearing', 'hours', 'replace'];
  const texts = fc.array(
    fc.array(fc.constantFrom(...WORDS), { maxLength: 30 }).map((ws) => ws.join(' ')),
    { minLength: 1, maxLength: 40 },
  );
  const queries = fc.array(fc.array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 6 }).map((ws) => ws.join(' ')), { minLength: 1, maxLength: 8 });

  it('same block-max bounds (passes of any window) and the same hits and scores, MaxScore and exhaustive, for any corpus and query', async () => {
    const dir = tempDir();
    await fc.assert(
      fc.asyncProperty(texts, queries, fc.integer({ min: 1, max: 400 }), fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 50 }), async (ts, qs, spillBytes, k, window) => {
        // A tf of 255 or more: escaped frequencies are read from the resident side map at the file's positions.
        const chunks = [...ts.map((t, i) => chunk(`c${i}`, t)), chunk('big', 'pump '.repeat(300))];
        for (const topK of ['maxscore', 'exhaustive'] as TopKStrategy[]) {
          const memory = await buildKeywordIndexParallel(chunks, {}, { threads: 1, spillBytes: Infinity, topK, maxScoreWindowDocs: 4, blockMaxPostings: 2 });
          let runs = 0;
          const filed = await buildKeywordIndexParallel(chunks, {}, {
            threads: 1, batchChars: 50, inProcessChars: 0, spillBytes, spillDir: dir, residentPostingsBytes: 1, topK, maxScoreWindowDocs: 4, blockMaxPostings: 2,
            // The block-max pass in windows of 1-50 postings (a term longer than the window is read alone).
            blockWindowPostings: window,
            onSpill: (r) => (runs = r),
          });
          const postings = (fields(memory).postDoc as Int32Array).length;
          // Only a build that spilled puts its postings in a file (5 bytes each).
          expect(filed.postingsFileBytes).toBe(runs > 0 ? 5 * postings : 0);
          for (const name of ['blockStart', 'blockMax', 'blockLast', 'offsets', 'idf', 'k1norm']) {
            expect(Buffer.from((fields(filed)[name] as Int32Array).buffer).equals(Buffer.from((fields(memory)[name] as Int32Array).buffer))).toBe(true);
          }
          for (const q of qs) expect(hitsEqual(filed.search(q, k), memory.search(q, k))).toBe(true);
          expect(filed.searchBatch(qs, k).every((h, i) => hitsEqual(h, memory.search(qs[i], k)))).toBe(true);
          filed.close?.();
          expect(readdirSync(dir)).toEqual([]);
        }
      }),
      { numRuns: 40 },
    );
  });

  it('residentPostingsBytes must be a number of bytes > 0 (CONFIG_INVALID naming the value)', async () => {
    for (const bad of [0, -1, Number.NaN]) {
      const err = await buildKeywordIndexParallel([chunk('a', 'pump')], {}, { residentPostingsBytes: bad }).catch((e: unknown) => e);
      expect(isHarnessError(err) && err.code === 'CONFIG_INVALID' && err.message.includes(`residentPostingsBytes ${String(bad)}`)).toBe(true);
    }
  });

  it('keywordRetriever: postings in a file under <cacheDir>/bm25-runs, the same hits, and close() ends the file', async () => {
    const cacheDir = tempDir();
    const chunks = Array.from({ length: 40 }, (_, i) => chunk(`c${i}`, `pump seal ${i % 7} kit ${'valve '.repeat(i % 5)}bearing`));
    const ctx = { documents: [], chunks, chunking: { size: null, overlap: 0 }, chunkingKey: 'none', options: {}, signal: new AbortController().signal, cacheDir } as unknown as Parameters<ReturnType<typeof keywordRetriever>>[0];
    const filed = await keywordRetriever({}, { spillBytes: 100, residentPostingsBytes: 1 })(ctx);
    const memory = await keywordRetriever({}, { spillBytes: Infinity })(ctx);
    expect(readdirSync(path.join(cacheDir, 'bm25-runs'))).toEqual([]);
    for (const text of ['pump valve', 'seal 3', 'bearing kit valve valve']) {
      const q = { id: 'q', text };
      expect(await filed.search(q, 10, ctx.signal)).toEqual(await memory.search(q, 10, ctx.signal));
    }
    await filed.close?.();
    expect(() => filed.search({ id: 'q', text: 'pump' }, 10, ctx.signal)).toThrow(/is closed/);
  });
});

describe.skipIf(!existsSync(path.join(datasets, 'scifact')))('differential on real data: SciFact with its postings in a file', () => {
  it('depth-100 rankings and scores equal to the resident index on all 1,109 queries, MaxScore and exhaustive', async () => {
    const { chunks, queries } = await beirChunksAndQueries(path.join(datasets, 'scifact'));
    const dir = tempDir();
    let hits = 0;
    for (const topK of ['maxscore', 'exhaustive'] as TopKStrategy[]) {
      const memory = await buildKeywordIndexParallel(chunks, {}, { threads: 1, spillBytes: Infinity, topK });
      const filed = await buildKeywordIndexParallel(chunks, {}, { threads: 2, inProcessChars: 0, spillBytes: 4 << 20, spillDir: dir, residentPostingsBytes: 1 << 20, topK });
      expect(filed.postingsFileBytes).toBe(5 * (fields(memory).postDoc as Int32Array).length);
      const mismatches = queries.filter((q) => !hitsEqual(filed.search(q, 100), memory.search(q, 100)));
      expect(mismatches).toEqual([]);
      for (const q of queries) hits += memory.search(q, 100).length;
      filed.close?.();
    }
    expect(hits).toBeGreaterThan(2 * 1109 * 50); // most queries fill depth 100: the comparison is not vacuous
    expect(readdirSync(dir)).toEqual([]);
  }, 120_000);
});

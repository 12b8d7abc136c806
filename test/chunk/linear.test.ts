/**
 * The linear route: operation counts (characters tokenized + characters scanned by the splitter and the alignment)
 * of a document 4x longer are at most 5x, and the parallel path gives chunkDocuments' chunks in order, with
 * progress, errors and abort. Speed itself is measured in bench/chunking.ts, not asserted here.
 */
import { describe, expect, it } from 'vitest';
import { chunkDocuments, countTokens, defaultTokenizer } from '../../src/chunk/chunker.js';
import runChunkTask, { SPAN_FIELDS } from '../../src/chunk/worker.js';
import { chunkDocumentsParallel, createChunkPool, TASKS_PER_THREAD, type ChunkPool } from '../../src/chunk/parallel.js';
import type { SplitCounter } from '../../src/chunk/splitter.js';
import { isHarnessError } from '../../src/errors.js';
import type { Doc } from '../../src/types.js';

/**
 * A deterministic single-paragraph text of `sentences` sentences with what the sentence tokenizer replaces:
 * abbreviations, numbers, URLs (one holding "ing."), e-mail addresses, quotes, `?!`, `…` and sub-sentence
 * punctuation; one sentence in 23 is a long list without a full stop (sub-sentence and word splits).
 */
function syntheticText(sentences: number): string {
  const words = ['alpha', 'beta', 'gamma', 'delta', 'protein', 'cells', 'mice', 'expression', 'the', 'of', 'and', 'in'];
  const out: string[] = [];
  let seed = 7;
  const next = (): number => (seed = (seed * 1103515245 + 12345) % 2147483648);
  for (let s = 0; s < sentences; s++) {
    const n = 6 + (next() % 14);
    const w: string[] = [];
    for (let i = 0; i < n; i++) w.push(words[next() % words.length]);
    switch (s % 7) {
      case 0: w.splice(2, 0, `${next() % 1000}.${next() % 10}`); break;
      case 1: w.splice(1, 0, 'Dr.', 'Smith', 'et', 'al.,'); break;
      case 2: w.push('see', 'http://docking.org/x?id=' + (next() % 100)); break;
      case 3: w.push('mail', 'help@example.com'); break;
      case 4: w.splice(3, 0, '"quoted,', 'text;"'); break;
      default: break;
    }
    if (s % 23 === 0) for (let i = 0; i < 60; i++) w.push(`${words[next() % words.length]},`);
    out.push(w.join(' ') + ['.', '?!', '…', '."', '.)'][s % 5]);
  }
  return out.join(' ');
}

function operations(text: string): number {
  const counter: SplitCounter = { tokenizedChars: 0, scannedChars: 0 };
  chunkDocuments([{ id: 'd', text }], { size: 128, overlap: 16 }, defaultTokenizer(), { counter });
  return counter.tokenizedChars + counter.scannedChars;
}

describe('complexity: chunking cost grows linearly with the document', () => {
  it('a document 4x longer costs at most 5x the operations (tokenized + scanned characters), at 128 tokens', () => {
    const short = syntheticText(1500); // ~120 KB, one paragraph: the reference's quadratic case
    const long = syntheticText(6000);
    expect(long.length / short.length).toBeGreaterThan(3.9);
    const ratio = operations(long) / operations(short);
    // Linear: about 4 (the reference's sentence tokenizer alone would be about 16 here).
    expect(ratio).toBeGreaterThan(3.5);
    expect(ratio).toBeLessThanOrEqual(5);
  });

  it('the operations per character stay within a small constant (tokenizing and scanning each character a few times)', () => {
    const text = syntheticText(3000);
    const perChar = operations(text) / text.length;
    expect(perChar).toBeGreaterThan(1);
    expect(perChar).toBeLessThan(30); // about 18 on this text
  });
});

describe('chunkDocumentsParallel', () => {
  const docs: Doc[] = Array.from({ length: 40 }, (_, i) => ({ id: `d${i}`, text: syntheticText(30 + (i % 7) * 10) }));
  docs.push({ id: 'blank', text: '   ' });

  it('on worker threads: the same chunks as chunkDocuments, in order, with progress up to (total, total)', async () => {
    const progress: [number, number][] = [];
    const spec = { size: 64, overlap: 16 };
    const par = await chunkDocumentsParallel(docs, spec, {
      threads: 2,
      batchChars: 20_000,
      inProcessChars: 0, // force the workers on a small input
      onProgress: (d, t) => progress.push([d, t]),
    });
    expect(par).toEqual(chunkDocuments(docs, spec));
    expect(progress.length).toBeGreaterThan(2);
    expect(progress.at(-1)).toEqual([docs.length, docs.length]);
    for (let i = 1; i < progress.length; i++) expect(progress[i][0]).toBeGreaterThan(progress[i - 1][0]);
  });

  it('the worker answers with ranges, not texts: [doc index, ordinal, start, end, tokens] per chunk, blank documents skipped', () => {
    const task = { docs: [{ id: 'a', text: 'hello world' }, { id: 'b', text: '  ' }, { id: 'c', text: 'one two three' }], spec: { size: null, overlap: 0 } };
    const r = runChunkTask({ ...task, splitter: 'linear', output: 'spans' });
    const tok = (t: string): number => countTokens(defaultTokenizer(), t);
    expect(SPAN_FIELDS).toBe(5);
    expect(r.ok && r.chunks === undefined).toBe(true);
    expect(r.ok ? [...r.spans!] : null).toEqual([0, 0, 0, 'hello world'.length, tok('hello world'), 2, 0, 0, 'one two three'.length, tok('one two three')]);
  });

  it('texts are sliced from the caller\'s own documents by index, so two documents with one id keep their own texts', async () => {
    const twins: Doc[] = [
      { id: 'twin', text: syntheticText(40) },
      { id: 'twin', text: syntheticText(25).toUpperCase() },
      { id: 'other', text: syntheticText(30) },
    ];
    for (const spec of [{ size: null, overlap: 0 }, { size: 64, overlap: 16 }]) {
      const par = await chunkDocumentsParallel(twins, spec, { threads: 2, batchChars: 1, inProcessChars: 0 });
      expect(par).toEqual(chunkDocuments(twins, spec));
      const firstOfTwin = par.filter((c) => c.docId === 'twin' && c.ordinal === 0);
      expect(firstOfTwin.map((c) => c.text)).toEqual([twins[0].text.slice(0, firstOfTwin[0].end), twins[1].text.slice(0, firstOfTwin[1].end)]);
      expect(firstOfTwin[0].text).not.toBe(firstOfTwin[1].text);
    }
    // Whole documents: each chunk is its document's text.
    const whole = await chunkDocumentsParallel(twins, { size: null, overlap: 0 }, { threads: 2, batchChars: 1, inProcessChars: 0 });
    expect(whole.map((c) => c.text)).toEqual(twins.map((d) => d.text));
  });

  it('in-process below the threshold: the same chunks, one progress call per batch', async () => {
    const progress: number[] = [];
    const spec = { size: null, overlap: 0 };
    const par = await chunkDocumentsParallel(docs, spec, { onProgress: (d) => progress.push(d) });
    expect(par).toEqual(chunkDocuments(docs, spec));
    expect(progress.at(-1)).toBe(docs.length);
  });

  it('a shared pool serves several chunkings and stays open', async () => {
    const pool = createChunkPool(2);
    try {
      for (const spec of [{ size: 128, overlap: 0 }, { size: 256, overlap: 32 }]) {
        const par = await chunkDocumentsParallel(docs, spec, { pool, batchChars: 30_000, inProcessChars: 0 });
        expect(par).toEqual(chunkDocuments(docs, spec));
      }
    } finally {
      await pool.close();
    }
  });

  it('an invalid spec is rejected before any work with CONFIG_INVALID; so are threads 0', async () => {
    await expect(chunkDocumentsParallel(docs, { size: 8, overlap: 8 })).rejects.toSatisfy((e) => isHarnessError(e, 'CONFIG_INVALID'));
    await expect(chunkDocumentsParallel(docs, { size: 8, overlap: 0 }, { threads: 0 })).rejects.toSatisfy((e) =>
      isHarnessError(e, 'CONFIG_INVALID'),
    );
  });

  it('a HarnessError in a worker comes back as a HarnessError naming the document', async () => {
    // At size 1 the splitter fails on a single code unit of 2 cl100k tokens (U+0800 is one; a lone surrogate is 1).
    const tok = defaultTokenizer();
    const unit = ['\u0800', '\u4e02', '\uAC01', '\u10FF'].find((c) => tok.encode(c).length > 1)!;
    expect(unit).toBeDefined();
    const bad: Doc[] = [{ id: 'bad-doc', text: `${unit}${unit} ${unit}` }];
    let caught: unknown;
    try {
      await chunkDocumentsParallel(bad, { size: 1, overlap: 0 }, { threads: 1, inProcessChars: 0 });
    } catch (e) {
      caught = e;
    }
    expect(isHarnessError(caught, 'CONFIG_INVALID')).toBe(true);
    expect((caught as Error).message).toContain('"bad-doc"');
  });

  it('abort: a signal aborted before the start rejects with its reason and does no work', async () => {
    const controller = new AbortController();
    controller.abort(new Error('stop here'));
    await expect(chunkDocumentsParallel(docs, { size: 64, overlap: 0 }, { signal: controller.signal, inProcessChars: 0 })).rejects.toThrow(
      'stop here',
    );
  });

  it('abort during the work: no batch starts after it, no progress after it, the promise rejects with the reason', async () => {
    const controller = new AbortController();
    const progress: number[] = [];
    const totalChars = docs.reduce((n, d) => n + d.text.length, 0);
    const run = chunkDocumentsParallel(docs, { size: 64, overlap: 0 }, {
      signal: controller.signal,
      threads: 2,
      batchChars: 5_000,
      inProcessChars: 0,
      onProgress: (d) => {
        progress.push(d);
        controller.abort(new Error('aborted after the first batch'));
      },
    });
    await expect(run).rejects.toThrow('aborted after the first batch');
    // More than 2 batches exist, and the first completion aborts: exactly one progress call, before the end.
    expect(totalChars).toBeGreaterThan(3 * 5_000);
    expect(progress.length).toBe(1);
    expect(progress[0]).toBeLessThan(docs.length);
  });

  it('keeps TASKS_PER_THREAD (2) batches in flight per thread, so a worker has its next batch while this thread takes the last answer; chunks unchanged', async () => {
    expect(TASKS_PER_THREAD).toBe(2);
    // A pool of one "thread" that answers each batch after a timer, recording how many were in flight at once.
    let inFlight = 0;
    let most = 0;
    let calls = 0;
    const pool: ChunkPool = {
      threads: 1,
      run: async (task) => {
        calls++;
        most = Math.max(most, ++inFlight);
        await new Promise((r) => setTimeout(r, 2));
        inFlight--;
        return runChunkTask(task);
      },
      close: async () => undefined,
    };
    const spec = { size: 64, overlap: 8 };
    const got = await chunkDocumentsParallel(docs, spec, { pool, batchChars: 3_000, inProcessChars: 0 });
    expect(calls).toBeGreaterThan(2); // more batches than the pipeline is deep
    expect(most).toBe(1 * 2); // threads × TASKS_PER_THREAD
    expect(got).toEqual(chunkDocuments(docs, spec, defaultTokenizer()));
  });

  it('abort on a shared pool: the pool stays usable and gives the same chunks afterwards (20 rounds)', async () => {
    // The abort used to reach piscina, whose cancel of a running task could race the worker's reply into an
    // uncaught "Unexpected message from Worker" error; now the signal never reaches piscina.
    const pool = createChunkPool(2);
    const spec = { size: 64, overlap: 0 };
    try {
      for (let round = 0; round < 20; round++) {
        const controller = new AbortController();
        const run = chunkDocumentsParallel(docs, spec, {
          pool,
          signal: controller.signal,
          batchChars: 2_000,
          inProcessChars: 0,
          onProgress: () => controller.abort(new Error(`round ${round}`)),
        });
        await expect(run).rejects.toThrow(`round ${round}`);
      }
      expect(await chunkDocumentsParallel(docs, spec, { pool, batchChars: 30_000, inProcessChars: 0 })).toEqual(chunkDocuments(docs, spec));
    } finally {
      await pool.close();
    }
  });

  it('ChunkPool.run rejects with the reason as soon as its signal aborts', async () => {
    const pool = createChunkPool(1);
    try {
      const controller = new AbortController();
      const pending = pool.run({ docs, spec: { size: 64, overlap: 0 }, splitter: 'llamaindex', output: 'chunks' }, controller.signal);
      controller.abort(new Error('cancelled by caller'));
      await expect(pending).rejects.toThrow('cancelled by caller');
      const already = new AbortController();
      already.abort(new Error('already aborted'));
      await expect(pool.run({ docs: docs.slice(0, 1), spec: { size: 64, overlap: 0 }, splitter: 'linear', output: 'chunks' }, already.signal)).rejects.toThrow(
        'already aborted',
      );
    } finally {
      await pool.close();
    }
  });
});

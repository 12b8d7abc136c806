/**
 * Fingerprints computed while loading (issue 25, session 12): `Dataset.fingerprint` and `Dataset.corpusFingerprint`
 * as the loaders compute them (hashed while a BEIR corpus in id order streams, else `fingerprintBoth`'s one pass)
 * must equal the reference functions `fingerprintDataset` and `fingerprintCorpus` on every dataset: SciFact, the
 * TREC-DL slice, the folder-layout demo, a sampled dataset, corpora in and out of id order (with collapsed duplicates),
 * and text-store-backed loads. Differential tests: the reference functions are the oracle.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/schema.js';
import { loadBeir } from '../../src/load/beir.js';
import { corpusFingerprintOf, fingerprintBoth, fingerprintBothAsync, fingerprintCorpus, fingerprintDataset, loadDataset, type DatasetSpec, type LoadDatasetOptions } from '../../src/load/dataset.js';
import { StreamingFingerprints } from '../../src/load/fingerprint.js';
import { sampleDataset, subsetDataset } from '../../src/load/sample.js';
import { isStored, TextStore, textStoreOf, UTF8_MAX_UNITS } from '../../src/load/text-store.js';
import { storedBytes } from '../helpers/stored-bytes.js';
import { planEnv } from '../../src/plan/env.js';
import { planGraph } from '../../src/plan/graph.js';
import type { Dataset, Doc, Question } from '../../src/types.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const shared = path.resolve(repo, '../shared/datasets');
const scifact = path.join(shared, 'scifact');
const trecDl = path.join(shared, 'trec-dl-2019-5k');
const helpdesk = path.join(repo, 'datasets/helpdesk');

const tmp = mkdtempSync(path.join(tmpdir(), 'rs-fpstream-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Both fingerprints of `ds` by the reference functions (reads every text again). */
function reference(ds: Dataset): { fingerprint: string; corpusFingerprint: string } {
  return { fingerprint: fingerprintDataset(ds.docs, ds.questions), corpusFingerprint: fingerprintCorpus(ds.docs) };
}

/** Loads, checks both fingerprints against the reference, removes a text store; returns the dataset. */
async function loadAndCheck(spec: DatasetSpec, opts: LoadDatasetOptions = {}): Promise<Dataset> {
  const ds = await loadDataset(spec, opts);
  try {
    expect(ds.corpusFingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect({ fingerprint: ds.fingerprint, corpusFingerprint: ds.corpusFingerprint }).toEqual(reference(ds));
    expect(ds.corpusFingerprint).not.toBe(ds.fingerprint);
  } finally {
    textStoreOf(ds.docs)?.remove();
  }
  return ds;
}

/** A BEIR folder with `lines` as corpus.jsonl, one query q1 judging `judged` (grade 1). */
function beirFolder(name: string, lines: object[], judged: string): string {
  const root = path.join(tmp, name);
  mkdirSync(path.join(root, 'qrels'), { recursive: true });
  writeFileSync(path.join(root, 'corpus.jsonl'), lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  writeFileSync(path.join(root, 'queries.jsonl'), `${JSON.stringify({ _id: 'q1', text: 'what is in it' })}\n`);
  writeFileSync(path.join(root, 'qrels/test.tsv'), `query-id\tcorpus-id\tscore\nq1\t${judged}\t1\n`);
  return root;
}

// In id order: d1 < d2 < d3 < e (code units); d2 given twice, once right after itself and once later (collapsed).
const ordered = [
  { _id: 'd1', title: 'One', text: 'first "doc"\n' },
  { _id: 'd2', text: 'second \u00e9\u4e2d' },
  { _id: 'd2', text: 'second \u00e9\u4e2d' },
  { _id: 'd3', title: '', text: 'third\ttab' },
  { _id: 'd2', text: 'second \u00e9\u4e2d' },
  { _id: 'e', text: '' },
];

const q: Question = { id: 'q1', text: 'which?', relevant: { b: 2, a: 1 }, evidence: [], tags: [], line: 1 };

describe('StreamingFingerprints', () => {
  it('documents added in increasing id order give both reference values: the bytes by hand, sha256 of the records', () => {
    const docs: Doc[] = [
      { id: 'a', text: 'x "quoted"\n' },
      { id: 'b', text: 'y\u00e9\u4e2d\ud83d\ude00' },
    ];
    const s = new StreamingFingerprints();
    for (const d of docs) s.add(d.id, d.text);
    expect(s.inOrder).toBe(true);
    expect(s.documents).toBe(2);
    const got = s.finish([q]);
    const records = '["a","x \\"quoted\\"\\n"]\n["b","y\u00e9\u4e2d\ud83d\ude00"]\n';
    expect(got?.corpusFingerprint).toBe(createHash('sha256').update(`corpus\n${records}`).digest('hex'));
    expect(got).toEqual({ fingerprint: fingerprintDataset(docs, [q]), corpusFingerprint: fingerprintCorpus(docs) });
  });

  it('a document whose id is not greater than the previous one (code-unit order) drops the hashes: finish gives undefined', () => {
    // 'syn10' < 'syn9' in code-unit order: the bench corpora's ids arrive like this.
    const s = new StreamingFingerprints();
    s.add('syn9', 'a');
    s.add('syn10', 'b');
    expect(s.inOrder).toBe(false);
    s.add('syn11', 'c');
    expect(s.documents).toBe(3);
    expect(s.finish([q])).toBeUndefined();
    const same = new StreamingFingerprints();
    same.add('a', 'x');
    same.add('a', 'x');
    expect(same.finish([])).toBeUndefined();
  });

  it('finish twice is a bug: throws', () => {
    const s = new StreamingFingerprints();
    s.finish([]);
    expect(() => s.finish([])).toThrow(/twice/);
  });
});

describe('fingerprintBoth equals fingerprintDataset and fingerprintCorpus', () => {
  it('on random documents (any order, escapes, non-BMP, lone surrogates) and questions', () => {
    const doc = fc.record({ id: fc.string({ minLength: 1, maxLength: 6, unit: 'binary' }), text: fc.string({ maxLength: 200, unit: 'binary' }) });
    fc.assert(
      fc.property(fc.uniqueArray(doc, { selector: (d) => d.id, maxLength: 30 }), fc.array(fc.string(), { maxLength: 3 }), (docs, qtexts) => {
        const questions = qtexts.map((text, i): Question => ({ id: `q${i}`, text, relevant: { [docs[0]?.id ?? 'x']: 1 }, evidence: [], tags: [], line: i + 1 }));
        const before = docs.map((d) => d.id);
        expect(fingerprintBoth(docs, questions)).toEqual({ fingerprint: fingerprintDataset(docs, questions), corpusFingerprint: fingerprintCorpus(docs) });
        expect(docs.map((d) => d.id)).toEqual(before); // pure: the input is not sorted in place
      }),
      { numRuns: 200, seed: 12 },
    );
  });

  it('the streamed values equal fingerprintBoth on the same documents fed in id order', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.string({ minLength: 1, maxLength: 5 }), { maxLength: 40 }), (ids) => {
        const docs = [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).map((id) => ({ id, text: `text of ${id}\t"` }));
        const s = new StreamingFingerprints();
        for (const d of docs) s.add(d.id, d.text);
        expect(s.finish([q])).toEqual(fingerprintBoth(docs, [q]));
      }),
      { numRuns: 200, seed: 12 },
    );
  });
});

describe('fingerprintBothAsync', () => {
  const docs: Doc[] = [
    { id: 'b', text: 'bbbb' },
    { id: 'a', text: 'aa\n"' },
    { id: 'c', text: '' },
  ];

  it('gives fingerprintBoth\'s values for any yield interval', async () => {
    for (const every of [1, 2, 3, 1000]) expect(await fingerprintBothAsync(docs, [q], every)).toEqual(fingerprintBoth(docs, [q]));
  });

  it('yields to the event loop between documents once the interval is reached (a setImmediate queued before runs mid-pass)', async () => {
    let ran = false;
    const seen: boolean[] = [];
    const watched: Doc[] = docs.map((d) => ({
      id: d.id,
      get text() {
        seen.push(ran);
        return d.text;
      },
    }));
    setImmediate(() => (ran = true));
    await fingerprintBothAsync(watched, [q], 4); // 'aa\n"' (4 units) then a yield, then 'bbbb'
    expect(seen).toEqual([false, true, true]);
    ran = false;
    seen.length = 0;
    setImmediate(() => (ran = true));
    await fingerprintBothAsync(watched, [q], 100); // never reaches 100 units: no yield mid-pass
    expect(seen).toEqual([false, false, false]);
  });

  it('a yield interval that is not an integer >= 1 is a RangeError', async () => {
    await expect(fingerprintBothAsync(docs, [q], 0)).rejects.toThrow(RangeError);
    await expect(fingerprintBothAsync(docs, [q], 1.5)).rejects.toThrow(RangeError);
  });
});

describe('loadDataset carries both fingerprints, equal to the reference functions', () => {
  it.skipIf(!existsSync(path.join(scifact, 'corpus.jsonl')))('SciFact (documents out of id order: the one-pass fallback)', async () => {
    const beir = await loadBeir(scifact, 'test');
    expect(beir.fingerprints).toBeUndefined(); // 5 descents in corpus.jsonl's id order
    await loadAndCheck({ path: scifact, split: 'test' });
  }, 60_000);

  it.skipIf(!existsSync(path.join(scifact, 'corpus.jsonl')))('SciFact in a text store (residentBytes 0, 64-byte reads)', async () => {
    const ds = await loadAndCheck({ path: scifact, split: 'test' }, { textStore: { dir: path.join(tmp, 'store-scifact'), residentBytes: 0, readBufferBytes: 64 } });
    expect(isStored(ds.docs)).toBe(true);
  }, 60_000);

  it.skipIf(!existsSync(path.join(scifact, 'corpus.jsonl')))('a SciFact sample: both fingerprints are the sample\'s', async () => {
    const full = await loadDataset({ path: scifact, split: 'test' });
    const sampled = await loadAndCheck({ path: scifact, split: 'test', sample: { documents: 1000, seed: 7 } });
    expect(sampled.docs.length).toBe(1000);
    expect(sampled.corpusFingerprint).not.toBe(full.corpusFingerprint);
    // sampleDataset and subsetDataset directly, on the loaded dataset
    const s = sampleDataset(full, { documents: 300, seed: 3 }).dataset;
    expect({ fingerprint: s.fingerprint, corpusFingerprint: s.corpusFingerprint }).toEqual(reference(s));
    const sub = subsetDataset(full, 50, 20).dataset;
    expect({ fingerprint: sub.fingerprint, corpusFingerprint: sub.corpusFingerprint }).toEqual(reference(sub));
  }, 60_000);

  it.skipIf(!existsSync(path.join(trecDl, 'corpus.jsonl')))('the TREC-DL slice, in memory and in a text store', async () => {
    await loadAndCheck({ path: trecDl, split: 'test' });
    const ds = await loadAndCheck({ path: trecDl, split: 'test' }, { textStore: { dir: path.join(tmp, 'store-trec'), residentBytes: 0 } });
    expect(isStored(ds.docs)).toBe(true);
  }, 60_000);

  it('the folder-layout demo (datasets/helpdesk)', async () => {
    const ds = await loadAndCheck({ path: helpdesk });
    expect(ds.layout).toBe('folder');
  });

  it('a corpus in id order is hashed while it streams (loadBeir returns the values), with collapsed duplicates', async () => {
    const root = beirFolder('ordered', ordered, 'd2');
    const beir = await loadBeir(root, 'test');
    expect(beir.docs.map((d) => d.id)).toEqual(['d1', 'd2', 'd3', 'e']);
    expect(beir.fingerprints).toEqual({ fingerprint: fingerprintDataset(beir.docs, beir.questions), corpusFingerprint: fingerprintCorpus(beir.docs) });
    await loadAndCheck({ path: root });
    const stored = await loadAndCheck({ path: root }, { textStore: { dir: path.join(tmp, 'store-ordered'), residentBytes: 0, readBufferBytes: 2 } });
    expect(isStored(stored.docs)).toBe(true);
  });

  it('a corpus out of id order falls back to the one pass, in memory and in a text store', async () => {
    const root = beirFolder('unordered', [ordered[3], ordered[0], ordered[5], ordered[1]], 'd1');
    const beir = await loadBeir(root, 'test');
    expect(beir.fingerprints).toBeUndefined();
    const mem = await loadAndCheck({ path: root });
    const stored = await loadAndCheck({ path: root }, { textStore: { dir: path.join(tmp, 'store-unordered'), residentBytes: 0, readBufferBytes: 2 } });
    expect(stored.fingerprint).toBe(mem.fingerprint);
    expect(stored.corpusFingerprint).toBe(mem.corpusFingerprint);
    // the same documents in id order give the same values by the streamed path
    const sorted = await loadAndCheck({ path: beirFolder('resorted', [ordered[0], ordered[1], ordered[3], ordered[5]], 'd1') });
    expect(sorted.corpusFingerprint).toBe(mem.corpusFingerprint);
    expect(sorted.fingerprint).toBe(mem.fingerprint);
  });
});

describe('stored text read back while loading (TextStore.slice counted)', () => {
  /** Bytes of a text in the store (test/helpers/stored-bytes.ts). */
  const bytesOf = (t: string) => storedBytes(t, UTF8_MAX_UNITS);

  /**
   * Loads `spec` into a text store; returns the dataset, the bytes of stored text read back during the load, the
   * store's bytes and the bytes of the loaded documents' texts (read after the count).
   */
  async function readBackOf(spec: DatasetSpec, name: string): Promise<{ ds: Dataset; read: number; stored: number; docBytes: number }> {
    const slice = TextStore.prototype.slice;
    let read = 0;
    TextStore.prototype.slice = function (this: TextStore, i: number, start: number, end: number): string {
      // a slice of a UTF-8 text is counted as the whole text (the store decodes it whole, and keeps the last one decoded)
      read += this.encodingOf(i) === 'utf8' ? this.storedBytesOf(i) : (end - start) * (this.isWide(i) ? 2 : 1);
      return slice.call(this, i, start, end);
    };
    try {
      const ds = await loadDataset(spec, { textStore: { dir: path.join(tmp, name), residentBytes: 0 } });
      const readInLoad = read;
      const stored = textStoreOf(ds.docs)?.byteLength ?? -1;
      expect({ fingerprint: ds.fingerprint, corpusFingerprint: ds.corpusFingerprint }).toEqual(reference(ds));
      const docBytes = ds.docs.reduce((n, d) => n + bytesOf(d.text), 0);
      textStoreOf(ds.docs)?.remove();
      return { ds, read: readInLoad, stored, docBytes };
    } finally {
      TextStore.prototype.slice = slice;
    }
  }
  it('in id order: none; out of order: each stored text once (the store\'s bytes)', async () => {
    const inOrder = await readBackOf({ path: beirFolder('rb-ordered', ordered, 'd2') }, 'rb1');
    // only the duplicate check: each of d2's two repeats compares with the stored 'second é中' (9 code units), which
    // is UTF-8: 7 one-byte code units, é 2 bytes, 中 3 bytes
    expect(inOrder.read).toBe(2 * (7 + 2 + 3));
    const noDuplicates = await readBackOf({ path: beirFolder('rb-ordered-2', [ordered[0], ordered[1], ordered[3], ordered[5]], 'd2') }, 'rb4');
    expect(noDuplicates.read).toBe(0);
    const outOfOrder = await readBackOf({ path: beirFolder('rb-unordered', [ordered[3], ordered[0], ordered[5], ordered[1]], 'd1') }, 'rb2');
    // 'third\ttab' 9 + 'One\n\nfirst "doc"\n' 17 + '' 0 + 'second é中' 2 × 9 (a code unit ≥ 256: UTF-16)
    expect(outOfOrder.stored).toBe(9 + 17 + 0 + (7 + 2 + 3));
    expect(outOfOrder.read).toBe(outOfOrder.stored);
  });

  it('the pass reads each stored text once, batch by batch in the order of the store (not of the ids)', async () => {
    // file (= store) order f, b, e, a, d, c: store indices 0-5; ten code units each
    const fileOrder = ['f', 'b', 'e', 'a', 'd', 'c'];
    const root = beirFolder('rb-batches', fileOrder.map((id) => ({ _id: id, text: `text of ${id}.` })), 'a');
    const ds = await loadDataset({ path: root }, { textStore: { dir: path.join(tmp, 'rb5'), residentBytes: 0 } });
    const slice = TextStore.prototype.slice;
    const reads: number[] = [];
    TextStore.prototype.slice = function (this: TextStore, i: number, start: number, end: number): string {
      reads.push(i);
      return slice.call(this, i, start, end);
    };
    try {
      expect(ds.docs.map((d) => d.id)).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
      const expected = reference(ds);
      reads.length = 0;
      // batches of 3 × 10 units: {a, b, c} at store indices {3, 1, 5} read as 1, 3, 5; {d, e, f} = {4, 2, 0} as 0, 2, 4
      expect(await fingerprintBothAsync(ds.docs, ds.questions, 1 << 25, 30)).toEqual(expected);
      expect(reads).toEqual([1, 3, 5, 0, 2, 4]);
      reads.length = 0;
      // one batch of 60 units: the file order; batches of one document (1 unit < 10): the id order
      expect(await fingerprintBothAsync(ds.docs, ds.questions, 1 << 25, 60)).toEqual(expected);
      expect(reads).toEqual([0, 1, 2, 3, 4, 5]);
      reads.length = 0;
      expect(await fingerprintBothAsync(ds.docs, ds.questions, 1 << 25, 1)).toEqual(expected);
      expect(reads).toEqual([3, 1, 5, 4, 2, 0]);
      await expect(fingerprintBothAsync(ds.docs, ds.questions, 1 << 25, 0)).rejects.toThrow(/batchUnits must be an integer >= 1, got 0/);
    } finally {
      TextStore.prototype.slice = slice;
      textStoreOf(ds.docs)?.remove();
    }
  });

  it.skipIf(!existsSync(path.join(scifact, 'corpus.jsonl')))('a SciFact sample reads only the sample\'s texts, not the full corpus first', async () => {
    const { ds, read, stored, docBytes } = await readBackOf({ path: scifact, split: 'test', sample: { documents: 500, seed: 5 } }, 'rb3');
    expect(ds.docs.length).toBe(500);
    expect(read).toBe(docBytes);
    expect(read).toBeLessThan(stored);
  }, 60_000);
});

describe('consumers use the loaded corpus fingerprint instead of recomputing it', () => {
  it('corpusFingerprintOf: the dataset\'s value when set, else fingerprintCorpus(docs)', () => {
    const docs: Doc[] = [{ id: 'a', text: 'x' }];
    expect(corpusFingerprintOf({ docs })).toBe(fingerprintCorpus(docs));
    expect(corpusFingerprintOf({ docs, corpusFingerprint: 'f'.repeat(64) })).toBe('f'.repeat(64));
  });

  it('planGraph keys rankings on Dataset.corpusFingerprint (a marker value shows it is not recomputed)', async () => {
    const root = beirFolder('plan', [ordered[0], ordered[1]], 'd1');
    const ds = await loadDataset({ path: root });
    const config = parseConfig({ dataset: { path: root }, chunking: { sizes: ['none'] }, topK: [1], modes: ['keyword'], primaryMetric: 'ndcg@1', cacheDir: path.join(tmp, 'cache-plan') });
    const plan = planGraph(config, ds, ds.questions, planEnv());
    expect(plan.corpusFingerprint).toBe(fingerprintCorpus(ds.docs));
    const marked = planGraph(config, { ...ds, corpusFingerprint: '0'.repeat(64) }, ds.questions, planEnv());
    expect(marked.corpusFingerprint).toBe('0'.repeat(64));
    expect(planGraph(config, { docs: ds.docs }, ds.questions, planEnv()).corpusFingerprint).toBe(plan.corpusFingerprint);
  });
});

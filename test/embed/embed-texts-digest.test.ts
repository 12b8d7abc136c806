/**
 * Issue 25 item 1: the embedding deduplicates by SHA-256 digest in a compact table (`DigestTable`) and reads texts
 * from sources one at a time (`TextSource`), never holding the texts. Worked by hand: which texts are distinct
 * (duplicates across groups, the empty text, a lone surrogate that UTF-8 would turn into U+FFFD), the order of the
 * misses (longest first, ties in first-seen order) and so the batches, how often each text is read, the cache keys
 * written, and the rows; then differential against a reference of the former exact-string dedupe on random texts.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EmbeddingCache, embeddingCacheKey } from '../../src/embed/cache.js';
import { DigestTable, embedTexts, embedTextsToFiles, embedTextsToMatrices, textSourceOf, type TextSource } from '../../src/embed/embed-texts.js';
import { formatCacheKey, type EmbeddingProvider, type EmbedRole } from '../../src/embed/provider.js';

/** Vector of text t: [t.length, first code unit of t (0 for ''), 3]. Records every batch. */
class Fake implements EmbeddingProvider {
  readonly name = 'fake';
  readonly label = 'fake';
  readonly dimensions = 3;
  batches: string[][] = [];
  cacheKey(role: EmbedRole): string {
    return formatCacheKey('fake', { role });
  }
  async embedBatch(texts: readonly string[]): Promise<Float32Array[]> {
    this.batches.push([...texts]);
    return texts.map((t) => Float32Array.from([t.length, t.charCodeAt(0) || 0, 3]));
  }
  truncatedCount(): number {
    return 0;
  }
  describe(): Record<string, unknown> {
    return {};
  }
  async close(): Promise<void> {}
}

/** A source over `texts` that counts how often each text is read. */
function counting(texts: string[]): TextSource & { reads: number[] } {
  const reads = new Array<number>(texts.length).fill(0);
  return {
    count: texts.length,
    reads,
    textAt(i) {
      reads[i]++;
      return texts[i];
    },
  };
}

/** float32(v_j · (1/‖v‖)) with the norm in float64, as VectorMatrix.setRow writes it. */
const normalised = (v: number[]): number[] => {
  const inv = 1 / Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  return v.map((x) => Math.fround(x * inv));
};
const row = (m: { row(i: number): Float32Array }, i: number): number[] => Array.from(m.row(i).subarray(0, 3));

/** A hand-made 32-byte digest: bytes 0-3 = `bucket` (little-endian), byte 31 = `tag`, the rest 0. */
const digest = (bucket: number, tag: number): Uint8Array => {
  const d = new Uint8Array(32);
  new DataView(d.buffer).setUint32(0, bucket, true);
  d[31] = tag;
  return d;
};

let dir: string;
let cache: EmbeddingCache;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'rs-digest-'));
  cache = EmbeddingCache.open(path.join(dir, 'embeddings.sqlite'));
});
afterEach(() => {
  cache.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('DigestTable', () => {
  it('numbers digests in insertion order; an equal digest gets its first number, also in the same bucket', () => {
    const t = new DigestTable();
    // 7 and 7 + 16 land in bucket 7 of the first 16 buckets; tags 1 and 2 tell them apart in the last byte only
    expect([t.add(digest(7, 1)), t.add(digest(7, 2)), t.add(digest(23, 1)), t.add(digest(7, 1)), t.add(digest(23, 1))]).toEqual([0, 1, 2, 0, 2]);
    expect(t.size).toBe(3);
    expect(Array.from(t.digest(1))).toEqual(Array.from(digest(7, 2)));
  });

  it('grows past half full (16 buckets hold 8) and keeps every number; all 100 digests in one bucket still work', () => {
    const t = new DigestTable();
    for (let k = 0; k < 100; k++) expect(t.add(digest(5, k))).toBe(k); // one bucket: a probe chain of 100
    for (let k = 0; k < 100; k++) expect(t.add(digest(1000 + k, 0))).toBe(100 + k);
    for (let k = 99; k >= 0; k--) expect([t.add(digest(5, k)), t.add(digest(1000 + k, 0))]).toEqual([k, 100 + k]);
    expect(t.size).toBe(200);
  });

  it('a digest shorter than 32 bytes is a RangeError', () => {
    expect(() => new DigestTable().add(new Uint8Array(31))).toThrow(RangeError);
  });
});

describe('embedding texts from sources, deduplicated by digest', () => {
  // group 0: 'bb' '' 'a'; group 1: 'a' 'ccc' 'bb' '\ud800' '\ufffd' ''
  // distinct in first-seen order: 0 'bb', 1 '', 2 'a', 3 'ccc', 4 '\ud800', 5 '\ufffd' (6 of 9)
  const g0 = ['bb', '', 'a'];
  const g1 = ['a', 'ccc', 'bb', '\ud800', '\ufffd', ''];

  it('cold: batches longest first, ties in first-seen order; each text read once, a miss once more; rows and keys by hand', async () => {
    const p = new Fake();
    const s0 = counting(g0);
    const s1 = counting(g1);
    const { matrices, stats } = await embedTextsToMatrices(p, [s0, s1], 'document', { cache, batchSize: 2 });
    // lengths 3 (ccc), 2 (bb), then the three of length 1 in slot order a(2) \ud800(4) \ufffd(5), then '' (1)
    expect(p.batches).toEqual([
      ['ccc', 'bb'],
      ['a', '\ud800'],
      ['\ufffd', ''],
    ]);
    expect(stats).toMatchObject({ requested: 9, distinct: 6, cacheHits: 0, cacheMisses: 6 });
    // read to digest (every position), and the first occurrence of each miss again for its batch
    expect(s0.reads).toEqual([2, 2, 2]);
    expect(s1.reads).toEqual([1, 2, 1, 2, 2, 1]);
    expect([0, 1, 2].map((i) => row(matrices[0], i))).toEqual([normalised([2, 98, 3]), normalised([0, 0, 3]), normalised([1, 97, 3])]);
    // duplicates copy the first occurrence's row; the lone surrogate is its own text (not merged with U+FFFD)
    expect([0, 1, 2, 3, 4, 5].map((i) => row(matrices[1], i))).toEqual([
      normalised([1, 97, 3]),
      normalised([3, 99, 3]),
      normalised([2, 98, 3]),
      normalised([1, 0xd800, 3]),
      normalised([1, 0xfffd, 3]),
      normalised([0, 0, 3]),
    ]);
    // cache keys as embeddingCacheKey (sha256 of UTF-8): '\ud800' is written under U+FFFD's key, then U+FFFD's own
    // vector over it (its batch came later): the same keys and writes as exact-string dedupe made
    const key = (t: string) => embeddingCacheKey(p.cacheKey('document'), t);
    expect(key('\ud800')).toBe(key('\ufffd'));
    const stored = cache.get(['bb', '', 'a', 'ccc', '\ufffd'].map(key));
    expect(stored.map((v) => Array.from(v!))).toEqual([
      [2, 98, 3],
      [0, 0, 3],
      [1, 97, 3],
      [3, 99, 3],
      [1, 0xfffd, 3],
    ]);
  });

  it('warm: nothing embedded, every text read once, rows from the cache (the surrogate gets U+FFFD\'s vector, as before)', async () => {
    await embedTextsToMatrices(new Fake(), [g0, g1], 'document', { cache });
    const p = new Fake();
    const s0 = counting(g0);
    const s1 = counting(g1);
    const { matrices, stats } = await embedTextsToMatrices(p, [s0, s1], 'document', { cache });
    expect(p.batches).toEqual([]);
    expect(stats).toMatchObject({ requested: 9, distinct: 6, cacheHits: 6, cacheMisses: 0 });
    expect([...s0.reads, ...s1.reads]).toEqual(new Array(9).fill(1));
    expect(row(matrices[1], 3)).toEqual(normalised([1, 0xfffd, 3]));
    expect(row(matrices[1], 1)).toEqual(normalised([3, 99, 3]));
  });

  it('to files: the same rows and batches as to matrices', async () => {
    const pm = new Fake();
    const { matrices } = await embedTextsToMatrices(pm, [g0, g1], 'document', { batchSize: 2 });
    const pf = new Fake();
    const files = [path.join(dir, 'g0.f32'), path.join(dir, 'g1.f32')];
    const r = await embedTextsToFiles(pf, [counting(g0), counting(g1)], files, 'document', { batchSize: 2 });
    expect(pf.batches).toEqual(pm.batches);
    const into = new Float32Array(16);
    for (const [g, f] of r.files.entries()) {
      for (let i = 0; i < f.n; i++) {
        f.readRow(i, into);
        expect(Array.from(into.subarray(0, 3))).toEqual(row(matrices[g], i));
      }
      f.remove();
    }
  });

  it('a NaN row from a source names its text (read again for the message only)', async () => {
    const p = new Fake();
    p.embedBatch = async (texts) => texts.map((t) => Float32Array.from([t === 'bad' ? Number.NaN : 1, 0, 0]));
    await expect(embedTextsToMatrices(p, [counting(['ok', 'bad'])], 'document')).rejects.toThrow('embedding of "bad" has a non-finite value (NaN) at position 0');
  });

  it('textSourceOf wraps an array without copying it', () => {
    const texts = ['x', 'y'];
    const s = textSourceOf(texts);
    texts[1] = 'z';
    expect([s.count, s.textAt(0), s.textAt(1)]).toEqual([2, 'x', 'z']);
  });
});

/**
 * The reference: the former exact-string dedupe (a Map over the strings, first-seen order), misses sorted by
 * `text.length` descending with ties by first-seen order, cut into batches; and sha256(UTF-8) for each cache key.
 */
function referenceBatches(groups: string[][], batchSize: number): string[][] {
  const slot = new Map<string, number>();
  const distinct: string[] = [];
  for (const g of groups) for (const t of g) if (!slot.has(t)) slot.set(t, distinct.push(t) - 1);
  const order = distinct.map((_, s) => s).sort((a, b) => distinct[b].length - distinct[a].length || a - b);
  const out: string[][] = [];
  for (let i = 0; i < order.length; i += batchSize) out.push(order.slice(i, i + batchSize).map((s) => distinct[s]));
  return out;
}

describe('differential: digest dedupe against exact-string dedupe on random texts', () => {
  // short strings over a tiny alphabet (many duplicates and equal lengths), with lone and paired surrogates
  const unit = fc.constantFrom('a', 'b', 'é', '\ud800', '\udc00', '\ufffd', '\ud83d\ude00', '');
  const text = fc.array(unit, { maxLength: 4 }).map((u) => u.join(''));
  const groups = fc.array(fc.array(text, { maxLength: 12 }), { minLength: 1, maxLength: 3 });

  it('same batches, distinct count, rows and cache keys (200 cases)', async () => {
    await fc.assert(
      fc.asyncProperty(groups, fc.integer({ min: 1, max: 4 }), async (gs, batchSize) => {
        const p = new Fake();
        const { matrices, stats } = await embedTextsToMatrices(
          p,
          gs.map((g) => counting(g)),
          'document',
          { batchSize },
        );
        const expected = referenceBatches(gs, batchSize);
        expect(p.batches).toEqual(expected);
        expect(stats.distinct).toBe(new Set(gs.flat()).size);
        gs.forEach((g, k) => g.forEach((t, i) => expect(row(matrices[k], i)).toEqual(normalised([t.length, t.charCodeAt(0) || 0, 3]))));
        // the string[] form gives the same vectors and stats
        const flat = gs.flat();
        const r = await embedTexts(new Fake(), flat, 'document', { batchSize });
        expect(r.stats.distinct).toBe(stats.distinct);
        flat.forEach((t, i) => expect(Array.from(r.vectors[i])).toEqual([t.length, t.charCodeAt(0) || 0, 3]));
      }),
      { numRuns: 200, seed: 25 },
    );
  });

  it('the cache key of every text is sha256 of its UTF-8 (a lone surrogate hashes as U+FFFD)', async () => {
    const p = new Fake();
    const texts = ['\ud800x', '\ufffdx', 'ok', ''];
    await embedTexts(p, texts, 'document', { cache });
    for (const t of texts) {
      const hex = createHash('sha256').update(Buffer.from(t, 'utf8')).digest('hex');
      expect(cache.get([`${p.cacheKey('document')}\u0000${hex}`])[0]).toBeDefined();
    }
    expect(Buffer.from('\ud800x', 'utf8')).toEqual(Buffer.from('\ufffdx', 'utf8'));
  });
});

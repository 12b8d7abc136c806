/**
 * gloveRows (the scan glove-100d embeds with) against gloveTokens (the documented rule, the reference): the same rows
 * in the same order, on hand-worked cases, random text, and every document of SciFact and TREC-DL (skipped when
 * ../shared/datasets is absent); and glove-100d's vectors equal the mean computed here from the reference tokens.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { gloveRows, gloveTokens, loadGloveTable, type GloveTable } from '../../src/embed/glove.js';
import { isHarnessError } from '../../src/errors.js';
import { createProvider } from '../../src/embed/registry.js';
import { embedCallSize, resolveEmbeddingSpec } from '../../src/embed/spec.js';
import { embedTextsToMatrices } from '../../src/embed/embed-texts.js';
import { sharedDatasets, sharedDocumentTexts } from '../helpers/datasets.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const realCacheDir = path.resolve(here, '../../.cache/test-embed');

const reference = (text: string, index: ReadonlyMap<string, number>): number[] => gloveTokens(text, (w) => index.has(w)).map((w) => index.get(w)!);

describe('gloveRows equals the reference rule', () => {
  const words = ['e-mail', 'e', 'mail', 'covid', '19', "don't", 'u', 's', 'café', 'ab', 'a', 'b', '0', 'a-b', "a'b", 'a.b', 'b1'];
  const index = new Map(words.map((w, i) => [w, i]));

  it('hand-worked: whole known words, known parts of unknown joined words, backtick as apostrophe, case', () => {
    // "E-mail" is known whole (0); "COVID-19" is not: its parts covid (3), 19 (4); "Don`t" -> "don't" (5);
    // "U.S." -> "u.s" unknown -> u (6), s (7); "zz-a" unknown -> only a (10); "b-" is b (11): a trailing "-" or "."
    // never joins.
    expect(gloveRows('E-mail COVID-19 Don`t U.S. zz-a b- .', index)).toEqual([0, 3, 4, 5, 6, 7, 10, 11]);
    expect(gloveRows('E-mail COVID-19 Don`t U.S. zz-a b- .', index)).toEqual(reference('E-mail COVID-19 Don`t U.S. zz-a b- .', index));
  });

  it('non-ASCII text takes the reference path (NFKC, typographic apostrophes)', () => {
    expect(gloveRows('Café ＣＯＶＩＤ-１９ don’t', index)).toEqual([8, 3, 4, 5]);
  });

  it('text with non-ASCII characters: only the pieces between whitespace that hold one take the reference path', () => {
    // "b-a" and "ab" are scanned; "café," and "don’t." (the pieces with é and ’) go through gloveTokens: café (8),
    // don't (5); "b-a" is unknown whole: its parts b (11), a (10); "a.b" after the last space is known whole (15).
    expect(gloveRows('ab café, b-a\tdon’t. a.b', index)).toEqual([9, 8, 11, 10, 5, 15]);
    expect(gloveRows('ab café, b-a\tdon’t. a.b', index)).toEqual(reference('ab café, b-a\tdon’t. a.b', index));
    // A combining acute after "e" (NFKC composes é: café, 8) stays in its piece; one at the start of a piece is not a
    // letter (a, 10); full-width "Ａ" then "B" is "ab" (9).
    expect(gloveRows('cafe\u0301 \u0301a ＡB', index)).toEqual(reference('cafe\u0301 \u0301a ＡB', index));
    expect(gloveRows('cafe\u0301 \u0301a ＡB', index)).toEqual([8, 10, 9]);
  });

  it('reuses and empties the array it is given', () => {
    const out = [99, 98];
    expect(gloveRows('a b', index, out)).toBe(out);
    expect(out).toEqual([10, 11]);
    expect(gloveRows('', index, out)).toEqual([]);
  });

  it('property: same rows as the reference on random ASCII and mixed text (5,000 runs)', () => {
    const unit = fc.constantFrom(...'abAB01e-.\'` ,!?\t\n'.split(''), 'é', '’', 'Ａ');
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 50 }), (t) => {
        expect(gloveRows(t, index)).toEqual(reference(t, index));
      }),
      { numRuns: 5000 },
    );
  });

  it('property: same rows as the reference for random word tables (upper-case and backtick words never match, as with the map)', () => {
    // The scan looks ASCII words up in its own hash table built from the map; words the rule cannot produce (upper
    // case, a backtick, non-ASCII) must behave as the map does, and probing must find every word of small tables.
    const unit = fc.constantFrom('a', 'b', 'A', '1', '-', '.', "'", '`', 'é', ' ');
    fc.assert(
      fc.property(fc.uniqueArray(fc.string({ unit, minLength: 1, maxLength: 4 }), { maxLength: 40 }), fc.string({ unit, maxLength: 40 }), (words, t) => {
        const table = new Map(words.map((w, i) => [w, 3 * i + 1]));
        expect(gloveRows(t, table)).toEqual(reference(t, table));
      }),
      { numRuns: 5000 },
    );
  });

  it('property: same rows as the reference on random text of characters that stress NFKC, case and the cuts (20,000 runs)', () => {
    // Combining marks (compose with the letter before them, across no whitespace), Σ (lowercases to ς or σ by
    // context: Final_Sigma), ligatures and full-width or superscript digits (NFKC maps them to ASCII letters and
    // digits), İ (lowercases to two code units), ´ (NFKC: space + combining acute), no-break and zero-width spaces,
    // typographic apostrophes, and every cut character (tab, LF, CR, space) next to them.
    const stress = ['Σ', 'σ', 'ς', '\u0301', '\u0308', 'é', 'ﬁ', 'İ', 'µ', 'μ', '²', '１', 'Ａ', '’', '‘', '´', '\u00a0', '\u200b', 'ß', 'ǅ', '\u00ad'];
    const greek = new Map(
      ['a', 'b', 'ab', 'e', 'é', 'ë', 'fi', 'fia', 'μ', 'μa', 'σ', 'ς', 'aς', 'aσ', 'σa', 'i̇', '2', 'a2', '1', "a'b", 'a-b', 'a.b', 'ss', 'ǆ', 'aé'].map((w, i) => [w, i]),
    );
    const unit = fc.constantFrom(...'aAbBeE12-.\'` \t\n\r,'.split(''), ...stress);
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 40 }), (t) => {
        expect(gloveRows(t, greek)).toEqual(reference(t, greek));
      }),
      { numRuns: 20000 },
    );
  });
});

describe.skipIf(!existsSync(path.join(sharedDatasets, 'scifact')))('on the real table: SciFact and TREC-DL documents', () => {
  let table: GloveTable;
  const texts: string[] = [];
  beforeAll(async () => {
    table = (await loadGloveTable(realCacheDir)).table;
    texts.push(...sharedDocumentTexts(['scifact', 'trec-dl-2019-5k']));
  }, 300_000);

  it('every document: the same rows as the reference', () => {
    let ascii = 0;
    for (const t of texts) {
      expect(gloveRows(t, table.index)).toEqual(reference(t, table.index));
      if (!/[^\x00-\x7f]/.test(t)) ascii++;
    }
    expect(texts.length).toBeGreaterThan(5000);
    expect(ascii).toBeGreaterThan(3000); // most documents take the scan
  });

  it('glove-100d vectors are bit-equal to the float64 mean of the reference words, then L2-normalised', async () => {
    // workers: 2, and one call of ~1,000 documents: it runs on a worker thread (textsOnWorkers below).
    const p = await createProvider(resolveEmbeddingSpec({ model: 'glove-100d', workers: 2 }), { cacheDir: realCacheDir });
    try {
      const sample = texts.filter((_, i) => i % 10 === 0);
      const got = await p.embedBatch(sample, 'document');
      expect(p.describe().textsOnWorkers).toBe(sample.length);
      expect(p.concurrency).toBe(4); // two calls per worker thread: one running, one queued
      sample.forEach((t, i) => {
        const rows = reference(t, table.index);
        const acc = new Float64Array(100);
        for (const r of rows) for (let d = 0; d < 100; d++) acc[d] += table.vectors[r * 100 + d];
        const want = new Float32Array(100);
        if (rows.length > 0) {
          for (let d = 0; d < 100; d++) want[d] = acc[d] / rows.length;
          let s = 0;
          for (let d = 0; d < 100; d++) s += want[d] * want[d];
          const inv = 1 / Math.sqrt(s);
          for (let d = 0; d < 100; d++) want[d] = want[d] * inv;
        }
        expect(got[i]).toEqual(want);
      });
    } finally {
      await p.close();
    }
  }, 60_000);

  it('the sweep\'s calls (256 texts, 4 in flight on 2 workers) fill the same matrix rows, bit for bit, as 32-text calls in-process', async () => {
    const spec = resolveEmbeddingSpec({ model: 'glove-100d', workers: 2 });
    expect(embedCallSize(spec)).toBe(256);
    const fast = await createProvider(spec, { cacheDir: realCacheDir });
    const slow = await createProvider(resolveEmbeddingSpec({ model: 'glove-100d', workers: 1 }), { cacheDir: realCacheDir });
    try {
      // duplicates across the two groups, as two chunkings of one corpus give (whole documents and their first 300 chars)
      const groups = [texts.slice(0, 2000), texts.slice(1000, 3000).map((t, i) => (i % 2 === 0 ? t : t.slice(0, 300)))];
      const a = await embedTextsToMatrices(fast, groups, 'document', { batchSize: embedCallSize(spec) });
      const b = await embedTextsToMatrices(slow, groups, 'document', { batchSize: 32 });
      expect(fast.describe().textsOnWorkers).toBe(a.stats.distinct);
      expect(a.stats.distinct).toBe(b.stats.distinct);
      const ra = new Float32Array(a.matrices[0].dp);
      const rb = new Float32Array(b.matrices[0].dp);
      groups.forEach((g, gi) => {
        for (let i = 0; i < g.length; i++) {
          a.matrices[gi].readRow(i, ra);
          b.matrices[gi].readRow(i, rb);
          expect(ra).toEqual(rb);
        }
      });
    } finally {
      await fast.close();
      await slow.close();
    }
  }, 120_000);

  it('workers 1 and 2 give the same vectors, whether a call runs in-process (small) or on a worker (large)', async () => {
    const one = await createProvider(resolveEmbeddingSpec({ model: 'glove-100d', workers: 1 }), { cacheDir: realCacheDir });
    const two = await createProvider(resolveEmbeddingSpec({ model: 'glove-100d', workers: 2 }), { cacheDir: realCacheDir });
    try {
      const big = texts.slice(0, 300);
      const small = texts.slice(0, 1).map((t) => t.slice(0, 200));
      expect(await two.embedBatch(big, 'document')).toEqual(await one.embedBatch(big, 'document'));
      expect(await two.embedBatch(small, 'query')).toEqual(await one.embedBatch(small, 'query'));
      expect([one.describe().textsOnWorkers, two.describe().textsOnWorkers]).toEqual([0, 300]);
      await two.close();
      await expect(two.embedBatch(small, 'query')).rejects.toSatisfy((e) => isHarnessError(e, 'EMBEDDING_FAILED'));
    } finally {
      await one.close();
      await two.close();
    }
  }, 60_000);
});

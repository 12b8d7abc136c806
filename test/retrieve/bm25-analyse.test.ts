/**
 * The BM25 build's scanner (analyseBatch over all-ASCII text: words found over character codes, each mapped to its
 * term id through a cache keyed by its characters) against the reference, keywordTokens (tokenize.ts: the regular
 * expressions, wink-nlp-utils' stop words and our Porter2, porter2.ts) through the same term table: the same new terms,
 * lengths, forward lists and term frequencies, so the same terms for every token. Hand-worked cases, random text
 * (fast-check), and every document of SciFact and TREC-DL 2019 5k (skipped when ../shared/datasets is absent).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { analyseBatch, createTermTable, type AnalysedBatch } from '../../src/retrieve/bm25-analyse.js';
import { keywordTokens } from '../../src/retrieve/tokenize.js';
import { sharedDatasets, sharedDocumentTexts } from '../helpers/datasets.js';

/** A batch as plain values. */
const plain = (b: AnalysedBatch): unknown => ({
  newTerms: b.newTerms,
  lengths: Array.from(b.lengths),
  distinct: Array.from(b.distinct),
  terms: Array.from(b.terms),
  tfs: Array.from(b.tfs),
});

/** The terms of each text as the scanner numbered them, back as strings (local ids → the table's terms). */
function scannedTerms(texts: readonly string[]): string[][] {
  const table = createTermTable();
  const b = analyseBatch(texts, table);
  const byId = [...table.dict.keys()];
  const out: string[][] = [];
  let p = 0;
  for (let c = 0; c < texts.length; c++) {
    const terms: string[] = [];
    for (let e = 0; e < b.distinct[c]; e++, p++) for (let r = 0; r < b.tfs[p]; r++) terms.push(byId[b.terms[p]]);
    out.push(terms.sort());
  }
  return out;
}

describe('the scanner gives the terms of keywordTokens', () => {
  it('hand-worked: case, stop words, possessives, compounds, a full stop that ends a sentence', () => {
    const text = "The pump's LMP-204 seal ISN'T e.g. x86_64 km/h. Then STOP o'neill 3.14 a-'b -x- it's";
    expect(scannedTerms([text])).toEqual([keywordTokens(text).sort()]);
    // "the", "then" (stop words) and "it's" are dropped; "isn't" is kept as "isnt" (negations stay searchable).
    expect(scannedTerms([text])[0]).toContain('isnt');
    expect(scannedTerms([text])[0]).not.toContain('the');
    expect(scannedTerms([text])[0]).toEqual(expect.arrayContaining(['lmp', '204', 'lmp204', 'x86', '64', 'x8664', 'oneil']));
  });

  it('a batch equals the reference batch array for array, across texts and batches on one table', () => {
    const texts = ['Replace seal kit on pump LMP-204 every 500 hours', 'Café ﬁle', '', 'the', 'PUMPS pumps Pumps', 'seal-kit seal kit', 'A:Σ ΑΣ 10 μm e\u0301te'];
    const a = createTermTable();
    const r = createTermTable();
    expect(plain(analyseBatch(texts, a))).toEqual(plain(analyseBatch(texts, r, false)));
    expect(plain(analyseBatch(texts.slice().reverse(), a))).toEqual(plain(analyseBatch(texts.slice().reverse(), r, false)));
  });

  it('property: same batch as the reference on random text (ASCII-heavy, some non-ASCII), 3,000 runs', () => {
    // Non-ASCII units that interact with their neighbours under keywordTokens' normalisation: a combining acute
    // (composes with the letter before it), capital sigma (its lower case depends on the letters around it, through
    // case-ignorable ':' and '.'), the Kelvin sign (lower-cases to ASCII k), the fi ligature (NFKC: "fi"), a
    // no-break space (not ASCII whitespace).
    const unit = fc.constantFrom(...'abesTHIoRnxyz0129 -_./\'\t\n,;:!?()"#'.split(''), 'é', '’', 'Ａ', '\u0301', 'Σ', '\u212A', 'ﬁ', '\u00A0', 'ü');
    const word = fc.constantFrom('the', 'it', "it's", "isn't", 'running', 'pumps', 'LMP-204', 'e.g.', "o'neill", 'x86_64', 'km/h', 'a', 's');
    const text = fc.array(fc.oneof(fc.string({ unit, maxLength: 12 }), word), { maxLength: 12 }).map((xs) => xs.join(' '));
    fc.assert(
      fc.property(fc.array(text, { minLength: 1, maxLength: 4 }), fc.array(text, { maxLength: 3 }), (one, two) => {
        const a = createTermTable();
        const r = createTermTable();
        expect(plain(analyseBatch(one, a))).toEqual(plain(analyseBatch(one, r, false)));
        expect(plain(analyseBatch(two, a))).toEqual(plain(analyseBatch(two, r, false)));
      }),
      { numRuns: 3000 },
    );
  });
});

describe.skipIf(!existsSync(path.join(sharedDatasets, 'scifact')))('the scanner on every document of the shared corpora', () => {
  it('SciFact and TREC-DL 2019 5k: the same forward lists as keywordTokens, token for token', () => {
    const texts = sharedDocumentTexts(['scifact', 'trec-dl-2019-5k']);
    const a = createTermTable();
    const r = createTermTable();
    let tokens = 0;
    let ascii = 0;
    for (let from = 0; from < texts.length; from += 1000) {
      const batch = texts.slice(from, from + 1000);
      const got = analyseBatch(batch, a);
      const want = analyseBatch(batch, r, false);
      expect(plain(got)).toEqual(plain(want));
      for (const n of want.lengths) tokens += n;
      for (const t of batch) if (!/[^\x00-\x7f]/.test(t)) ascii++;
    }
    expect(texts.length).toBeGreaterThan(10_000);
    expect(ascii).toBeGreaterThan(texts.length / 2); // most documents take the scanner
    expect(tokens).toBeGreaterThan(1_000_000);
  }, 120_000);
});

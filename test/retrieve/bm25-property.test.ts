/**
 * Property tests of the compact BM25 index against a brute-force oracle written here from the formula (score every
 * chunk, sort everything by the one rule, cut to k), and against wink itself, on random small corpora whose tiny
 * vocabulary and repeated texts make tied scores common, and whose ids mix characters where code-unit and code-point
 * order disagree (U+FF21 sorts before an emoji in UTF-16 code units but after it in code points).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildCompactBm25Index, buildKeywordIndex, buildWinkKeywordIndex, roundTerm9 } from '../../src/retrieve/bm25.js';
import { compareCodePoints } from '../../src/retrieve/rank.js';
import { keywordTokens } from '../../src/retrieve/tokenize.js';
import type { Chunk, Hit } from '../../src/types.js';

const WORDS = ['seal', 'kit', 'pump', 'lmp-204', 'the', 'valve', 'seals', 'x86_64', 'café'];
const ID_CHARS = ['a', 'b', 'z', '\uFF21', '\u{1F600}', '#', '0'];

const text = fc.array(fc.constantFrom(...WORDS), { maxLength: 8 }).map((ws) => ws.join(' '));
const corpus = fc
  .uniqueArray(fc.array(fc.constantFrom(...ID_CHARS), { minLength: 1, maxLength: 3 }).map((cs) => cs.join('')), { maxLength: 12 })
  .chain((idList) => fc.tuple(fc.constant(idList), fc.array(text, { minLength: idList.length, maxLength: idList.length })))
  .map(([idList, texts]): Chunk[] => idList.map((id, i) => ({ id, docId: id, ordinal: 0, text: texts[i], start: 0, end: texts[i].length, tokens: 0 })));
const params = fc.record({ k1: fc.constantFrom(0, 0.5, 1.2, 2, 40), b: fc.constantFrom(0, 0.3, 0.75, 1) });

/** The oracle: the header's formula term by term, wink's toFixed rounding, all chunks scored, sorted, cut. */
function oracle(chunks: Chunk[], p: { k1: number; b: number }, query: string, k: number): Hit[] {
  const docs = chunks.map((c) => keywordTokens(c.text));
  const n = docs.length;
  const avgdl = docs.reduce((s, d) => s + d.length, 0) / n;
  const hits: Hit[] = [];
  docs.forEach((terms, i) => {
    let score = 0;
    let matched = false;
    for (const t of keywordTokens(query)) {
      const tf = terms.filter((x) => x === t).length;
      if (tf === 0) continue;
      const nt = docs.filter((d) => d.includes(t)).length;
      const idf = Math.log((n - nt + 0.5) / (nt + 0.5) + 1);
      const norm = 1 - p.b + p.b * (terms.length / avgdl);
      score = Number((((tf * (p.k1 + 1)) / (p.k1 * norm + tf)) * idf).toFixed(9)) + score;
      matched = true;
    }
    if (matched) hits.push({ id: chunks[i].id, score });
  });
  hits.sort((x, y) => (x.score !== y.score ? y.score - x.score : -compareCodePoints(x.id, y.id)));
  return hits.slice(0, k);
}

describe('compact BM25 against a brute-force oracle', () => {
  it('the blocked search gives the same lists for any block size (1, 2, 3, 5 chunk positions and the default)', () => {
    fc.assert(
      fc.property(corpus, params, fc.array(text, { minLength: 1, maxLength: 4 }), fc.nat(14), (chunks, p, queries, k) => {
        const whole = buildKeywordIndex(chunks, p);
        for (const searchBlockDocs of [1, 2, 3, 5]) {
          const blocked = buildCompactBm25Index(chunks, p, { searchBlockDocs });
          // Several queries on one index: each search must leave the accumulator clean for the next.
          for (const q of queries) expect(blocked.search(q, k)).toEqual(whole.search(q, k));
          expect(blocked.search(queries[0], k)).toEqual(oracle(chunks, p, queries[0], k));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('same top-k, same scores, ties by score desc then id desc (code points), for any corpus, k and query', () => {
    fc.assert(
      fc.property(corpus, params, text, fc.nat(14), (chunks, p, query, k) => {
        const got = buildKeywordIndex(chunks, p).search(query, k);
        expect(got).toEqual(oracle(chunks, p, query, k));
      }),
      { numRuns: 400 },
    );
  });

  it('same lists as the wink adapter (collections of 3 or more, where wink itself scores)', () => {
    fc.assert(
      fc.property(corpus.filter((c) => c.length >= 3), params, text, fc.integer({ min: 1, max: 14 }), (chunks, p, query, k) => {
        expect(buildKeywordIndex(chunks, p).search(query, k)).toEqual(buildWinkKeywordIndex(chunks, p).search(query, k));
      }),
      { numRuns: 200 },
    );
  });

  it('a search does not disturb the next one (the accumulator and seen mask are reset)', () => {
    fc.assert(
      fc.property(corpus, fc.array(text, { minLength: 2, maxLength: 5 }), (chunks, queries) => {
        const index = buildKeywordIndex(chunks);
        const fresh = queries.map((q) => buildKeywordIndex(chunks).search(q, 5));
        expect(index.searchBatch(queries, 5)).toEqual(fresh);
      }),
      { numRuns: 100 },
    );
  });
});

describe('roundTerm9 equals wink rounding, Number(x.toFixed(9))', () => {
  it('on random doubles in [0, 40] (term contributions lie in [0, idf·(k1 + 1)])', () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 40, noNaN: true }), (x) => {
        expect(roundTerm9(x)).toBe(Number(x.toFixed(9)));
      }),
      { numRuns: 20_000 },
    );
  });

  it('on random doubles in [0, 10^4] (large k1: past the 34 and 8796 switch points of the fast path)', () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1e4, noNaN: true }), (x) => {
        expect(roundTerm9(x)).toBe(Number(x.toFixed(9)));
      }),
      { numRuns: 20_000 },
    );
  });

  it('on values within a few ulps of a half-way point n + 0.5 nano-units (where toFixed itself decides)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.integer({ min: 0, max: 40e9 }), fc.integer({ min: 33e9, max: 35e9 }), fc.integer({ min: 0, max: 2 ** 53 - 1 })), fc.integer({ min: -4, max: 4 }), (n, ulps) => {
        let x = (n + 0.5) / 1e9;
        for (let i = 0; i < Math.abs(ulps); i++) x = ulps > 0 ? nextUp(x) : nextDown(x);
        expect(roundTerm9(x)).toBe(Number(x.toFixed(9)));
      }),
      { numRuns: 20_000 },
    );
  });
});

const f64 = new Float64Array(1);
const u64 = new BigUint64Array(f64.buffer);
/** The next double above x > 0. */
function nextUp(x: number): number {
  f64[0] = x;
  u64[0] += 1n;
  return f64[0];
}
/** The next double below x > 0. */
function nextDown(x: number): number {
  f64[0] = x;
  u64[0] -= 1n;
  return f64[0];
}

/**
 * The pruned search (MaxScore, `topK: 'maxscore'`; the default `'auto'` uses it from MAXSCORE_MIN_CHUNKS chunks on) against the exhaustive search it
 * replaces (`topK: 'exhaustive'`, every posting scored: the reference that bm25-parity.test.ts proves equal to wink):
 * identical id lists and bit-equal scores (Object.is) on every query of SciFact and TREC-DL 2019 5k at depths 1, 10
 * and 100, and on random corpora built for ties (tiny vocabulary, repeated texts, repeated query terms, ids whose
 * code-unit and code-point orders disagree) against the exhaustive search and a brute-force oracle, over MaxScore
 * windows of 1, 2, 8 and the default and block-max blocks of 1, 2, 3, 5 postings and the default. Named cases pin
 * the safety rules: a chunk tied with the k-th on score but with a greater id is not pruned, and a term repeated in
 * the query counts as often in the bounds as in the score. Real-data cases are skipped when ../shared/datasets is absent.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadBeir } from '../../src/load/beir.js';
import { buildCompactBm25Index, buildKeywordIndex, MAXSCORE_MIN_CHUNKS, type KeywordIndex } from '../../src/retrieve/bm25.js';
import { compareCodePoints } from '../../src/retrieve/rank.js';
import { keywordTokens } from '../../src/retrieve/tokenize.js';
import type { Chunk, Hit } from '../../src/types.js';
import { sharedDatasets } from '../helpers/datasets.js';

/** MaxScore whatever the index's size (the default, 'auto', uses it only from MAXSCORE_MIN_CHUNKS chunks on). */
const MAXSCORE = { topK: 'maxscore' } as const;
const chunk = (id: string, text: string): Chunk => ({ id, docId: id, ordinal: 0, text, start: 0, end: text.length, tokens: 0 });
/** wink's rounding of one term contribution (9 decimals). */
const r9 = (x: number): number => Number(x.toFixed(9));

/** '' when `a` and `b` have the same ids in the same order and bit-equal scores; else what differs first. */
function difference(a: readonly Hit[], b: readonly Hit[]): string {
  if (a.length !== b.length) return `lengths ${a.length} vs ${b.length}`;
  for (let i = 0; i < a.length; i++) {
    if (a[i].id !== b[i].id) return `rank ${i + 1}: ${a[i].id} vs ${b[i].id}`;
    if (!Object.is(a[i].score, b[i].score)) return `rank ${i + 1} (${a[i].id}): score ${a[i].score} vs ${b[i].score}`;
  }
  return '';
}

describe('MaxScore keeps ties at the k-th score (score descending, then id descending)', () => {
  // b = 0: no length normalisation, so each matching term adds idf·(k1 + 1)/(k1 + 1) = idf, rounded to 9 decimals.
  // N = 5; "seal" and "valve" each occur in 2 chunks: idf = ln(1 + (5 − 2 + 0.5)/(2 + 0.5)) = ln(2.4).
  const chunks = [chunk('a', 'seal valve'), chunk('c', 'seal valve'), chunk('m', 'pump'), chunk('n', 'kit'), chunk('o', 'grease')];
  const w = r9(Math.log(1 + 3.5 / 2.5));
  it('k = 1: "c" (position 1, tied with "a" found first, greater id) replaces "a"', () => {
    const index = buildCompactBm25Index(chunks, { b: 0 }, MAXSCORE);
    const hits = index.search('seal valve', 1);
    expect(hits.map((h) => h.id)).toEqual(['c']);
    expect(hits[0].score).toBeCloseTo(w + w, 10);
  });
  it('k = 1 with the greater id first: "c" stays, "a" (tied, smaller id) is not taken', () => {
    const index = buildCompactBm25Index([chunks[1], chunks[0], ...chunks.slice(2)], { b: 0 }, MAXSCORE);
    expect(index.search('seal valve', 1).map((h) => h.id)).toEqual(['c']);
  });
  it('k = 2: both, "c" before "a"', () => {
    const index = buildCompactBm25Index(chunks, { b: 0 }, MAXSCORE);
    expect(index.search('seal valve', 2)).toEqual([
      { id: 'c', score: w + w },
      { id: 'a', score: w + w },
    ]);
  });
});

describe('MaxScore counts a repeated query term in its bounds as often as in the score', () => {
  // Query "seal valve valve", k = 1, b = 0 (each matching term adds its idf, rounded). N = 6: "valve" in 2 chunks,
  // β = ln(1 + 4.5/2.5); "seal" in 3, α = ln(1 + 3.5/3.5) = ln 2 < β. "x" (position 0) scores 2β and sets θ; "seal"
  // (bound α < θ) becomes non-essential. "y" has both: α + 2β. Counting its "valve" once, its bound would be
  // β + α < 2β = θ and "y" would be pruned.
  it('"y" (α + 2β) wins over "x" (2β)', () => {
    const chunks = [chunk('x', 'valve'), chunk('y', 'seal valve'), chunk('s1', 'seal'), chunk('s2', 'seal'), chunk('p', 'pump'), chunk('q', 'kit')];
    const alpha = r9(Math.log(2));
    const beta = r9(Math.log(1 + 4.5 / 2.5));
    const hits = buildCompactBm25Index(chunks, { b: 0 }, MAXSCORE).search('seal valve valve', 1);
    expect(hits.map((h) => h.id)).toEqual(['y']);
    expect(hits[0].score).toBeCloseTo(alpha + beta + beta, 10);
  });
});

describe("topK 'auto' (the default: MaxScore from MAXSCORE_MIN_CHUNKS chunks on, exhaustive below)", () => {
  it('gives the exhaustive lists just below and at the threshold (chunk i holds "seal" i mod 7 + 1 times)', () => {
    for (const n of [MAXSCORE_MIN_CHUNKS - 1, MAXSCORE_MIN_CHUNKS]) {
      const chunks = Array.from({ length: n }, (_, i) => chunk(`c${i}`, `${'seal '.repeat((i % 7) + 1)}kit${i % 3}`));
      const want = buildCompactBm25Index(chunks, {}, { topK: 'exhaustive' }).search('seal kit1', 10);
      expect(difference(buildKeywordIndex(chunks).search('seal kit1', 10), want)).toBe('');
      expect(want).toHaveLength(10);
    }
  });
});

/**
 * The exhaustive reference and the pruned search on the same chunks (windows of `window` chunk positions, block-max
 * blocks of `blocks` postings).
 */
function both(chunks: readonly Chunk[], p?: { k1: number; b: number }, window?: number, blocks?: number): [KeywordIndex, KeywordIndex] {
  return [
    buildCompactBm25Index(chunks, p, { topK: 'exhaustive' }),
    buildCompactBm25Index(chunks, p, { ...MAXSCORE, maxScoreWindowDocs: window, blockMaxPostings: blocks }),
  ];
}
/** MaxScore windows: 1, 2, 8 chunk positions (many windows, many skipped) and the default (one window here). */
const windows = fc.constantFrom(1, 2, 8, undefined);
/** Block-max blocks: 1, 2, 3 postings (many blocks, blocks straddling windows) and the default (one block here). */
const blockSizes = fc.constantFrom(1, 2, 3, undefined);

describe('MaxScore memoises contributions by (tf, chunk length) only where that is all they depend on', () => {
  // Chunks around the memo's limits (tf 8 and 9, lengths 511 and 512 terms, tf 300: the side map of tf >= 255), among
  // filler chunks so that "seal" is not in every chunk; every depth from 1 to 10.
  it('same ids and bit-equal scores as the exhaustive search across the limits', () => {
    const words = (w: string, n: number): string => Array.from({ length: n }, () => w).join(' ');
    const texts = [
      words('seal', 8), words('seal', 9), `${words('seal', 1)} ${words('kit', 510)}`, `${words('seal', 1)} ${words('kit', 511)}`,
      `${words('seal', 2)} ${words('pump', 600)}`, words('seal', 300), 'seal pump', 'seal', 'kit pump',
      ...Array.from({ length: 12 }, (_, i) => `filler${i} valve`),
    ];
    const chunks = texts.map((t, i) => chunk(`c${String(i).padStart(2, '0')}`, t));
    for (const blocks of [1, 2, undefined]) {
      const [exhaustive, pruned] = both(chunks, undefined, 2, blocks);
      for (const q of ['seal', 'seal kit', 'seal seal pump valve', 'kit pump']) {
        for (let k = 1; k <= 10; k++) expect(difference(pruned.search(q, k), exhaustive.search(q, k))).toBe('');
      }
      expect(exhaustive.search('seal', 10)).toHaveLength(8); // every "seal" chunk matched: the comparison is not vacuous
    }
  });
});

// Corpora built for ties: 5 words, short texts, many repeats; up to 60 chunks so that k is often far below the
// number of matches (where pruning happens). Ids mix characters whose code-unit and code-point orders disagree.
const WORDS = ['seal', 'kit', 'pump', 'valve', 'the'];
const ID_CHARS = ['a', 'b', 'z', '\uFF21', '\u{1F600}', '0'];
const text = fc.array(fc.constantFrom(...WORDS), { maxLength: 5 }).map((ws) => ws.join(' '));
const corpus = fc
  .uniqueArray(fc.array(fc.constantFrom(...ID_CHARS), { minLength: 1, maxLength: 4 }).map((cs) => cs.join('')), { maxLength: 60 })
  .chain((idList) => fc.tuple(fc.constant(idList), fc.array(fc.oneof(text, fc.constantFrom('seal kit', 'pump', 'seal kit')), { minLength: idList.length, maxLength: idList.length })))
  .map(([idList, texts]): Chunk[] => idList.map((id, i) => chunk(id, texts[i])));
const params = fc.record({ k1: fc.constantFrom(0, 0.5, 1.2, 40), b: fc.constantFrom(0, 0.75, 1) });
const query = fc.array(fc.constantFrom(...WORDS, 'absent'), { minLength: 1, maxLength: 6 }).map((ws) => ws.join(' '));

/** Brute force from the formula: every chunk scored in query-term order, all sorted by the one rule, cut to k. */
function oracle(chunks: readonly Chunk[], p: { k1: number; b: number }, q: string, k: number): Hit[] {
  const docs = chunks.map((c) => keywordTokens(c.text));
  const n = docs.length;
  const avgdl = docs.reduce((s, d) => s + d.length, 0) / n;
  const hits: Hit[] = [];
  docs.forEach((terms, i) => {
    let score = 0;
    let matched = false;
    for (const t of keywordTokens(q)) {
      const tf = terms.filter((x) => x === t).length;
      if (tf === 0) continue;
      const nt = docs.filter((d) => d.includes(t)).length;
      const idf = Math.log((n - nt + 0.5) / (nt + 0.5) + 1);
      const norm = 1 - p.b + p.b * (terms.length / avgdl);
      score = r9(((tf * (p.k1 + 1)) / (p.k1 * norm + tf)) * idf) + score;
      matched = true;
    }
    if (matched) hits.push({ id: chunks[i].id, score });
  });
  hits.sort((x, y) => (x.score !== y.score ? y.score - x.score : -compareCodePoints(x.id, y.id)));
  return hits.slice(0, k);
}

describe('MaxScore equals the exhaustive search and the brute-force oracle on random corpora with many ties', () => {
  it('same ids, bit-equal scores, for any corpus, parameters, k and queries (several queries on one index)', () => {
    fc.assert(
      fc.property(corpus, params, windows, blockSizes, fc.array(query, { minLength: 1, maxLength: 4 }), fc.nat(12), (chunks, p, window, blocks, queries, k) => {
        const [exhaustive, pruned] = both(chunks, p, window, blocks);
        for (const q of queries) {
          const want = exhaustive.search(q, k);
          expect(difference(pruned.search(q, k), want)).toBe('');
          expect(difference(want, oracle(chunks, p, q, k))).toBe('');
        }
      }),
      { numRuns: 600 },
    );
  });

  it('searchBatch at depths 1, 2, 3 and 10 on one index', () => {
    fc.assert(
      fc.property(corpus, windows, blockSizes, fc.array(query, { minLength: 1, maxLength: 5 }), (chunks, window, blocks, queries) => {
        const [exhaustive, pruned] = both(chunks, undefined, window, blocks);
        for (const k of [1, 2, 3, 10]) {
          const want = exhaustive.searchBatch(queries, k);
          pruned.searchBatch(queries, k).forEach((hits, i) => expect(difference(hits, want[i])).toBe(''));
        }
      }),
      { numRuns: 200 },
    );
  });
});

/** Every query text of `<root>/queries.jsonl` (all splits, not only the judged ones). */
function allQueries(root: string): string[] {
  return readFileSync(path.join(root, 'queries.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => (JSON.parse(l) as { text: string }).text);
}

/** Compares the pruned and exhaustive searches on every query at each depth; returns the hits compared. */
async function compareAll(root: string): Promise<{ queries: number; hits: number; mismatches: string[] }> {
  const { docs } = await loadBeir(root, 'test');
  const chunks = docs.map((d) => chunk(`${d.id}#0`, d.text));
  const queries = allQueries(root);
  const exhaustive = buildCompactBm25Index(chunks, {}, { topK: 'exhaustive' });
  // The pruned search (forced: these indexes are below MAXSCORE_MIN_CHUNKS) with the default windows and blocks, and
  // with windows of 256 chunk positions (20 windows here) and block-max blocks of 5 postings.
  const pruned: [string, KeywordIndex][] = [
    ['default windows', buildCompactBm25Index(chunks, {}, MAXSCORE)],
    ['windows of 256, blocks of 5', buildCompactBm25Index(chunks, {}, { ...MAXSCORE, maxScoreWindowDocs: 256, blockMaxPostings: 5 })],
  ];
  const mismatches: string[] = [];
  let hits = 0;
  for (const k of [1, 10, 100]) {
    for (let i = 0; i < queries.length; i++) {
      const want = exhaustive.search(queries[i], k);
      hits += want.length;
      for (const [name, index] of pruned) {
        const diff = difference(index.search(queries[i], k), want);
        if (diff) mismatches.push(`${name}, k = ${k}, query ${i}: ${diff}`);
      }
    }
  }
  return { queries: queries.length, hits, mismatches };
}

describe.skipIf(!existsSync(path.join(sharedDatasets, 'scifact')))('MaxScore = exhaustive: SciFact, whole documents, every query', () => {
  it('identical rankings and bit-equal scores at depths 1, 10 and 100 for all 1,109 queries', async () => {
    const { queries, hits, mismatches } = await compareAll(path.join(sharedDatasets, 'scifact'));
    expect(mismatches).toEqual([]);
    expect(queries).toBe(1109);
    expect(hits).toBeGreaterThan(1109 * 60); // most queries fill every depth: the comparison is not vacuous
  }, 120_000);
});

describe.skipIf(!existsSync(path.join(sharedDatasets, 'trec-dl-2019-5k')))('MaxScore = exhaustive: TREC-DL 2019 5k passages, every query', () => {
  it('identical rankings and bit-equal scores at depths 1, 10 and 100 for all queries', async () => {
    const { queries, hits, mismatches } = await compareAll(path.join(sharedDatasets, 'trec-dl-2019-5k'));
    expect(mismatches).toEqual([]);
    expect(hits).toBeGreaterThan(queries * 60);
  }, 120_000);
});

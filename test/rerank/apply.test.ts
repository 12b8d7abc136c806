import { isHarnessError } from '../../src/errors.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mergeReranked, nextDown, rerankLists } from '../../src/rerank/apply.js';
import { MemoryPairScores } from '../../src/rerank/cache.js';
import type { Reranker } from '../../src/rerank/types.js';
import { rankByRule } from '../../src/retrieve/rank.js';
import type { Hit } from '../../src/types.js';
import { rejection } from '../helpers/errors.js';

/** A reranker that looks scores up in a table `"<query>|<text>"` and records every pair it is asked for. */
function fakeReranker(table: Record<string, number>, key = 'fake{"v":1}'): Reranker & { asked: string[]; calls: number } {
  const asked: string[] = [];
  const r = {
    name: 'fake',
    label: 'fake',
    asked,
    calls: 0,
    cacheKey: () => key,
    async score(query: string, texts: readonly string[]): Promise<number[]> {
      r.calls++;
      return texts.map((t) => {
        asked.push(`${query}|${t}`);
        const s = table[`${query}|${t}`];
        if (s === undefined) throw new Error(`no score for ${query}|${t}`);
        return s;
      });
    },
    stats: () => ({ requests: 0, retries: 0, retryWaitSeconds: 0, pairs: asked.length }),
    describe: () => ({}),
    close: async () => {},
  };
  return r;
}

const textOf = (id: string): string => `text of ${id}`;
const hits = (...pairs: [string, number][]): Hit[] => pairs.map(([id, score]) => ({ id, score }));

describe('rerankLists: the top depth is rescored and ordered by the tie rule, the rest kept below', () => {
  it('hand-worked: depth 3 over c1..c5; tie between c2 and c3 goes to the larger id; c4, c5 below at m − 1, m − 2', async () => {
    const r = fakeReranker({
      'q|text of c1': 0.2,
      'q|text of c2': 0.5,
      'q|text of c3': 0.5,
    });
    const list = hits(['c1', 0.9], ['c2', 0.8], ['c3', 0.7], ['c4', 0.6], ['c5', 0.5]);
    const { lists, stats } = await rerankLists(r, [{ id: 'q1', text: 'q' }], [list], 3, textOf);
    // Rescored: c2 0.5, c3 0.5 (tie: id descending puts c3 first), c1 0.2; m = 0.2, so c4 = 0.2 − 1, c5 = 0.2 − 2.
    expect(lists[0]).toEqual(hits(['c3', 0.5], ['c2', 0.5], ['c1', 0.2], ['c4', 0.2 - 1], ['c5', 0.2 - 2]));
    expect(stats).toMatchObject({ pairs: 3, distinctPairs: 3, cacheHits: 0, cacheMisses: 3 });
    expect(r.asked).toEqual(['q|text of c1', 'q|text of c2', 'q|text of c3']); // c4, c5 never scored
    expect(list[0]).toEqual({ id: 'c1', score: 0.9 }); // input unchanged
  });

  it('depth larger than the list rescores all of it; an empty list stays empty', async () => {
    const r = fakeReranker({ 'q|text of a': -1, 'q|text of b': 3 });
    const { lists } = await rerankLists(r, [{ id: '1', text: 'q' }, { id: '2', text: 'q' }], [hits(['a', 2], ['b', 1]), []], 50, textOf);
    expect(lists).toEqual([hits(['b', 3], ['a', -1]), []]);
  });

  it('the kept-below part keeps its original order even where the retriever scores tie or rise', async () => {
    const r = fakeReranker({ 'q|text of x': 10 });
    const list = hits(['x', 5], ['a', 1], ['z', 1], ['m', 1]); // below part as given: a, z, m (not re-sorted by id)
    const { lists } = await rerankLists(r, [{ id: '1', text: 'q' }], [list], 1, textOf);
    expect(lists[0]).toEqual(hits(['x', 10], ['a', 9], ['z', 8], ['m', 7]));
  });

  it('a pair that appears in several lists (or under two questions with the same text) is scored once', async () => {
    const r = fakeReranker({ 'q|text of a': 1, 'q|text of b': 2, 'q|text of c': 3 });
    const qs = [{ id: 'q1', text: 'q' }, { id: 'q1-dup', text: 'q' }];
    const { stats } = await rerankLists(r, qs, [hits(['a', 3], ['b', 2]), hits(['b', 3], ['c', 2], ['a', 1])], 3, textOf);
    expect(stats).toMatchObject({ pairs: 5, distinctPairs: 3, cacheMisses: 3 });
    expect(r.asked.sort()).toEqual(['q|text of a', 'q|text of b', 'q|text of c']);
    expect(r.calls).toBe(1); // one call per question text
  });

  it('two chunks with the same text are one pair', async () => {
    const r = fakeReranker({ 'q|same': 1 });
    const { lists, stats } = await rerankLists(r, [{ id: '1', text: 'q' }], [hits(['a', 2], ['b', 1])], 2, () => 'same');
    expect(stats.distinctPairs).toBe(1);
    expect(lists[0]).toEqual(hits(['b', 1], ['a', 1])); // equal scores: id descending
  });

  it("with a store, a second retriever's overlapping lists score only the new pairs, and a rerun scores nothing", async () => {
    const r = fakeReranker({ 'q|text of a': 1, 'q|text of b': 2, 'q|text of c': 3 });
    const cache = new MemoryPairScores();
    const q = [{ id: '1', text: 'q' }];
    await rerankLists(r, q, [hits(['a', 2], ['b', 1])], 2, textOf, { cache });
    const second = await rerankLists(r, q, [hits(['c', 2], ['b', 1])], 2, textOf, { cache });
    expect(second.stats).toMatchObject({ cacheHits: 1, cacheMisses: 1 });
    expect(r.asked).toEqual(['q|text of a', 'q|text of b', 'q|text of c']);
    const warm = await rerankLists(r, q, [hits(['c', 2], ['b', 1])], 2, textOf, { cache });
    expect(warm.stats).toMatchObject({ cacheHits: 2, cacheMisses: 0, scoreSeconds: 0 });
    expect(warm.lists).toEqual(second.lists);
    expect(r.asked).toHaveLength(3);
  });

  it('a different reranker cache key does not reuse scores', async () => {
    const cache = new MemoryPairScores();
    const table = { 'q|text of a': 1 };
    await rerankLists(fakeReranker(table, 'k1'), [{ id: '1', text: 'q' }], [hits(['a', 1])], 1, textOf, { cache });
    const other = fakeReranker(table, 'k2');
    await rerankLists(other, [{ id: '1', text: 'q' }], [hits(['a', 1])], 1, textOf, { cache });
    expect(other.asked).toEqual(['q|text of a']);
  });

  it('progress reports pairs scored of the cache misses, ending at the total', async () => {
    const r = fakeReranker({ 'q|text of a': 1, 'p|text of a': 2, 'p|text of b': 3 });
    const seen: [number, number][] = [];
    await rerankLists(r, [{ id: '1', text: 'q' }, { id: '2', text: 'p' }], [hits(['a', 1]), hits(['a', 2], ['b', 1])], 5, textOf, {
      onProgress: (d, t) => seen.push([d, t]),
      concurrency: 1,
    });
    expect(seen).toEqual([[1, 3], [3, 3]]);
  });

  it('an aborted signal stops before the next question is scored', async () => {
    const r = fakeReranker({ 'q|text of a': 1 });
    const ac = new AbortController();
    ac.abort(new Error('stopped'));
    await expect(rerankLists(r, [{ id: '1', text: 'q' }], [hits(['a', 1])], 1, textOf, { signal: ac.signal })).rejects.toThrow('stopped');
    expect(r.calls).toBe(0);
  });

  it('errors: wrong score count, a non-finite score, lists not matching questions, depth 0', async () => {
    const q = [{ id: 'q7', text: 'q' }];
    const short: Reranker = { ...fakeReranker({}), score: async () => [] };
    const e1 = await rejection(rerankLists(short, q, [hits(['a', 1])], 1, textOf));
    expect(e1.code).toBe('RERANK_FAILED');
    expect(e1.message).toContain('q7');
    const nan: Reranker = { ...fakeReranker({}), score: async () => [Number.NaN] };
    expect((await rejection(rerankLists(nan, q, [hits(['a', 1])], 1, textOf))).code).toBe('RERANK_FAILED');
    expect((await rejection(rerankLists(fakeReranker({}), q, [], 1, textOf))).code).toBe('RERANK_FAILED');
    expect((await rejection(rerankLists(fakeReranker({}), q, [[]], 0, textOf))).code).toBe('RERANK_FAILED');
  });
});

describe('mergeReranked: one strictly ordered score column', () => {
  it('below 2^52 the kept-below scores are exactly m − j', () => {
    expect(mergeReranked(hits(['a', 0], ['b', 0], ['c', 0]), 1, [2 ** 52]).map((h) => h.score)).toEqual([2 ** 52, 2 ** 52 - 1, 2 ** 52 - 2]);
  });

  it('at |m| = 2^60, where m − 1 rounds back to m, each score steps to the next float64 below', () => {
    // float64 spacing is 128 just below 2^60 and 256 just above it (in magnitude) below −2^60.
    expect(mergeReranked(hits(['a', 0], ['b', 0], ['c', 0]), 1, [2 ** 60]).map((h) => h.score)).toEqual([2 ** 60, 2 ** 60 - 128, 2 ** 60 - 256]);
    expect(mergeReranked(hits(['a', 0], ['b', 0]), 1, [-(2 ** 60)]).map((h) => h.score)).toEqual([-(2 ** 60), -(2 ** 60) - 256]);
  });

  it('nextDown steps one float64: 1 → 1 − 2^−53, 0 → −5e−324, −1 → −1 − 2^−52', () => {
    expect(nextDown(1)).toBe(1 - 2 ** -53);
    expect(nextDown(0)).toBe(-Number.MIN_VALUE);
    expect(nextDown(-1)).toBe(-1 - 2 ** -52);
  });

  it('property: the output is a permutation whose order the tie rule reproduces, top part = rankByRule of the rescored', () => {
    const arb = fc.record({
      ids: fc.uniqueArray(fc.string({ minLength: 1, maxLength: 3 }), { minLength: 0, maxLength: 12 }),
      depth: fc.integer({ min: 1, max: 15 }),
      // Scores within ±1e300: below −MAX_VALUE + 15 there is no room for the kept-below hits (that case throws, tested apart).
      scores: fc.array(fc.oneof(fc.integer({ min: -3, max: 3 }), fc.double({ noNaN: true, min: -1e300, max: 1e300 })), { minLength: 15, maxLength: 15 }),
    });
    fc.assert(
      fc.property(arb, ({ ids, depth, scores }) => {
        const list = ids.map((id, i) => ({ id, score: -i }));
        const out = mergeReranked(list, depth, scores);
        const n = Math.min(depth, ids.length);
        expect(out.map((h) => h.id).sort()).toEqual([...ids].sort());
        expect(rankByRule(out).map((h) => h.id)).toEqual(out.map((h) => h.id));
        expect(out.slice(0, n)).toEqual(rankByRule(list.slice(0, n).map((h, i) => ({ id: h.id, score: scores[i] }))));
        expect(out.slice(n).map((h) => h.id)).toEqual(ids.slice(n));
        for (let i = n; i < out.length; i++) expect(out[i].score).toBeLessThan(out[i - 1].score);
      }),
    );
  });

  it('a lowest reranked score at -Number.MAX_VALUE leaves no room below: RERANK_FAILED, not -Infinity scores', () => {
    let e: unknown;
    try {
      mergeReranked([{ id: 'a', score: 2 }, { id: 'b', score: 1 }], 1, [-Number.MAX_VALUE]);
    } catch (x) {
      e = x;
    }
    expect(isHarnessError(e, 'RERANK_FAILED')).toBe(true);
  });
});

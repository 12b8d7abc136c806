import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isHarnessError } from '../../src/errors.js';
import { fuse, reciprocalRankFusion, weightedRrf } from '../../src/retrieve/fusion.js';
import { rankByRule } from '../../src/retrieve/rank.js';
import type { Hit } from '../../src/types.js';

/** A ranked list from ids in rank order (scores descending, so the rule keeps this order). */
const ranked = (...idsInOrder: string[]): Hit[] => idsInOrder.map((id, i) => ({ id, score: idsInOrder.length - i }));
const scoreOf = (hits: Hit[], id: string): number | undefined => hits.find((h) => h.id === id)?.score;
const ids = (hits: Hit[]): string[] => hits.map((h) => h.id);

describe('field case F01: an item gets terms only from the lists that contain it, ranks 1-based', () => {
  const fused = reciprocalRankFusion([ranked('P', 'Q', 'R'), ranked('S', 'R', 'T')], { rrfK: 60 });

  it('R = 1/(60+3) + 1/(60+2) beats P = S = 1/61', () => {
    expect(scoreOf(fused, 'R')).toBeCloseTo(1 / 63 + 1 / 62, 10);
    expect(scoreOf(fused, 'P')).toBeCloseTo(1 / 61, 10);
    expect(scoreOf(fused, 'S')).toBeCloseTo(1 / 61, 10);
    expect(scoreOf(fused, 'Q')).toBeCloseTo(1 / 62, 10);
    expect(scoreOf(fused, 'T')).toBeCloseTo(1 / 63, 10);
  });

  it('ranking R, then the P/S tie by id descending (S, P), then Q, T', () => {
    expect(ids(fused)).toEqual(['R', 'S', 'P', 'Q', 'T']);
  });

  it('the wrong variant (0-based ranks, missing = list length) would put P above R; ours does not', () => {
    // wrong: P = 1/(60+0) + 1/(60+3) = 0.032540 > R = 1/(60+2) + 1/(60+1) = 0.032522
    expect(1 / 60 + 1 / 63).toBeGreaterThan(1 / 62 + 1 / 61);
    expect(fused[0].id).toBe('R');
  });
});

describe('field case F02: the constant c decides whether agreement beats a single top hit', () => {
  const lists = [ranked('D', 'E', 'F', 'G'), ranked('H', 'I', 'J', 'G')];

  it('c = 60 (the default): G = 2/(60+4) = 0.03125 > D = H = 1/61; top 3 G, H, D', () => {
    const fused = reciprocalRankFusion(lists);
    expect(scoreOf(fused, 'G')).toBeCloseTo(2 / 64, 10);
    expect(scoreOf(fused, 'D')).toBeCloseTo(1 / 61, 10);
    expect(scoreOf(fused, 'H')).toBeCloseTo(1 / 61, 10);
    expect(scoreOf(fused, 'E')).toBeCloseTo(1 / 62, 10);
    expect(scoreOf(fused, 'J')).toBeCloseTo(1 / 63, 10);
    expect(ids(fused).slice(0, 3)).toEqual(['G', 'H', 'D']);
  });

  it('c = 1: G = 2/(1+4) = 0.4 < D = H = 1/(1+1) = 0.5; top 3 H, D, G', () => {
    const fused = reciprocalRankFusion(lists, { rrfK: 1 });
    expect(scoreOf(fused, 'G')).toBeCloseTo(2 / 5, 10);
    expect(scoreOf(fused, 'D')).toBeCloseTo(1 / 2, 10);
    expect(scoreOf(fused, 'E')).toBeCloseTo(1 / 3, 10);
    expect(scoreOf(fused, 'F')).toBeCloseTo(1 / 4, 10);
    expect(ids(fused).slice(0, 3)).toEqual(['H', 'D', 'G']);
  });

  it('depth cuts each list before fusion: at depth 3, G (4th in both) is in neither list', () => {
    const fused = reciprocalRankFusion(lists, { depth: 3 });
    expect(ids(fused)).not.toContain('G');
    expect(fused).toHaveLength(6);
    expect(ids(reciprocalRankFusion(lists, { depth: 4 }))).toContain('G');
  });
});

describe('rules', () => {
  it('each list is ordered by the rule before ranks are taken (input order and tied scores do not matter)', () => {
    // list 1 given out of order; x and y tie at score 5, so the rule ranks y (larger id) 1st, x 2nd
    const fused = reciprocalRankFusion([[{ id: 'x', score: 5 }, { id: 'z', score: 1 }, { id: 'y', score: 5 }]]);
    expect(fused).toEqual([
      { id: 'y', score: 1 / 61 },
      { id: 'x', score: 1 / 62 },
      { id: 'z', score: 1 / 63 },
    ]);
  });

  it('an id repeated within one list counts once, at its best rank', () => {
    const fused = reciprocalRankFusion([[{ id: 'a', score: 3 }, { id: 'b', score: 2 }, { id: 'a', score: 1 }]]);
    expect(fused).toEqual([
      { id: 'a', score: 1 / 61 },
      { id: 'b', score: 1 / 62 },
    ]);
  });

  it('no lists, or empty lists, fuse to []', () => {
    expect(reciprocalRankFusion([])).toEqual([]);
    expect(reciprocalRankFusion([[], []])).toEqual([]);
  });

  it('invalid constant or depth: CONFIG_INVALID naming the value', () => {
    for (const options of [{ rrfK: -1 }, { rrfK: Number.NaN }, { depth: 0 }, { depth: 2.5 }]) {
      let caught: unknown;
      try {
        reciprocalRankFusion([ranked('a')], options);
      } catch (e) {
        caught = e;
      }
      expect(isHarnessError(caught, 'CONFIG_INVALID')).toBe(true);
      expect((caught as Error).message).toContain(`(${String(Object.values(options)[0])})`);
    }
  });

  it('does not change its inputs', () => {
    const list = [{ id: 'b', score: 1 }, { id: 'a', score: 2 }];
    reciprocalRankFusion([list]);
    expect(list).toEqual([{ id: 'b', score: 1 }, { id: 'a', score: 2 }]);
  });
});

describe('property: the fused ranking does not depend on the order of the input lists', () => {
  const hit = fc.record({ id: fc.constantFrom(...'abcdefghij'.split('')), score: fc.integer({ min: 0, max: 5 }) });
  const lists = fc.array(fc.array(hit, { maxLength: 8 }), { maxLength: 5 });

  it('any permutation of the lists gives identical ids and scores (bit for bit)', () => {
    fc.assert(
      fc.property(lists, fc.integer({ min: 1, max: 60 }), fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined }), (ls, c, depth) => {
        const a = reciprocalRankFusion(ls, { rrfK: c, depth });
        const b = reciprocalRankFusion([...ls].reverse(), { rrfK: c, depth });
        const rotated = ls.length > 0 ? [...ls.slice(1), ls[0]] : ls;
        expect(b).toEqual(a);
        expect(reciprocalRankFusion(rotated, { rrfK: c, depth })).toEqual(a);
      }),
      { numRuns: 300 },
    );
  });

  it('matches a brute-force oracle: the sum over lists of 1/(c + 1-based rank)', () => {
    fc.assert(
      fc.property(lists, (ls) => {
        const fused = reciprocalRankFusion(ls);
        for (const h of fused) {
          let expected = 0;
          for (const l of ls) {
            const sorted = [...l].sort((x, y) => y.score - x.score || (x.id < y.id ? 1 : x.id > y.id ? -1 : 0));
            const rank = sorted.findIndex((x) => x.id === h.id);
            if (rank >= 0) expected += 1 / (60 + rank + 1);
          }
          expect(h.score).toBeCloseTo(expected, 10);
        }
        expect(new Set(ids(fused))).toEqual(new Set(ls.flat().map((x) => x.id)));
      }),
      { numRuns: 300 },
    );
  });
});

describe('exact RRF ties are ordered by the tie rule, not by rounding (issue 22)', () => {
  /** A list of `n` ids with `place` ids put at the given 1-based ranks and fillers (`f<list>-<rank>`) elsewhere. */
  const listWith = (tag: string, n: number, place: Record<number, string>): Hit[] =>
    Array.from({ length: n }, (_, i) => ({ id: place[i + 1] ?? `${tag}-${i + 1}`, score: n - i }));

  it('ranks 6 + 39 and 12 + 28 at c = 60: 1/66 + 1/99 = 5/198 = 1/72 + 1/88; id descending puts b before a', () => {
    // The float sums differ in the last bit (0.025252525252525256 vs 0.025252525252525252), which ordered a first.
    expect(1 / 66 + 1 / 99).not.toBe(1 / 72 + 1 / 88);
    const keyword = listWith('k', 50, { 6: 'a', 12: 'b' });
    const semantic = listWith('s', 50, { 39: 'a', 28: 'b' });
    const fused = reciprocalRankFusion([keyword, semantic], { rrfK: 60 });
    expect(scoreOf(fused, 'a')).toBe(scoreOf(fused, 'b'));
    expect(scoreOf(fused, 'a')).toBeCloseTo(5 / 198, 15);
    const at = (id: string) => ids(fused).indexOf(id);
    expect(at('b')).toBe(at('a') - 1);
    // The same in the other list order, through weighted RRF at w = 0.5 and through fuse() with weights.
    expect(ids(reciprocalRankFusion([semantic, keyword], { rrfK: 60 }))).toEqual(ids(fused));
    const w = weightedRrf(keyword, semantic, { weight: 0.5, rrfK: 60 });
    expect(ids(w)).toEqual(ids(fused));
    const run = (l: Hit[]) => ({ q: Object.fromEntries(l.map((h) => [h.id, h.score])) });
    const viaFuse = fuse([run(keyword), run(semantic)], { method: 'rrf', k: 60, weights: [1, 1] }).q;
    expect(viaFuse.a).toBe(viaFuse.b);
  });

  /** The fusion before this change: float sums, largest term first, nothing else. */
  function floatOnly(lists: Hit[][], c: number): Hit[] {
    const terms = new Map<string, number[]>();
    for (const list of lists) {
      const seen = new Set<string>();
      rankByRule(list).forEach((hit, index) => {
        if (seen.has(hit.id)) return;
        seen.add(hit.id);
        terms.set(hit.id, [...(terms.get(hit.id) ?? []), 1 / (c + index + 1)]);
      });
    }
    return rankByRule([...terms].map(([id, t]) => ({ id, score: t.sort((x, y) => y - x).reduce((s, v) => s + v, 0) })));
  }

  it('property: the order is exact-sum descending then id descending, and nothing but exact ties differs from the float-only fusion', () => {
    const exact = (ranks: number[], c: number): [bigint, bigint] =>
      ranks.reduce<[bigint, bigint]>(([p, q], r) => [p * BigInt(c + r) + q, q * BigInt(c + r)], [0n, 1n]);
    let tiesSeen = 0;
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 3 }),
        fc.integer({ min: 0, max: 60 }),
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        (nLists, c, seed) => {
          // Lists of 30 drawn from 40 ids, shuffled by a seeded LCG.
          let x = seed;
          const rnd = () => ((x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
          const lists = Array.from({ length: nLists }, () => {
            const pool = Array.from({ length: 40 }, (_, i) => `d${String(i).padStart(2, '0')}`);
            for (let i = pool.length - 1; i > 0; i--) {
              const j = Math.floor(rnd() * (i + 1));
              [pool[i], pool[j]] = [pool[j], pool[i]];
            }
            return pool.slice(0, 30).map((id, i) => ({ id, score: 30 - i }));
          });
          const ranksOf = new Map<string, number[]>();
          for (const l of lists) l.forEach((h, i) => ranksOf.set(h.id, [...(ranksOf.get(h.id) ?? []), i + 1]));
          const value = new Map([...ranksOf].map(([id, r]) => [id, exact(r, c)]));
          const cmp = (a: string, b: string): number => {
            const [pa, qa] = value.get(a)!;
            const [pb, qb] = value.get(b)!;
            const d = pa * qb - pb * qa;
            return d > 0n ? -1 : d < 0n ? 1 : a < b ? 1 : a > b ? -1 : 0;
          };
          const fused = reciprocalRankFusion(lists, { rrfK: c });
          expect(ids(fused)).toEqual([...ranksOf.keys()].sort(cmp));
          // Against the float-only fusion: same order once each exact-tie group is put in id-descending order, and
          // every score outside a tie group is the same double.
          const old = floatOnly(lists, c);
          expect(ids(old).sort(cmp)).toEqual(ids(fused));
          const tied = (id: string) => [...ranksOf.keys()].some((o) => o !== id && cmp(o, id) !== 0 && value.get(o)![0] * value.get(id)![1] === value.get(id)![0] * value.get(o)![1]);
          for (const h of old) {
            if (tied(h.id)) tiesSeen++;
            else expect(scoreOf(fused, h.id)).toBe(h.score);
          }
        },
      ),
      { numRuns: 300, seed: 22 },
    );
    expect(tiesSeen).toBeGreaterThan(0); // the generator does produce exact ties
  });
});

import { describe, expect, it } from 'vitest';
import {
  buildCompactBm25Index,
  buildExactBm25Index,
  buildKeywordIndex,
  buildWinkKeywordIndex,
  COMPACT_ENGINE,
  DEFAULT_BM25_PARAMS,
  type KeywordIndex,
} from '../../src/retrieve/bm25.js';
import { isHarnessError } from '../../src/errors.js';
import type { Chunk } from '../../src/types.js';

/** A chunk of a one-chunk document. */
const chunk = (id: string, text: string): Chunk => ({ id, docId: id.split('#')[0], ordinal: 0, text, start: 0, end: text.length, tokens: 0 });
/** wink's rounding of a term contribution, as the adapter asks for it (9 decimals). */
const r9 = (x: number): number => Number(x.toFixed(9));
const r4 = (x: number): number => Number(x.toFixed(4));
const ids = (hits: { id: string }[]): string[] => hits.map((h) => h.id);

describe('the exact engine, wink and the compact index compute the same formula (4 chunks, k1 = 1.5, b = 0.6)', () => {
  const chunks = [
    chunk('p1#0', 'Replace seal kit on pump LMP-204 every 500 hours'),
    chunk('p2#0', 'Replace seal kit on pump LMP-205 every 500 hours'),
    chunk('p3#0', 'Grease the LMP bearing housing'),
    chunk('p4#0', 'Seal kit seal kit seal: inspect the pump seal'),
  ];
  const wink = buildWinkKeywordIndex(chunks, { k1: 1.5, b: 0.6 });
  const exact = buildExactBm25Index(chunks, { k1: 1.5, b: 0.6 });
  const compact = buildKeywordIndex(chunks, { k1: 1.5, b: 0.6 });
  it.each(['LMP-204 seal kit', 'seal', 'pump housing 500', 'seal seal', 'nothing here'])('query %j', (q) => {
    expect(wink.params.engine).toMatch(/^wink-bm25-text-search /);
    expect(compact.params.engine).toBe(COMPACT_ENGINE);
    expect(exact.search(q, 10)).toEqual(wink.search(q, 10));
    expect(compact.search(q, 10)).toEqual(wink.search(q, 10));
  });
  it('searchBatch gives the lists of search, in order', () => {
    const qs = ['seal', 'nothing here', 'LMP-204 seal kit'];
    for (const index of [wink, exact, compact]) expect(index.searchBatch(qs, 2)).toEqual(qs.map((q) => index.search(q, 2)));
  });
});

describe('buildKeywordIndex is the compact index', () => {
  it('its engine is recorded in params and it needs no fallback for 0-2 chunks', () => {
    expect(buildKeywordIndex([]).params.engine).toBe(COMPACT_ENGINE);
    expect(buildCompactBm25Index([chunk('a#0', 'x')]).params.engine).toBe(COMPACT_ENGINE);
    expect(buildWinkKeywordIndex([chunk('a#0', 'x')]).params.engine).toBe('exact (fewer than 3 chunks)');
  });
});

/** Every behaviour below holds for the serving index and for the wink adapter it is checked against. */
const engines: [string, (chunks: Chunk[], params?: { k1?: number; b?: number }) => KeywordIndex, string][] = [
  ['compact index (buildKeywordIndex)', buildKeywordIndex, COMPACT_ENGINE],
  ['wink adapter (buildWinkKeywordIndex)', buildWinkKeywordIndex, 'exact (fewer than 3 chunks)'],
];

describe.each(engines)('%s', (_name, build, smallEngine) => {

  describe('field case B01: a collection of 2 chunks (wink refuses to consolidate fewer than 3 documents)', () => {
    const chunks = [chunk('a.md#0', 'Hello there good man'), chunk('b.md#0', 'It is quite windy in London')];

    it('does not throw, ranks b.md first with 2 ln 2 and leaves a.md out (no shared term)', () => {
      const index = build(chunks);
      const hits = index.search('windy London', 5); // k = 5 from 2 chunks is fine
      // terms: a = hello good man (3; 'there' is a stop word), b = quit windi london (3; 'it' 'is' 'in' are stop words)
      // avgdl = 3, |b| = 3 -> norm = 0.25 + 0.75 * 3/3 = 1; tf part = 1 * 2.2 / (1.2 * 1 + 1) = 1
      // idf(windi) = idf(london) = ln(1 + (2 - 1 + 0.5) / (1 + 0.5)) = ln 2
      // (The field case's Lucene reference, 1.281449, keeps the stop words: |b| = 6, avgdl = 5.)
      expect(ids(hits)).toEqual(['b.md#0']);
      expect(hits[0].score).toBeGreaterThan(0);
      expect(hits[0].score).toBeCloseTo(2 * r9(Math.log(2)), 10);
      expect(index.size).toBe(2);
      expect(index.params.engine).toBe(smallEngine);
    });

    it('a single chunk still gets a positive score: idf = ln(1 + 0.5/1.5) = ln(4/3)', () => {
      const hits = build([chunks[1]]).search('windy', 3);
      expect(hits).toHaveLength(1);
      expect(hits[0].score).toBeCloseTo(r9(Math.log(4 / 3)), 10);
    });

    it('an empty collection returns no hits', () => {
      expect(build([]).search('windy', 3)).toEqual([]);
    });
  });

  describe('field case B03: part numbers and digits (3 chunks)', () => {
    const index = build([
      chunk('p1.md#0', 'Replace seal kit on pump LMP-204 every 500 hours'),
      chunk('p2.md#0', 'Replace seal kit on pump LMP-205 every 500 hours'),
      chunk('p3.md#0', 'Grease the LMP bearing housing'),
    ]);
    // p1 = replac seal kit pump lmp 204 lmp204 everi 500 hour (10 terms), p2 likewise with 205 (10),
    // p3 = greas lmp bear hous (4); avgdl = 24 / 3 = 8.
    const T = 2.2 / (1.2 * (0.25 + (0.75 * 10) / 8) + 1); // tf part for p1, p2: 2.2 / 2.425
    const T3 = 2.2 / (1.2 * (0.25 + (0.75 * 4) / 8) + 1); // tf part for p3: 2.2 / 1.75
    const idfLmp = Math.log(1 + 0.5 / 3.5); // n = 3
    const idfOne = Math.log(1 + 2.5 / 1.5); // n = 1: 204, lmp204, 205, lmp205
    const idfTwo = Math.log(1 + 1.5 / 2.5); // n = 2: seal, kit

    it('q1 "LMP-204 seal kit": p1 first, above p2', () => {
      const hits = index.search('LMP-204 seal kit', 3);
      expect(ids(hits)).toEqual(['p1.md#0', 'p2.md#0', 'p3.md#0']);
      expect(hits[0].score).toBeCloseTo(r9(T * idfLmp) + 2 * r9(T * idfOne) + 2 * r9(T * idfTwo), 10);
      expect(hits[1].score).toBeCloseTo(r9(T * idfLmp) + 2 * r9(T * idfTwo), 10);
      expect(hits[2].score).toBeCloseTo(r9(T3 * idfLmp), 10);
    });

    it('q2 "204": matches p1 only', () => {
      const hits = index.search('204', 3);
      expect(ids(hits)).toEqual(['p1.md#0']);
      expect(hits[0].score).toBeCloseTo(r9(T * idfOne), 10);
    });

    it('q3 "lmp-205": p2 first (the short p3 beats p1 on "lmp" alone)', () => {
      const hits = index.search('lmp-205', 3);
      expect(ids(hits)).toEqual(['p2.md#0', 'p3.md#0', 'p1.md#0']);
      expect(hits[0].score).toBeCloseTo(r9(T * idfLmp) + 2 * r9(T * idfOne), 10);
      expect(hits[1].score).toBeCloseTo(r9(T3 * idfLmp), 10);
      expect(hits[2].score).toBeCloseTo(r9(T * idfLmp), 10);
    });
  });

  describe('wink quirks absorbed by the adapter', () => {
    it('without prep tasks wink indexes characters: with our analyser "tac" matches neither "cat" nor "act"', () => {
      const index = build([chunk('c#0', 'cat'), chunk('a#0', 'act'), chunk('d#0', 'dog')]);
      expect(index.search('tac', 5)).toEqual([]);
      expect(ids(index.search('cat', 5))).toEqual(['c#0']);
    });

    it('search(q, 0) means 10 in wink: ours returns [] for k = 0, k hits for small k, all matches for large k', () => {
      const chunks = Array.from({ length: 12 }, (_, i) => chunk(`d${String(i).padStart(2, '0')}#0`, `pump number ${i}`));
      const index = build(chunks);
      expect(index.search('pump', 0)).toEqual([]);
      expect(index.search('pump', 3)).toHaveLength(3);
      expect(index.search('pump', 50)).toHaveLength(12);
    });

    it('tied scores come out in wink key order: ours are re-ranked by id descending, also at the k boundary', () => {
      // Inserted d, a, c, b with the same text: wink would return d, a (insertion order) for limit 2.
      const index = build([
        chunk('d#0', 'seal kit'),
        chunk('a#0', 'seal kit'),
        chunk('c#0', 'seal kit'),
        chunk('b#0', 'seal kit'),
        chunk('x#0', 'other words entirely'),
      ]);
      expect(ids(index.search('seal', 2))).toEqual(['d#0', 'c#0']);
      const all = index.search('seal', 10);
      expect(ids(all)).toEqual(['d#0', 'c#0', 'b#0', 'a#0']);
      expect(new Set(all.map((h) => h.score)).size).toBe(1);
    });

    it('scores are rounded to 4 decimals by wink by default: we ask for 9', () => {
      const index = build([chunk('a#0', 'windy london'), chunk('b#0', 'calm paris'), chunk('c#0', 'calm rome today')]);
      // 'windi' in a only: n = 1, N = 3 -> idf = ln(1 + 2.5/1.5) = ln(8/3); |a| = 2, avgdl = 7/3
      const raw = ((1 * 2.2) / (1.2 * (0.25 + (0.75 * 2) / (7 / 3)) + 1)) * Math.log(8 / 3);
      expect(Math.abs(r4(raw) - raw)).toBeGreaterThan(1e-6); // so 4-decimal rounding would be visible
      const [hit] = index.search('windy', 1);
      expect(hit.score).toBeCloseTo(r9(raw), 10);
      expect(index.params.precision).toBe(9);
    });

    it('wink silently replaces an out-of-range b or k1 by its default: we throw CONFIG_INVALID naming the value', () => {
      const chunks = [chunk('a#0', 'x'), chunk('b#0', 'y'), chunk('c#0', 'z')];
      for (const params of [{ b: 1.5 }, { b: -0.1 }, { k1: -1 }, { k1: Number.NaN }, { k1: Infinity }]) {
        let caught: unknown;
        try {
          build(chunks, params);
        } catch (e) {
          caught = e;
        }
        expect(isHarnessError(caught, 'CONFIG_INVALID')).toBe(true);
        expect((caught as Error).message).toContain(`(${String(Object.values(params)[0])})`);
      }
    });

    it('k1 and b are passed explicitly and recorded: b = 0 turns off length normalisation', () => {
      const index = build(
        [chunk('short#0', 'seal'), chunk('long#0', 'seal kit pump valve housing gasket'), chunk('other#0', 'grease')],
        { k1: 2, b: 0 },
      );
      expect(index.params).toMatchObject({ k1: 2, b: 0 });
      // b = 0: tf part = 1 * (2 + 1) / (2 * 1 + 1) = 1 for both; idf(seal) = ln(1 + 1.5/2.5) = ln 1.6
      const hits = index.search('seal', 5);
      expect(hits.map((h) => h.score)).toEqual([r9(Math.log(1.6)), r9(Math.log(1.6))]);
      expect(ids(hits)).toEqual(['short#0', 'long#0']); // tie: id descending
      expect(build([chunk('a#0', 'x')]).params).toMatchObject(DEFAULT_BM25_PARAMS);
    });
  });

  describe('queries', () => {
    const index = build([chunk('a#0', 'windy london'), chunk('b#0', 'calm paris'), chunk('c#0', 'calm rome')]);

    it('a query with no matching terms returns [] (not an error)', () => {
      expect(index.search('tokyo', 5)).toEqual([]);
      expect(index.search('the of and', 5)).toEqual([]);
      expect(index.search('', 5)).toEqual([]);
    });

    it('a term repeated in the query counts twice', () => {
      expect(index.search('windy windy', 1)[0].score).toBeCloseTo(2 * index.search('windy', 1)[0].score, 10);
    });

    it('k must be an integer >= 0', () => {
      expect(() => index.search('calm', -1)).toThrow(/top-k \(-1\)/);
      expect(() => index.search('calm', 1.5)).toThrow(/top-k \(1\.5\)/);
    });
  });
});

describe('compact build: a forward list longer than one 2^20-entry block', () => {
  it('18,000 chunks of 60 distinct terms (1,080,000 postings) give the exact engine lists', () => {
    // chunk i holds the terms t<(i + 7j) mod 3001> for j = 0..59: distinct within a chunk, df varies across terms.
    const chunks = Array.from({ length: 18_000 }, (_, i) =>
      chunk(`c${i}#0`, Array.from({ length: 60 }, (_, j) => `t${(i + 7 * j) % 3001}`).join(' ')),
    );
    const compact = buildKeywordIndex(chunks);
    const exact = buildExactBm25Index(chunks);
    for (const q of ['t0', 't17 t2999', 't3000 t1 t1', 't42 t43 t44 t45']) expect(compact.search(q, 50)).toEqual(exact.search(q, 50));
    expect(compact.search('t0', 20_000)).toHaveLength(exact.search('t0', 20_000).length);
  }, 60_000);
});

describe('compact index: term frequencies of 255 and more (kept beside the uint8 postings)', () => {
  it('chunks repeating a term 253 to 257 and 1000 times score as in the exact engine', () => {
    const reps = [253, 254, 255, 256, 257, 1000];
    const chunks = [...reps.map((r) => chunk(`r${r}#0`, `${'seal '.repeat(r)}pump`)), chunk('other#0', 'valve pump')];
    const compact = buildKeywordIndex(chunks);
    const exact = buildExactBm25Index(chunks);
    for (const q of ['seal', 'seal pump', 'pump']) expect(compact.search(q, 10)).toEqual(exact.search(q, 10));
    // the scores differ by tf, so the 6 seal chunks are 6 distinct scores (no tie hides a wrong tf)
    expect(new Set(compact.search('seal', 10).map((h) => h.score)).size).toBe(6);
  });
});

describe('duplicate chunk ids are refused (a table of its own, not a Set capped at 2^24 ids)', () => {
  it('any list of ids: the build throws exactly when an id repeats, naming the first one seen twice', async () => {
    const { default: fc } = await import('fast-check');
    const { buildKeywordIndexParallel } = await import('../../src/retrieve/bm25.js');
    // Ids from a small alphabet: tables of 4-128 slots, so occupied slots (probes past other ids) are common.
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(fc.constantFrom('a', 'b', 'é', '#', '0'), { maxLength: 3 }).map((cs) => cs.join('')), { maxLength: 60 }), async (ids) => {
        const chunks = ids.map((id) => chunk(id, 'pump seal'));
        const firstRepeat = ids.find((id, i) => ids.indexOf(id) < i);
        const sync = (): unknown => buildCompactBm25Index(chunks);
        const parallel = await buildKeywordIndexParallel(chunks, {}, { threads: 1 }).then(
          () => undefined,
          (e: unknown) => e,
        );
        if (firstRepeat === undefined) {
          expect(sync).not.toThrow();
          expect(parallel).toBeUndefined();
        } else {
          const message = `duplicate chunk id ${JSON.stringify(firstRepeat)}`;
          expect(sync).toThrow(message);
          expect((parallel as Error).message).toContain(message);
        }
      }),
      { numRuns: 300 },
    );
  });
});

/** Property tests (fast-check) against a brute-force oracle written plainly from the definitions. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatRun, parseRun } from '../../src/load/trec.js';
import { evaluate, scoreRanking, type Qrels } from '../../src/score/evaluate.js';
import { ALL_MEASURE_FAMILIES, formatMeasure, MEASURE_FAMILIES, type Measure } from '../../src/score/measures.js';

/** The definitions, spelled out with no shortcuts: dedupe first, then slice, count and sum. */
function oracle(ranking: string[], judgements: Record<string, number>, m: Measure, t: number): number {
  // a condensed measure: the same measure on the ranking without its unjudged documents (trec_eval -J)
  // (a repeated document keeps its first slot only, like an unjudged one: exported runs name the repeat doc#n)
  if (m.condensed === true) {
    const condensed = ranking.filter((id, i) => Object.hasOwn(judgements, id) && ranking.indexOf(id) === i);
    return oracle(condensed, judgements, { family: m.family, k: m.k }, t);
  }
  const seen = new Set<string>();
  const grades = ranking.map((id) => {
    if (seen.has(id)) return 0; // a repeat is a non-relevant slot
    seen.add(id);
    return Object.hasOwn(judgements, id) ? judgements[id] : 0;
  });
  const all = Object.values(judgements);
  const R = all.filter((g) => g >= t).length;
  const isRel = (g: number) => g >= t;
  const relIn = (n: number) => grades.slice(0, n).filter(isRel).length;
  const dcg = (gs: number[], gain: (g: number) => number) =>
    gs.reduce((s, g, i) => (g > 0 ? s + gain(g) / Math.log2(i + 2) : s), 0);
  const k = m.k ?? 0;
  const firstRel = grades.findIndex(isRel) + 1; // 0 when none
  switch (m.family) {
    case 'hit_rate':
      return firstRel > 0 && firstRel <= k ? 1 : 0;
    case 'recall':
      return R === 0 ? 0 : relIn(k) / R;
    case 'precision':
      return relIn(k) / k;
    case 'mrr':
      return firstRel > 0 && firstRel <= k ? 1 / firstRel : 0;
    case 'ndcg':
    case 'ndcg_exp': {
      const gain = m.family === 'ndcg' ? (g: number) => g : (g: number) => 2 ** g - 1;
      const depth = m.k ?? Infinity; // uncut ndcg: every retrieved rank, every grade > 0 in the ideal
      const ideal = all.filter((g) => g > 0).sort((a, b) => b - a).slice(0, depth);
      const idcg = dcg(ideal, gain);
      return idcg === 0 ? 0 : dcg(grades.slice(0, depth), gain) / idcg;
    }
    case 'map': {
      let sum = 0;
      // uncut map (k null) is trec_eval's map: the whole ranking
      for (let i = 1; i <= Math.min(m.k ?? Infinity, grades.length); i++) if (isRel(grades[i - 1])) sum += relIn(i) / i;
      return R === 0 ? 0 : sum / R;
    }
    case 'r_precision':
      return R === 0 ? 0 : relIn(R) / R;
    case 'recip_rank':
      return firstRel > 0 ? 1 / firstRel : 0;
    case 'judged':
      return ranking.slice(0, k).filter((id, i) => Object.hasOwn(judgements, id) && ranking.indexOf(id) === i).length / k;
    case 'bpref': {
      // Buckley and Voorhees 2004 as trec_eval m_bpref.c: judged documents only, each once
      const N = all.filter((g) => g < t).length;
      const once = new Set<string>();
      let nonrel = 0;
      let sum = 0;
      for (const id of ranking) {
        if (!Object.hasOwn(judgements, id) || once.has(id)) continue;
        once.add(id);
        if (judgements[id] < t) nonrel++;
        else sum += nonrel === 0 ? 1 : 1 - Math.min(nonrel, R) / Math.min(N, R);
      }
      return R === 0 ? 0 : sum / R;
    }
  }
}

const POOL = ['d0', 'd1', 'd2', 'd3', 'd4', 'd5', 'd6', 'd7', 'd8', 'd9'];
const docId = fc.constantFrom(...POOL);
const judgementsArb = fc.dictionary(docId, fc.integer({ min: 0, max: 3 }), { maxKeys: 8 });
const rankingArb = fc.array(docId, { maxLength: 14 });
const measureArb: fc.Arbitrary<Measure> = fc
  .tuple(fc.constantFrom(...MEASURE_FAMILIES), fc.integer({ min: 1, max: 15 }), fc.boolean())
  .map(([family, k, uncut]) => ({ family, k: family === 'r_precision' || (family === 'map' && uncut) ? null : k }));
const thresholdArb = fc.integer({ min: 1, max: 3 });
/** Every family (judged-aware ones too), uncut forms where a family has one, condensed forms of all but judged. */
const anyMeasureArb: fc.Arbitrary<Measure> = fc
  .tuple(fc.constantFrom(...ALL_MEASURE_FAMILIES), fc.integer({ min: 1, max: 15 }), fc.boolean(), fc.boolean())
  .map(([family, k, uncut, condensed]) => {
    const noCutoff = family === 'r_precision' || family === 'recip_rank' || family === 'bpref';
    const m: Measure = { family, k: noCutoff || ((family === 'map' || family === 'ndcg') && uncut) ? null : k };
    return condensed && family !== 'judged' ? { ...m, condensed: true } : m;
  });

describe('properties', () => {
  it('every measure equals the brute-force oracle and lies in [0, 1]', () => {
    fc.assert(
      fc.property(rankingArb, judgementsArb, fc.array(measureArb, { minLength: 1, maxLength: 6 }), thresholdArb, (ranking, j, measures, t) => {
        const s = scoreRanking(ranking, j, measures, { relevanceThreshold: t });
        for (const m of measures) {
          const v = s.values[formatMeasure(m)];
          expect(v).toBeGreaterThanOrEqual(0);
          expect(v).toBeLessThanOrEqual(1 + 1e-12);
          expect(v).toBeCloseTo(oracle(ranking, j, m, t), 10);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('judged@k, bpref, recip_rank, uncut ndcg and every condensed measure equal the brute-force oracle, in [0, 1]', () => {
    fc.assert(
      fc.property(rankingArb, judgementsArb, fc.array(anyMeasureArb, { minLength: 1, maxLength: 6 }), thresholdArb, (ranking, j, measures, t) => {
        const s = scoreRanking(ranking, j, measures, { relevanceThreshold: t });
        for (const m of measures) {
          const v = s.values[formatMeasure(m)];
          expect(v).toBeGreaterThanOrEqual(0);
          expect(v).toBeLessThanOrEqual(1 + 1e-12);
          expect(v, formatMeasure(m)).toBeCloseTo(oracle(ranking, j, m, t), 10);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('recall@k and hit_rate@k never fall as k grows', () => {
    fc.assert(
      fc.property(rankingArb, judgementsArb, fc.integer({ min: 1, max: 14 }), thresholdArb, (ranking, j, k, t) => {
        const names = ['recall', 'hit_rate'] as const;
        const measures = names.flatMap((family) => [
          { family, k },
          { family, k: k + 1 },
        ]);
        const v = scoreRanking(ranking, j, measures, { relevanceThreshold: t }).values;
        expect(v[`recall@${k + 1}`]).toBeGreaterThanOrEqual(v[`recall@${k}`]);
        expect(v[`hit_rate@${k + 1}`]).toBeGreaterThanOrEqual(v[`hit_rate@${k}`]);
      }),
      { numRuns: 300 },
    );
  });

  it('a perfect ranking scores 1 on ndcg, ndcg_exp, recall@R, precision@R and r_precision', () => {
    const nonEmpty = fc.dictionary(docId, fc.integer({ min: 1, max: 3 }), { minKeys: 1, maxKeys: 8 });
    fc.assert(
      fc.property(nonEmpty, fc.integer({ min: 1, max: 12 }), fc.array(docId, { maxLength: 4 }), (j, k, tail) => {
        const ideal = Object.keys(j).sort((a, b) => j[b] - j[a]);
        const R = ideal.length;
        const ranking = [...ideal, ...tail];
        const measures: Measure[] = [
          { family: 'ndcg', k },
          { family: 'ndcg_exp', k },
          { family: 'recall', k: R },
          { family: 'precision', k: R },
          { family: 'r_precision', k: null },
        ];
        const v = scoreRanking(ranking, j, measures).values;
        expect(v[`ndcg@${k}`]).toBeCloseTo(1, 10);
        expect(v[`ndcg_exp@${k}`]).toBeCloseTo(1, 10);
        expect(v[`recall@${R}`]).toBeCloseTo(1, 10);
        expect(v[`precision@${R}`]).toBeCloseTo(1, 10);
        expect(v.r_precision).toBeCloseTo(1, 10);
      }),
      { numRuns: 300 },
    );
  });

  it('shuffling the lines of a run file changes nothing (ties broken by docno, rank column ignored)', () => {
    const entry = fc.record({ qid: fc.constantFrom('q1', 'q2'), docno: docId, score: fc.constantFrom(0.5, 1, 2, -3) });
    fc.assert(
      fc.property(fc.array(entry, { minLength: 1, maxLength: 20 }), judgementsArb, fc.integer({ min: 0, max: 2 ** 31 - 1 }), (rows, j, seed) => {
        const text = formatRun(rows.map((r, i) => ({ ...r, rank: i + 1 })), 'tag');
        const lines = text.trimEnd().split('\n');
        // deterministic shuffle from the seed (Fisher-Yates with a linear congruential generator)
        let s = seed;
        for (let i = lines.length - 1; i > 0; i--) {
          s = (s * 1103515245 + 12345) % 2 ** 31;
          const r = s % (i + 1);
          [lines[i], lines[r]] = [lines[r], lines[i]];
        }
        const qrels: Qrels = new Map([
          ['q1', new Map(Object.entries(j))],
          ['q2', new Map(Object.entries(j).map(([d, g]) => [d, 3 - g] as [string, number]))],
        ]);
        const measures: Measure[] = MEASURE_FAMILIES.map((family) => ({ family, k: family === 'r_precision' ? null : 5 }));
        const a = evaluate(qrels, parseRun(text, 'a.run'), measures);
        const b = evaluate(qrels, parseRun(lines.join('\n'), 'b.run'), measures);
        expect(b.perQuery).toEqual(a.perQuery);
        expect(b.mean).toEqual(a.mean);
        expect(b.excluded).toEqual(a.excluded);
      }),
      { numRuns: 300 },
    );
  });
});

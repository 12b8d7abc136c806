/** Measure names of ir_measures, ranx and trec_eval parse to the canonical ones; uncut map is trec_eval's `map`. */
import { describe, expect, it } from 'vitest';
import { isHarnessError } from '../../src/errors.js';
import { evaluate, scoreRanking, type Qrels, type Run } from '../../src/score/evaluate.js';
import { canonicalMeasureName, formatMeasure, parseMeasure } from '../../src/score/measures.js';
import { thrown } from '../helpers/errors.js';

describe('measure aliases', () => {
  it('ir_measures names parse to the canonical ones', () => {
    const table: [string, string][] = [
      ['nDCG@10', 'ndcg@10'],
      ['P@5', 'precision@5'],
      ['R@10', 'recall@10'],
      ['RR@10', 'mrr@10'],
      ['AP@100', 'map@100'],
      ['AP', 'map'],
      ['Success@5', 'hit_rate@5'],
      ['Rprec', 'r_precision'],
    ];
    for (const [alias, canonical] of table) expect(canonicalMeasureName(alias), alias).toBe(canonical);
  });

  it('ranx names parse to the canonical ones; ndcg_burges is ndcg_exp (gain 2^g - 1)', () => {
    const table: [string, string][] = [
      ['hit_rate@5', 'hit_rate@5'],
      ['precision@5', 'precision@5'],
      ['recall@10', 'recall@10'],
      ['mrr@10', 'mrr@10'],
      ['map@100', 'map@100'],
      ['ndcg@10', 'ndcg@10'],
      ['ndcg_burges@10', 'ndcg_exp@10'],
      ['r-precision', 'r_precision'],
    ];
    for (const [alias, canonical] of table) expect(canonicalMeasureName(alias), alias).toBe(canonical);
  });

  it('trec_eval names P_5, recall_10, ndcg_cut_10, map_cut_10, success_5 and map parse to the canonical ones', () => {
    const table: [string, string][] = [
      ['P_5', 'precision@5'],
      ['recall_10', 'recall@10'],
      ['ndcg_cut_10', 'ndcg@10'],
      ['map_cut_10', 'map@10'],
      ['success_5', 'hit_rate@5'],
      ['map', 'map'],
    ];
    for (const [alias, canonical] of table) expect(canonicalMeasureName(alias), alias).toBe(canonical);
  });

  it('alias family names are matched case-insensitively (NDCG@10, p@5)', () => {
    expect(parseMeasure('NDCG@10')).toEqual({ family: 'ndcg', k: 10 });
    expect(parseMeasure('p@5')).toEqual({ family: 'precision', k: 5 });
  });

  it('ranx hits@k is a count, not a hit rate, and is refused with MEASURE_UNKNOWN', () => {
    expect(isHarnessError(thrown(() => parseMeasure('hits@5')), 'MEASURE_UNKNOWN')).toBe(true);
  });

  it('ir_measures parameters P(rel=2)@5 are refused, pointing at the relevance threshold', () => {
    const e = thrown(() => parseMeasure('P(rel=2)@5'));
    expect(e.code).toBe('MEASURE_UNKNOWN');
    expect(e.message).toContain('relevance threshold');
  });

  it('RR and mrr without a cutoff are trec_eval recip_rank (issue 20); ndcg alone is trec_eval ndcg; P without a cutoff is refused', () => {
    expect(parseMeasure('RR')).toEqual({ family: 'recip_rank', k: null });
    expect(parseMeasure('mrr')).toEqual({ family: 'recip_rank', k: null });
    expect(parseMeasure('recip_rank')).toEqual({ family: 'recip_rank', k: null });
    expect(parseMeasure('ndcg')).toEqual({ family: 'ndcg', k: null });
    expect(thrown(() => parseMeasure('P')).message).toContain('write precision@10');
  });

  it('a misspelt family suggests the nearest one: ndgc@10 -> ndcg', () => {
    expect(thrown(() => parseMeasure('ndgc@10')).message).toContain('did you mean ndcg?');
  });

  it('map without a cutoff formats as map and round-trips', () => {
    expect(parseMeasure('map')).toEqual({ family: 'map', k: null });
    expect(formatMeasure({ family: 'map', k: null })).toBe('map');
  });
});

describe('uncut map (trec_eval map)', () => {
  it('averages precision over the whole ranking: relevant at ranks 2 and 12 of R = 3 gives (1/2 + 2/12) / 3', () => {
    const ranking = ['x1', 'a', ...Array.from({ length: 9 }, (_, i) => `y${i}`), 'b'];
    const s = scoreRanking(ranking, { a: 1, b: 1, c: 1 }, [parseMeasure('map'), parseMeasure('map@10')]);
    expect(s.values.map).toBeCloseTo((1 / 2 + 2 / 12) / 3, 10);
    expect(s.values['map@10']).toBeCloseTo(1 / 2 / 3, 10);
  });

  it('equals map@k for k at least the ranking length', () => {
    const ranking = ['a', 'x', 'b', 'y'];
    const s = scoreRanking(ranking, { a: 2, b: 1, z: 1 }, [parseMeasure('map'), parseMeasure('map@4'), parseMeasure('map@1000')]);
    expect(s.values.map).toBeCloseTo((1 / 1 + 2 / 3) / 3, 10);
    expect(s.values['map@4']).toBeCloseTo(s.values.map, 10);
    expect(s.values['map@1000']).toBeCloseTo(s.values.map, 10);
  });

  it('with map alone the first relevant rank is looked for over the whole ranking', () => {
    const s = scoreRanking(['x', 'y', 'z', 'a'], { a: 1 }, [parseMeasure('map')]);
    expect(s.firstRelevantRank).toBe(4);
    expect(s.values.map).toBeCloseTo(1 / 4, 10);
  });
});

describe('evaluate inputs', () => {
  const qrelsObj = { q1: { a: 2, b: 0, c: 1 }, q2: { d: 1 }, q3: { e: 0 } };
  const runObj = { q1: { a: 0.5, b: 0.9, x: 0.7 }, q2: { y: 3, d: 2 }, q9: { a: 1 } };
  const qrelsMap: Qrels = new Map(Object.entries(qrelsObj).map(([q, d]) => [q, new Map(Object.entries(d))]));
  const runMap: Run = new Map(
    Object.entries(runObj).map(([q, d]) => [q, Object.entries(d).map(([docno, score]) => ({ docno, score }))]),
  );
  const measures = ['ndcg@3', 'recall@2', 'map', 'mrr@3', 'r_precision'].map(parseMeasure);

  it('evaluate with plain objects equals evaluate with Maps', () => {
    const a = evaluate(qrelsObj, runObj, measures);
    const b = evaluate(qrelsMap, runMap, measures);
    expect(Object.keys(a.mean)).toEqual(Object.keys(b.mean));
    for (const name of Object.keys(b.mean)) expect(a.mean[name], name).toBeCloseTo(b.mean[name], 10);
    expect(a.excluded).toEqual(['q3']);
    expect(a.ignored).toEqual(['q9']);
    // q1 ranks b (0), x, a (2): map = (1/3) / 2 (R = 2); q2 ranks y, d: map = (1/2) / 1
    expect(a.perQuery.q1.map).toBeCloseTo(1 / 3 / 2, 10);
    expect(a.mean.map).toBeCloseTo((1 / 3 / 2 + 1 / 2) / 2, 10);
  });

  it('evaluate accepts a run of entry arrays in a plain object and Maps of Maps', () => {
    const arrays = Object.fromEntries(runMap);
    const mapsOfMaps = new Map(Object.entries(runObj).map(([q, d]) => [q, new Map(Object.entries(d))]));
    const ref = evaluate(qrelsMap, runMap, measures);
    for (const run of [arrays, mapsOfMaps]) {
      const r = evaluate(qrelsObj, run, measures);
      for (const name of Object.keys(ref.mean)) expect(r.mean[name], name).toBeCloseTo(ref.mean[name], 10);
    }
  });

  it('evaluate with a wrong shape throws HarnessError naming what was expected', () => {
    const bad: [unknown, unknown, string, string][] = [
      [[['q1', { a: 1 }]], runObj, 'QRELS_INVALID', 'qrels'],
      [{ q1: ['a'] }, runObj, 'QRELS_INVALID', 'qrels["q1"]'],
      [{ q1: { a: '1' } }, runObj, 'QRELS_INVALID', 'qrels["q1"]["a"]'],
      [{ q1: { a: 2.5 } }, runObj, 'QRELS_INVALID', 'qrels["q1"]["a"]'],
      [{ q1: { a: 2000 } }, runObj, 'QRELS_INVALID', 'qrels["q1"]["a"]'],
      [qrelsObj, null, 'RUN_INVALID', 'run'],
      [qrelsObj, { q1: 'a b c' }, 'RUN_INVALID', 'run["q1"]'],
      [qrelsObj, { q1: { a: Number.NaN } }, 'RUN_INVALID', 'run["q1"]["a"]'],
      [qrelsObj, { q1: [{ docno: 'a' }] }, 'RUN_INVALID', 'run["q1"][0].score'],
      [qrelsObj, { q1: [{ doc: 'a', score: 1 }] }, 'RUN_INVALID', 'run["q1"][0].docno'],
    ];
    for (const [q, r, code, where] of bad) {
      const e = thrown(() => evaluate(q as never, r as never, measures));
      expect(e.code, where).toBe(code);
      expect(e.location.path, where).toBe(where);
      expect(e.message, where).toContain('must be');
    }
  });

  it('a negative grade is accepted as judged not relevant, as trec_eval', () => {
    const r = evaluate({ q1: { a: -1, b: 1 } }, { q1: { a: 2, b: 1 } }, [parseMeasure('mrr@2')]);
    expect(r.mean['mrr@2']).toBeCloseTo(1 / 2, 10);
  });
});

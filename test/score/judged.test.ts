/**
 * Measures that know what is unjudged (issue 20 §1): judged@k, bpref and condensed lists, worked by hand. The
 * conformance with trec_eval is in conformance-judged.test.ts; these name each rule.
 */
import { describe, expect, it } from 'vitest';
import { isHarnessError } from '../../src/errors.js';
import { evaluate, scoreRanking } from '../../src/score/evaluate.js';
import { condensedMeasure, formatMeasure, KNOWN_MEASURE_NAMES, parseMeasure } from '../../src/score/measures.js';
import { thrown } from '../helpers/errors.js';

const ms = (...names: string[]) => names.map(parseMeasure);
const log2 = Math.log2;

describe('judged@k (ir_measures Judged@k)', () => {
  it('counts the top-k slots whose document has a qrels line of any grade, grade 0 and negative included', () => {
    // a:1 judged, x unjudged, b:0 judged, c:-1 judged, y unjudged
    const s = scoreRanking(['a', 'x', 'b', 'c', 'y'], { a: 1, b: 0, c: -1 }, ms('judged@1', 'judged@2', 'judged@4', 'judged@5'));
    expect(s.values['judged@1']).toBeCloseTo(1 / 1, 10);
    expect(s.values['judged@2']).toBeCloseTo(1 / 2, 10);
    expect(s.values['judged@4']).toBeCloseTo(3 / 4, 10);
    expect(s.values['judged@5']).toBeCloseTo(3 / 5, 10);
  });

  it('a ranking shorter than k: the missing tail is not judged (divides by k)', () => {
    const s = scoreRanking(['a', 'b'], { a: 1, b: 0 }, ms('judged@10'));
    expect(s.values['judged@10']).toBeCloseTo(2 / 10, 10);
  });

  it('a question missing from the run scores 0 and stays in the mean', () => {
    const r = evaluate({ q1: { a: 1 }, q2: { b: 1 } }, { q1: { a: 2, x: 1 } }, ms('judged@2'));
    expect(r.perQuery.q1['judged@2']).toBeCloseTo(1 / 2, 10);
    expect(r.perQuery.q2['judged@2']).toBe(0);
    expect(r.mean['judged@2']).toBeCloseTo((1 / 2 + 0) / 2, 10);
  });

  it('a judged document repeated in the ranking is judged at its first slot only (exported runs name the repeat doc#n)', () => {
    const s = scoreRanking(['a', 'a', 'x'], { a: 0, b: 1 }, ms('judged@3'));
    expect(s.values['judged@3']).toBeCloseTo(1 / 3, 10);
  });

  it('Judged@10 and judged@10 are one measure; judged needs a cutoff and has no condensed form', () => {
    expect(parseMeasure('Judged@10')).toEqual({ family: 'judged', k: 10 });
    expect(formatMeasure(parseMeasure('judged@10'))).toBe('judged@10');
    expect(isHarnessError(thrown(() => parseMeasure('judged')), 'MEASURE_UNKNOWN')).toBe(true);
    expect(isHarnessError(thrown(() => parseMeasure('judged_condensed@10')), 'MEASURE_UNKNOWN')).toBe(true);
    expect(condensedMeasure(parseMeasure('judged@10'))).toBeNull();
  });

  it('adding judged@k to a list leaves the classic values and firstRelevantRank unchanged', () => {
    const ranking = ['x', 'n', 'a', 'b'];
    const j = { a: 2, b: 1, n: 0 };
    const plain = scoreRanking(ranking, j, ms('ndcg@3', 'mrr@3', 'r_precision'));
    const withJudged = scoreRanking(ranking, j, ms('ndcg@3', 'judged@3', 'mrr@3', 'r_precision', 'bpref', 'ndcg_condensed@3'));
    expect(Object.keys(withJudged.values)).toEqual(['ndcg@3', 'judged@3', 'mrr@3', 'r_precision', 'bpref', 'ndcg_condensed@3']);
    for (const [n, v] of Object.entries(plain.values)) expect(withJudged.values[n]).toBe(v);
    expect(withJudged.firstRelevantRank).toBe(plain.firstRelevantRank);
    expect(plain.firstRelevantRank).toBe(3);
  });
});

describe('bpref (trec_eval m_bpref.c)', () => {
  it('R = 2, N = 3: each judged non-relevant above a relevant costs 1/min(N, R) = 1/2; unjudged documents are skipped', () => {
    // r1 has 1 non-relevant above it: 1 - 1/2; r2 has 2: 1 - min(2, 2)/2 = 0
    const j = { r1: 1, r2: 1, n1: 0, n2: 0, n3: 0 };
    const s = scoreRanking(['n1', 'u1', 'r1', 'u2', 'n2', 'r2'], j, ms('bpref'));
    expect(s.values.bpref).toBeCloseTo((1 - 1 / 2 + (1 - 2 / 2)) / 2, 10);
  });

  it('min(n_r, R): non-relevant documents beyond R cost nothing more (R = 1, N = 3, two above: 1 - min(2,1)/min(3,1) = 0)', () => {
    const j = { r1: 1, n1: 0, n2: 0, n3: 0 };
    expect(scoreRanking(['n1', 'n2', 'r1'], j, ms('bpref')).values.bpref).toBeCloseTo((1 - Math.min(2, 1) / Math.min(3, 1)) / 1, 10);
    expect(scoreRanking(['n1', 'n2', 'r1'], j, ms('bpref')).values.bpref).toBe(0);
  });

  it('N < R: the denominator is N (R = 3, N = 1: one non-relevant above costs 1/1)', () => {
    const j = { r1: 1, r2: 1, r3: 1, n1: 0 };
    // r1 above n1: 1; r2 below it: 1 - min(1, 3)/min(1, 3) = 0; r3 never retrieved: 0
    expect(scoreRanking(['r1', 'n1', 'r2'], j, ms('bpref')).values.bpref).toBeCloseTo((1 + (1 - 1 / 1) + 0) / 3, 10);
  });

  it('N = 0: no judged non-relevant document, every retrieved relevant adds 1 (no division by zero)', () => {
    expect(scoreRanking(['u', 'r1', 'v'], { r1: 1, r2: 2 }, ms('bpref')).values.bpref).toBeCloseTo((1 + 0) / 2, 10);
  });

  it('the threshold decides what is non-relevant: at t = 2 a grade-1 document counts in N and above a relevant one', () => {
    const j = { a: 2, b: 1, c: 0 };
    // t = 2: R = 1 (a), N = 2 (b, c); b is above a: 1 - min(1, 1)/min(2, 1) = 0
    expect(scoreRanking(['b', 'a'], j, ms('bpref'), { relevanceThreshold: 2 }).values.bpref).toBeCloseTo(1 - 1 / 1, 10);
    // t = 1: R = 2, N = 1; both relevant, no non-relevant above either: (1 + 1) / 2
    expect(scoreRanking(['b', 'a'], j, ms('bpref')).values.bpref).toBeCloseTo((1 + 1) / 2, 10);
  });

  it('a document repeated in the ranking counts once (R = 2, N = 2: n1 twice above r1 costs min(1, 2)/2)', () => {
    const j = { r1: 1, r2: 1, n1: 0, n2: 0 };
    expect(scoreRanking(['n1', 'n1', 'r1', 'r1'], j, ms('bpref')).values.bpref).toBeCloseTo((1 - 1 / 2) / 2, 10);
  });

  it('Bpref (ir_measures) and bpref parse to one measure without a cutoff', () => {
    expect(parseMeasure('Bpref')).toEqual({ family: 'bpref', k: null });
    expect(isHarnessError(thrown(() => parseMeasure('bpref@10')), 'MEASURE_UNKNOWN')).toBe(true);
  });
});

describe('condensed lists (trec_eval -J, Sakai 2007)', () => {
  // ranking u1 a u2 n b, judged a:1 n:0 b:2 -> condensed list a n b
  const ranking = ['u1', 'a', 'u2', 'n', 'b'];
  const j = { a: 1, n: 0, b: 2 };

  it('every measure is computed on the ranking with its unjudged documents removed', () => {
    const v = scoreRanking(
      ranking,
      j,
      ms('ndcg_condensed@2', 'precision_condensed@2', 'recall_condensed@1', 'hit_rate_condensed@1', 'map_condensed@3',
        'r_precision_condensed', 'recip_rank_condensed', 'mrr_condensed@1', 'ndcg_condensed'),
    ).values;
    expect(v['ndcg_condensed@2']).toBeCloseTo(1 / log2(2) / (2 / log2(2) + 1 / log2(3)), 10);
    expect(v['precision_condensed@2']).toBeCloseTo(1 / 2, 10);
    expect(v['recall_condensed@1']).toBeCloseTo(1 / 2, 10);
    expect(v['hit_rate_condensed@1']).toBe(1);
    expect(v['map_condensed@3']).toBeCloseTo((1 / 1 + 2 / 3) / 2, 10);
    expect(v.r_precision_condensed).toBeCloseTo(1 / 2, 10);
    expect(v.recip_rank_condensed).toBeCloseTo(1 / 1, 10);
    expect(v['mrr_condensed@1']).toBeCloseTo(1 / 1, 10);
    expect(v.ndcg_condensed).toBeCloseTo((1 / log2(2) + 2 / log2(4)) / (2 / log2(2) + 1 / log2(3)), 10);
  });

  it('beside the same measures on the ranking as given (unjudged counted as not relevant)', () => {
    const v = scoreRanking(ranking, j, ms('ndcg@2', 'recip_rank', 'ndcg', 'precision@2')).values;
    expect(v['ndcg@2']).toBeCloseTo(1 / log2(3) / (2 / log2(2) + 1 / log2(3)), 10);
    expect(v.recip_rank).toBeCloseTo(1 / 2, 10);
    expect(v.ndcg).toBeCloseTo((1 / log2(3) + 2 / log2(6)) / (2 / log2(2) + 1 / log2(3)), 10);
    expect(v['precision@2']).toBeCloseTo(1 / 2, 10);
  });

  it('a repeated document keeps its first slot only in the condensed list (b a a b -> b a)', () => {
    const v = scoreRanking(['b', 'a', 'a', 'b', 'n'], j, ms('precision_condensed@3', 'map_condensed@3')).values;
    // condensed: b a n; precision@3 = 2/3; AP = (1/1 + 2/2) / 2
    expect(v['precision_condensed@3']).toBeCloseTo(2 / 3, 10);
    expect(v['map_condensed@3']).toBeCloseTo((1 / 1 + 2 / 2) / 2, 10);
  });

  it('bpref ignores unjudged documents already, so bpref_condensed equals bpref', () => {
    const v = scoreRanking(ranking, j, ms('bpref', 'bpref_condensed')).values;
    // a above n: 1; b below n: 1 - min(1, 2)/min(1, 2) = 0; R = 2
    expect(v.bpref).toBeCloseTo((1 + 0) / 2, 10);
    expect(v.bpref_condensed).toBe(v.bpref);
  });

  it('names round-trip: <family>_condensed@k and <family>_condensed; RR_condensed is recip_rank_condensed', () => {
    for (const n of ['ndcg_condensed@10', 'recip_rank_condensed', 'bpref_condensed', 'r_precision_condensed', 'map_condensed', 'ndcg_condensed', 'precision_condensed@5']) {
      expect(formatMeasure(parseMeasure(n))).toBe(n);
    }
    expect(parseMeasure('ndcg_condensed@10')).toEqual({ family: 'ndcg', k: 10, condensed: true });
    expect(formatMeasure(parseMeasure('RR_condensed'))).toBe('recip_rank_condensed');
    expect(formatMeasure(parseMeasure('nDCG_condensed@10'))).toBe('ndcg_condensed@10');
    expect(condensedMeasure(parseMeasure('P@5'))).toEqual({ family: 'precision', k: 5, condensed: true });
  });

  it('an unknown name still fails listing the known ones, the new ones among them', () => {
    const e = thrown(() => parseMeasure('bprf'));
    expect(isHarnessError(e, 'MEASURE_UNKNOWN')).toBe(true);
    expect(e.message).toContain('did you mean bpref?');
    for (const n of ['recip_rank', 'bpref', 'judged@k', 'ndcg@k, ndcg', '_condensed']) expect(KNOWN_MEASURE_NAMES).toContain(n);
  });
});

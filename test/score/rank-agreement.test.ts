/** Kendall's tau-b between configuration orders, and the orders under two qrels, worked out by hand. */
import { describe, expect, it } from 'vitest';
import { parseMeasure } from '../../src/score/measures.js';
import { kendallTauB, orderAgreement } from '../../src/score/rank-agreement.js';

describe('kendallTauB', () => {
  it('same order 1, reversed order -1', () => {
    expect(kendallTauB([1, 2, 3, 4], [10, 20, 30, 40])).toBeCloseTo(1, 10);
    expect(kendallTauB([1, 2, 3, 4], [4, 3, 2, 1])).toBeCloseTo(-1, 10);
  });
  it('one swapped pair of four: (5 - 1) / 6', () => {
    expect(kendallTauB([1, 2, 3, 4], [1, 3, 2, 4])).toBeCloseTo((5 - 1) / 6, 10);
  });
  it('ties: tau-b = (C - D) / sqrt((C + D + Tx)(C + D + Ty))', () => {
    // x = 1,1,2  y = 1,2,3: pairs (0,1) tied in x only; (0,2) and (1,2) concordant
    expect(kendallTauB([1, 1, 2], [1, 2, 3])).toBeCloseTo(2 / Math.sqrt((2 + 1) * 2), 10);
    expect(kendallTauB([1, 1], [1, 2])).toBeNaN();
  });
});

describe('orderAgreement', () => {
  it('scores each configuration under both qrels and names the top of each', () => {
    // two questions; A knows only d1 (q1) and d3 (q2); B adds d2 as relevant for q1
    const rankings = new Map([
      ['x', new Map([['q1', ['d1', 'd2']], ['q2', ['d3']]])],
      ['y', new Map([['q1', ['d2', 'd1']], ['q2', ['d9', 'd3']]])],
    ]);
    const A = { q1: { d1: 1 }, q2: { d3: 1 } };
    const B = { q1: { d1: 1, d2: 1 }, q2: { d3: 1 } };
    const r = orderAgreement(rankings, A, B, parseMeasure('mrr@10'));
    expect(r.measure).toBe('mrr@10');
    expect(r.meansA.x).toBeCloseTo((1 + 1) / 2, 10);
    expect(r.meansA.y).toBeCloseTo((1 / 2 + 1 / 2) / 2, 10);
    expect(r.meansB.y).toBeCloseTo((1 + 1 / 2) / 2, 10);
    expect(r.topA).toEqual({ id: 'x', mean: 1 });
    expect(r.topB!.id).toBe('x');
    expect(r.tau).toBeCloseTo(1, 10);
  });
});

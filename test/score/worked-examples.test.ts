/** Worked examples from the brief, with the arithmetic written out. */
import { describe, expect, it } from 'vitest';
import { evaluate, scoreRanking, type Qrels, type Run } from '../../src/score/evaluate.js';
import { measuresAtK, parseMeasure } from '../../src/score/measures.js';

function qrelsOf(q: Record<string, Record<string, number>>): Qrels {
  return new Map(Object.entries(q).map(([qid, docs]) => [qid, new Map(Object.entries(docs))]));
}
/** A run whose scores fall with rank (rank 1 gets the highest score). */
function runOf(q: Record<string, string[]>): Run {
  return new Map(Object.entries(q).map(([qid, ids]) => [qid, ids.map((docno, i) => ({ docno, score: 100 - i }))]));
}

describe('worked examples', () => {
  it('three questions at k = 2: hit_rate 2/3, recall 0.5, mrr 0.5', () => {
    const r = evaluate(
      qrelsOf({ a: { c2: 1 }, b: { c5: 1, c9: 1 }, c: { c8: 1 } }),
      runOf({ a: ['c2'], b: ['c3', 'c9', 'c4'], c: ['c1', 'c7', 'c8'] }),
      measuresAtK(2, ['hit_rate', 'recall', 'mrr']),
    );
    // a: c2 at rank 1 -> hit 1, recall 1/1, rr 1
    // b: c9 at rank 2 of R = 2 -> hit 1, recall 1/2, rr 1/2
    // c: c8 at rank 3, outside k = 2 -> hit 0, recall 0, rr 0
    expect(r.mean['hit_rate@2']).toBeCloseTo((1 + 1 + 0) / 3, 10);
    expect(r.mean['recall@2']).toBeCloseTo((1 + 0.5 + 0) / 3, 10);
    expect(r.mean['mrr@2']).toBeCloseTo((1 + 0.5 + 0) / 3, 10);
    expect(r.perQuery.b['mrr@2']).toBeCloseTo(1 / 2, 10);
  });

  it('relevant at ranks 1, 2, 4 of 5 with 4 relevant in all: precision@5 = 3/5, recall@5 = 3/4', () => {
    const s = scoreRanking(['r1', 'r2', 'x1', 'r3', 'x2'], { r1: 1, r2: 1, r3: 1, r4: 1 }, [
      parseMeasure('precision@5'),
      parseMeasure('recall@5'),
    ]);
    expect(s.values['precision@5']).toBeCloseTo(3 / 5, 10);
    expect(s.values['recall@5']).toBeCloseTo(3 / 4, 10);
    expect(s.firstRelevantRank).toBe(1);
  });

  it('grades [2, 0, 1, 0, 0] and an unretrieved grade-1 document: ndcg@5 = (2 + 1/log2 4) / (2 + 1/log2 3 + 1/log2 4)', () => {
    const s = scoreRanking(['g2', 'z1', 'g1', 'z2', 'u'], { g2: 2, z1: 0, g1: 1, z2: 0, missing: 1 }, [parseMeasure('ndcg@5')]);
    const expected = (2 / Math.log2(2) + 1 / Math.log2(4)) / (2 / Math.log2(2) + 1 / Math.log2(3) + 1 / Math.log2(4));
    expect(s.values['ndcg@5']).toBeCloseTo(expected, 10);
    expect(s.values['ndcg@5']).toBeCloseTo(0.79848, 5);
  });
});

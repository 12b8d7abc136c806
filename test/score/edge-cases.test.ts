/** One named test per edge-case rule of src/score/evaluate.ts. */
import { describe, expect, it } from 'vitest';
import { isHarnessError } from '../../src/errors.js';
import { parseRun } from '../../src/load/trec.js';
import {
  evaluate,
  planMeasures,
  prepareJudgements,
  rankRunEntries,
  relevantCount,
  scorePrepared,
  scoreRanking,
  type Qrels,
  type Run,
} from '../../src/score/evaluate.js';
import { measuresAtK, parseMeasure, type Measure } from '../../src/score/measures.js';

const L = Math.log2;
const ms = (...names: string[]): Measure[] => names.map(parseMeasure);
function qrelsOf(q: Record<string, Record<string, number>>): Qrels {
  return new Map(Object.entries(q).map(([qid, docs]) => [qid, new Map(Object.entries(docs))]));
}
function runOf(q: Record<string, string[]>): Run {
  return new Map(Object.entries(q).map(([qid, ids]) => [qid, ids.map((docno, i) => ({ docno, score: 100 - i }))]));
}

describe('edge cases', () => {
  it('ideal DCG is cut at k: a perfect top 2 with 5 relevant documents has ndcg@2 = 1', () => {
    const s = scoreRanking(['a', 'b', 'x'], { a: 1, b: 1, c: 1, d: 1, e: 1 }, ms('ndcg@2', 'ndcg@3'));
    expect(s.values['ndcg@2']).toBeCloseTo(1, 10);
    // at k = 3 the ideal has three relevant documents, the ranking two
    expect(s.values['ndcg@3']).toBeCloseTo((1 / L(2) + 1 / L(3)) / (1 / L(2) + 1 / L(3) + 1 / L(4)), 10);
  });

  it('reciprocal rank is 0 when the first relevant document is below k', () => {
    const s = scoreRanking(['x', 'y', 'z', 'r'], { r: 1 }, ms('mrr@3', 'mrr@4', 'hit_rate@3'));
    expect(s.values['mrr@3']).toBe(0);
    expect(s.values['hit_rate@3']).toBe(0);
    expect(s.values['mrr@4']).toBeCloseTo(1 / 4, 10);
    expect(s.firstRelevantRank).toBe(4);
  });

  it('firstRelevantRank is null when the first relevant slot lies beyond the largest k asked', () => {
    const s = scoreRanking(['x', 'y', 'z', 'r'], { r: 1 }, ms('mrr@3', 'precision@2'));
    expect(s.firstRelevantRank).toBeNull();
  });

  it('a later duplicate of a document is not relevant at its later slot and gains nothing', () => {
    const s = scoreRanking(['a', 'a', 'x', 'a'], { a: 2, b: 1 }, ms('precision@4', 'recall@4', 'ndcg@4', 'map@4', 'r_precision'));
    expect(s.values['precision@4']).toBeCloseTo(1 / 4, 10);
    expect(s.values['recall@4']).toBeCloseTo(1 / 2, 10);
    expect(s.values['ndcg@4']).toBeCloseTo(2 / L(2) / (2 / L(2) + 1 / L(3)), 10);
    expect(s.values['map@4']).toBeCloseTo(1 / 1 / 2, 10);
    expect(s.values['r_precision']).toBeCloseTo(1 / 2, 10);
  });

  it('a duplicate slot still occupies its rank: the next relevant document is discounted at its own rank', () => {
    const s = scoreRanking(['a', 'a', 'b'], { a: 1, b: 1 }, ms('ndcg@3', 'map@3'));
    expect(s.values['ndcg@3']).toBeCloseTo((1 / L(2) + 1 / L(4)) / (1 / L(2) + 1 / L(3)), 10);
    expect(s.values['map@3']).toBeCloseTo((1 / 1 + 2 / 3) / 2, 10);
  });

  it('tied scores give the same ranking whatever the order of lines in the run file (docno descending)', () => {
    const lines = ['q1 Q0 a 1 0.5 t', 'q1 Q0 b 2 0.5 t', 'q1 Q0 c 3 0.5 t', 'q1 Q0 d 4 0.9 t'];
    const reversed = [...lines].reverse();
    const qrels = qrelsOf({ q1: { a: 1 } });
    const m = ms('mrr@4', 'ndcg@4');
    const r1 = evaluate(qrels, parseRun(lines.join('\n'), 'a.run'), m);
    const r2 = evaluate(qrels, parseRun(reversed.join('\n'), 'b.run'), m);
    expect(rankRunEntries(parseRun(lines.join('\n'), 'a.run').get('q1')!).ranking).toEqual(['d', 'c', 'b', 'a']);
    expect(rankRunEntries(parseRun(reversed.join('\n'), 'b.run').get('q1')!).ranking).toEqual(['d', 'c', 'b', 'a']);
    expect(r1.perQuery.q1['mrr@4']).toBeCloseTo(1 / 4, 10);
    expect(r2.perQuery).toEqual(r1.perQuery);
  });

  it('the rank column of a run is ignored: order comes from the scores', () => {
    const run = parseRun('q1 Q0 a 1 0.1 t\nq1 Q0 b 2 0.9 t\n', 'r.run');
    const r = evaluate(qrelsOf({ q1: { a: 1 } }), run, ms('mrr@2'));
    expect(r.perQuery.q1['mrr@2']).toBeCloseTo(1 / 2, 10);
  });

  it('duplicate docno lines in a run: the first in rank order counts, later copies are non-relevant, with a warning', () => {
    const run = parseRun('q1 Q0 a 1 0.2 t\nq1 Q0 b 2 0.5 t\nq1 Q0 a 3 0.9 t\n', 'r.run');
    const r = evaluate(qrelsOf({ q1: { a: 1, b: 1 } }), run, ms('precision@3', 'mrr@3'));
    // order: a (0.9), b (0.5), a (0.2) -> relevant, relevant, repeat
    expect(r.perQuery.q1['precision@3']).toBeCloseTo(2 / 3, 10);
    expect(r.perQuery.q1['mrr@3']).toBeCloseTo(1, 10);
    expect(r.warnings).toHaveLength(1);
    expect(r.warnings[0]).toContain('q1');
    expect(r.warnings[0]).toContain('a');
  });

  it('an empty result list scores 0 on every measure and stays in the mean', () => {
    const r = evaluate(qrelsOf({ q1: { a: 1 }, q2: { b: 1 } }), new Map([['q1', [{ docno: 'a', score: 1 }]], ['q2', []]]), [
      ...measuresAtK(3),
      parseMeasure('r_precision'),
    ]);
    for (const v of Object.values(r.perQuery.q2)) expect(v).toBe(0);
    expect(Object.keys(r.perQuery)).toEqual(['q1', 'q2']);
    expect(r.mean['ndcg@3']).toBeCloseTo((1 + 0) / 2, 10);
    expect(r.mean['precision@3']).toBeCloseTo((1 / 3 + 0) / 2, 10);
    expect(scoreRanking([], { a: 1 }, ms('ndcg@3')).firstRelevantRank).toBeNull();
  });

  it('graded judgements 0-3: ndcg uses gain = grade, ndcg_exp uses gain = 2^grade - 1', () => {
    const judgements = { g3: 3, g2: 2, g1: 1, g0: 0 };
    const s = scoreRanking(['g1', 'g0', 'g3', 'g2'], judgements, ms('ndcg@4', 'ndcg_exp@4', 'ndcg@2', 'ndcg_exp@2'));
    const idealLin = 3 / L(2) + 2 / L(3) + 1 / L(4);
    const idealExp = 7 / L(2) + 3 / L(3) + 1 / L(4);
    expect(s.values['ndcg@4']).toBeCloseTo((1 / L(2) + 0 + 3 / L(4) + 2 / L(5)) / idealLin, 10);
    expect(s.values['ndcg_exp@4']).toBeCloseTo((1 / L(2) + 0 + 7 / L(4) + 3 / L(5)) / idealExp, 10);
    expect(s.values['ndcg@2']).toBeCloseTo(1 / L(2) / (3 / L(2) + 2 / L(3)), 10);
    expect(s.values['ndcg_exp@2']).toBeCloseTo(1 / L(2) / (7 / L(2) + 3 / L(3)), 10);
  });

  it('a qrels question missing from the run scores 0 and stays in the mean (trec_eval -c)', () => {
    const r = evaluate(qrelsOf({ q1: { a: 1 }, q2: { b: 1 } }), runOf({ q1: ['a'] }), ms('mrr@5', 'recall@5'));
    expect(r.perQuery.q2).toEqual({ 'mrr@5': 0, 'recall@5': 0 });
    expect(r.mean['mrr@5']).toBeCloseTo((1 + 0) / 2, 10);
    expect(r.excluded).toEqual([]);
  });

  it('a run question not in the qrels is ignored and reported', () => {
    const r = evaluate(qrelsOf({ q1: { a: 1 } }), runOf({ zz: ['a'], q1: ['x', 'a'] }), ms('mrr@5'));
    expect(r.ignored).toEqual(['zz']);
    expect(Object.keys(r.perQuery)).toEqual(['q1']);
    expect(r.mean['mrr@5']).toBeCloseTo(1 / 2, 10);
  });

  it('a question whose judgements are all grade 0 is excluded, not averaged as 0', () => {
    const r = evaluate(qrelsOf({ q1: { a: 1 }, q2: { b: 0, c: 0 } }), runOf({ q1: ['a'], q2: ['b'] }), ms('mrr@5'));
    expect(r.excluded).toEqual(['q2']);
    expect(r.perQuery.q2).toBeUndefined();
    expect(r.mean['mrr@5']).toBeCloseTo(1, 10);
  });

  it('with no scorable question the means are empty and a warning says why', () => {
    const r = evaluate(qrelsOf({ q1: { a: 0 } }), runOf({ q1: ['a'] }), ms('mrr@5'));
    expect(r.mean).toEqual({});
    expect(r.excluded).toEqual(['q1']);
    expect(r.warnings).toHaveLength(1);
  });

  it('relevance threshold 2 changes binary measures; ndcg still uses every grade > 0 (as trec_eval ndcg_cut)', () => {
    const judgements = { a: 1, b: 2, c: 3 };
    const ranking = ['a', 'b', 'x'];
    const m = ms('precision@3', 'recall@3', 'mrr@3', 'hit_rate@1', 'map@3', 'r_precision', 'ndcg@3');
    const t1 = scoreRanking(ranking, judgements, m);
    const t2 = scoreRanking(ranking, judgements, m, { relevanceThreshold: 2 });
    expect(t1.values['precision@3']).toBeCloseTo(2 / 3, 10);
    expect(t2.values['precision@3']).toBeCloseTo(1 / 3, 10);
    expect(t1.values['recall@3']).toBeCloseTo(2 / 3, 10);
    expect(t2.values['recall@3']).toBeCloseTo(1 / 2, 10); // R = 2 (b, c)
    expect(t1.values['mrr@3']).toBeCloseTo(1, 10);
    expect(t2.values['mrr@3']).toBeCloseTo(1 / 2, 10);
    expect(t2.values['hit_rate@1']).toBe(0);
    expect(t2.values['map@3']).toBeCloseTo(1 / 2 / 2, 10);
    expect(t2.values['r_precision']).toBeCloseTo(1 / 2, 10);
    const ndcg = (1 / L(2) + 2 / L(3)) / (3 / L(2) + 2 / L(3) + 1 / L(4));
    expect(t1.values['ndcg@3']).toBeCloseTo(ndcg, 10);
    expect(t2.values['ndcg@3']).toBeCloseTo(ndcg, 10);
    expect(t2.relevant).toBe(2);
    expect(relevantCount(judgements, 2)).toBe(2);
    expect(relevantCount(judgements)).toBe(3);
  });

  it('relevance threshold 2 excludes a question whose best grade is 1', () => {
    const r = evaluate(qrelsOf({ q1: { a: 1 }, q2: { b: 2 } }), runOf({ q1: ['a'], q2: ['b'] }), ms('mrr@1'), {
      relevanceThreshold: 2,
    });
    expect(r.excluded).toEqual(['q1']);
    expect(r.mean['mrr@1']).toBeCloseTo(1, 10);
  });

  it('a bad relevance threshold fails with USAGE', () => {
    for (const t of [0, 1.5, -1, Number.NaN]) {
      let err: unknown;
      try {
        scoreRanking(['a'], { a: 1 }, ms('mrr@1'), { relevanceThreshold: t });
      } catch (e) {
        err = e;
      }
      expect(isHarnessError(err, 'USAGE')).toBe(true);
    }
  });

  it('precision@k divides by k and r_precision by R even when fewer documents came back', () => {
    const s = scoreRanking(['a'], { a: 1, b: 1, c: 1 }, ms('precision@10', 'r_precision', 'map@10'));
    expect(s.values['precision@10']).toBeCloseTo(1 / 10, 10);
    expect(s.values['r_precision']).toBeCloseTo(1 / 3, 10);
    expect(s.values['map@10']).toBeCloseTo(1 / 1 / 3, 10);
  });

  it('r_precision looks at the top R even when R exceeds every k asked', () => {
    const s = scoreRanking(['x', 'a', 'b', 'c'], { a: 1, b: 1, c: 1, d: 1 }, ms('precision@1', 'r_precision'));
    expect(s.values['precision@1']).toBe(0);
    expect(s.values['r_precision']).toBeCloseTo(3 / 4, 10);
    expect(s.firstRelevantRank).toBeNull(); // first relevant at rank 2 > largest k (1)
  });

  it('document ids that are Object.prototype keys are unjudged, not relevant', () => {
    const s = scoreRanking(['constructor', 'toString', '__proto__', 'a'], { a: 1 }, ms('mrr@4', 'precision@4'));
    expect(s.values['mrr@4']).toBeCloseTo(1 / 4, 10);
    expect(s.values['precision@4']).toBeCloseTo(1 / 4, 10);
  });

  it('values come back keyed by canonical name in the order the measures were given', () => {
    const s = scoreRanking(['a'], { a: 1 }, ms('ndcg@10', 'hit_rate@1', 'r_precision', 'map@5'));
    expect(Object.keys(s.values)).toEqual(['ndcg@10', 'hit_rate@1', 'r_precision', 'map@5']);
  });

  it('a prepared question and plan score many rankings the same as scoreRanking', () => {
    const j = { a: 2, b: 1, c: 0 };
    const m = [...measuresAtK(3), ...measuresAtK(1), parseMeasure('r_precision')];
    const prepared = prepareJudgements(j);
    const plan = planMeasures(m);
    for (const ranking of [['a', 'b'], ['c', 'b', 'a'], [], ['b', 'b', 'a', 'x']]) {
      expect(scorePrepared(ranking, prepared, plan)).toEqual(scoreRanking(ranking, j, m));
    }
  });

  it('judgements given as a Map prepare the same as a plain object', () => {
    const m = [...measuresAtK(3), parseMeasure('r_precision')];
    const plan = planMeasures(m);
    const ranking = ['c', 'a', 'x', 'b'];
    const fromRecord = scorePrepared(ranking, prepareJudgements({ a: 2, b: 1, c: 0 }), plan);
    const fromMap = scorePrepared(ranking, prepareJudgements(new Map([['a', 2], ['b', 1], ['c', 0]])), plan);
    expect(fromMap).toEqual(fromRecord);
    expect(fromRecord.values['mrr@3']).toBeCloseTo(1 / 2, 10);
  });

  it('a measure list changed in place between calls is planned again (the plan memo checks contents)', () => {
    const m: Measure[] = [{ family: 'mrr', k: 1 }];
    expect(scoreRanking(['x', 'a'], { a: 1 }, m).values).toEqual({ 'mrr@1': 0 });
    m[0] = { family: 'mrr', k: 2 };
    expect(scoreRanking(['x', 'a'], { a: 1 }, m).values).toEqual({ 'mrr@2': 1 / 2 });
    m.push({ family: 'hit_rate', k: 2 });
    expect(scoreRanking(['x', 'a'], { a: 1 }, m).values).toEqual({ 'mrr@2': 1 / 2, 'hit_rate@2': 1 });
  });

  it('scoring does not change its inputs', () => {
    const ranking = ['b', 'a'];
    const j = { a: 1 };
    const m = ms('ndcg@2');
    const entries = [{ docno: 'a', score: 1 }, { docno: 'b', score: 2 }];
    scoreRanking(ranking, j, m);
    rankRunEntries(entries);
    expect(ranking).toEqual(['b', 'a']);
    expect(j).toEqual({ a: 1 });
    expect(m).toEqual([{ family: 'ndcg', k: 2 }]);
    expect(entries).toEqual([{ docno: 'a', score: 1 }, { docno: 'b', score: 2 }]);
  });
});

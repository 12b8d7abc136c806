/**
 * Bounds on a measure from the unjudged documents of a ranking (issue 20 §1). Pure: no disk, no clock.
 *
 * Every measure counts an unjudged document as not relevant, so the usual value is the LOWER bound: what the row
 * scores if nobody who judges the unjudged documents later finds any of them relevant. The UPPER bound is the value
 * if every unjudged document in the top k were relevant at the threshold grade t:
 *
 *   upper = max( usual, measure(ranking, judgements ∪ { d → t : d in the top k, unjudged, first slot of d }) )
 *
 * The added documents also enter R and the ideal ordering (they would be relevant documents of the question), so
 * for ndcg and map the all-relevant value can fall below the usual one on a question (a late extra relevant document
 * raises the ideal more than the DCG); taking the larger of the two per question keeps upper ≥ lower. It is an
 * optimistic bound in the spirit of Buckley and Voorhees (SIGIR 2004) and Sakai (2007): labelling the pool can only
 * move the row's value within [lower, upper] up to that caveat (a subset of the unjudged documents being relevant
 * can, for ndcg and map, score a little above the all-relevant value; the bound is exact for precision, recall,
 * hit_rate and mrr).
 */
import { HarnessError } from '../errors.js';
import { prepareJudgements, planMeasures, scorePrepared, type MeasurePlan } from './evaluate.js';
import type { Measure } from './measures.js';

/** Lower and upper bound of one measure on one ranking; both in [0, 1], lower ≤ upper. */
export interface UnjudgedBounds {
  /** The usual value: unjudged documents count as not relevant. */
  lower: number;
  /** The value if every unjudged document in the top k were relevant at the threshold grade (never below `lower`). */
  upper: number;
  /** Unjudged documents (distinct) in the top k, the ones the upper bound counts as relevant. */
  unjudged: number;
}

/**
 * The bounds of `measure` (a classic measure at cutoff k: hit_rate, recall, precision, mrr, ndcg, ndcg_exp, map) on
 * one question's ranking.
 * @param ranking document (or chunk) ids, index 0 = rank 1; repeats are non-relevant slots (the scoring policy of
 *   src/score/evaluate.ts) and never count as unjudged.
 * @param judgements id → grade of every judged document of the question (grade 0 included); not changed.
 * @param measure the measure, with its cutoff k (the top k whose unjudged documents are counted).
 * @param threshold relevance threshold t (integer ≥ 1), the grade given to the unjudged documents.
 * @param plan optional, `planMeasures([measure])` built once by the caller for many rankings.
 * @throws HarnessError `MEASURE_UNKNOWN` when the measure has no cutoff or is a condensed or judged measure,
 *   `USAGE` for a bad threshold.
 */
export function unjudgedBounds(
  ranking: readonly string[],
  judgements: Readonly<Record<string, number>>,
  measure: Measure,
  threshold: number,
  plan: MeasurePlan = planMeasures([measure]),
): UnjudgedBounds {
  const k = measure.k;
  if (k === null || measure.condensed === true || measure.family === 'judged' || measure.family === 'bpref') {
    throw new HarnessError('MEASURE_UNKNOWN', `unjudged bounds need a classic measure with a cutoff (ndcg@10), got ${JSON.stringify(measure)}`, {
      remedy: 'pass hit_rate, recall, precision, mrr, ndcg, ndcg_exp or map with a cutoff k',
    });
  }
  const name = plan.names[0];
  const lower = scorePrepared(ranking, prepareJudgements(judgements, { relevanceThreshold: threshold }), plan).values[name];
  const extended = new Map<string, number>();
  for (const id in judgements) if (Object.prototype.hasOwnProperty.call(judgements, id)) extended.set(id, judgements[id]);
  let unjudged = 0;
  const depth = ranking.length < k ? ranking.length : k;
  for (let i = 0; i < depth; i++) {
    const id = ranking[i];
    if (extended.has(id)) continue;
    extended.set(id, threshold);
    unjudged++;
  }
  if (unjudged === 0) return { lower, upper: lower, unjudged };
  const all = scorePrepared(ranking, prepareJudgements(extended, { relevanceThreshold: threshold }), plan).values[name];
  return { lower, upper: all > lower ? all : lower, unjudged };
}

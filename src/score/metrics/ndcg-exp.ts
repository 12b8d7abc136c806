/**
 * ndcg_exp@k: ndcg@k (see `ndcg.ts`: same discount 1/log2(rank + 1), same ideal built from all judged documents with
 * grade > 0, cut at k) with exponential gain
 *
 *   gain = 2^grade − 1
 *
 * Source: Burges et al., "Learning to Rank using Gradient Descent", ICML 2005 (the industry and gdeval convention).
 * With grades 0/1 it equals ndcg@k (2^1 − 1 = 1); with graded judgements it weighs high grades more.
 */

/** Exponential gain 2^grade − 1 (grade > 0). */
export function exponentialGain(grade: number): number {
  return 2 ** grade - 1;
}

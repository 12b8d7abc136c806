/**
 * hit_rate@k (success@k): 1 when any of the first k rank slots is relevant, else 0.
 *
 *   hit_rate@k = 1 if firstRelevantRank ≤ k else 0
 *
 * Source: trec_eval 10.0 `m_success.c` (`success_k`). Averaged over questions it is the share of questions with at
 * least one relevant document in the top k.
 */

/**
 * @param firstRelevantRank 1-based rank of the first relevant slot, or 0 when there is none
 * @param k cutoff in ranks, integer ≥ 1
 * @returns 0 or 1
 */
export function hitRateAt(firstRelevantRank: number, k: number): number {
  return firstRelevantRank > 0 && firstRelevantRank <= k ? 1 : 0;
}

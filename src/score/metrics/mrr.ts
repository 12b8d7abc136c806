/**
 * mrr@k (reciprocal rank at k): 1 / rank of the first relevant slot within the first k, else 0. Its mean over
 * questions is the mean reciprocal rank.
 *
 *   mrr@k = 1 / firstRelevantRank if firstRelevantRank ≤ k else 0
 *
 * Source: trec_eval 10.0 `m_recip_rank.c` (`recip_rank`) evaluated on the run cut at k documents (`trec_eval -M k`).
 */

/**
 * @param firstRelevantRank 1-based rank of the first relevant slot, or 0 when there is none
 * @param k cutoff in ranks, integer ≥ 1
 * @returns a value in [0, 1]: 1, 1/2, 1/3, ... or 0
 */
export function reciprocalRankAt(firstRelevantRank: number, k: number): number {
  return firstRelevantRank > 0 && firstRelevantRank <= k ? 1 / firstRelevantRank : 0;
}

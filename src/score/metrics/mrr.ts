/**
 * mrr@k (reciprocal rank at k): 1 / rank of the first relevant slot within the first k, else 0. Its mean over
 * questions is the mean reciprocal rank.
 *
 *   mrr@k = 1 / firstRelevantRank if firstRelevantRank ≤ k else 0
 *
 * Source: trec_eval 10.0 `m_recip_rank.c` (`recip_rank`) evaluated on the run cut at k documents (`trec_eval -M k`).
 *
 * recip_rank (`RR`, `mrr` without a cutoff): the same over every retrieved rank, trec_eval's `recip_rank` on the
 * whole run:
 *
 *   recip_rank = 1 / firstRelevantRank, or 0 when nothing retrieved is relevant
 */

/**
 * @param firstRelevantRank 1-based rank of the first relevant slot, or 0 when there is none
 * @param k cutoff in ranks, integer ≥ 1
 * @returns a value in [0, 1]: 1, 1/2, 1/3, ... or 0
 */
export function reciprocalRankAt(firstRelevantRank: number, k: number): number {
  return firstRelevantRank > 0 && firstRelevantRank <= k ? 1 / firstRelevantRank : 0;
}

/**
 * @param firstRelevantRank 1-based rank of the first relevant slot in the whole ranking, or 0 when there is none
 * @returns a value in [0, 1]: 1, 1/2, 1/3, ... or 0 (trec_eval `recip_rank`)
 */
export function reciprocalRank(firstRelevantRank: number): number {
  return firstRelevantRank > 0 ? 1 / firstRelevantRank : 0;
}

/**
 * precision@k: the share of the first k rank slots that hold a relevant document.
 *
 *   precision@k = |{ i ≤ k : slot i is relevant }| / k
 *
 * Source: trec_eval 10.0 `m_P.c` (`P_k`): the count is divided by the cutoff k even when fewer than k documents came
 * back (missing slots count as non-relevant) and only the top k count when more came back.
 * A slot is relevant when its document's grade ≥ the relevance threshold and the document was not already credited
 * at an earlier slot (see `src/score/evaluate.ts`).
 */

/**
 * @param relevantInTopK relevant slots among ranks 1..k (integer, 0 ≤ relevantInTopK ≤ k)
 * @param k cutoff in ranks, integer ≥ 1
 * @returns a value in [0, 1]
 */
export function precisionAt(relevantInTopK: number, k: number): number {
  return relevantInTopK / k;
}

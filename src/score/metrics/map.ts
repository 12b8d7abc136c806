/**
 * map@k (average precision cut at k; its mean over questions is MAP@k):
 *
 *   map@k = ( Σ over relevant slots i ≤ k of precision@i ) / R
 *
 * where precision@i = (relevant slots among ranks 1..i) / i and R is the number of judged documents with
 * grade ≥ the relevance threshold (retrieved or not, so relevant documents never retrieved count as precision 0).
 * Source: trec_eval 10.0 `m_map_cut.c` (`map_cut_k`): the precisions are summed in rank order, then divided by R.
 */

/**
 * Precision at a relevant slot, the term added to the sum for that slot.
 * @param relevantSoFar relevant slots among ranks 1..rank, this one included (integer ≥ 1)
 * @param rank 1-based rank of the slot
 */
export function precisionAtRelevantSlot(relevantSoFar: number, rank: number): number {
  return relevantSoFar / rank;
}

/**
 * @param precisionSum Σ of {@link precisionAtRelevantSlot} over relevant slots at ranks ≤ k, in rank order
 * @param relevant R (integer ≥ 0)
 * @returns a value in [0, 1]; 0 when R = 0 (as trec_eval)
 */
export function averagePrecisionAt(precisionSum: number, relevant: number): number {
  return relevant > 0 ? precisionSum / relevant : 0;
}

/**
 * recall@k: the share of all relevant documents of the question found in the first k rank slots.
 *
 *   recall@k = |{ i ≤ k : slot i is relevant }| / R
 *
 * where R is the number of judged documents with grade ≥ the relevance threshold, whether retrieved or not (so
 * recall@1 < 1 whenever R > 1; the "capped" variant dividing by min(k, R) is a different measure and not offered).
 * Source: trec_eval 10.0 `m_recall.c` (`recall_k`).
 */

/**
 * @param relevantInTopK relevant slots among ranks 1..k (integer ≥ 0, ≤ R)
 * @param relevant R, the number of relevant judged documents (integer ≥ 0)
 * @returns a value in [0, 1]; 0 when R = 0 (as trec_eval; such questions are excluded from means by `evaluate`)
 */
export function recallAt(relevantInTopK: number, relevant: number): number {
  return relevant > 0 ? relevantInTopK / relevant : 0;
}

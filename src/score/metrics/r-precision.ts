/**
 * r_precision: precision at rank R, where R is the number of judged documents with grade ≥ the relevance threshold.
 *
 *   r_precision = |{ i ≤ R : slot i is relevant }| / R
 *
 * Divides by R even when fewer than R documents came back. At rank R precision and recall are equal.
 * Source: trec_eval 10.0 `m_Rprec.c` (`Rprec`).
 */

/**
 * @param relevantInTopR relevant slots among ranks 1..R (integer, 0 ≤ relevantInTopR ≤ R)
 * @param relevant R (integer ≥ 0)
 * @returns a value in [0, 1]; 0 when R = 0 (as trec_eval)
 */
export function rPrecision(relevantInTopR: number, relevant: number): number {
  return relevant > 0 ? relevantInTopR / relevant : 0;
}

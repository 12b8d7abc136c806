/**
 * judged@k: the share of the first k rank slots whose document has a judgement of any grade (grade 0 and negative
 * grades included), whether or not it is relevant.
 *
 *   judged@k = |{ i ≤ k : the document at slot i has a qrels line }| / k
 *
 * Source: ir_measures `Judged@k` (MacAvaney et al. 2022); where the ranking holds at least k documents it equals
 * 1 − trec_eval's `unj_k`. Like precision@k it divides by k even
 * when fewer than k documents came back: the missing tail counts as not judged (trec_eval's `unj` counts it as
 * judged instead). A document repeated in the ranking is judged at its first slot only: a later slot is a
 * non-relevant slot whatever the labels say (the project's duplicate rule), and the sweep's exported runs name it
 * `doc#n`, which no qrels line holds, so trec_eval and `recheck` see it unjudged too.
 * A question missing from the run scores 0. In [0, 1]; 1 − judged@k is the share of the top k that the scores
 * count as not relevant only because nobody judged it.
 */

/**
 * @param judgedInTopK slots among ranks 1..k holding a judged document (integer, 0 ≤ judgedInTopK ≤ k)
 * @param k cutoff in ranks, integer ≥ 1
 * @returns a value in [0, 1]
 */
export function judgedAt(judgedInTopK: number, k: number): number {
  return judgedInTopK / k;
}

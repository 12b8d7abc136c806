/**
 * ndcg@k with linear gain (gain = grade), the trec_eval definition:
 *
 *   DCG@k  = Σ over slots i ≤ k with grade g_i > 0 of g_i / log2(i + 1)
 *   IDCG@k = the same sum over the ideal ordering: ALL judged documents with grade > 0 (retrieved or not), sorted by
 *            grade descending, cut at k
 *   ndcg@k = DCG@k / IDCG@k   (0 when IDCG@k = 0)
 *
 * Sources: Järvelin and Kekäläinen, "Cumulated gain-based evaluation of IR techniques", ACM TOIS 20(4) 2002;
 * trec_eval 10.0 `m_ndcg_cut.c` (`ndcg_cut_k`, discount log2(rank + 1) from rank 1, as in trec_eval ≥ 9.0.8 and
 * pytrec_eval). Grades count by their value whatever the relevance threshold: the gain and the ideal use every
 * grade > 0, as trec_eval's `ndcg_cut` ignores `-l` (the threshold decides only which questions are scored and the
 * binary measures). A document credited at an earlier slot gains 0 at later slots.
 * The sums are accumulated in rank order with one division per term, as trec_eval does, so values agree to the last
 * few bits.
 *
 * ndcg without a cutoff (trec_eval `m_ndcg.c`, `ndcg`): DCG over every retrieved rank divided by the IDCG of every
 * judged document with grade > 0, i.e. ndcg@k with k at least the ranking's length and the number of grades > 0.
 */

/** Gain function: grade → gain. Called only for grades > 0. */
export type GainFunction = (grade: number) => number;

/** Linear gain: gain = grade (trec_eval, scikit-learn `ndcg_score`). */
export function linearGain(grade: number): number {
  return grade;
}

const TABLE_SIZE = 1024;
/** LOG2_RANK_PLUS_1[r] = log2(r + 1) for r = 0..TABLE_SIZE-1 (index 0 unused). */
const LOG2_RANK_PLUS_1: Float64Array = (() => {
  const t = new Float64Array(TABLE_SIZE);
  for (let r = 1; r < TABLE_SIZE; r++) t[r] = Math.log2(r + 1);
  return t;
})();

/**
 * The discount denominator log2(rank + 1) for a 1-based rank (1 at rank 1, log2 3 at rank 2, ...).
 * Divide a gain by it: `gain / discountDenominator(rank)`.
 */
export function discountDenominator(rank: number): number {
  return rank < TABLE_SIZE ? LOG2_RANK_PLUS_1[rank] : Math.log2(rank + 1);
}

/**
 * Ideal DCG at every depth: `curve[d]` = IDCG@d for d = 0..n, n = number of grades > 0 (curve[0] = 0); IDCG@k for k
 * beyond n is the last entry.
 * @param grades grades of all judged documents of the question, any order (not changed); grades ≤ 0 are skipped
 * @param gain gain function applied to each grade > 0
 * @returns a Float64Array of length n + 1
 */
export function idealDcgCurve(grades: readonly number[], gain: GainFunction): Float64Array {
  const positive: number[] = [];
  for (const g of grades) if (g > 0) positive.push(g);
  if (positive.length > 1) positive.sort((a, b) => b - a);
  const curve = new Float64Array(positive.length + 1);
  let sum = 0;
  for (let i = 0; i < positive.length; i++) {
    sum += gain(positive[i]) / discountDenominator(i + 1);
    curve[i + 1] = sum;
  }
  return curve;
}

/** IDCG@k read from an {@link idealDcgCurve}; k is a cutoff in ranks (integer ≥ 1). */
export function idealDcgAt(curve: Float64Array, k: number): number {
  return curve[k < curve.length ? k : curve.length - 1];
}

/**
 * @param dcg DCG@k of the ranking
 * @param idealDcg IDCG@k
 * @returns dcg / idealDcg in [0, 1], or 0 when idealDcg is 0 (no grade > 0: trec_eval leaves the value 0)
 */
export function ndcgAt(dcg: number, idealDcg: number): number {
  return idealDcg > 0 ? dcg / idealDcg : 0;
}

/**
 * bpref (binary preference): how many judged non-relevant documents are ranked above each retrieved relevant one,
 * ignoring unjudged documents altogether.
 *
 *   bpref = (1 / R) · Σ over retrieved relevant documents r of ( 1 − min(n_r, R) / min(N, R) )
 *
 * where R = judged documents with grade ≥ the relevance threshold (retrieved or not), N = judged documents with
 * grade below it (grade 0 included; retrieved or not), and n_r = judged non-relevant documents retrieved above r.
 * A term with n_r = 0 is 1 (so N = 0 never divides by zero: every retrieved relevant document adds 1). The sum runs
 * over the whole ranking (no cutoff); unjudged documents are skipped; a relevant document never retrieved adds 0.
 * Because min(n_r, R) is capped at R, only the first R judged non-relevant documents can cost anything; when N < R
 * the denominator is N, so each judged non-relevant document above r costs 1/N instead of 1/R.
 *
 * Source: Buckley and Voorhees, "Retrieval evaluation with incomplete information", SIGIR 2004; trec_eval 10.0
 * `m_bpref.c` (`bpref`), whose loop this follows (same order of operations). Differences, both outside what
 * trec_eval accepts: a document repeated in the ranking counts at its first slot only (trec_eval refuses
 * duplicates), and a negative grade counts as judged not relevant (as grade 0).
 */

/**
 * @param ranking document ids, index 0 = rank 1 (not changed)
 * @param gradeOf the grade of a judged document, undefined when the document is unjudged
 * @param threshold relevance threshold (integer ≥ 1)
 * @param relevant R (integer ≥ 0)
 * @param nonRelevant N, judged documents with grade < threshold (integer ≥ 0)
 * @returns a value in [0, 1]; 0 when R = 0 (as trec_eval)
 */
export function bpref(
  ranking: readonly string[],
  gradeOf: (id: string) => number | undefined,
  threshold: number,
  relevant: number,
  nonRelevant: number,
): number {
  if (relevant === 0) return 0;
  const denominator = nonRelevant < relevant ? nonRelevant : relevant;
  const seen = new Set<string>();
  let nonRelSoFar = 0;
  let sum = 0;
  for (const id of ranking) {
    const g = gradeOf(id);
    if (g === undefined || seen.has(id)) continue;
    seen.add(id);
    if (g < threshold) nonRelSoFar++;
    else if (nonRelSoFar > 0) sum += 1 - (nonRelSoFar < relevant ? nonRelSoFar : relevant) / denominator;
    else sum += 1;
  }
  return sum / relevant;
}

/**
 * The range of a relevance grade, one rule for every input (questions.jsonl, BEIR qrels, TREC qrels, `evaluate`).
 *
 * A grade is an integer. 0 means judged not relevant; 1, 2, 3 ... more relevant, up to {@link MAX_GRADE} = 100.
 * Graded sets in the trec_eval tradition use small grades (TREC-DL 0-3, TREC web 0-4); 100 leaves room for
 * percentage-style grades while keeping the exponential gain 2^grade − 1 of `ndcg_exp` finite and exact enough
 * (2^100 ≈ 1.27e30; at 1024 it overflows to Infinity and every `ndcg_exp` value became NaN).
 *
 * Negative grades: trec_eval reads them in qrels as "in the pool but not judged relevant" and never counts them, so
 * TREC qrels files and the `evaluate` API accept integers down to {@link MIN_TREC_GRADE} = −100 and score them like
 * grade 0 (not relevant, gain 0). questions.jsonl and BEIR qrels (`score` column) take 0 to 100 only.
 */

/** Largest grade accepted anywhere. */
export const MAX_GRADE = 100;
/** Smallest grade a TREC qrels file (or `evaluate`) accepts; scored as 0. */
export const MIN_TREC_GRADE = -100;

/** True when `g` is an integer in [min, {@link MAX_GRADE}]. `min` is 0 (default) or {@link MIN_TREC_GRADE}. */
export function isValidGrade(g: unknown, min: number = 0): g is number {
  return typeof g === 'number' && Number.isInteger(g) && g >= min && g <= MAX_GRADE;
}

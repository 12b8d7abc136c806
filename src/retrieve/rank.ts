/**
 * The one ranking rule used everywhere (retrievers, fusion, TREC run files, evaluation):
 * score descending, then id descending (code-unit order), as trec_eval orders a run
 * (trec_eval's `form_res_rels.c` sorts by `sim` descending, then `docno` descending; the rank column is ignored).
 */

/** Anything with an id and a score. */
export interface Scored {
  id: string;
  score: number;
}

/**
 * Comparator for `Array.prototype.sort`: higher score first; equal scores put the larger id first.
 * Ids compare by UTF-16 code units (`<`/`>`), as C's `strcmp` does on ASCII docnos. Scores must not be NaN.
 */
export function compareByRule(a: Scored, b: Scored): number {
  if (a.score !== b.score) return a.score > b.score ? -1 : 1;
  if (a.id === b.id) return 0;
  return a.id > b.id ? -1 : 1;
}

/**
 * Returns a new array of `items` ordered by {@link compareByRule}, cut to the first `k` when `k` is given.
 * Does not change its input. `k` ≥ 0; `k` larger than the list returns the whole list.
 */
export function rankByRule<T extends Scored>(items: readonly T[], k?: number): T[] {
  const sorted = [...items].sort(compareByRule);
  return k === undefined ? sorted : sorted.slice(0, k);
}

/** The tie rule in words, written into manifests and reports. */
export const TIE_RULE = 'score descending, then id descending (trec_eval order; rank column ignored)';

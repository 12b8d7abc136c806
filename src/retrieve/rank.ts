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
 * Ids compare in code point order ({@link compareCodePoints}), which is the UTF-8 byte order C's `strcmp` uses in
 * trec_eval. Scores must not be NaN.
 */
export function compareByRule(a: Scored, b: Scored): number {
  if (a.score !== b.score) return a.score > b.score ? -1 : 1;
  if (a.id === b.id) return 0;
  return compareCodePoints(a.id, b.id) > 0 ? -1 : 1;
}

/**
 * Compares two strings in Unicode code point order, which is UTF-8 byte order, which is what trec_eval's `strcmp`
 * sees. Plain `<` compares UTF-16 code units and puts U+E000..U+FFFF (e.g. fullwidth `Ａ`) after astral characters
 * such as emoji, the opposite of byte order; the fix-up below (as in ICU's code point order comparison) shifts
 * surrogates above U+E000..U+FFFF at the first differing unit.
 * @returns negative, 0 or positive.
 */
export function compareCodePoints(x: string, y: string): number {
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) {
    let a = x.charCodeAt(i);
    let b = y.charCodeAt(i);
    if (a === b) continue;
    if (a >= 0xd800 && b >= 0xd800) {
      a = a >= 0xe000 ? a - 0x800 : a + 0x2000;
      b = b >= 0xe000 ? b - 0x800 : b + 0x2000;
    }
    return a - b;
  }
  return x.length - y.length;
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

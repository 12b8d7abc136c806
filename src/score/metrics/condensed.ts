/**
 * Condensed lists: a ranking with every unjudged document removed, the ranks closing up, before any measure is
 * computed on it. `ndcg_condensed@10` is ndcg@10 of the condensed list, and so on for every family but `judged`.
 *
 *   condensed(ranking) = [ d ∈ ranking, in order : d has a judgement of any grade ]
 *
 * Sources: Sakai, "Alternatives to Bpref", SIGIR 2007 (condensed lists); trec_eval 10.0 `-J` (judged_docs_only:
 * `form_res_rels.c` drops documents without a qrels line before every measure). A judged document repeated in the
 * ranking stays at each of its slots (the repeat is a non-relevant slot, as in uncondensed scoring); unjudged
 * documents go whatever their number.
 */

/**
 * @param ranking document ids, index 0 = rank 1 (not changed)
 * @param isJudged true when the document has a judgement of any grade
 * @returns a new array, the judged documents in rank order
 */
export function condenseRanking(ranking: readonly string[], isJudged: (id: string) => boolean): string[] {
  const out: string[] = [];
  for (const id of ranking) if (isJudged(id)) out.push(id);
  return out;
}

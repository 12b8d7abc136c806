/**
 * Condensed lists: a ranking with every unjudged document removed, the ranks closing up, before any measure is
 * computed on it. `ndcg_condensed@10` is ndcg@10 of the condensed list, and so on for every family but `judged`.
 *
 *   condensed(ranking) = [ d ∈ ranking, in order : d has a judgement of any grade ]
 *
 * Sources: Sakai, "Alternatives to Bpref", SIGIR 2007 (condensed lists); trec_eval 10.0 `-J` (judged_docs_only:
 * `form_res_rels.c` drops documents without a qrels line before every measure). A document repeated in the ranking
 * keeps its first slot only: a later copy is removed like an unjudged document (the sweep's exported runs name it
 * `doc#n`, which no qrels line holds, so trec_eval `-J` drops it too).
 */

/**
 * @param ranking document ids, index 0 = rank 1 (not changed)
 * @param isJudged true when the document has a judgement of any grade
 * @returns a new array, the judged documents in rank order, each once
 */
export function condenseRanking(ranking: readonly string[], isJudged: (id: string) => boolean): string[] {
  const out: string[] = [];
  let seen: Set<string> | null = null;
  for (const id of ranking) {
    if (!isJudged(id)) continue;
    if (seen === null) seen = new Set();
    else if (seen.has(id)) continue;
    seen.add(id);
    out.push(id);
  }
  return out;
}

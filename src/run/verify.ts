/**
 * Checks of what the tool reads back from its own cache folder (issue 24, "trust nothing on disk"): a stored ranking
 * must look exactly like the validated output of a live retriever (src/run/retrieve.ts), or it is discarded and
 * recomputed. Pure: no disk, no clock; the callers (src/run/checkpoint.ts) name the file in their warnings.
 */
import { compareByRule } from '../retrieve/rank.js';

/** What a stored ranking unit must satisfy. */
export interface ListExpectations {
  /** Lists expected: one per scored question (in question order). Integer ≥ 0. */
  questions: number;
  /** Longest list allowed: the depth the unit was stored at. Integer ≥ 0. */
  depth: number;
  /**
   * True when `id` is an id the unit's retriever may return after resolution: a chunk id of the unit's chunking, or
   * (document level) a document id. Omitted: any string is accepted.
   */
  isKnown?: (id: string) => boolean;
}

/**
 * Why `lists` (the JSON form of a checkpoint's lists: one array of `[id, score]` pairs per question) is not a ranking
 * a live retriever could have produced, or null when it is. The checks, in order: an array of exactly
 * `questions` lists; each list an array of at most `depth` pairs; each pair a string id the unit knows (`isKnown`) and a
 * finite number; no id twice in a list; each list ordered by the one tie rule (score descending, then id descending:
 * `compareByRule`, src/retrieve/rank.ts), so a list reordered inside its file is caught.
 * Never throws, whatever `lists` is.
 */
export function rankingListsProblem(lists: unknown, expect: ListExpectations): string | null {
  if (!Array.isArray(lists)) return `holds ${describeShort(lists)} instead of a list per question`;
  if (lists.length !== expect.questions) return `holds ${lists.length} lists for ${expect.questions} questions`;
  for (let q = 0; q < lists.length; q++) {
    const list: unknown = lists[q];
    if (!Array.isArray(list)) return `list ${q + 1} is ${describeShort(list)}, not an array`;
    if (list.length > expect.depth) return `list ${q + 1} has ${list.length} hits, more than its depth ${expect.depth}`;
    const seen = new Set<string>();
    let prev: { id: string; score: number } | undefined;
    for (let i = 0; i < list.length; i++) {
      const pair: unknown = list[i];
      if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== 'string')
        return `list ${q + 1}, hit ${i + 1} is ${describeShort(pair)}, not [id, score]`;
      const id = pair[0];
      const score: unknown = pair[1];
      if (typeof score !== 'number' || !Number.isFinite(score)) return `list ${q + 1}: ${JSON.stringify(id)} has score ${describeShort(score)}, not a finite number`;
      if (expect.isKnown && !expect.isKnown(id)) return `list ${q + 1}: ${JSON.stringify(id)} is not an id of the unit's chunking`;
      if (seen.has(id)) return `list ${q + 1}: ${JSON.stringify(id)} appears twice`;
      seen.add(id);
      const hit = { id, score };
      if (prev && compareByRule(prev, hit) > 0)
        return `list ${q + 1} is not in ranking order at hit ${i + 1} (${JSON.stringify(prev.id)} ${prev.score} before ${JSON.stringify(id)} ${score})`;
      prev = hit;
    }
  }
  return null;
}

/** A short JSON-ish rendering of any value for a message (at most 60 characters). */
export function describeShort(v: unknown): string {
  if (v === undefined) return 'undefined';
  if (typeof v === 'number') return String(v);
  let s: string | undefined;
  try {
    s = JSON.stringify(v);
  } catch {
    s = undefined;
  }
  if (s === undefined) return String(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/**
 * The warning for vectors the embedding cache would not serve (checksum failed, or a NaN/infinity stored): names the
 * file, the count and up to three keys (provider key and text hash, NUL shown as `|`), and says they were recomputed.
 */
export function cacheDamageWarning(file: string, count: number, keys: readonly string[]): string {
  const shown = keys.slice(0, 3).map((k) => k.replaceAll('\u0000', '|'));
  return (
    `embedding cache ${file}: ${count} stored vector(s) failed their checksum or held a non-finite value ` +
    `(e.g. ${shown.join(', ')}); they were discarded and recomputed (run \`retrieval-sweep doctor\` to check the whole cache)`
  );
}

/**
 * "Did you mean" for a label naming a document that is not in the corpus: the id the user most likely meant. Pure.
 */
import { closest, distance } from 'fastest-levenshtein';

/** Above this many documents the edit-distance search is skipped (it is linear in the corpus per label). */
export const NEAREST_DOC_LIMIT = 50_000;

/** A suggestion: the document id and why it is suggested. */
export interface DocSuggestion {
  id: string;
  why: string;
}

/**
 * Builds a suggester over the corpus's document ids. For a missing `doc` (already normalised: forward slashes, no
 * leading `./`) it tries, in order:
 * 1. a `docs/` prefix (or a path through a `docs/` folder, such as an absolute path): the part after the last
 *    `docs/`, when that is a document (`why`: ids are relative to docs/);
 * 2. the same id in another letter case;
 * 3. the one document with the same file name in another folder;
 * 4. the nearest id by Levenshtein distance (fastest-levenshtein), when within max(2, ⌊length / 4⌋) edits and the
 *    corpus has at most {@link NEAREST_DOC_LIMIT} documents.
 * Returns null when nothing is close. Indexes are built on the first call, so a clean dataset pays nothing.
 */
export function docSuggester(ids: Iterable<string>): (doc: string) => DocSuggestion | null {
  let all: string[] | undefined;
  let lower: Map<string, string> | undefined;
  let byName: Map<string, string[]> | undefined;
  const baseName = (s: string) => s.slice(s.lastIndexOf('/') + 1);
  const ensure = () => {
    if (all !== undefined) return;
    all = [...ids];
    lower = new Map();
    byName = new Map();
    for (const id of all) {
      if (!lower.has(id.toLowerCase())) lower.set(id.toLowerCase(), id);
      const n = baseName(id);
      const list = byName.get(n);
      if (list) list.push(id);
      else byName.set(n, [id]);
    }
  };
  const has = (id: string) => lower!.get(id.toLowerCase()) === id;
  return (doc) => {
    ensure();
    const at = doc.lastIndexOf('docs/');
    if (at === 0 || (at > 0 && doc[at - 1] === '/')) {
      const rest = doc.slice(at + 5);
      if (has(rest)) return { id: rest, why: 'document ids are paths relative to the docs folder, without docs/' };
    }
    const sameCase = lower!.get(doc.toLowerCase());
    if (sameCase !== undefined) return { id: sameCase, why: 'document ids are case-sensitive' };
    const named = byName!.get(baseName(doc));
    if (named !== undefined && named.length === 1) return { id: named[0], why: 'the one document with that file name' };
    if (all!.length === 0 || all!.length > NEAREST_DOC_LIMIT) return null;
    const near = closest(doc, all!);
    const d = distance(doc, near);
    return d <= Math.max(2, Math.floor(doc.length / 4)) ? { id: near, why: `the nearest document id (${d} edit${d === 1 ? '' : 's'})` } : null;
  };
}

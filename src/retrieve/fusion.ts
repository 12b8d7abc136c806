/**
 * Reciprocal rank fusion (Cormack, Clarke and Buettcher, "Reciprocal Rank Fusion outperforms Condorcet and individual
 * Rank Learning Methods", SIGIR 2009):
 *
 *   RRFscore(d) = Σ_{lists L that contain d} 1 / (c + rank_L(d))
 *
 * rank_L(d) is 1-based, after ordering L by `rankByRule` (score desc, then id desc) and cutting it to its first
 * `depth` items. A list that does not contain d contributes nothing (no made-up rank for missing items, field case
 * F01). The constant c (`rrfK`, default 60 as in the paper) is its own setting, not the grid's top-k (field case F02).
 */
import { HarnessError } from '../errors.js';
import type { Hit } from '../types.js';
import { rankByRule } from './rank.js';

/** Options of {@link reciprocalRankFusion}. */
export interface RrfOptions {
  /** The constant c in 1 / (c + rank); a finite number ≥ 0. Default 60 (Cormack et al. 2009). */
  rrfK?: number;
  /** Each input list is cut to its first `depth` items (after ordering) before fusion; an integer ≥ 1.
   *  Default: the whole list. Should be ≥ the top-k that will be taken from the fused list. */
  depth?: number;
}

/** Default RRF constant c (Cormack et al. 2009). */
export const DEFAULT_RRF_K = 60;

/**
 * Fuses ranked lists of hits into one list of every id found in any (cut) list, with `score` = the RRF score above,
 * ordered by `rankByRule`. The result does not depend on the order of `lists`: each id's terms are summed in a fixed
 * order (largest first), so even the floating-point sums are identical. If an id occurs twice within one list only
 * its best-ranked occurrence counts. Input scores are used only to order each list. Does not change its inputs.
 *
 * Throws `HarnessError('CONFIG_INVALID')` when `rrfK` is not a finite number ≥ 0 or `depth` is not an integer ≥ 1.
 */
export function reciprocalRankFusion(lists: readonly (readonly Hit[])[], options: RrfOptions = {}): Hit[] {
  const c = options.rrfK ?? DEFAULT_RRF_K;
  if (typeof c !== 'number' || !Number.isFinite(c) || c < 0) {
    throw new HarnessError('CONFIG_INVALID', `rrf constant (${String(c)}) must be a finite number >= 0`, {
      location: { path: 'hybrid.rrfK' },
      remedy: 'use 60 (the value of Cormack et al. 2009) unless you are studying the constant',
    });
  }
  const depth = options.depth;
  if (depth !== undefined && (!Number.isInteger(depth) || depth < 1)) {
    throw new HarnessError('CONFIG_INVALID', `rrf depth (${String(depth)}) must be an integer >= 1`, {
      location: { path: 'hybrid.depth' },
      remedy: 'use a depth at least as large as the largest top-k, e.g. 100',
    });
  }
  const terms = new Map<string, number[]>();
  for (const list of lists) {
    const ranked = rankByRule(list, depth);
    const seen = new Set<string>();
    ranked.forEach((hit, index) => {
      if (seen.has(hit.id)) return;
      seen.add(hit.id);
      const term = 1 / (c + index + 1);
      const t = terms.get(hit.id);
      if (t) t.push(term);
      else terms.set(hit.id, [term]);
    });
  }
  const fused: Hit[] = [];
  for (const [id, t] of terms) {
    t.sort((x, y) => y - x);
    let score = 0;
    for (const v of t) score += v;
    fused.push({ id, score });
  }
  return rankByRule(fused);
}

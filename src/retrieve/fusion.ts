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
 * order (largest first), so even the floating-point sums are identical. Sums that are equal in exact arithmetic get
 * one score (ranks 6 + 39 and 12 + 28 at c = 60 both give 5/198), so the tie rule orders them, not rounding
 * (`sumRrfTerms`). If an id occurs twice within one list only
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
  const terms = new Map<string, RrfTerm[]>();
  for (const list of lists) {
    const ranked = rankByRule(list, depth);
    const seen = new Set<string>();
    ranked.forEach((hit, index) => {
      if (seen.has(hit.id)) return;
      seen.add(hit.id);
      const term = { weight: 1, denominator: c + index + 1 };
      const t = terms.get(hit.id);
      if (t) t.push(term);
      else terms.set(hit.id, [term]);
    });
  }
  return rankByRule(sumRrfTerms(terms));
}

// ---------------------------------------------------------------------------------------------------------------
// Exact ties of rank-fusion scores
// ---------------------------------------------------------------------------------------------------------------

/** One RRF term: `weight / denominator`, both the doubles the float score was computed from. */
interface RrfTerm {
  weight: number;
  denominator: number;
}

/** A finite double as the exact dyadic rational `m · 2^-e` (m a BigInt, e ≥ 0). */
function dyadic(x: number): { m: bigint; e: number } {
  let e = 0;
  while (!Number.isInteger(x)) {
    x *= 2; // exact: a finite double times 2 stays exact until it is an integer (at most 1074 steps)
    e++;
  }
  return { m: BigInt(x), e };
}

/** Σ weight / denominator over `terms`, in exact rational arithmetic: `{ p, q }` with q > 0 (not reduced). */
function exactSum(terms: readonly RrfTerm[]): { p: bigint; q: bigint } {
  let p = 0n;
  let q = 1n;
  for (const t of terms) {
    // w / d with w = a·2^-i and d = b·2^-j is (a·2^j) / (b·2^i).
    const w = dyadic(t.weight);
    const d = dyadic(t.denominator);
    let tp = w.m << BigInt(d.e);
    let tq = d.m << BigInt(w.e);
    if (tq < 0n) {
      tp = -tp;
      tq = -tq;
    }
    p = p * tq + tp * q;
    q = q * tq;
  }
  return { p, q };
}

/**
 * Sums each id's RRF terms into its float score (largest term first, so the sum does not depend on the order of the
 * input lists) and makes exact ties exact: ids whose sums are equal in exact rational arithmetic but whose float sums
 * differ by rounding all receive the largest float sum of their group, so the tie rule (id descending) orders them
 * instead of floating-point noise. Example with c = 60: ranks 6 and 39 give 1/66 + 1/99 = 5/198 = 1/72 + 1/88, the
 * sum of ranks 12 and 28, yet the float sums are 0.025252525252525256 and 0.025252525252525252.
 * Only float sums within a relative 1e-12 of each other are compared exactly (BigInt fractions of the doubles the
 * floats came from); distinct RRF sums of two or three lists of ranks ≤ 10^4 differ by far more than 1e-12 relative,
 * so no other score changes: every score outside an exact-tie group is the float sum, unchanged to the bit.
 * @returns hits in no particular order (callers apply `rankByRule`).
 */
function sumRrfTerms(terms: ReadonlyMap<string, RrfTerm[]>): Hit[] {
  const fused: { id: string; score: number; terms: RrfTerm[] }[] = [];
  for (const [id, t] of terms) {
    const values = t.map((x) => x.weight * (1 / x.denominator));
    const order = values.map((_, i) => i).sort((x, y) => values[y] - values[x]);
    let score = 0;
    for (const i of order) score += values[i];
    fused.push({ id, score, terms: t });
  }
  const byScore = [...fused].sort((x, y) => y.score - x.score);
  const close = (x: number, y: number) => x !== y && Math.abs(x - y) <= 1e-12 * Math.max(Math.abs(x), Math.abs(y));
  for (let start = 0; start < byScore.length; ) {
    // A run of neighbours whose scores are within the tolerance of the run's first (largest) score.
    let end = start + 1;
    while (end < byScore.length && (byScore[end].score === byScore[start].score || close(byScore[start].score, byScore[end].score))) end++;
    if (end - start > 1 && byScore[start].score !== byScore[end - 1].score) {
      const run = byScore.slice(start, end);
      const exact = run.map((h) => exactSum(h.terms));
      const group = new Array<number>(run.length).fill(-1);
      for (let i = 0; i < run.length; i++) {
        if (group[i] !== -1) continue;
        group[i] = i;
        let top = run[i].score;
        for (let j = i + 1; j < run.length; j++)
          if (group[j] === -1 && exact[i].p * exact[j].q === exact[j].p * exact[i].q) {
            group[j] = i;
            top = Math.max(top, run[j].score);
          }
        for (let j = i; j < run.length; j++) if (group[j] === i) run[j].score = top;
      }
    }
    start = end;
  }
  return fused.map(({ id, score }) => ({ id, score }));
}

// ---------------------------------------------------------------------------------------------------------------
// Weighted RRF and convex (score) fusion of a keyword and a semantic list: the hybrid knobs of issue 14.
// ---------------------------------------------------------------------------------------------------------------

/** Score normalisations for {@link convexFusion}. */
export type Normalization = 'minmax' | 'zscore' | 'dbsf';

/**
 * Normalises one list's scores (the list as given, usually cut to the fusion depth) and returns the normalised
 * score per id plus the list's `floor`: the value an id missing from the list receives.
 *
 * - `minmax`: (s − min) / (max − min), in [0, 1]; floor 0 (the list's minimum). All scores equal: every item 1,
 *   floor 0. (LlamaIndex QueryFusionRetriever `relative_score`; Weaviate `relativeScoreFusion`.)
 * - `zscore`: (s − μ) / σ with the population σ; floor = the list's minimum z-score (a missing item is known to score
 *   at most the list's last retrieved item; 0 would rank it above every below-mean item). σ = 0: every item 1, floor 0.
 *   (ranx's `zmuv` normalisation.)
 * - `dbsf`: distribution-based score fusion, (s − (μ − 3σ)) / (6σ), not clipped (LlamaIndex `dist_based_score`;
 *   Qdrant's DBSF, which also uses μ ± 3σ); floor 0 (the lower limit μ − 3σ). σ = 0: every item 1, floor 0.
 *
 * μ and σ are accumulated in float64 in list order. An empty list has no items and floor 0.
 */
export function normalizeScores(list: readonly Hit[], method: Normalization): { scores: Map<string, number>; floor: number } {
  const scores = new Map<string, number>();
  if (list.length === 0) return { scores, floor: 0 };
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  for (const h of list) {
    if (h.score < min) min = h.score;
    if (h.score > max) max = h.score;
    sum += h.score;
  }
  const mean = sum / list.length;
  let ss = 0;
  for (const h of list) ss += (h.score - mean) * (h.score - mean);
  const sd = Math.sqrt(ss / list.length);
  const degenerate = method === 'minmax' ? max === min : sd === 0;
  if (degenerate) {
    for (const h of list) if (!scores.has(h.id)) scores.set(h.id, 1);
    return { scores, floor: 0 };
  }
  let f: (s: number) => number;
  let floor: number;
  if (method === 'minmax') {
    f = (s) => (s - min) / (max - min);
    floor = 0;
  } else if (method === 'zscore') {
    f = (s) => (s - mean) / sd;
    floor = (min - mean) / sd;
  } else {
    const lo = mean - 3 * sd;
    f = (s) => (s - lo) / (6 * sd);
    floor = 0;
  }
  // An id listed twice keeps its first (best-ranked) occurrence, as in RRF.
  for (const h of list) if (!scores.has(h.id)) scores.set(h.id, f(h.score));
  return { scores, floor };
}

function checkWeight(w: number, key: string): void {
  if (typeof w !== 'number' || !Number.isFinite(w) || w < 0 || w > 1)
    throw new HarnessError('CONFIG_INVALID', `${key} (${String(w)}) must be a number in [0, 1]`, {
      location: { path: `hybrid.fusion.${key}` },
      remedy: 'give the semantic list a weight between 0 (keyword only) and 1 (semantic only)',
    });
}

/** Options of {@link convexFusion}. */
export interface ConvexOptions {
  /** The semantic list's weight α in [0, 1]; the keyword list gets 1 − α. */
  alpha: number;
  normalize: Normalization;
  /** Each list is ordered by the tie rule and cut to its first `depth` items before normalisation; default: whole list. */
  depth?: number;
}

/**
 * Convex combination of normalised scores: score(d) = α·n_sem(d) + (1 − α)·n_kw(d), over the union of both cut lists,
 * where an id missing from a list takes that list's floor ({@link normalizeScores}). A list whose weight is 0 is not
 * consulted at all, so α = 1 ranks exactly as the semantic list and α = 0 exactly as the keyword list (same depth,
 * ties by the one rule). Result ordered by `rankByRule`. Does not change its inputs.
 *
 * Sources: Bruch, Gai and Ingber, "An Analysis of Fusion Functions for Hybrid Retrieval" (TOIS 2023) for the convex
 * combination; the normalisations as in {@link normalizeScores}.
 * @throws HarnessError('CONFIG_INVALID') when α is outside [0, 1] or depth is not an integer ≥ 1.
 */
export function convexFusion(keyword: readonly Hit[], semantic: readonly Hit[], options: ConvexOptions): Hit[] {
  const { alpha, normalize } = options;
  checkWeight(alpha, 'alpha');
  checkDepth(options.depth);
  const parts: { weight: number; norm: { scores: Map<string, number>; floor: number } }[] = [];
  if (alpha > 0) parts.push({ weight: alpha, norm: normalizeScores(rankByRule(semantic, options.depth), normalize) });
  if (alpha < 1) parts.push({ weight: 1 - alpha, norm: normalizeScores(rankByRule(keyword, options.depth), normalize) });
  const ids = new Set<string>();
  for (const p of parts) for (const id of p.norm.scores.keys()) ids.add(id);
  const fused: Hit[] = [];
  for (const id of ids) {
    // Fixed order (semantic term first), so the sum does not depend on anything but the two lists.
    let score = 0;
    for (const p of parts) score += p.weight * (p.norm.scores.get(id) ?? p.norm.floor);
    fused.push({ id, score });
  }
  return rankByRule(fused);
}

function checkDepth(depth: number | undefined): void {
  if (depth !== undefined && (!Number.isInteger(depth) || depth < 1))
    throw new HarnessError('CONFIG_INVALID', `fusion depth (${String(depth)}) must be an integer >= 1`, {
      location: { path: 'hybrid.depth' },
      remedy: 'use a depth at least as large as the largest top-k, e.g. 50',
    });
}

/** Options of {@link weightedRrf}. */
export interface WeightedRrfOptions {
  /** The semantic list's weight w in [0, 1]; the keyword list gets 1 − w. */
  weight: number;
  /** The RRF constant c; default 60. */
  rrfK?: number;
  depth?: number;
}

/**
 * Weighted RRF of a keyword and a semantic list: score(d) = w / (c + r_sem(d)) + (1 − w) / (c + r_kw(d)), a list that
 * does not contain d contributing nothing; ranks 1-based after ordering and cutting each list to `depth`. A list whose
 * weight is 0 is not consulted. w = 0.5 gives exactly half of plain RRF's score for every id (scaling by 2⁻¹ is exact
 * in binary floating point), hence exactly plain RRF's ranking. Terms are summed largest first, as in
 * {@link reciprocalRankFusion}. Source: Cormack et al. 2009 with per-list weights (as Elasticsearch's weighted RRF).
 * @throws HarnessError('CONFIG_INVALID') for a weight outside [0, 1], a bad constant or depth.
 */
export function weightedRrf(keyword: readonly Hit[], semantic: readonly Hit[], options: WeightedRrfOptions): Hit[] {
  const w = options.weight;
  checkWeight(w, 'weights');
  const c = options.rrfK ?? DEFAULT_RRF_K;
  if (typeof c !== 'number' || !Number.isFinite(c) || c < 0)
    throw new HarnessError('CONFIG_INVALID', `rrf constant (${String(c)}) must be a finite number >= 0`, {
      location: { path: 'hybrid.fusion.k' },
      remedy: 'use 60 (the value of Cormack et al. 2009) unless you are studying the constant',
    });
  checkDepth(options.depth);
  const terms = new Map<string, RrfTerm[]>();
  const add = (list: readonly Hit[], weight: number) => {
    if (weight === 0) return;
    const seen = new Set<string>();
    rankByRule(list, options.depth).forEach((hit, index) => {
      if (seen.has(hit.id)) return;
      seen.add(hit.id);
      const term = { weight, denominator: c + index + 1 };
      const t = terms.get(hit.id);
      if (t) t.push(term);
      else terms.set(hit.id, [term]);
    });
  };
  add(semantic, w);
  add(keyword, 1 - w);
  return rankByRule(sumRrfTerms(terms));
}

/** A fusion setting as the sweep's `hybrid.fusion` entries expand to (see `FusionSpec` in types.ts). */
export interface FusionSetting {
  method: 'rrf' | 'convex';
  k?: number;
  weight?: number;
  alpha?: number;
  normalize?: Normalization;
}

/**
 * Fuses a keyword and a semantic list with one setting: plain RRF (no weight), weighted RRF, or convex fusion; each
 * list cut to `depth` first. See {@link reciprocalRankFusion}, {@link weightedRrf}, {@link convexFusion}.
 */
export function fuseTwo(keyword: readonly Hit[], semantic: readonly Hit[], setting: FusionSetting, depth?: number): Hit[] {
  if (setting.method === 'convex')
    return convexFusion(keyword, semantic, { alpha: setting.alpha ?? 0.5, normalize: setting.normalize ?? 'minmax', ...(depth ? { depth } : {}) });
  if (setting.weight === undefined)
    return reciprocalRankFusion([keyword, semantic], { rrfK: setting.k ?? DEFAULT_RRF_K, ...(depth ? { depth } : {}) });
  return weightedRrf(keyword, semantic, { weight: setting.weight, rrfK: setting.k ?? DEFAULT_RRF_K, ...(depth ? { depth } : {}) });
}

/**
 * The id part of a fusion setting: `rrf` (unweighted, c = `defaultK`, i.e. the config's `hybrid.rrfK`), `rrf-k10`,
 * `rrf-k60-w0.3`, `cvx-mm-a0.5`, `cvx-z-a1`, `cvx-dbsf-a0`.
 */
export function fusionKey(s: FusionSetting, defaultK: number = DEFAULT_RRF_K): string {
  if (s.method === 'convex') {
    const n = { minmax: 'mm', zscore: 'z', dbsf: 'dbsf' }[s.normalize ?? 'minmax'];
    return `cvx-${n}-a${s.alpha ?? 0.5}`;
  }
  const k = s.k ?? DEFAULT_RRF_K;
  if (s.weight === undefined) return k === defaultK ? 'rrf' : `rrf-k${k}`;
  return `rrf-k${k}-w${s.weight}`;
}

/** A run: question id → (document id → score). */
export type RunMap = Record<string, Record<string, number>>;

/**
 * Fuses whole runs question by question (ranx's `fuse`): `rrf` over any number of runs (optionally weighted, one
 * weight per run), or `convex`/score fusion of exactly two runs given as `[keyword, semantic]` with `alpha`. Every
 * question of any run is in the result; each run's list is ordered by the tie rule and cut to `depth` first.
 * Returns a new run (question id → document id → fused score).
 * @throws HarnessError('CONFIG_INVALID') for a bad method, weight, constant or depth, or convex over ≠ 2 runs.
 */
export function fuse(
  runs: readonly RunMap[],
  options: { method: 'rrf'; k?: number; weights?: number[]; depth?: number } | { method: 'convex'; alpha: number; normalize?: Normalization; depth?: number },
): RunMap {
  const qids = new Set<string>();
  for (const r of runs) for (const q of Object.keys(r)) qids.add(q);
  const listOf = (r: RunMap, q: string): Hit[] => (Object.hasOwn(r, q) ? Object.entries(r[q]) : []).map(([id, score]) => ({ id, score }));
  const out = Object.create(null) as RunMap; // any qid, __proto__ included
  for (const q of [...qids].sort()) {
    let fused: Hit[];
    if (options.method === 'convex') {
      if (runs.length !== 2)
        throw new HarnessError('CONFIG_INVALID', `convex fusion takes exactly 2 runs [keyword, semantic] (got ${runs.length})`, {
          remedy: 'pass two runs, or use method rrf for more',
        });
      fused = convexFusion(listOf(runs[0], q), listOf(runs[1], q), { alpha: options.alpha, normalize: options.normalize ?? 'minmax', ...(options.depth ? { depth: options.depth } : {}) });
    } else if (options.method === 'rrf') {
      const weights = options.weights;
      if (weights && weights.length !== runs.length)
        throw new HarnessError('CONFIG_INVALID', `rrf weights: ${weights.length} weight(s) for ${runs.length} run(s)`, {
          remedy: 'give one weight per run, or none',
        });
      if (!weights) fused = reciprocalRankFusion(runs.map((r) => listOf(r, q)), { rrfK: options.k ?? DEFAULT_RRF_K, ...(options.depth ? { depth: options.depth } : {}) });
      else {
        const c = options.k ?? DEFAULT_RRF_K;
        const terms = new Map<string, RrfTerm[]>();
        runs.forEach((r, i) => {
          const seen = new Set<string>();
          rankByRule(listOf(r, q), options.depth).forEach((hit, index) => {
            if (seen.has(hit.id) || weights[i] === 0) return;
            seen.add(hit.id);
            const term = { weight: weights[i], denominator: c + index + 1 };
            const t = terms.get(hit.id);
            if (t) t.push(term);
            else terms.set(hit.id, [term]);
          });
        });
        fused = rankByRule(sumRrfTerms(terms));
      }
    } else {
      throw new HarnessError('CONFIG_INVALID', `unknown fusion method ${JSON.stringify((options as { method: unknown }).method)}`, {
        remedy: 'use rrf or convex',
      });
    }
    out[q] = Object.fromEntries(fused.map((h) => [h.id, h.score]));
  }
  return out;
}

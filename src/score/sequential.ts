/**
 * Verdicts that do not depend on the resampling seed: sequential Monte Carlo for the paired sign-flip test (with
 * Holm's correction) and for "does a bootstrap interval exclude 0", each with its Monte Carlo error.
 *
 * A Monte Carlo p-value p̂ = (count + 1)/(R + 1) (Phipson & Smyth 2010) is a binomial estimate of the true p with
 * standard error √(p̂(1 − p̂)/R). A verdict "p < t" is safe to state only when t lies outside a wide confidence
 * interval of the true p. Following the sequential Monte Carlo idea of Gandy 2009 (*Sequential implementation of Monte
 * Carlo tests with uniformly bounded resampling risk*, JASA 104:1504–1511): resample in growing batches until the
 * verdict is decided, with a bound on the work; a verdict not decided within the bound is reported as undecided, never
 * guessed. Gandy's exact boundaries are replaced here by the simpler rule of stopping when t is outside the Wilson
 * score interval (Wilson 1927, *Probable inference…*, JASA 22:209–212) at z = {@link MC_Z} = 3 of count/R: the risk of
 * a wrong decided verdict is about 0.3% per look, and the number of looks is at most log2(max / initial) + 1.
 *
 * Every random draw comes from the same streams as the fixed-R functions of stats.ts (same seed, same order), so a
 * verdict already decided at the configured resamples keeps its numbers bit for bit; more resamples only extend the
 * stream. Pure: no clock, no disk.
 */

import { HarnessError } from '../errors.js';
import { exactSignFlip, holm, quantileSorted, seededRandom } from './stats.js';

/** The z of the Wilson interval that decides a Monte Carlo verdict (3: a two-sided 99.73% interval). */
export const MC_Z = 3;

/** Default bound on resamples per verdict (config `statistics.maxResamples`). */
export const DEFAULT_MAX_RESAMPLES = 200_000;

/**
 * Wilson score interval of a binomial proportion count/total at a given z (Wilson 1927):
 * (p + z²/2N ± z·√(p(1 − p)/N + z²/4N²)) / (1 + z²/N). Unlike p ± z·se it is not degenerate at 0 or N successes
 * (0 of 10,000 gives an upper end of about z²/N = 0.0009 at z = 3).
 *
 * @param count successes, 0 ≤ count ≤ total. @param total trials, ≥ 1. @param z default {@link MC_Z}.
 * @returns `{ low, high }` in [0, 1].
 */
export function wilsonInterval(count: number, total: number, z: number = MC_Z): { low: number; high: number } {
  const p = count / total;
  const z2 = z * z;
  const denom = 1 + z2 / total;
  const centre = p + z2 / (2 * total);
  const half = z * Math.sqrt((p * (1 - p)) / total + z2 / (4 * total * total));
  return { low: Math.max(0, (centre - half) / denom), high: Math.min(1, (centre + half) / denom) };
}

/**
 * Monte Carlo standard error of an estimated proportion: √(p(1 − p)/R) (the binomial standard error).
 * @param p estimate in [0, 1]; @param resamples R ≥ 1.
 */
export function proportionMcError(p: number, resamples: number): number {
  return Math.sqrt((p * (1 - p)) / resamples);
}

/**
 * Monte Carlo standard error of a percentile-interval end: half the distance between the order statistics at ranks
 * R·p ∓ √(R·p(1 − p)), the one-sigma band of the binomial count of resamples below the true quantile (the
 * distribution-free confidence interval for a quantile, e.g. Conover 1999, *Practical Nonparametric Statistics*,
 * §3.2). Ranks are clamped to the sample.
 *
 * @param sorted the R resampled values, ascending. @param p the quantile's probability in [0, 1].
 * @returns the standard error in the values' units; 0 for fewer than 2 values.
 */
export function quantileMcError(sorted: ArrayLike<number>, p: number): number {
  const r = sorted.length;
  if (r < 2) return 0;
  const band = Math.sqrt(r * p * (1 - p));
  const lo = Math.max(0, Math.min(r - 1, Math.floor(r * p - band)));
  const hi = Math.max(0, Math.min(r - 1, Math.ceil(r * p + band)));
  return (sorted[hi] - sorted[lo]) / 2;
}

/**
 * A stream of random sign patterns, the same stream {@link signFlipPlan} draws: the first R patterns of
 * `signFlipStream(n, seed)` are `signFlipPlan(n, R, seed)`. `next(count)` returns the next `count` patterns
 * (pattern-major, `n` entries of ±1 each).
 */
export function signFlipStream(n: number, seed: number): { next(count: number): Int8Array } {
  const rand = seededRandom(seed);
  return {
    next(count: number): Int8Array {
      const out = new Int8Array(n * count);
      for (let i = 0; i < out.length; i++) out[i] = rand() < 0.5 ? -1 : 1;
      return out;
    },
  };
}

/**
 * The patterns of one {@link signFlipStream}, drawn lazily and kept, so that several families of tests over the same
 * n questions and seed share one draw: `upTo(r)` returns at least the first r patterns (pattern-major).
 */
export interface SignPatterns {
  readonly n: number;
  readonly seed: number;
  upTo(r: number): Int8Array;
}

/** A {@link SignPatterns} over n questions from `seed`. */
export function signPatterns(n: number, seed: number): SignPatterns {
  const stream = signFlipStream(n, seed);
  let patterns = new Int8Array(0);
  let drawn = 0;
  return {
    n,
    seed,
    upTo(r: number): Int8Array {
      if (r > drawn) {
        const grown = Math.max(r, Math.min(2 * drawn, Number.MAX_SAFE_INTEGER));
        const all = new Int8Array(grown * n);
        all.set(patterns);
        all.set(stream.next(grown - drawn), drawn * n);
        patterns = all;
        drawn = grown;
      }
      return patterns;
    },
  };
}

/** Options of {@link sequentialSignFlipHolm}. */
export interface SequentialTestOptions {
  /** Family-wise level of Holm's procedure, in (0, 1). */
  alpha: number;
  /** Seed of the sign-pattern stream. */
  seed: number;
  /** Patterns every Monte Carlo test starts with (the report's `permutationResamples`, default 10000), ≥ 1. */
  initial: number;
  /** The bound on patterns per test (config `statistics.maxResamples`), ≥ initial. */
  max: number;
  /** Enumerate all 2^n patterns when n ≤ this (default 16). */
  exactUpTo?: number;
  /** Patterns to share with other calls over the same n and seed (default: a fresh {@link signPatterns}). */
  patterns?: SignPatterns;
}

/** One test of {@link sequentialSignFlipHolm}. */
export interface SequentialTest {
  /** Two-sided p-value: exact, or (count + 1)/(R + 1) with R = `resamples`. */
  pValue: number;
  /** Holm-adjusted over the family, from the p-values above. */
  pHolm: number;
  /** Monte Carlo standard error of `pValue` (√(p(1 − p)/R)); 0 when exact. */
  mcError: number;
  /** Patterns used; 2^n when exact. */
  resamples: number;
  exact: boolean;
  /** Holm rejects it (adjusted p < alpha), from the point estimates. */
  rejected: boolean;
  /** False when the rejection depends on Monte Carlo error at the bound: report "undecided at `resamples`". */
  decided: boolean;
}

/** Holm's rejections at alpha for given p-values (adjusted p < alpha). */
function holmRejects(p: readonly number[], alpha: number): boolean[] {
  return holm(p).map((x) => x < alpha);
}

/**
 * Two-sided paired sign-flip tests of several difference vectors (each of length n, the same questions), Holm's
 * correction over them, resampled sequentially until every Holm decision is settled (see the module comment).
 *
 * Holm's procedure is monotone in the p-values (lowering any p never removes a rejection), so its decisions are
 * settled when the rejections computed from every test's lower bound equal those from every upper bound. Bounds: the
 * exact p for an exact test; otherwise the Wilson interval (z = 3) of count/R, its upper end also capped by Hoeffding's
 * bound P(|Σ ε_j d_j| ≥ |Σ d_j|) ≤ 2·exp(−(Σ d_j)² / (2 Σ d_j²)) (Hoeffding 1963), which holds for the true p.
 * While some decision is unsettled, every Monte Carlo test whose interval holds one of Holm's thresholds alpha/k
 * (k = 1..m) and is below the bound doubles its patterns (continuing the one shared stream).
 *
 * A vector of zeros has p = 1 (exact). With n ≤ `exactUpTo`, every test is exact and decided.
 *
 * @param diffs per-question differences, each of length n. @param n questions. @param opts see {@link SequentialTestOptions}.
 * @returns one {@link SequentialTest} per vector, in input order.
 * @throws HarnessError `USAGE` when initial or max are not whole numbers ≥ 1 or max < initial.
 */
export function sequentialSignFlipHolm(diffs: readonly Float64Array[], n: number, opts: SequentialTestOptions): SequentialTest[] {
  const { alpha, seed, initial, max } = opts;
  const exactUpTo = opts.exactUpTo ?? 16;
  if (!Number.isInteger(initial) || initial < 1 || !Number.isInteger(max) || max < initial)
    throw new HarnessError('USAGE', `resamples must be whole numbers with 1 ≤ initial (${initial}) ≤ max (${max})`, {
      remedy: 'set statistics.maxResamples at least as large as the permutation resamples (10000)',
    });
  const m = diffs.length;
  if (m === 0) return [];
  type State = { exact: boolean; p: number; count: number; r: number; sum: number; threshold: number; hoeffding: number };
  const states: State[] = diffs.map((d) => {
    let sum = 0;
    let abs = 0;
    let sq = 0;
    for (let j = 0; j < d.length; j++) {
      sum += d[j];
      abs += Math.abs(d[j]);
      sq += d[j] * d[j];
    }
    const base = { count: 0, r: 0, sum, threshold: Math.abs(sum) - 1e-9 * abs, hoeffding: sq === 0 ? 1 : Math.min(1, 2 * Math.exp(-(sum * sum) / (2 * sq))) };
    if (sq === 0) return { ...base, exact: true, p: 1 };
    if (n <= exactUpTo) return { ...base, exact: true, p: exactSignFlip(d).pValue };
    return { ...base, exact: false, p: NaN };
  });
  // The shared stream: patterns are kept so that tests extended later read the same patterns.
  if (opts.patterns && (opts.patterns.n !== n || opts.patterns.seed !== seed))
    throw new HarnessError('USAGE', `shared sign patterns are for n = ${opts.patterns.n}, seed ${opts.patterns.seed}, not n = ${n}, seed ${seed}`);
  const shared = opts.patterns ?? signPatterns(n, seed);
  const extend = (i: number, to: number): void => {
    const s = states[i];
    const patterns = shared.upTo(to);
    const d = diffs[i];
    for (let r = s.r; r < to; r++) {
      const o = r * n;
      let x = 0;
      for (let j = 0; j < n; j++) x += patterns[o + j] * d[j];
      if (Math.abs(x) >= s.threshold) s.count++;
    }
    s.r = to;
    s.p = (s.count + 1) / (s.r + 1);
  };
  states.forEach((s, i) => {
    if (!s.exact) extend(i, initial);
  });
  const bounds = (): { lo: number[]; hi: number[] } => {
    const lo: number[] = [];
    const hi: number[] = [];
    for (const s of states) {
      if (s.exact) {
        lo.push(s.p);
        hi.push(s.p);
      } else {
        const w = wilsonInterval(s.count, s.r);
        lo.push(w.low);
        hi.push(Math.min(w.high, s.hoeffding));
      }
    }
    return { lo, hi };
  };
  const thresholds = Array.from({ length: m }, (_, k) => alpha / (k + 1));
  let lo: number[];
  let hi: number[];
  let rejLo: boolean[];
  let rejHi: boolean[];
  for (;;) {
    ({ lo, hi } = bounds());
    rejLo = holmRejects(lo, alpha);
    rejHi = holmRejects(hi, alpha);
    if (rejLo.every((x, i) => x === rejHi[i])) break;
    const grow = states
      .map((s, i) => i)
      .filter((i) => !states[i].exact && states[i].r < max && thresholds.some((t) => lo[i] < t && t <= hi[i]));
    if (grow.length === 0) break;
    for (const i of grow) extend(i, Math.min(max, states[i].r * 2));
  }
  const p = states.map((s) => s.p);
  const adjusted = holm(p);
  return states.map((s, i) => ({
    pValue: s.p,
    pHolm: adjusted[i],
    mcError: s.exact ? 0 : proportionMcError(s.p, s.r),
    resamples: s.exact ? 2 ** Math.min(n, 1023) : s.r,
    exact: s.exact,
    rejected: adjusted[i] < alpha,
    decided: rejLo[i] === rejHi[i],
  }));
}

/** Options of {@link sequentialBootstrapDiff}. */
export interface SequentialBootstrapOptions {
  /** Interval level in (0, 1): the ends are the (1 − level)/2 and (1 + level)/2 quantiles. */
  level: number;
  /** Seed of the bootstrap stream (the report's bootstrap seed: the same question draws as every row's interval). */
  seed: number;
  /** Resamples to start with (`statistics.resamples`), ≥ 1. */
  initial: number;
  /** Bound (`statistics.maxResamples`), ≥ initial. */
  max: number;
  /** The first `initial` resampled differences when the caller already has them (skips recomputing them). */
  first?: Float64Array;
}

/** The bootstrap interval of a paired difference with its Monte Carlo error and verdict. */
export interface SequentialInterval {
  low: number;
  high: number;
  /** Monte Carlo standard errors of the two ends ({@link quantileMcError}). */
  lowMcError: number;
  highMcError: number;
  /** Resamples used. */
  resamples: number;
  /** [low, high] excludes 0 (low > 0 or high < 0). */
  excludesZero: boolean;
  /** False when "excludes 0" depends on Monte Carlo error at the bound. */
  decided: boolean;
}

/**
 * Percentile bootstrap interval of mean(a − b) over paired per-question values, resampled until "the interval
 * excludes 0" is decided or the bound is reached.
 *
 * The verdict: with tail share a = (1 − level)/2, the upper end is below 0 essentially when fewer than a·R resampled
 * differences are ≥ 0 (the lower end above 0: fewer than a·R are ≤ 0). Each of the two shares is a binomial
 * proportion; the verdict is decided when a lies outside both Wilson intervals (z = 3) of those shares (or a share's
 * count is R or 0 with a outside its interval). Otherwise R doubles, to at most `max`. The resamples are drawn by
 * `bootstrapResampleMeans`'s stream from `seed` with its arithmetic (the same question draws, in the same order, as
 * the report's row intervals), so the first `initial` differences equal the report's paired differences exactly.
 *
 * @param a per-question values of one row; @param b of the other; same length n ≥ 1.
 * @returns the interval, the MC errors of its ends, the resamples used and the verdict.
 */
export function sequentialBootstrapDiff(a: Float64Array, b: Float64Array, opts: SequentialBootstrapOptions): SequentialInterval {
  const n = a.length;
  const tail = (1 - opts.level) / 2;
  // The bootstrap stream of bootstrapResampleMeans, drawn incrementally with the same arithmetic (counts per
  // question, then Σ w·x in question order, / n, per column), so resample s is bit for bit the batch's resample s.
  const rand = seededRandom(opts.seed);
  const counts = new Uint32Array(n);
  let diffs = new Float64Array(opts.max);
  let drawn = 0;
  let skip = 0; // generator draws still to discard (the resamples taken from `first`), done only when extending
  const drawTo = (r: number): void => {
    for (; skip > 0; skip--) rand();
    for (; drawn < r; drawn++) {
      counts.fill(0);
      for (let j = 0; j < n; j++) counts[Math.floor(rand() * n)]++;
      let sa = 0;
      let sb = 0;
      for (let q = 0; q < n; q++) {
        const w = counts[q];
        if (w === 0) continue;
        sa += w * a[q];
        sb += w * b[q];
      }
      diffs[drawn] = sa / n - sb / n;
    }
  };
  if (opts.first && opts.first.length === opts.initial) {
    // Take the first `initial` differences as given; the generator skips their n draws each if more are needed.
    skip = opts.initial * n;
    diffs.set(opts.first);
    drawn = opts.initial;
  }
  let atOrBelow = 0;
  let atOrAbove = 0;
  let counted = 0;
  let r = opts.initial;
  for (;;) {
    drawTo(r);
    for (; counted < r; counted++) {
      if (diffs[counted] <= 0) atOrBelow++;
      if (diffs[counted] >= 0) atOrAbove++;
    }
    const below = wilsonInterval(atOrBelow, r);
    const above = wilsonInterval(atOrAbove, r);
    const decided = !(below.low < tail && tail <= below.high) && !(above.low < tail && tail <= above.high);
    if (decided || r >= opts.max) {
      const sorted = diffs.slice(0, r).sort();
      diffs = new Float64Array(0);
      const low = quantileSorted(sorted, tail);
      const high = quantileSorted(sorted, 1 - tail);
      return {
        low,
        high,
        lowMcError: quantileMcError(sorted, tail),
        highMcError: quantileMcError(sorted, 1 - tail),
        resamples: r,
        excludesZero: low > 0 || high < 0,
        decided,
      };
    }
    r = Math.min(opts.max, r * 2);
  }
}

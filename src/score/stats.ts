/**
 * Statistics over per-question metric values: seeded randomness, the percentile bootstrap, the paired
 * sign-flip randomisation test, Holm's step-down correction and the minimum detectable difference.
 *
 * Everything here is pure: no clock, no disk, and every random draw comes from {@link seededRandom} with an explicit
 * seed, so the same inputs and seed give the same numbers on every machine (mulberry32 uses only 32-bit integer
 * arithmetic and `Math.imul`, which are exact in JavaScript).
 *
 * The batch helpers ({@link bootstrapResampleMeans}, {@link signFlipPlan}) exist so that the report can resample
 * hundreds of rows × metrics at once: the bootstrap indices are drawn once per resample and reused for every column,
 * and the sign patterns once per resample and reused for every comparison. The single-series functions
 * ({@link bootstrapCI}, {@link pairedPermutationTest}) draw the same streams, so they reproduce the batch numbers
 * exactly for the same seed.
 */

import { HarnessError } from '../errors.js';

/**
 * A seeded uniform generator on [0, 1): mulberry32 (Tommy Ettinger, 2017; public domain), a 32-bit state
 * generator that passes gjrand's and PractRand's basic batteries for the stream lengths used here (millions of draws).
 *
 * @param seed any number; it is reduced to an unsigned 32-bit integer (`seed >>> 0`), so `42` and `42 + 2**32` give
 *   the same stream. Non-finite seeds are treated as 0.
 * @returns a function returning the next value in [0, 1) with 2^-32 resolution.
 */
export function seededRandom(seed: number): () => number {
  let state = Number.isFinite(seed) ? Math.trunc(seed) >>> 0 : 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Arithmetic mean. Returns NaN for an empty list (there is no mean of nothing; callers decide what to show).
 * Sums left to right, so the result is reproducible bit for bit.
 */
export function mean(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  let s = 0;
  for (let i = 0; i < values.length; i++) s += values[i];
  return s / values.length;
}

/**
 * Sample standard deviation (denominator n − 1). Returns 0 for fewer than two values.
 */
export function sampleSd(values: readonly number[]): number {
  const n = values.length;
  if (n < 2) return 0;
  const m = mean(values);
  let ss = 0;
  for (let i = 0; i < n; i++) ss += (values[i] - m) * (values[i] - m);
  return Math.sqrt(ss / (n - 1));
}

/**
 * The p-quantile of an ascending-sorted array by linear interpolation between order statistics
 * (Hyndman & Fan 1996, definition 7; R's default `quantile(type = 7)`, NumPy's default `linear`):
 * h = (n − 1)·p, q = x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋ + 1] − x[⌊h⌋]) with 0-based x.
 *
 * @param sorted ascending values, length ≥ 1 (NaN when empty).
 * @param p in [0, 1].
 */
export function quantileSorted(sorted: ArrayLike<number>, p: number): number {
  const n = sorted.length;
  if (n === 0) return NaN;
  if (n === 1) return sorted[0];
  const h = (n - 1) * Math.min(1, Math.max(0, p));
  const lo = Math.floor(h);
  const hi = Math.min(n - 1, lo + 1);
  return sorted[lo] + (h - lo) * (sorted[hi] - sorted[lo]);
}

function checkPositiveInt(name: string, v: number): void {
  if (!Number.isInteger(v) || v < 1) {
    throw new HarnessError('USAGE', `${name} must be a whole number ≥ 1, got ${String(v)}`, {
      remedy: `pass ${name} as a positive integer (for example 2000)`,
    });
  }
}

function checkLevel(level: number): void {
  if (!(level > 0 && level < 1)) {
    throw new HarnessError('USAGE', `level must be strictly between 0 and 1, got ${String(level)}`, {
      remedy: 'pass a confidence level such as 0.95',
    });
  }
}

/**
 * Draws the bootstrap resamples of a question set once and returns each column's resample means.
 *
 * For resample r = 0..R−1 it draws n question indices with replacement, `floor(u · n)` with u from
 * `seededRandom(seed)` in order (r-major), counts how often each question was drawn (w_q), and forms each column's
 * mean as Σ_q w_q · x_q / n, summing over questions in index order. Working from counts skips the ~37% of questions a
 * resample leaves out, and the indices are reused for every column.
 *
 * @param values question-major matrix: `values[q * columns + c]` is column c's value for question q, length n·columns.
 * @param n number of questions, ≥ 1.
 * @param columns number of series (rows × metrics), ≥ 1.
 * @param resamples R, ≥ 1.
 * @param seed seed for {@link seededRandom}.
 * @returns resample-major means: `out[r * columns + c]`, length R·columns.
 */
export function bootstrapResampleMeans(
  values: Float64Array,
  n: number,
  columns: number,
  resamples: number,
  seed: number,
): Float64Array {
  const out = new Float64Array(resamples * columns);
  const counts = new Uint32Array(n);
  const rand = seededRandom(seed);
  for (let r = 0; r < resamples; r++) {
    counts.fill(0);
    for (let j = 0; j < n; j++) counts[Math.floor(rand() * n)]++;
    const acc = out.subarray(r * columns, (r + 1) * columns);
    for (let q = 0; q < n; q++) {
      const w = counts[q];
      if (w === 0) continue;
      const row = values.subarray(q * columns, (q + 1) * columns);
      let c = 0;
      for (; c + 3 < columns; c += 4) {
        acc[c] += w * row[c];
        acc[c + 1] += w * row[c + 1];
        acc[c + 2] += w * row[c + 2];
        acc[c + 3] += w * row[c + 3];
      }
      for (; c < columns; c++) acc[c] += w * row[c];
    }
    for (let c = 0; c < columns; c++) acc[c] /= n;
  }
  return out;
}

/**
 * Percentile interval from resample statistics: the (1 − level)/2 and (1 + level)/2 quantiles (type 7) of the
 * resampled values. Sorts a copy; does not change its input.
 */
export function percentileInterval(resampled: Float64Array, level: number): { low: number; high: number } {
  const sorted = Float64Array.from(resampled).sort();
  const a = (1 - level) / 2;
  return { low: quantileSorted(sorted, a), high: quantileSorted(sorted, 1 - a) };
}

/**
 * Percentile bootstrap confidence interval of the mean (Efron & Tibshirani 1993, *An Introduction to the Bootstrap*,
 * ch. 13): resample the values with replacement R times, take each resample's mean, and report the (1−level)/2 and
 * (1+level)/2 quantiles (type-7 interpolation, {@link quantileSorted}) of those means.
 *
 * Same values, resamples and seed give the same interval. Uses the same random stream as
 * {@link bootstrapResampleMeans}, so a column of a batch run gives exactly this interval.
 *
 * @param values per-question values (metrics in [0, 1], but any finite numbers work). Empty → all NaN.
 * @param opts.resamples R, default 2000. @param opts.seed default 42. @param opts.level default 0.95, in (0, 1).
 * @returns `{ mean, low, high }`; `low ≤ high`. A single value gives a zero-width interval at that value.
 * @throws HarnessError `USAGE` when resamples is not a positive integer or level is outside (0, 1).
 */
export function bootstrapCI(
  values: readonly number[],
  opts: { resamples?: number; seed?: number; level?: number } = {},
): { mean: number; low: number; high: number } {
  const resamples = opts.resamples ?? 2000;
  const seed = opts.seed ?? 42;
  const level = opts.level ?? 0.95;
  checkPositiveInt('resamples', resamples);
  checkLevel(level);
  const n = values.length;
  const m = mean(values);
  if (n === 0) return { mean: NaN, low: NaN, high: NaN };
  const means = bootstrapResampleMeans(Float64Array.from(values), n, 1, resamples, seed);
  const { low, high } = percentileInterval(means, level);
  return { mean: m, low, high };
}

/**
 * Random sign patterns for the Monte Carlo sign-flip test, drawn once and reused for every comparison:
 * `signs[r * n + j]` is −1 when question j's difference is negated in resample r, else +1. Each entry is
 * `u < 0.5 ? −1 : +1` with u from `seededRandom(seed)` in order (r-major). Length n · resamples.
 */
export function signFlipPlan(n: number, resamples: number, seed: number): Int8Array {
  const signs = new Int8Array(n * resamples);
  const rand = seededRandom(seed);
  for (let i = 0; i < signs.length; i++) signs[i] = rand() < 0.5 ? -1 : 1;
  return signs;
}

/**
 * Paired randomisation (sign-flip permutation) test of the mean difference, two-sided, as recommended for IR system
 * comparisons by Smucker, Allan & Carterette 2007 (*A comparison of statistical significance tests for information
 * retrieval evaluation*, CIKM). Under the null hypothesis the labels "a" and "b" are exchangeable within each question,
 * so each paired difference d_j = a_j − b_j is equally likely to carry either sign.
 *
 * - Exact (n ≤ `exactUpTo`): all 2^n sign patterns are enumerated; p = #{patterns with |Σ ±d_j| ≥ |Σ d_j|} / 2^n
 *   (the identity pattern counts, so p ≥ 2/2^n when any d_j ≠ 0, and p = 1 when all d_j = 0).
 * - Monte Carlo otherwise: R random patterns from {@link signFlipPlan}; p = (#{|Σ ±d_j| ≥ |Σ d_j|} + 1) / (R + 1)
 *   (Phipson & Smyth 2010: never 0, valid at any R).
 * Comparisons use sums (|mean| ≥ |observed mean| is the same event) with a tolerance of 1e−9 · Σ|d_j| so that
 * rounding in a different summation order does not drop a tie.
 *
 * @param a per-question values of system a; @param b of system b, same length and question order.
 * @param opts.resamples R, default 10000. @param opts.seed default 42. @param opts.exactUpTo default 16 (2^16 patterns).
 * @returns meanDiff = mean(a − b), the two-sided pValue in (0, 1], and whether it was exact. Empty input → p = 1.
 * @throws HarnessError `USAGE` when the lengths differ or resamples is not a positive integer.
 */
export function pairedPermutationTest(
  a: readonly number[],
  b: readonly number[],
  opts: { resamples?: number; seed?: number; exactUpTo?: number } = {},
): { meanDiff: number; pValue: number; exact: boolean } {
  if (a.length !== b.length) {
    throw new HarnessError('USAGE', `paired test needs equal lengths, got ${a.length} and ${b.length}`, {
      remedy: 'pass per-question values of both systems over the same questions in the same order',
    });
  }
  const resamples = opts.resamples ?? 10000;
  const seed = opts.seed ?? 42;
  const exactUpTo = opts.exactUpTo ?? 16;
  checkPositiveInt('resamples', resamples);
  const n = a.length;
  const d = new Float64Array(n);
  for (let j = 0; j < n; j++) d[j] = a[j] - b[j];
  if (n === 0) return { meanDiff: NaN, pValue: 1, exact: true };
  if (n <= exactUpTo) return { ...exactSignFlip(d), exact: true };
  const signs = signFlipPlan(n, resamples, seed);
  return { ...monteCarloSignFlip(d, signs, resamples), exact: false };
}

/** Observed sum, its absolute value with tolerance, used by both sign-flip variants. */
function observed(d: Float64Array): { sum: number; threshold: number } {
  let sum = 0;
  let abs = 0;
  for (let j = 0; j < d.length; j++) {
    sum += d[j];
    abs += Math.abs(d[j]);
  }
  return { sum, threshold: Math.abs(sum) - 1e-9 * abs };
}

/** Exact sign-flip test over all 2^n patterns (n ≤ 30). */
export function exactSignFlip(d: Float64Array): { meanDiff: number; pValue: number } {
  const n = d.length;
  if (n > 30) throw new HarnessError('USAGE', `exact sign-flip enumeration is limited to 30 values, got ${n}`);
  const { sum, threshold } = observed(d);
  const total = 2 ** n;
  let count = 0;
  for (let mask = 0; mask < total; mask++) {
    let s = 0;
    for (let j = 0; j < n; j++) s += (mask >>> j) & 1 ? -d[j] : d[j];
    if (Math.abs(s) >= threshold) count++;
  }
  return { meanDiff: sum / n, pValue: count / total };
}

/** Monte Carlo sign-flip test over a precomputed {@link signFlipPlan} (n values per resample). */
export function monteCarloSignFlip(
  d: Float64Array,
  signs: Int8Array,
  resamples: number,
): { meanDiff: number; pValue: number } {
  const n = d.length;
  const { sum, threshold } = observed(d);
  let count = 0;
  for (let r = 0; r < resamples; r++) {
    const o = r * n;
    let s = 0;
    for (let j = 0; j < n; j++) s += signs[o + j] * d[j];
    if (Math.abs(s) >= threshold) count++;
  }
  return { meanDiff: sum / n, pValue: (count + 1) / (resamples + 1) };
}

/**
 * Holm–Bonferroni adjusted p-values (Holm 1979, *A simple sequentially rejective multiple test procedure*,
 * Scand. J. Statist. 6:65–70). With the m p-values sorted ascending p_(1) ≤ … ≤ p_(m):
 * adj_(i) = min(1, max_{j ≤ i} (m − j + 1) · p_(j)), which makes the adjusted values monotone in the sorted order.
 * Rejecting where adj < α controls the family-wise error rate at α.
 *
 * @param pValues in [0, 1]; any order. Ties keep their input order (stable sort).
 * @returns adjusted values in the same order as the input, each in [0, 1].
 */
export function holm(pValues: readonly number[]): number[] {
  const m = pValues.length;
  const order = pValues.map((p, i) => ({ p, i })).sort((x, y) => x.p - y.p || x.i - y.i);
  const out = new Array<number>(m);
  let running = 0;
  for (let j = 0; j < m; j++) {
    running = Math.max(running, Math.min(1, (m - j) * order[j].p));
    out[order[j].i] = running;
  }
  return out;
}

/**
 * Inverse of the standard normal CDF, Φ⁻¹(p), by Wichura's algorithm AS 241 (PPND16, Applied Statistics 37:477–484,
 * 1988), relative accuracy about 1e−16.
 *
 * @param p in (0, 1); 0 → −Infinity, 1 → Infinity, outside → NaN.
 */
export function normalQuantile(p: number): number {
  if (!(p >= 0 && p <= 1)) return NaN;
  if (p === 0) return -Infinity;
  if (p === 1) return Infinity;
  const q = p - 0.5;
  if (Math.abs(q) <= 0.425) {
    const r = 0.180625 - q * q;
    return (
      (q *
        (((((((r * 2509.0809287301226727 + 33430.575583588128105) * r + 67265.770927008700853) * r +
          45921.953931549871457) * r + 13731.693765509461125) * r + 1971.5909503065514427) * r +
          133.14166789178437745) * r + 3.387132872796366608)) /
      (((((((r * 5226.495278852545925 + 28729.085735721942674) * r + 39307.89580009271061) * r +
        21213.794301586595867) * r + 5394.1960214247511077) * r + 687.1870074920579083) * r +
        42.313330701600911252) * r + 1)
    );
  }
  let r = q < 0 ? p : 1 - p;
  r = Math.sqrt(-Math.log(r));
  let val: number;
  if (r <= 5) {
    r -= 1.6;
    val =
      (((((((r * 7.7454501427834140764e-4 + 0.0227238449892691845833) * r + 0.24178072517745061177) * r +
        1.27045825245236838258) * r + 3.64784832476320460504) * r + 5.7694972214606914055) * r +
        4.6303378461565452959) * r + 1.42343711074968357734) /
      (((((((r * 1.05075007164441684324e-9 + 5.475938084995344946e-4) * r + 0.0151986665636164571966) * r +
        0.14810397642748007459) * r + 0.68976733498510000455) * r + 1.6763848301838038494) * r +
        2.05319162663775882187) * r + 1);
  } else {
    r -= 5;
    val =
      (((((((r * 2.01033439929228813265e-7 + 2.71155556874348757815e-5) * r + 0.0012426609473880784386) * r +
        0.026532189526576123093) * r + 0.29656057182850489123) * r + 1.7848265399172913358) * r +
        5.4637849111641143699) * r + 6.6579046435011037772) /
      (((((((r * 2.04426310338993978564e-15 + 1.4215117583164458887e-7) * r + 1.8463183175100546818e-5) * r +
        7.868691311456132591e-4) * r + 0.0148753612908506148525) * r + 0.13692988092273580531) * r +
        0.59983220655588793769) * r + 1);
  }
  return q < 0 ? -val : val;
}

/**
 * Smallest true mean difference a paired comparison of n questions detects with the given power, by the normal
 * approximation to the paired test (e.g. Webber, Moffat & Zobel 2008, *Statistical power in retrieval
 * experimentation*, CIKM): MDD = (z_{1−α/2} + z_{power}) · sd / √n, where sd is the standard deviation of the
 * per-question differences. With the defaults α = 0.05 and power = 0.8: (1.959964 + 0.841621) · sd / √n
 * = 2.801585 · sd / √n. It is an approximation: with few questions the t distribution and a permutation test need a
 * somewhat larger difference.
 *
 * @param diffSd standard deviation of the paired per-question differences, ≥ 0 (metric units, e.g. nDCG points / 100).
 * @param n number of questions, ≥ 1 (n = 0 → Infinity).
 * @param opts.alpha two-sided level, default 0.05, in (0, 1). @param opts.power default 0.8, in (0, 1).
 * @returns the difference in the metric's own units (0.12 means 12 points on a [0, 1] metric).
 */
export function minimumDetectableDifference(
  diffSd: number,
  n: number,
  opts: { alpha?: number; power?: number } = {},
): number {
  const alpha = opts.alpha ?? 0.05;
  const power = opts.power ?? 0.8;
  if (n <= 0) return Infinity;
  return ((normalQuantile(1 - alpha / 2) + normalQuantile(power)) * diffSd) / Math.sqrt(n);
}

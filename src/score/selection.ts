/**
 * Selection corrected for the winner's curse: a cross-validated estimate of "pick the configuration with the highest
 * mean on the primary metric, then use it".
 *
 * The best of many configurations, scored on the questions that chose it, is biased upwards: with 40–300 rows some
 * are lucky on this question set, and the maximum collects the luck (the winner's curse; Thaler 1988; for model
 * selection, Cawley & Talbot 2010, *On over-fitting in model selection and subsequent selection bias in performance
 * evaluation*, JMLR 11:2079–2107, and Varma & Simon 2006 for nested cross-validation). K-fold cross-validation over
 * questions measures the procedure instead of the winner: on each fold the configuration with the highest mean on the
 * other folds (the training part) is chosen and scored on the fold itself (held out); every question is held out
 * exactly once, so the estimate is the mean over all questions of the held-out value of the configuration chosen
 * without it. PyTerrier's `KFoldGridSearch` and ranx's train/test fusion optimisation select the same way. The
 * optimism is the in-sample best minus this estimate. docs/statistics.md works an example by hand.
 *
 * Pure and seeded: the same values, options and seed give the same result.
 */

import { HarnessError } from '../errors.js';
import { bootstrapCI, seededRandom } from './stats.js';
import { maxOf } from '../bounded.js';

/** One candidate configuration: its id and per-question values of the primary metric (questions in one fixed order). */
export interface SelectionCandidate {
  id: string;
  values: ArrayLike<number>;
}

/** Options of {@link crossValidatedSelection}. */
export interface SelectionOptions {
  /** Number of folds K, ≥ 2; more folds than questions means one question per fold. Default 5. */
  folds?: number;
  /** Seed of the fold assignment (Fisher–Yates shuffle within each stratum). Default 42. */
  seed?: number;
  /**
   * One stratum label per question (e.g. its tags joined), or undefined for no stratification. Questions of one stratum
   * are dealt round-robin over the folds, so each fold gets its share of every stratum.
   */
  strata?: readonly string[];
  /** An explicit fold per question (0-based, each in [0, K)), overriding the seeded assignment: for tests and docs. */
  assignment?: readonly number[];
  /** Bootstrap resamples of the estimate's interval, ≥ 1. Default 2000. */
  resamples?: number;
  /** Interval level in (0, 1). Default 0.95. */
  level?: number;
}

/** One fold of {@link SelectionResult}. */
export interface SelectionFold {
  /** 0-based fold index. */
  fold: number;
  /** Questions held out in this fold. */
  questions: number;
  /** The candidate with the highest mean on the other folds (ties: the earlier candidate). */
  chosen: string;
  /** Its mean on the other folds (the training part). */
  trainMean: number;
  /** Its mean on this fold's questions. */
  heldOutMean: number;
}

/** The cross-validated selection estimate. */
export interface SelectionResult {
  /** K actually used: min(folds, questions). */
  folds: number;
  /** True when the folds were stratified by `strata`. */
  stratified: boolean;
  /** The highest mean over all questions (ties: the earlier candidate): the number the winner's curse inflates. */
  inSample: { id: string; mean: number };
  /**
   * Mean over questions of the held-out value of the configuration chosen without that question, with a percentile
   * bootstrap interval over questions of those held-out values. The interval is conditional on the fold choices
   * (it does not redo the selection per resample), so it is a lower bound on the estimate's uncertainty.
   */
  estimate: { mean: number; low: number; high: number };
  /** inSample.mean − estimate.mean: how much the in-sample best overstates what picking the best delivers. */
  optimism: number;
  /** How many folds chose each candidate, most-chosen first (ties: candidate order); candidates never chosen are left out. */
  choices: { id: string; folds: number }[];
  perFold: SelectionFold[];
}

/**
 * Seeded, optionally stratified assignment of n questions to K folds. Strata are visited in code-unit order of their
 * labels; within each, question indices are shuffled by Fisher–Yates with one `seededRandom(seed)` stream shared by
 * all strata, then dealt to folds 0, 1, …, K − 1, 0, … with one counter running across strata. Fold sizes differ by
 * at most 1, and each stratum's questions are spread over the folds as evenly as possible.
 *
 * @param n questions, ≥ 0. @param folds K ≥ 1. @param seed any number. @param strata one label per question, or undefined.
 * @returns the fold (0-based) of each question, in question order.
 * @throws HarnessError `USAGE` when strata has a length other than n.
 */
export function assignFolds(n: number, folds: number, seed: number, strata?: readonly string[]): number[] {
  if (strata && strata.length !== n)
    throw new HarnessError('USAGE', `strata has ${strata.length} labels for ${n} questions`, { remedy: 'pass one stratum label per question' });
  const groups = new Map<string, number[]>();
  for (let q = 0; q < n; q++) {
    const key = strata ? strata[q] : '';
    const g = groups.get(key);
    if (g) g.push(q);
    else groups.set(key, [q]);
  }
  const rand = seededRandom(seed);
  const out = new Array<number>(n).fill(0);
  let counter = 0;
  for (const key of [...groups.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) {
    const g = groups.get(key)!;
    for (let i = g.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [g[i], g[j]] = [g[j], g[i]];
    }
    for (const q of g) out[q] = counter++ % folds;
  }
  return out;
}

/**
 * Cross-validated estimate of "choose the best candidate by mean, then use it" (see the module comment).
 *
 * For each fold f: the chosen candidate maximises the mean over questions not in f (ties: the earlier candidate);
 * each question in f gets that candidate's value. The estimate is the mean of those held-out values over all questions
 * (each question once), with a percentile bootstrap interval over questions (`seed` seeds the folds, `seed + 1` the
 * bootstrap).
 *
 * @param candidates at least one, each with n values in the same question order.
 * @param opts see {@link SelectionOptions}.
 * @returns null when there are fewer than 2 questions or no candidate.
 * @throws HarnessError `USAGE` when value lengths differ, folds < 2, or an assignment is the wrong length or out of range.
 */
export function crossValidatedSelection(candidates: readonly SelectionCandidate[], opts: SelectionOptions = {}): SelectionResult | null {
  if (candidates.length === 0) return null;
  const n = candidates[0].values.length;
  for (const c of candidates)
    if (c.values.length !== n)
      throw new HarnessError('USAGE', `candidate ${c.id} has ${c.values.length} values, expected ${n}`, {
        remedy: 'pass every candidate’s values over the same questions',
      });
  const requested = opts.folds ?? 5;
  if (!Number.isInteger(requested) || requested < 2)
    throw new HarnessError('USAGE', `folds must be a whole number ≥ 2, got ${String(requested)}`, { remedy: 'use 5 or 10 folds' });
  if (n < 2) return null;
  const seed = opts.seed ?? 42;
  let K = Math.min(requested, n);
  let fold: number[];
  if (opts.assignment) {
    if (opts.assignment.length !== n || opts.assignment.some((f) => !Number.isInteger(f) || f < 0))
      throw new HarnessError('USAGE', `assignment must give a fold ≥ 0 for each of the ${n} questions`, { remedy: 'pass one fold index per question' });
    fold = [...opts.assignment];
    K = maxOf(fold) + 1;
  } else fold = assignFolds(n, K, seed, opts.strata);

  const m = candidates.length;
  const totals = candidates.map((c) => {
    let s = 0;
    for (let q = 0; q < n; q++) s += c.values[q];
    return s;
  });
  let inSampleIdx = 0;
  for (let i = 1; i < m; i++) if (totals[i] > totals[inSampleIdx]) inSampleIdx = i;

  const heldOut = new Float64Array(n);
  const perFold: SelectionFold[] = [];
  const chosenCount = new Array<number>(m).fill(0);
  for (let f = 0; f < K; f++) {
    const qs: number[] = [];
    for (let q = 0; q < n; q++) if (fold[q] === f) qs.push(q);
    if (qs.length === 0 || qs.length === n) continue;
    // Training mean of candidate i = (total − held-out sum) / (n − |f|).
    let best = -1;
    let bestTrain = -Infinity;
    for (let i = 0; i < m; i++) {
      let held = 0;
      for (const q of qs) held += candidates[i].values[q];
      const train = (totals[i] - held) / (n - qs.length);
      if (train > bestTrain) {
        best = i;
        bestTrain = train;
      }
    }
    chosenCount[best]++;
    let sum = 0;
    for (const q of qs) {
      heldOut[q] = candidates[best].values[q];
      sum += heldOut[q];
    }
    perFold.push({ fold: f, questions: qs.length, chosen: candidates[best].id, trainMean: bestTrain, heldOutMean: sum / qs.length });
  }
  const ci = bootstrapCI(Array.from(heldOut), { resamples: opts.resamples ?? 2000, seed: seed + 1, level: opts.level ?? 0.95 });
  const inSample = { id: candidates[inSampleIdx].id, mean: totals[inSampleIdx] / n };
  const choices = candidates
    .map((c, i) => ({ id: c.id, folds: chosenCount[i], i }))
    .filter((c) => c.folds > 0)
    .sort((a, b) => b.folds - a.folds || a.i - b.i)
    .map(({ id, folds }) => ({ id, folds }));
  return {
    folds: perFold.length,
    stratified: !opts.assignment && opts.strata !== undefined,
    inSample,
    estimate: { mean: ci.mean, low: ci.low, high: ci.high },
    optimism: inSample.mean - ci.mean,
    choices,
    perFold,
  };
}

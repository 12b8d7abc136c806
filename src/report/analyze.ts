/**
 * The statistics behind the decision report: intervals for every row and metric, the best configuration at the
 * declared primary metric and k, paired comparisons against it with Holm-corrected p-values and tiers, segments,
 * similarity cutoffs and the embedding-model comparison.
 *
 * Pure and seeded: the same {@link SweepResult} and options give the same {@link Analysis}, bit for bit. The result is
 * plain data (no NaN: missing numbers are `null`), safe to serialise.
 *
 * Cost: one bootstrap pass over a question-major matrix of every row × metric (indices drawn once per resample and
 * reused for every column), one sign-flip plan reused for every comparison. 300 questions × 200 rows × 7 metrics with
 * 2000 resamples and 10000 permutations takes about a second.
 */

import type { ConfigResult, Question, SweepResult } from '../types.js';
import {
  bootstrapCI,
  bootstrapResampleMeans,
  exactSignFlip,
  holm,
  mean,
  minimumDetectableDifference,
  monteCarloSignFlip,
  pairedPermutationTest,
  percentileInterval,
  sampleSd,
  signFlipPlan,
} from '../score/stats.js';
import { HarnessError } from '../errors.js';
import { DEFAULT_MAX_RESAMPLES, sequentialBootstrapDiff, sequentialSignFlipHolm } from '../score/sequential.js';
import { crossValidatedSelection, type SelectionResult } from '../score/selection.js';
import { kCurves, type KCurve } from './choose-k.js';
import { isRelevant, manifestValue, relevanceThreshold, rerankKey, sortMetricNames, splitMeasure, topFolder } from './metrics.js';
import { allWarnings, excludedWarning, failedWarning } from './warnings.js';
import { unjudgedAnalysis, type UnjudgedAnalysis } from './unjudged.js';
import { maxOf } from '../bounded.js';

/** Options of {@link analyze}. */
export interface AnalyzeOptions {
  /** Seed of the bootstrap; the permutation test uses `seed + 1`. Default 42. */
  seed?: number;
  /** Bootstrap resamples per interval, ≥ 1 (use ≥ 1000). Default 2000. */
  resamples?: number;
  /** Monte Carlo sign-flip resamples for the paired test (exact enumeration when n ≤ 16). Default 10000. */
  permutationResamples?: number;
  /** Family-wise significance level for the tiers, in (0, 1). Default 0.05. */
  alpha?: number;
  /** Confidence level of every interval, in (0, 1). Default 0.95. */
  level?: number;
  /** The fixed similarity cutoff whose cost the report shows. Default 0.75. */
  fixedCutoff?: number;
  /**
   * Fewest judged questions for a recommendation, ≥ 1 (config `statistics.minQuestions`). Below it, or when the
   * minimum detectable difference exceeds a tenth of the metric's range, the report says there is not enough evidence
   * to choose. Default 30.
   */
  minQuestions?: number;
  /**
   * Bound on the resamples of one verdict (config `statistics.maxResamples`), ≥ both `resamples` and
   * `permutationResamples`: a Monte Carlo verdict (tier, †, a segment's tier 1, "beats both parents") that is not
   * decided at the configured resamples is resampled further, doubling, up to this many (score/sequential.ts), and
   * reported as undecided when still not decided. Default 200000.
   */
  maxResamples?: number;
  /** Folds of the cross-validated selection estimate ({@link Analysis.selection}), ≥ 2. Default 5. */
  selectionFolds?: number;
}

/** Every primary metric family the tool scores lies in [0, 1]: the range the "tenth of the range" rule uses. */
export const METRIC_RANGE = 1;

/** A mean with its bootstrap interval; `low`/`high` are null when the row has no per-question values for it. */
export interface Interval {
  mean: number;
  low: number | null;
  high: number | null;
}

/** Statistics of one row of the matrix, in `result.configs` order. */
export interface RowAnalysis {
  /** Index in `result.configs`. */
  index: number;
  id: string;
  status: 'ok' | 'failed';
  /** True when the row's k is the primary metric's k and it has the primary metric: it competes for the recommendation. */
  candidate: boolean;
  /** Every metric in the row's means (canonical names at the row's k), with its interval. Empty for failed rows. */
  metrics: Record<string, Interval>;
  /**
   * 1 = the best or not significantly worse than it (Holm-adjusted p ≥ alpha); 2 = significantly worse. Candidates
   * only; absent for a candidate whose tier is undecided at `maxResamples` (see {@link Comparison.tierDecided}).
   */
  tier?: 1 | 2;
}

/** A candidate's paired comparison with the best row on the primary metric. */
export interface Comparison {
  index: number;
  id: string;
  /** The candidate's mean on the primary metric. */
  value: number;
  /** mean(candidate − best) over the questions (≤ 0). */
  diff: number;
  /**
   * Paired bootstrap interval of the difference (same resampled questions for both rows) at the Bonferroni level
   * {@link Analysis.comparisonLevel} = 1 − alpha/m for m comparisons: simultaneous intervals, at least as wide as any
   * step of Holm's procedure needs (its first, strictest step tests at alpha/m).
   */
  low: number;
  high: number;
  /** True when [low, high] excludes 0: such a row is never described as tied with the best, whatever its tier. */
  excludesZero: boolean;
  /** Two-sided paired sign-flip test p-value. */
  pValue: number;
  /** Holm-adjusted over all comparisons with the best. */
  pHolm: number;
  /** True when all 2^n sign patterns were enumerated. */
  exact: boolean;
  /** Sample standard deviation of the per-question differences. */
  diffSd: number;
  /** The tier from the point estimates; read it with `tierDecided` (an undecided row is in neither tier). */
  tier: 1 | 2;
  /** Monte Carlo standard error of `pValue` (0 when exact). */
  pMcError: number;
  /** Sign patterns behind `pValue` (2^n when exact). */
  permutations: number;
  /** False when Holm's decision for this row is not settled at `maxResamples` patterns: "undecided at N resamples". */
  tierDecided: boolean;
  /** Monte Carlo standard errors of `low` and `high`. */
  lowMcError: number;
  highMcError: number;
  /** Bootstrap resamples behind `low`/`high` (`resamples`, or more when "excludes 0" needed them). */
  intervalResamples: number;
  /**
   * False when "the interval excludes 0" is not settled at `maxResamples` resamples. Only a tier-1 row's is resampled
   * further (only there is it a verdict: †); other rows keep `resamples` and may read false.
   */
  intervalDecided: boolean;
}

/** One segment of the questions (a tag, or a top-level folder of the relevant documents). */
export interface SegmentValue {
  kind: 'tag' | 'folder';
  /** Tag, folder name, `(untagged)` or `(root)`. */
  name: string;
  /** Questions in the segment. */
  questions: number;
  /** Mean of the primary metric over the segment's questions, with a bootstrap interval. */
  value: number;
  low: number;
  high: number;
  /** (value − overall) × 100: 0.80 → 0.60 is −20 points. */
  diffPoints: number;
  /** (value − overall) / overall × 100: 0.80 → 0.60 is −25 (a 25% drop); null when overall is 0. */
  diffPercent: number | null;
  /** The candidate with the highest mean on this segment's questions (ties: earlier grid row), and that mean. */
  best: { id: string; value: number };
  /**
   * The segment's tier 1: its best, then every candidate not significantly worse than it on the segment's questions
   * (paired sign-flip test, Holm over the segment's comparisons, adjusted p ≥ alpha), in grid order.
   */
  tier1: string[];
  /** Candidates whose place in the segment's tier 1 is undecided at `maxResamples` (grid order); usually empty. */
  undecided: string[];
  /** True when the recommended configuration is in the segment's tier 1; null when that is undecided. */
  recommendedInTier1: boolean | null;
  /** Most sign patterns any of the segment's tests used (2^n when exact). */
  resamples: number;
}

/** Segments of the recommended configuration. */
export interface SegmentAnalysis {
  configId: string;
  metric: string;
  /** The row's mean over all questions. */
  overall: number;
  questions: number;
  /**
   * Tag segments (code-unit order, `(untagged)` last) then folder segments (code-unit order, `(root)` last). No folder
   * segments for a BEIR dataset (`manifest.dataset.layout === 'beir'`): its ids are opaque, a `/` in one is no folder.
   */
  segments: SegmentValue[];
}

/** One hybrid row in the fusion view. */
export interface FusionPoint {
  index: number;
  id: string;
  /** `FusionSpec.key` (`rrf`, `rrf-k10-w0.3`, `cvx-mm-a0.5`). */
  fusion: string;
  method: 'rrf' | 'convex';
  /** The semantic list's weight: `alpha` (convex) or `weight` (weighted RRF); null for plain RRF. */
  x: number | null;
  /** The primary metric with its interval, and the row's tier (undefined when it is not a candidate). */
  value: Interval;
  tier?: 1 | 2;
  /** hybrid − keyword parent and hybrid − semantic parent (paired), Holm over every test of the view; null without that parent. */
  vsKeyword: ParentTest | null;
  vsSemantic: ParentTest | null;
  /** True when the row is significantly better than both parents (both adjusted p < alpha, both differences > 0). */
  beatsBoth: boolean;
  /** False when either test's Holm decision is undecided at `maxResamples`: then `beatsBoth` is not stated. */
  beatsBothDecided: boolean;
}

/** A hybrid row against one parent on the primary metric. */
export interface ParentTest {
  id: string;
  parent: number;
  /** mean(hybrid − parent). */
  diff: number;
  pValue: number;
  pHolm: number;
  /** Monte Carlo standard error of `pValue` (0 when exact). */
  pMcError: number;
  /** False when the Holm decision is not settled at `maxResamples` patterns. */
  decided: boolean;
  /** Sign patterns used (2^n when exact). */
  resamples: number;
}

/** The hybrid rows of one chunking × embedding × rerank × k, with their two parents. */
export interface FusionGroup {
  chunkingKey: string;
  embedding: string | null;
  rerank: string | null;
  k: number;
  keyword: { id: string; value: Interval } | null;
  semantic: { id: string; value: Interval } | null;
  /** Sorted by method, then x ascending (plain RRF first), then fusion key. */
  points: FusionPoint[];
  /** One sentence: whether any hybrid setting beats the better of its two parents. */
  sentence: string;
}

/**
 * The fusion view: the primary metric against alpha (or weight) per chunking and model. Present only when the sweep
 * has candidate hybrid rows with more than one fusion setting.
 */
export interface FusionView {
  metric: string;
  /** Number of hybrid-vs-parent tests Holm adjusts over (all groups together). */
  tests: number;
  groups: FusionGroup[];
}

/** Precision and recall of "results with score ≥ threshold". */
export interface CutoffPoint {
  threshold: number;
  /** Results at or above the threshold. */
  kept: number;
  /** Relevant results kept / results kept; null when nothing is kept. */
  precision: number | null;
  /** Relevant documents with a kept result / relevant documents retrieved; null when none were retrieved. */
  recall: number | null;
  /** 2PR/(P+R); null when P or R is null, 0 when both are 0. */
  f1: number | null;
}

/** The cosine-score picture of one embedding model. */
export interface ModelCutoffs {
  model: string;
  /** The semantic row used: the model's largest k, at the chunking that scores best on the primary metric. */
  configId: string;
  k: number;
  /** Retrieved results over all questions (each chunk counts), and how many belong to a relevant document. */
  results: number;
  relevantResults: number;
  /** Recall denominator: distinct (question, relevant document) pairs found anywhere in the retrieved lists. */
  relevantDocs: number;
  minScore: number;
  maxScore: number;
  /** `bins` equal-width bins from minScore to maxScore (last bin closed): edges has bins + 1 entries. */
  histogram: { edges: number[]; relevant: number[]; nonRelevant: number[] };
  /** 101 evenly spaced thresholds from minScore to maxScore. */
  curve: CutoffPoint[];
  /** The F1-best threshold over every distinct score (ties: the higher threshold). */
  best: CutoffPoint;
  /** The fixed cutoff, with its cost against the best: recall and precision changes (fixed − best; negative = lost). */
  fixed: CutoffPoint & { recallChange: number | null; precisionChange: number | null };
}

/** One embedding model's best semantic row at the primary k. */
export interface ModelRow {
  model: string;
  configId: string;
  chunkingKey: string;
  /** nDCG at the primary k (`ndcg@K`), or null when the row lacks it. */
  ndcg: Interval | null;
  /** The primary metric. */
  primary: Interval;
  /** Mean over questions of the top-ranked result's cosine similarity; null when nothing was retrieved. */
  meanTop1Cosine: number | null;
}

/**
 * Per-model comparison; `notes` states every pair where the model with the higher mean top-1 cosine ranks worse (both
 * differences at least 0.0005, i.e. visible at the report's 3 decimals).
 */
export interface ModelComparison {
  metric: string;
  rows: ModelRow[];
  notes: string[];
}

/** Everything the renderers need beyond the {@link SweepResult}. */
export interface Analysis {
  primaryMetric: string;
  primaryFamily: string;
  /** The primary metric's k, or null when it has none. */
  primaryK: number | null;
  seed: number;
  resamples: number;
  permutationResamples: number;
  alpha: number;
  level: number;
  fixedCutoff: number;
  /** Judged questions (`result.questions.length`). */
  questions: number;
  /** The recommended row: the highest mean on the primary metric among candidates (ties: earlier grid row). */
  best: { index: number; id: string; mean: number; low: number; high: number } | null;
  /** One entry per `result.configs` row, same order. */
  rows: RowAnalysis[];
  /** Every other candidate against the best, sorted by diff descending (grid order on ties). */
  comparisons: Comparison[];
  /** Ids of tier-1 rows: the best first, then in comparison order. Rows whose tier is undecided are not in it. */
  tier1: string[];
  /** Ids of rows whose tier is undecided at `maxResamples` (comparison order); empty almost always. */
  undecided: string[];
  /** {@link AnalyzeOptions.maxResamples}. */
  maxResamples: number;
  /** Level of the comparisons' difference intervals: 1 − alpha/m (Bonferroni) for m comparisons; `level` when m = 0. */
  comparisonLevel: number;
  /** {@link AnalyzeOptions.minQuestions}. */
  minQuestions: number;
  /**
   * Whether the questions can tell the candidates apart: false when there are fewer than `minQuestions` judged
   * questions or the minimum detectable difference exceeds a tenth of the metric's range ({@link METRIC_RANGE});
   * `reason` says which (null when enough).
   */
  evidence: { enough: boolean; reason: string | null };
  /**
   * Minimum detectable difference of a paired comparison at alpha and 80% power, from the median sd of the paired
   * differences with the best (or √2 × the best row's sd when there is nothing to compare).
   */
  mdd: { value: number; diffSd: number; n: number; alpha: number; power: number; basis: string } | null;
  segments: SegmentAnalysis | null;
  /**
   * The winner's curse: the in-sample best against a K-fold cross-validated estimate of "pick the best candidate by
   * the primary metric, then use it" (score/selection.ts), folds stratified by tags when any question has one. Null
   * without a best row or with fewer than 2 questions.
   */
  selection: SelectionResult | null;
  /** Choosing k: recall and hit rate over every swept k for the best row and each other tier-1 row (report/choose-k.ts). */
  kCurves: KCurve[];
  fusion: FusionView | null;
  cutoffs: ModelCutoffs[];
  models: ModelComparison;
  /** Question ids with no relevant result in the top k of any ok row (firstRelevantRank null everywhere). */
  missedByAll: string[];
  /**
   * judged@k of the rows at the primary k, the unjudged warning and the bounds of the primary metric (report/unjudged.ts);
   * null when the rows have no judged@k (level evidence, results written before it existed).
   */
  unjudged: UnjudgedAnalysis | null;
  failed: { id: string; error: string }[];
  /** Every warning of the run (`result.warnings`, in order; see report/warnings.ts), then the statistics' own. */
  warnings: string[];
}

/** Per-question values of row `row` for each metric it has complete data for, in `questions` order. */
function perQuestionValues(row: ConfigResult, qIndex: Map<string, number>, n: number): Map<string, Float64Array> {
  const out = new Map<string, Float64Array>();
  if (row.status !== 'ok' || n === 0 || row.perQuery.length === 0) return out;
  const slots: (ConfigResult['perQuery'][number] | undefined)[] = new Array(n);
  for (const d of row.perQuery) {
    const i = qIndex.get(d.qid);
    if (i !== undefined) slots[i] = d;
  }
  if (slots.some((s) => s === undefined) || slots.length !== n) return out;
  for (const name of Object.keys(row.means)) {
    const v = new Float64Array(n);
    let ok = true;
    for (let i = 0; i < n; i++) {
      const x = slots[i]!.metrics[name];
      if (typeof x !== 'number' || !Number.isFinite(x)) {
        ok = false;
        break;
      }
      v[i] = x;
    }
    if (ok) out.set(name, v);
  }
  return out;
}


/**
 * Runs every statistic of the report over a finished sweep.
 *
 * Rules (docs/report.md explains them for readers):
 * - Intervals: percentile bootstrap over questions (Efron & Tibshirani 1993), `resamples` resamples from `seed`, for
 *   every ok row and metric with complete per-question values.
 * - Candidates: ok rows with `config.k` equal to the primary metric's k. The best has the highest mean on the primary
 *   metric (ties: the earlier grid row). Each other candidate: paired difference (candidate − best) with a paired
 *   bootstrap interval, a two-sided sign-flip test (Smucker, Allan & Carterette 2007; exact when n ≤ 16), Holm's
 *   correction over all these comparisons (Holm 1979). Tier 1 when the Holm-adjusted p ≥ alpha. The difference
 *   intervals are at the Bonferroni level 1 − alpha/m (m comparisons); `excludesZero` flags an interval without 0.
 * - Evidence: not enough to choose with fewer than `minQuestions` judged questions or an MDD above a tenth of the
 *   metric's range ({@link Analysis.evidence}).
 * - Segments: per tag and folder (no folders for BEIR), the recommended row's value, the segment's best and tier 1.
 * - Fusion: see {@link FusionView}.
 * - Warnings: the run's (`result.warnings`, report/warnings.ts) first, then fewer than `minQuestions` judged questions
 *   (with the minimum detectable difference), questions left out, rows without per-question values, no candidate at
 *   the primary k, failed rows.
 *
 * @param result a finished sweep; not changed.
 * @param opts see {@link AnalyzeOptions}.
 * @throws HarnessError `USAGE` when resamples or minQuestions are not positive integers or level is outside (0, 1).
 */
export function analyze(result: SweepResult, opts: AnalyzeOptions = {}): Analysis {
  const seed = opts.seed ?? 42;
  const resamples = opts.resamples ?? 2000;
  const permutationResamples = opts.permutationResamples ?? 10000;
  const alpha = opts.alpha ?? 0.05;
  const level = opts.level ?? 0.95;
  const fixedCutoff = opts.fixedCutoff ?? 0.75;
  const minQuestions = opts.minQuestions ?? 30;
  const maxResamples = opts.maxResamples ?? Math.max(DEFAULT_MAX_RESAMPLES, resamples, permutationResamples);
  if (!Number.isInteger(maxResamples) || maxResamples < Math.max(resamples, permutationResamples))
    throw new HarnessError('USAGE', `maxResamples must be a whole number ≥ resamples (${resamples}) and ≥ ${permutationResamples}, got ${String(maxResamples)}`, {
      remedy: `set statistics.maxResamples to at least ${Math.max(resamples, permutationResamples)} (default ${DEFAULT_MAX_RESAMPLES})`,
    });
  if (!Number.isInteger(minQuestions) || minQuestions < 1)
    throw new HarnessError('USAGE', `minQuestions must be a whole number ≥ 1, got ${String(minQuestions)}`, {
      remedy: 'set statistics.minQuestions to a positive integer such as 30',
    });
  // Validate options once through the public functions (they throw HarnessError USAGE).
  bootstrapCI([0], { resamples, seed, level });
  pairedPermutationTest([], [], { resamples: permutationResamples });

  const { family: primaryFamily, k: primaryK } = splitMeasure(result.primaryMetric);
  const questions = result.questions;
  const n = questions.length;
  const qIndex = new Map<string, number>();
  questions.forEach((q, i) => qIndex.set(q.id, i));
  const warnings: string[] = [];

  // 1. Per-question matrix of every (row, metric) with complete data; question-major for the bootstrap.
  const columns: { row: number; metric: string; values: Float64Array }[] = [];
  const colIndex = new Map<string, number>();
  const incomplete: string[] = [];
  result.configs.forEach((row, i) => {
    if (row.status !== 'ok') return;
    const vals = perQuestionValues(row, qIndex, n);
    if (n > 0 && vals.size < Object.keys(row.means).length) incomplete.push(row.config.id);
    for (const metric of sortMetricNames([...vals.keys()])) {
      colIndex.set(`${i}\u0000${metric}`, columns.length);
      columns.push({ row: i, metric, values: vals.get(metric)! });
    }
  });
  const M = columns.length;
  const matrix = new Float64Array(n * M);
  for (let c = 0; c < M; c++) {
    const v = columns[c].values;
    for (let q = 0; q < n; q++) matrix[q * M + c] = v[q];
  }
  const boot = n > 0 && M > 0 ? bootstrapResampleMeans(matrix, n, M, resamples, seed) : new Float64Array(0);
  const column = (c: number): Float64Array => {
    const out = new Float64Array(resamples);
    for (let r = 0; r < resamples; r++) out[r] = boot[r * M + c];
    return out;
  };

  // 2. Row intervals.
  const rows: RowAnalysis[] = result.configs.map((row, i) => {
    const metrics: Record<string, Interval> = {};
    if (row.status === 'ok') {
      for (const name of sortMetricNames(Object.keys(row.means))) {
        const c = colIndex.get(`${i}\u0000${name}`);
        if (c === undefined) {
          metrics[name] = { mean: row.means[name], low: null, high: null };
        } else {
          const { low, high } = percentileInterval(column(c), level);
          metrics[name] = { mean: row.means[name], low, high };
        }
      }
    }
    const candidate =
      row.status === 'ok' && primaryK !== null && row.config.k === primaryK && typeof row.means[result.primaryMetric] === 'number';
    return { index: i, id: row.config.id, status: row.status, candidate, metrics };
  });

  // 3. Best and comparisons.
  let best: Analysis['best'] = null;
  const comparable = rows.filter((r) => r.candidate && colIndex.has(`${r.index}\u0000${result.primaryMetric}`));
  for (const r of rows) {
    if (r.candidate && !comparable.includes(r))
      warnings.push(`${r.id}: no per-question values for ${result.primaryMetric}, so it is left out of the comparison with the best`);
  }
  for (const r of comparable) {
    const m = r.metrics[result.primaryMetric];
    if (best === null || m.mean > best.mean) best = { index: r.index, id: r.id, mean: m.mean, low: m.low!, high: m.high! };
  }
  const comparisons: Comparison[] = [];
  let comparisonLevel = level;
  if (best !== null) {
    const bestCol = colIndex.get(`${best.index}\u0000${result.primaryMetric}`)!;
    const bestVals = columns[bestCol].values;
    const m = comparable.length - 1;
    comparisonLevel = m >= 1 ? 1 - alpha / m : level;
    const others = comparable.filter((r) => r.index !== best!.index);
    const diffs = others.map((r) => {
      const vals = columns[colIndex.get(`${r.index}\u0000${result.primaryMetric}`)!].values;
      const d = new Float64Array(n);
      for (let q = 0; q < n; q++) d[q] = vals[q] - bestVals[q];
      return d;
    });
    // Sign-flip tests with Holm, resampled until every tier is settled (score/sequential.ts).
    const tests = sequentialSignFlipHolm(diffs, n, { alpha, seed: seed + 1, initial: permutationResamples, max: maxResamples });
    others.forEach((r, j) => {
      const c = colIndex.get(`${r.index}\u0000${result.primaryMetric}`)!;
      const d = diffs[j];
      const bd = new Float64Array(resamples);
      for (let s = 0; s < resamples; s++) bd[s] = boot[s * M + c] - boot[s * M + bestCol];
      const t = tests[j];
      // "Excludes 0" is a stated verdict (†) only for a tier-1 row, so only those are resampled further; a tier-2 or
      // undecided row keeps the configured resamples (its tiny tail share would cost ~9/tail resamples to settle).
      const settle = t.decided && !t.rejected;
      const iv = sequentialBootstrapDiff(columns[c].values, bestVals, {
        level: comparisonLevel,
        seed,
        initial: resamples,
        max: settle ? maxResamples : resamples,
        first: bd,
      });
      comparisons.push({
        index: r.index,
        id: r.id,
        value: r.metrics[result.primaryMetric].mean,
        diff: mean(Array.from(d)),
        low: iv.low,
        high: iv.high,
        excludesZero: iv.excludesZero,
        pValue: t.pValue,
        pHolm: t.pHolm,
        exact: t.exact,
        diffSd: sampleSd(Array.from(d)),
        tier: t.rejected ? 2 : 1,
        pMcError: t.mcError,
        permutations: t.resamples,
        tierDecided: t.decided,
        lowMcError: iv.lowMcError,
        highMcError: iv.highMcError,
        intervalResamples: iv.resamples,
        intervalDecided: iv.decided,
      });
    });
    comparisons.sort((a, b) => b.diff - a.diff || a.index - b.index);
    rows[best.index].tier = 1;
    for (const c of comparisons) if (c.tierDecided) rows[c.index].tier = c.tier;
  } else if (primaryK === null) {
    warnings.push(`the primary metric ${result.primaryMetric} has no k, so no row can be recommended`);
  } else if (rows.some((r) => r.candidate)) {
    warnings.push(`no row at k = ${primaryK} has per-question values for ${result.primaryMetric}, so no row can be recommended`);
  } else if (result.configs.some((c) => c.status === 'ok')) {
    warnings.push(`no ok row at k = ${primaryK} has ${result.primaryMetric}, so no row can be recommended`);
  }
  const tier1 = best === null ? [] : [best.id, ...comparisons.filter((c) => c.tierDecided && c.tier === 1).map((c) => c.id)];
  const undecided = comparisons.filter((c) => !c.tierDecided).map((c) => c.id);

  // 4. Minimum detectable difference and the small-sample warning.
  let mdd: Analysis['mdd'] = null;
  if (best !== null && n >= 2) {
    let diffSd: number;
    let basis: string;
    const sds = comparisons.map((c) => c.diffSd).filter((x) => Number.isFinite(x));
    if (sds.length > 0 && sds.some((x) => x > 0)) {
      // Root mean square, not the median: when most candidates tie the best on every question their sd is 0, and a
      // median of 0 would claim that any difference is detectable.
      diffSd = Math.sqrt(sds.reduce((a, x) => a + x * x, 0) / sds.length);
      basis = `root mean square of the sd of the per-question differences between the best and the ${comparisons.length} other candidate(s)`;
    } else {
      const bestVals = columns[colIndex.get(`${best.index}\u0000${result.primaryMetric}`)!].values;
      diffSd = Math.SQRT2 * sampleSd(Array.from(bestVals));
      basis = '√2 × sd of the best row (no other candidate differs from it question by question; assumes uncorrelated rows)';
    }
    if (diffSd > 0) {
      const value = minimumDetectableDifference(diffSd, n, { alpha, power: 0.8 });
      mdd = { value, diffSd, n, alpha, power: 0.8, basis };
    }
  }
  if (n < minQuestions) {
    const detect =
      mdd === null
        ? ''
        : mdd.value >= 1
          ? `: with ${n} questions a paired comparison cannot reliably detect any difference in ${result.primaryMetric} ` +
            `(the detectable difference, ${mdd.value.toFixed(2)}, exceeds the metric's whole range; sd of paired differences ${mdd.diffSd.toFixed(3)})`
          : `: with ${n} questions a paired comparison detects (80% power, α = ${alpha}) only differences of about ` +
            `${mdd.value.toFixed(3)} in ${result.primaryMetric} (${(mdd.value * 100).toFixed(1)} points) or more (normal approximation, sd of paired differences ${mdd.diffSd.toFixed(3)})`;
    warnings.push(`only ${n} judged question(s), fewer than ${minQuestions}${detect}; treat small differences as noise`);
  }
  const tenth = METRIC_RANGE / 10;
  const evidence: Analysis['evidence'] =
    best === null
      ? { enough: false, reason: 'no configuration can be recommended' }
      : n < minQuestions
        ? { enough: false, reason: `only ${n} judged question(s), fewer than the ${minQuestions} a recommendation needs (statistics.minQuestions)` }
        : mdd !== null && mdd.value > tenth
          ? {
              enough: false,
              reason:
                `the minimum detectable difference in ${result.primaryMetric} (${mdd.value.toFixed(3)}, 80% power, α = ${alpha}) ` +
                `exceeds a tenth of the metric's range (${tenth.toFixed(3)})`,
            }
          : { enough: true, reason: null };
  const excludedText = excludedWarning(result.excluded);
  if (excludedText !== null) warnings.push(excludedText);
  if (incomplete.length > 0)
    warnings.push(
      `${incomplete.length} ok row(s) lack per-question values for some metric or question, so those intervals are missing: ` +
        incomplete.slice(0, 5).join(', ') +
        (incomplete.length > 5 ? ', …' : ''),
    );
  const failed = result.configs
    .filter((c) => c.status === 'failed')
    .map((c) => ({ id: c.config.id, error: c.error ?? 'failed (no message)' }));
  const failedText = failedWarning(failed.length);
  if (failedText !== null) warnings.push(failedText);
  const unjudged = unjudgedAnalysis(
    result,
    rows.filter((r) => r.candidate).map((r) => ({ index: r.index, tier: r.tier ?? null })),
    best === null ? null : best.index,
    evidence.enough,
  );
  if (unjudged?.warning) warnings.push(unjudged.warning);

  const threshold = relevanceThreshold(result);
  const primaryColumn = (i: number): Float64Array | undefined => {
    const c = colIndex.get(`${i}\u0000${result.primaryMetric}`);
    return c === undefined ? undefined : columns[c].values;
  };
  const stat: StatOptions = { seed, resamples, level, alpha, permutationResamples, maxResamples };
  const segments =
    best === null ? null : segmentAnalysis(result, best, comparable.map((r) => ({ index: r.index, id: r.id, values: primaryColumn(r.index)! })), threshold, stat);
  const synthetic = segments === null ? null : syntheticDisagreement(segments, result.primaryMetric);
  if (synthetic !== null) warnings.push(synthetic);
  const fusion = fusionView(result, rows, primaryColumn, stat);
  const selection = best === null ? null : selectionEstimate(result, comparable.map((r) => ({ id: r.id, values: primaryColumn(r.index)! })), opts.selectionFolds ?? 5, stat);
  const curves = kCurves(
    result,
    tier1.map((id) => rows.find((r) => r.id === id)!.index),
    (i, metric) => rows[i].metrics[metric],
    stat,
  );
  const cutoffs = cutoffAnalysis(result, primaryK, threshold, fixedCutoff);
  const models = modelComparison(result, rows, primaryK);
  const missedByAll = missedQuestions(result);

  return {
    primaryMetric: result.primaryMetric,
    primaryFamily,
    primaryK,
    seed,
    resamples,
    permutationResamples,
    alpha,
    level,
    fixedCutoff,
    questions: n,
    best,
    rows,
    comparisons,
    tier1,
    undecided,
    maxResamples,
    comparisonLevel,
    minQuestions,
    evidence,
    mdd,
    segments,
    selection,
    kCurves: curves,
    fusion,
    cutoffs,
    models,
    missedByAll,
    unjudged,
    failed,
    warnings: allWarnings(result, warnings),
  };
}

/**
 * The cross-validated selection estimate over the comparable candidates (grid order), folds seeded by `seed + 4` and
 * stratified by each question's sorted tags when any question has a tag.
 */
function selectionEstimate(
  result: SweepResult,
  candidates: { id: string; values: Float64Array }[],
  folds: number,
  stat: StatOptions,
): SelectionResult | null {
  const anyTag = result.questions.some((q) => q.tags.length > 0);
  const strata = anyTag ? result.questions.map((q) => [...new Set(q.tags)].sort().join('\u0000')) : undefined;
  return crossValidatedSelection(candidates, { folds, seed: stat.seed + 4, strata, resamples: stat.resamples, level: stat.level });
}

/** The statistics settings the segment and fusion analyses share. */
interface StatOptions {
  seed: number;
  resamples: number;
  level: number;
  alpha: number;
  permutationResamples: number;
  maxResamples: number;
}

/**
 * Two-sided paired sign-flip p-values of several difference vectors of one length n (exact when n ≤ 16, else one
 * Monte Carlo plan of `permutationResamples` patterns from `seed`, shared by all vectors), then Holm over them.
 */
export function signFlipHolm(diffs: Float64Array[], n: number, permutationResamples: number, seed: number): { p: number[]; pHolm: number[] } {
  if (diffs.length === 0) return { p: [], pHolm: [] };
  const exact = n <= 16;
  const flips = exact ? new Int8Array(0) : signFlipPlan(n, permutationResamples, seed);
  const p = diffs.map((d) => (exact ? exactSignFlip(d) : monteCarloSignFlip(d, flips, permutationResamples)).pValue);
  return { p, pHolm: holm(p) };
}

/**
 * Which of m paired-difference vectors Holm rejects at `alpha` (two-sided sign-flip tests), decided with less work
 * than {@link signFlipHolm} and, apart from the first rule below, with exactly its decisions:
 * - a vector whose Hoeffding bound already proves p < alpha/m, P(|Σ ε_j d_j| ≥ |Σ d_j|) ≤ 2·exp(−(Σ d_j)² / (2 Σ d_j²))
 *   (Hoeffding 1963, for independent signs ε_j = ±1), is rejected without resampling: Holm rejects every p < alpha/m
 *   (its adjusted value is at most m·p). The bound is exact where it decides; the Monte Carlo estimate could disagree
 *   only by its own sampling error near alpha/m, or when 1/(R + 1) ≥ alpha/m;
 * - the Monte Carlo count stops as soon as (count + 1)/(R + 1) ≥ alpha: that p can never be rejected, and a vector
 *   with p ≥ alpha sorts after every vector Holm could reject, so stopping early changes no decision.
 * Exact enumeration (n ≤ 16) runs in full.
 * @returns one flag per vector: true = significantly different (Holm-adjusted p < alpha).
 */
export function holmRejections(diffs: Float64Array[], n: number, permutationResamples: number, seed: number, alpha: number): boolean[] {
  const m = diffs.length;
  if (m === 0) return [];
  const exact = n <= 16;
  let flips: Int8Array | undefined;
  const stopAt = alpha * (permutationResamples + 1) - 1; // count ≥ stopAt ⇒ p ≥ alpha
  const p = diffs.map((d) => {
    let sum = 0;
    let sq = 0;
    for (let j = 0; j < d.length; j++) {
      sum += d[j];
      sq += d[j] * d[j];
    }
    if (sq === 0) return 1;
    const bound = 2 * Math.exp(-(sum * sum) / (2 * sq));
    if (bound < alpha / m) return bound;
    if (exact) return exactSignFlip(d).pValue;
    flips ??= signFlipPlan(n, permutationResamples, seed);
    let abs = 0;
    for (let j = 0; j < n; j++) abs += Math.abs(d[j]);
    const threshold = Math.abs(sum) - 1e-9 * abs;
    let count = 0;
    for (let r = 0; r < permutationResamples; r++) {
      const o = r * n;
      let x = 0;
      for (let j = 0; j < n; j++) x += flips[o + j] * d[j];
      if (Math.abs(x) >= threshold && ++count >= stopAt) return (count + 1) / (permutationResamples + 1);
    }
    return (count + 1) / (permutationResamples + 1);
  });
  return holm(p).map((x) => x < alpha);
}

/** The tag segment of the questions not tagged `synthetic` (present only when some are). */
export const NOT_SYNTHETIC = '(not synthetic)';

/**
 * The warning when the best configuration on the generated questions (tag `synthetic`) is not the best on the others
 * (segment {@link NOT_SYNTHETIC}); null when they agree or either segment is missing. Generated questions reuse their
 * passage's words and are known to favour lexical retrievers (docs/judging.md).
 */
export function syntheticDisagreement(seg: SegmentAnalysis, metric: string): string | null {
  const syn = seg.segments.find((s) => s.kind === 'tag' && s.name === 'synthetic');
  const other = seg.segments.find((s) => s.kind === 'tag' && s.name === NOT_SYNTHETIC);
  if (syn === undefined || other === undefined || syn.best.id === other.best.id) return null;
  return (
    `the best configuration on the ${syn.questions} generated (synthetic) questions, ${syn.best.id} (${metric} ${syn.best.value.toFixed(3)}), ` +
    `is not the best on the ${other.questions} other questions, ${other.best.id} (${other.best.value.toFixed(3)}): generated questions ` +
    'reuse their passage\'s words and favour lexical retrievers; decide on the questions people wrote'
  );
}

/**
 * Segments by question tag and by top-level folder of the relevant documents: the recommended row's value with its
 * interval, and the segment's own best candidate and tier 1 (paired sign-flip tests against the segment's best on the
 * segment's questions, seed + 2, Holm over that segment's comparisons). A question is in folder F when it has a
 * relevant document (grade ≥ threshold) under `F/`; ids without a folder go in `(root)`. No folder segments for BEIR
 * datasets (ids are opaque). Questions without tags form `(untagged)` when at least one question has a tag. When some
 * questions are tagged `synthetic` (written by `generate`), the others form the tag segment `(not synthetic)`.
 */
function segmentAnalysis(
  result: SweepResult,
  best: NonNullable<Analysis['best']>,
  candidates: { index: number; id: string; values: Float64Array }[],
  threshold: number,
  stat: StatOptions,
): SegmentAnalysis {
  const values = candidates.find((c) => c.index === best.index)!.values;
  const overall = mean(Array.from(values));
  const byTag = new Map<string, number[]>();
  const byFolder = new Map<string, number[]>();
  const anyTag = result.questions.some((q) => q.tags.length > 0);
  const anySynthetic = result.questions.some((q) => q.tags.includes('synthetic'));
  const folders = manifestValue(result, ['dataset', 'layout']) !== 'beir';
  const push = (m: Map<string, number[]>, key: string, qi: number): void => {
    const l = m.get(key);
    if (l) l.push(qi);
    else m.set(key, [qi]);
  };
  result.questions.forEach((q: Question, qi) => {
    for (const t of new Set(q.tags)) push(byTag, t, qi);
    if (anyTag && q.tags.length === 0) push(byTag, '(untagged)', qi);
    if (anySynthetic && !q.tags.includes('synthetic')) push(byTag, NOT_SYNTHETIC, qi);
    if (!folders) return;
    const fs = new Set<string>();
    for (const [doc, g] of Object.entries(q.relevant)) if (g >= threshold) fs.add(topFolder(doc));
    for (const f of fs) push(byFolder, f, qi);
  });
  const order = (special: string) => (a: string, b: string): number =>
    a === special ? 1 : b === special ? -1 : a < b ? -1 : a > b ? 1 : 0;
  const segments: SegmentValue[] = [];
  const add = (kind: 'tag' | 'folder', m: Map<string, number[]>, special: string): void => {
    for (const name of [...m.keys()].sort(order(special))) {
      const qs = m.get(name)!;
      const vals = qs.map((qi) => values[qi]);
      const ci = bootstrapCI(vals, { seed: stat.seed, resamples: stat.resamples, level: stat.level });
      // The segment's own best and tier 1 among the candidates (grid order breaks ties).
      const means = candidates.map((c) => {
        let sum = 0;
        for (const qi of qs) sum += c.values[qi];
        return sum / qs.length;
      });
      let b = 0;
      for (let j = 1; j < candidates.length; j++) if (means[j] > means[b] || (means[j] === means[b] && candidates[j].index < candidates[b].index)) b = j;
      const others = candidates.map((_, j) => j).filter((j) => j !== b);
      const diffs = others.map((j) => Float64Array.from(qs, (qi) => candidates[j].values[qi] - candidates[b].values[qi]));
      const tests = sequentialSignFlipHolm(diffs, qs.length, {
        alpha: stat.alpha,
        seed: stat.seed + 2,
        initial: stat.permutationResamples,
        max: stat.maxResamples,
      });
      const inTier1 = new Set([b, ...others.filter((_, t) => tests[t].decided && !tests[t].rejected)]);
      const unsettled = new Set(others.filter((_, t) => !tests[t].decided));
      const tier1 = [candidates[b].id, ...candidates.filter((_, j) => j !== b && inTier1.has(j)).map((c) => c.id)];
      const undecided = candidates.filter((_, j) => unsettled.has(j)).map((c) => c.id);
      segments.push({
        kind,
        name,
        questions: qs.length,
        value: ci.mean,
        low: ci.low,
        high: ci.high,
        diffPoints: (ci.mean - overall) * 100,
        diffPercent: overall === 0 ? null : ((ci.mean - overall) / overall) * 100,
        best: { id: candidates[b].id, value: means[b] },
        tier1,
        undecided,
        recommendedInTier1: undecided.includes(best.id) ? null : tier1.includes(best.id),
        resamples: Math.max(0, ...tests.map((t) => t.resamples)),
      });
    }
  };
  add('tag', byTag, '(untagged)');
  if (folders) add('folder', byFolder, '(root)');
  return { configId: best.id, metric: result.primaryMetric, overall, questions: result.questions.length, segments };
}

/**
 * The fusion view (see {@link FusionView}). Hybrid candidates (mode `hybrid` with a `fusion`, at the primary k, with
 * per-question values) are grouped by chunking, embedding, rerank and k; a group's parents are the keyword row
 * (`mode` keyword, no embedding) and the semantic row (same embedding) with the same chunking, rerank and k. Each
 * hybrid row is tested against each parent it has (two-sided paired sign-flip, seed + 3), Holm over every such test of
 * the view. Null when fewer than two distinct fusion keys occur among the hybrid candidates.
 */
function fusionView(
  result: SweepResult,
  rows: RowAnalysis[],
  primaryColumn: (i: number) => Float64Array | undefined,
  stat: StatOptions,
): FusionView | null {
  const pm = result.primaryMetric;
  const hybrids = rows.filter((r) => {
    const c = result.configs[r.index].config;
    return r.candidate && c.mode === 'hybrid' && c.fusion !== null && c.fusion !== undefined && primaryColumn(r.index) !== undefined;
  });
  if (new Set(hybrids.map((r) => result.configs[r.index].config.fusion!.key)).size < 2) return null;
  const groupKey = (c: ConfigResult['config']): string => [c.chunkingKey, c.embedding ?? '', rerankKey(c.rerank) ?? '', c.k].join('\u0000');
  const groups = new Map<string, RowAnalysis[]>();
  for (const r of hybrids) {
    const key = groupKey(result.configs[r.index].config);
    const l = groups.get(key);
    if (l) l.push(r);
    else groups.set(key, [r]);
  }
  const findParent = (c: ConfigResult['config'], mode: 'keyword' | 'semantic'): RowAnalysis | undefined =>
    rows.find((r) => {
      const p = result.configs[r.index].config;
      return (
        r.status === 'ok' &&
        p.mode === mode &&
        p.chunkingKey === c.chunkingKey &&
        p.k === c.k &&
        rerankKey(p.rerank) === rerankKey(c.rerank) &&
        (mode === 'keyword' ? true : p.embedding === c.embedding) &&
        primaryColumn(r.index) !== undefined
      );
    });
  // Every hybrid-vs-parent test of the view, Holm over all of them.
  const tests: { group: string; point: number; side: 'keyword' | 'semantic'; parent: RowAnalysis; d: Float64Array }[] = [];
  const n = result.questions.length;
  const built: { key: string; rowsOf: RowAnalysis[]; kw?: RowAnalysis; sem?: RowAnalysis }[] = [];
  for (const [key, rowsOf] of groups) {
    const c0 = result.configs[rowsOf[0].index].config;
    const kw = findParent(c0, 'keyword');
    const sem = findParent(c0, 'semantic');
    rowsOf.forEach((r, pi) => {
      const v = primaryColumn(r.index)!;
      for (const [side, parent] of [['keyword', kw], ['semantic', sem]] as const) {
        if (!parent) continue;
        const pv = primaryColumn(parent.index)!;
        tests.push({ group: key, point: pi, side, parent, d: Float64Array.from(v, (x, q) => x - pv[q]) });
      }
    });
    built.push({ key, rowsOf, kw, sem });
  }
  const seq = sequentialSignFlipHolm(tests.map((t) => t.d), n, {
    alpha: stat.alpha,
    seed: stat.seed + 3,
    initial: stat.permutationResamples,
    max: stat.maxResamples,
  });
  const p = seq.map((t) => t.pValue);
  const pHolm = seq.map((t) => t.pHolm);
  const iv = (r: RowAnalysis | undefined): { id: string; value: Interval } | null => (r ? { id: r.id, value: r.metrics[pm] } : null);
  const out: FusionGroup[] = built.map(({ key, rowsOf, kw, sem }) => {
    const c0 = result.configs[rowsOf[0].index].config;
    const points: FusionPoint[] = rowsOf.map((r, pi) => {
      const f = result.configs[r.index].config.fusion!;
      const test = (side: 'keyword' | 'semantic'): ParentTest | null => {
        const j = tests.findIndex((t) => t.group === key && t.point === pi && t.side === side);
        if (j < 0) return null;
        return {
          id: tests[j].parent.id,
          parent: tests[j].parent.index,
          diff: mean(Array.from(tests[j].d)),
          pValue: p[j],
          pHolm: pHolm[j],
          pMcError: seq[j].mcError,
          decided: seq[j].decided,
          resamples: seq[j].resamples,
        };
      };
      const vsKeyword = test('keyword');
      const vsSemantic = test('semantic');
      const wins = (t: ParentTest | null): boolean => t !== null && t.diff > 0 && t.pHolm < stat.alpha;
      const settled = (t: ParentTest | null): boolean => t === null || t.decided;
      return {
        index: r.index,
        id: r.id,
        fusion: f.key,
        method: f.method,
        x: f.method === 'convex' ? (f.alpha ?? null) : (f.weight ?? null),
        value: r.metrics[pm],
        ...(r.tier !== undefined ? { tier: r.tier } : {}),
        vsKeyword,
        vsSemantic,
        beatsBoth: vsKeyword !== null && vsSemantic !== null && wins(vsKeyword) && wins(vsSemantic),
        beatsBothDecided: settled(vsKeyword) && settled(vsSemantic),
      };
    });
    points.sort(
      (a, b) =>
        (a.method < b.method ? -1 : a.method > b.method ? 1 : 0) ||
        (a.x ?? -1) - (b.x ?? -1) ||
        (a.fusion < b.fusion ? -1 : a.fusion > b.fusion ? 1 : 0),
    );
    const where = `${c0.chunkingKey}${c0.embedding ? ` with ${c0.embedding}` : ''}${c0.rerank ? `, reranked by ${c0.rerank.label}` : ''}, k = ${c0.k}`;
    let sentence: string;
    if (!kw || !sem) {
      sentence = `${where}: no ${!kw ? 'keyword' : 'semantic'} row with the same chunking${c0.rerank ? ', rerank' : ''} and k, so no hybrid setting can be tested against both parents.`;
    } else {
      const better = kw.metrics[pm].mean >= sem.metrics[pm].mean ? kw : sem;
      const winners = points.filter((x) => x.beatsBoth && x.beatsBothDecided);
      const open = points.filter((x) => !x.beatsBothDecided);
      const bestPoint = points.reduce((a, x) => (x.value.mean > a.value.mean ? x : a), points[0]);
      const openText =
        open.length === 0
          ? ''
          : ` Undecided at ${stat.maxResamples} resamples whether ${open.map((x) => x.fusion).join(', ')} beat${open.length === 1 ? 's' : ''} both parents.`;
      sentence =
        (winners.length > 0
          ? `${where}: ${winners.length} of ${points.length} hybrid setting(s) beat both parents (paired sign-flip test against each, Holm over the ${tests.length} tests of this view, α = ${stat.alpha}): ` +
            winners.map((x) => `${x.fusion} ${x.value.mean.toFixed(3)}`).join(', ') +
            `; the better parent is ${better.id} at ${better.metrics[pm].mean.toFixed(3)}.`
          : `${where}: no hybrid setting is significantly better than both parents (paired sign-flip test against each, Holm over the ` +
            `${tests.length} tests of this view, α = ${stat.alpha}); the better parent is ${better.id} at ${better.metrics[pm].mean.toFixed(3)}, ` +
            `the highest hybrid ${bestPoint.fusion} at ${bestPoint.value.mean.toFixed(3)}.`) + openText;
    }
    return { chunkingKey: c0.chunkingKey, embedding: c0.embedding, rerank: rerankKey(c0.rerank), k: c0.k, keyword: iv(kw), semantic: iv(sem), points, sentence };
  });
  return { metric: pm, tests: tests.length, groups: out };
}

/** Index of the first element ≥ t in an ascending array. */
function lowerBound(sorted: Float64Array, t: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid] < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function point(threshold: number, kept: number, relKept: number, docsKept: number, docs: number): CutoffPoint {
  const precision = kept === 0 ? null : relKept / kept;
  const recall = docs === 0 ? null : docsKept / docs;
  const f1 =
    precision === null || recall === null ? null : precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall);
  return { threshold, kept, precision, recall, f1 };
}

/**
 * Cutoff sweep of one list of scored results (exported for tests and for other callers that have their own lists).
 *
 * A result is relevant when its document is relevant to its question. Precision at t = relevant results with
 * score ≥ t / results with score ≥ t (each retrieved chunk counts). Recall at t = (question, relevant document) pairs
 * with at least one result ≥ t / such pairs anywhere in the lists: the denominator is the relevant documents the
 * retriever returned, not all labelled ones, because a cutoff cannot recover what was never retrieved.
 *
 * @param results `{ qid, docId, score, relevant }` for every retrieved result.
 * @param opts.fixed the fixed cutoff to cost (default 0.75); opts.bins histogram bins (default 20).
 * @returns null when `results` is empty.
 */
export function cutoffSweep(
  results: readonly { qid: string; docId: string; score: number; relevant: boolean }[],
  opts: { fixed?: number; bins?: number } = {},
): Omit<ModelCutoffs, 'model' | 'configId' | 'k'> | null {
  const fixedT = opts.fixed ?? 0.75;
  const bins = opts.bins ?? 20;
  const finite = results.filter((r) => Number.isFinite(r.score));
  if (finite.length === 0) return null;
  const all = Float64Array.from(finite.map((r) => r.score)).sort();
  const rel = Float64Array.from(finite.filter((r) => r.relevant).map((r) => r.score)).sort();
  const docMax = new Map<string, number>();
  for (const r of finite) {
    if (!r.relevant) continue;
    const key = `${r.qid}\u0000${r.docId}`;
    const prev = docMax.get(key);
    if (prev === undefined || r.score > prev) docMax.set(key, r.score);
  }
  const docs = Float64Array.from(docMax.values()).sort();
  const at = (t: number): CutoffPoint =>
    point(t, all.length - lowerBound(all, t), rel.length - lowerBound(rel, t), docs.length - lowerBound(docs, t), docs.length);
  const minScore = all[0];
  const maxScore = all[all.length - 1];

  // Exact F1-best over every distinct score, scanning from the highest threshold down (ties keep the higher one).
  let best: CutoffPoint = at(maxScore);
  for (let i = all.length - 1; i >= 0; i--) {
    if (i < all.length - 1 && all[i] === all[i + 1]) continue;
    const p = at(all[i]);
    if ((p.f1 ?? -1) > (best.f1 ?? -1)) best = p;
  }
  const curve: CutoffPoint[] = [];
  for (let i = 0; i <= 100; i++) curve.push(at(i === 100 ? maxScore : minScore + ((maxScore - minScore) * i) / 100));
  const fx = at(fixedT);
  const fixed = {
    ...fx,
    recallChange: fx.recall === null || best.recall === null ? null : fx.recall - best.recall,
    precisionChange: fx.precision === null || best.precision === null ? null : fx.precision - best.precision,
  };
  const nb = maxScore > minScore ? bins : 1;
  const edges: number[] = [];
  for (let i = 0; i <= nb; i++) edges.push(i === nb ? maxScore : minScore + ((maxScore - minScore) * i) / nb);
  const relevantH = new Array<number>(nb).fill(0);
  const nonRelevantH = new Array<number>(nb).fill(0);
  for (const r of finite) {
    const b = maxScore > minScore ? Math.min(nb - 1, Math.floor(((r.score - minScore) / (maxScore - minScore)) * nb)) : 0;
    if (r.relevant) relevantH[b]++;
    else nonRelevantH[b]++;
  }
  return {
    results: finite.length,
    relevantResults: rel.length,
    relevantDocs: docs.length,
    minScore,
    maxScore,
    histogram: { edges, relevant: relevantH, nonRelevant: nonRelevantH },
    curve,
    best,
    fixed,
  };
}

/** Distinct embedding labels of ok semantic rows, in grid order. */
function semanticModels(result: SweepResult): string[] {
  const out: string[] = [];
  for (const r of result.configs)
    if (r.status === 'ok' && r.config.mode === 'semantic' && r.config.embedding && !out.includes(r.config.embedding))
      out.push(r.config.embedding);
  return out;
}

/** The row with the highest value of `metric` among `rows` (ties: earlier), or undefined. */
function bestBy(rows: ConfigResult[], metric: (r: ConfigResult) => number | undefined): ConfigResult | undefined {
  let best: ConfigResult | undefined;
  let bestV = -Infinity;
  for (const r of rows) {
    const v = metric(r);
    if (typeof v === 'number' && v > bestV) {
      best = r;
      bestV = v;
    }
  }
  return best;
}

function cutoffAnalysis(result: SweepResult, primaryK: number | null, threshold: number, fixedCutoff: number): ModelCutoffs[] {
  const out: ModelCutoffs[] = [];
  const qById = new Map(result.questions.map((q) => [q.id, q]));
  for (const model of semanticModels(result)) {
    const mine = result.configs.filter((r) => r.status === 'ok' && r.config.mode === 'semantic' && r.config.embedding === model);
    const atPrimary = mine.filter((r) => r.config.k === primaryK);
    let chunking = bestBy(atPrimary, (r) => r.means[result.primaryMetric])?.config.chunkingKey;
    const maxK = maxOf(mine.map((r) => r.config.k));
    if (chunking === undefined) {
      const family = splitMeasure(result.primaryMetric).family;
      chunking = bestBy(mine.filter((r) => r.config.k === maxK), (r) => r.means[`${family}@${maxK}`])?.config.chunkingKey;
    }
    const sameChunking = mine.filter((r) => r.config.chunkingKey === chunking);
    const pool = sameChunking.length > 0 ? sameChunking : mine;
    const k = maxOf(pool.map((r) => r.config.k));
    const row = pool.find((r) => r.config.k === k)!;
    const list: { qid: string; docId: string; score: number; relevant: boolean }[] = [];
    for (const d of row.perQuery) {
      const q = qById.get(d.qid);
      if (!q) continue;
      for (const h of d.retrieved) list.push({ qid: d.qid, docId: h.docId, score: h.score, relevant: isRelevant(q, h.docId, threshold) });
    }
    const sweep = cutoffSweep(list, { fixed: fixedCutoff });
    if (sweep) out.push({ model, configId: row.config.id, k, ...sweep });
  }
  return out;
}

function modelComparison(result: SweepResult, rows: RowAnalysis[], primaryK: number | null): ModelComparison {
  const metric = primaryK === null ? 'ndcg' : `ndcg@${primaryK}`;
  const out: ModelRow[] = [];
  for (const model of semanticModels(result)) {
    const mine = result.configs.filter(
      (r) => r.status === 'ok' && r.config.mode === 'semantic' && r.config.embedding === model && r.config.k === primaryK,
    );
    const row = bestBy(mine, (r) => r.means[result.primaryMetric]);
    if (!row) continue;
    const ra = rows[result.configs.indexOf(row)];
    const tops = row.perQuery.filter((d) => d.retrieved.length > 0).map((d) => d.retrieved[0].score);
    out.push({
      model,
      configId: row.config.id,
      chunkingKey: row.config.chunkingKey,
      ndcg: ra.metrics[metric] ?? null,
      primary: ra.metrics[result.primaryMetric],
      meanTop1Cosine: tops.length === 0 ? null : mean(tops),
    });
  }
  const notes: string[] = [];
  const quality = (r: ModelRow): number => (r.ndcg ?? r.primary).mean;
  const qName = out.some((r) => r.ndcg === null) ? result.primaryMetric : metric;
  for (const a of out)
    for (const b of out) {
      if (a === b || a.meanTop1Cosine === null || b.meanTop1Cosine === null) continue;
      // Differences below the 3 decimals the report shows are not stated.
      if (a.meanTop1Cosine - b.meanTop1Cosine >= 0.0005 && quality(b) - quality(a) >= 0.0005)
        notes.push(
          `${a.model} gives higher cosine scores than ${b.model} (mean top-1 ${a.meanTop1Cosine.toFixed(3)} vs ` +
            `${b.meanTop1Cosine.toFixed(3)}) but ranks worse (${qName} ${quality(a).toFixed(3)} vs ${quality(b).toFixed(3)}): ` +
            'cosine scores are not comparable across models, so do not pick a model or a cutoff by raw similarity',
        );
    }
  return { metric, rows: out, notes };
}

/** Questions where no ok row (with per-question detail) put a relevant result in its top k. */
function missedQuestions(result: SweepResult): string[] {
  const ok = result.configs.filter((r) => r.status === 'ok' && r.perQuery.length > 0);
  if (ok.length === 0) return [];
  const found = new Set<string>();
  for (const r of ok) for (const d of r.perQuery) if (d.firstRelevantRank !== null) found.add(d.qid);
  return result.questions.filter((q) => !found.has(q.id)).map((q) => q.id);
}

/**
 * A copy of `result` with `configs[i].ci` (every metric with an interval: [low, high]) and `configs[i].tier`
 * (candidates only) taken from `analysis`. Never changes `result`; the copy shares `perQuery`, `questions` and
 * `manifest` with it (they are not changed either).
 */
export function withStatistics(result: SweepResult, analysis: Analysis): SweepResult {
  return {
    ...result,
    configs: result.configs.map((row, i) => {
      const ra = analysis.rows[i];
      const copy: ConfigResult = { ...row };
      delete copy.ci;
      delete copy.tier;
      if (!ra || ra.id !== row.config.id) return copy;
      const ci: Record<string, [number, number]> = {};
      for (const [name, iv] of Object.entries(ra.metrics)) if (iv.low !== null && iv.high !== null) ci[name] = [iv.low, iv.high];
      if (Object.keys(ci).length > 0) copy.ci = ci;
      if (ra.tier !== undefined) copy.tier = ra.tier;
      return copy;
    }),
  };
}

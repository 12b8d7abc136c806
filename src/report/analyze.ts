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
import { isRelevant, relevanceThreshold, sortMetricNames, splitMeasure, topFolder } from './metrics.js';

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
}

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
  /** 1 = the best or not significantly worse than it (Holm-adjusted p ≥ alpha); 2 = significantly worse. Candidates only. */
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
  /** Paired bootstrap interval of the difference (same resampled questions for both rows). */
  low: number;
  high: number;
  /** Two-sided paired sign-flip test p-value. */
  pValue: number;
  /** Holm-adjusted over all comparisons with the best. */
  pHolm: number;
  /** True when all 2^n sign patterns were enumerated. */
  exact: boolean;
  /** Sample standard deviation of the per-question differences. */
  diffSd: number;
  tier: 1 | 2;
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
}

/** Segments of the recommended configuration. */
export interface SegmentAnalysis {
  configId: string;
  metric: string;
  /** The row's mean over all questions. */
  overall: number;
  questions: number;
  /** Tag segments (code-unit order, `(untagged)` last) then folder segments (code-unit order, `(root)` last). */
  segments: SegmentValue[];
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
  /** Ids of tier-1 rows: the best first, then in comparison order. */
  tier1: string[];
  /**
   * Minimum detectable difference of a paired comparison at alpha and 80% power, from the median sd of the paired
   * differences with the best (or √2 × the best row's sd when there is nothing to compare).
   */
  mdd: { value: number; diffSd: number; n: number; alpha: number; power: number; basis: string } | null;
  segments: SegmentAnalysis | null;
  cutoffs: ModelCutoffs[];
  models: ModelComparison;
  /** Question ids with no relevant result in the top k of any ok row (firstRelevantRank null everywhere). */
  missedByAll: string[];
  failed: { id: string; error: string }[];
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

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
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
 *   correction over all these comparisons (Holm 1979). Tier 1 when the Holm-adjusted p ≥ alpha.
 * - Warnings: fewer than 30 judged questions (with the minimum detectable difference), questions left out, rows
 *   without per-question values, no candidate at the primary k, failed rows.
 *
 * @param result a finished sweep; not changed.
 * @param opts see {@link AnalyzeOptions}.
 * @throws HarnessError `USAGE` when resamples are not positive integers or level is outside (0, 1).
 */
export function analyze(result: SweepResult, opts: AnalyzeOptions = {}): Analysis {
  const seed = opts.seed ?? 42;
  const resamples = opts.resamples ?? 2000;
  const permutationResamples = opts.permutationResamples ?? 10000;
  const alpha = opts.alpha ?? 0.05;
  const level = opts.level ?? 0.95;
  const fixedCutoff = opts.fixedCutoff ?? 0.75;
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
  if (best !== null) {
    const bestCol = colIndex.get(`${best.index}\u0000${result.primaryMetric}`)!;
    const bestVals = columns[bestCol].values;
    const exact = n <= 16;
    const flips = exact ? new Int8Array(0) : signFlipPlan(n, permutationResamples, seed + 1);
    const raw: Omit<Comparison, 'pHolm' | 'tier'>[] = [];
    for (const r of comparable) {
      if (r.index === best.index) continue;
      const c = colIndex.get(`${r.index}\u0000${result.primaryMetric}`)!;
      const vals = columns[c].values;
      const d = new Float64Array(n);
      for (let q = 0; q < n; q++) d[q] = vals[q] - bestVals[q];
      const test = exact ? exactSignFlip(d) : monteCarloSignFlip(d, flips, permutationResamples);
      const bd = new Float64Array(resamples);
      for (let s = 0; s < resamples; s++) bd[s] = boot[s * M + c] - boot[s * M + bestCol];
      const { low, high } = percentileInterval(bd, level);
      raw.push({
        index: r.index,
        id: r.id,
        value: r.metrics[result.primaryMetric].mean,
        diff: mean(Array.from(d)),
        low,
        high,
        pValue: test.pValue,
        exact,
        diffSd: sampleSd(Array.from(d)),
      });
    }
    const adjusted = holm(raw.map((x) => x.pValue));
    raw.forEach((x, j) => {
      const pHolm = adjusted[j];
      comparisons.push({ ...x, pHolm, tier: pHolm >= alpha ? 1 : 2 });
    });
    comparisons.sort((a, b) => b.diff - a.diff || a.index - b.index);
    rows[best.index].tier = 1;
    for (const c of comparisons) rows[c.index].tier = c.tier;
  } else if (primaryK === null) {
    warnings.push(`the primary metric ${result.primaryMetric} has no k, so no row can be recommended`);
  } else if (rows.some((r) => r.candidate)) {
    warnings.push(`no row at k = ${primaryK} has per-question values for ${result.primaryMetric}, so no row can be recommended`);
  } else if (result.configs.some((c) => c.status === 'ok')) {
    warnings.push(`no ok row at k = ${primaryK} has ${result.primaryMetric}, so no row can be recommended`);
  }
  const tier1 = best === null ? [] : [best.id, ...comparisons.filter((c) => c.tier === 1).map((c) => c.id)];

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
  if (n < 30) {
    const detect =
      mdd === null
        ? ''
        : mdd.value >= 1
          ? `: with ${n} questions a paired comparison cannot reliably detect any difference in ${result.primaryMetric} ` +
            `(the detectable difference, ${mdd.value.toFixed(2)}, exceeds the metric's whole range; sd of paired differences ${mdd.diffSd.toFixed(3)})`
          : `: with ${n} questions a paired comparison detects (80% power, α = ${alpha}) only differences of about ` +
            `${mdd.value.toFixed(3)} in ${result.primaryMetric} (${(mdd.value * 100).toFixed(1)} points) or more (normal approximation, sd of paired differences ${mdd.diffSd.toFixed(3)})`;
    warnings.push(`only ${n} judged question(s), fewer than 30${detect}; treat small differences as noise`);
  }
  if (result.excluded.length > 0) {
    const reasons = new Map<string, number>();
    for (const e of result.excluded) reasons.set(e.reason, (reasons.get(e.reason) ?? 0) + 1);
    const list = [...reasons].map(([r, c]) => `${c} × ${r}`).join('; ');
    warnings.push(`${result.excluded.length} question(s) left out of every mean: ${list}`);
  }
  if (incomplete.length > 0)
    warnings.push(
      `${incomplete.length} ok row(s) lack per-question values for some metric or question, so those intervals are missing: ` +
        incomplete.slice(0, 5).join(', ') +
        (incomplete.length > 5 ? ', …' : ''),
    );
  const failed = result.configs
    .filter((c) => c.status === 'failed')
    .map((c) => ({ id: c.config.id, error: c.error ?? 'failed (no message)' }));
  if (failed.length > 0) warnings.push(`${failed.length} configuration(s) failed; see "Failed configurations"`);

  const threshold = relevanceThreshold(result);
  const segments = best === null ? null : segmentAnalysis(result, best, columns[colIndex.get(`${best.index}\u0000${result.primaryMetric}`)!].values, threshold, seed, resamples, level);
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
    mdd,
    segments,
    cutoffs,
    models,
    missedByAll,
    failed,
    warnings,
  };
}

/**
 * Segments of the best row by question tag and by top-level folder of the relevant documents. A question is in
 * folder F when it has a relevant document (grade ≥ threshold) under `F/`; ids without a folder go in `(root)`.
 * Questions without tags form `(untagged)` when at least one question has a tag.
 */
function segmentAnalysis(
  result: SweepResult,
  best: NonNullable<Analysis['best']>,
  values: Float64Array,
  threshold: number,
  seed: number,
  resamples: number,
  level: number,
): SegmentAnalysis {
  const overall = mean(Array.from(values));
  const byTag = new Map<string, number[]>();
  const byFolder = new Map<string, number[]>();
  const anyTag = result.questions.some((q) => q.tags.length > 0);
  const push = (m: Map<string, number[]>, key: string, qi: number): void => {
    const l = m.get(key);
    if (l) l.push(qi);
    else m.set(key, [qi]);
  };
  result.questions.forEach((q: Question, qi) => {
    for (const t of new Set(q.tags)) push(byTag, t, qi);
    if (anyTag && q.tags.length === 0) push(byTag, '(untagged)', qi);
    const folders = new Set<string>();
    for (const [doc, g] of Object.entries(q.relevant)) if (g >= threshold) folders.add(topFolder(doc));
    for (const f of folders) push(byFolder, f, qi);
  });
  const order = (special: string) => (a: string, b: string): number =>
    a === special ? 1 : b === special ? -1 : a < b ? -1 : a > b ? 1 : 0;
  const segments: SegmentValue[] = [];
  const add = (kind: 'tag' | 'folder', m: Map<string, number[]>, special: string): void => {
    for (const name of [...m.keys()].sort(order(special))) {
      const qs = m.get(name)!;
      const vals = qs.map((qi) => values[qi]);
      const ci = bootstrapCI(vals, { seed, resamples, level });
      segments.push({
        kind,
        name,
        questions: qs.length,
        value: ci.mean,
        low: ci.low,
        high: ci.high,
        diffPoints: (ci.mean - overall) * 100,
        diffPercent: overall === 0 ? null : ((ci.mean - overall) / overall) * 100,
      });
    }
  };
  add('tag', byTag, '(untagged)');
  add('folder', byFolder, '(root)');
  return { configId: best.id, metric: result.primaryMetric, overall, questions: result.questions.length, segments };
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
    const maxK = Math.max(...mine.map((r) => r.config.k));
    if (chunking === undefined) {
      const family = splitMeasure(result.primaryMetric).family;
      chunking = bestBy(mine.filter((r) => r.config.k === maxK), (r) => r.means[`${family}@${maxK}`])?.config.chunkingKey;
    }
    const sameChunking = mine.filter((r) => r.config.chunkingKey === chunking);
    const pool = sameChunking.length > 0 ? sameChunking : mine;
    const k = Math.max(...pool.map((r) => r.config.k));
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

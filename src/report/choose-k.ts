/**
 * Choosing k: for a configuration, recall and hit rate at every swept k with their intervals, and the smallest k
 * statistically tied with the largest swept k on recall. Top-k is swept but never recommended by the tiers (they
 * compare rows at the primary k only); this answers "how deep must I retrieve?" for the rows the report recommends.
 * Pure.
 */

import type { ConfigResult, ConfigSpec, SweepResult } from '../types.js';
import { bootstrapResampleMeans, mean, percentileInterval } from '../score/stats.js';
import { sequentialSignFlipHolm, signPatterns, type SignPatterns } from '../score/sequential.js';

/** A mean with its interval (null ends when the row has no per-question values). */
export interface KInterval {
  mean: number;
  low: number | null;
  high: number | null;
}

/** One k of a {@link KCurve}. */
export interface KPoint {
  k: number;
  id: string;
  recall: KInterval | null;
  hitRate: KInterval | null;
  /**
   * recall@k − recall@kmax over the questions (≤ 0 for one ranking cut deeper), its paired bootstrap interval at the
   * report's level, and the two-sided paired sign-flip test, Holm over the smaller ks of this curve. Null at kmax and
   * when either row lacks per-question recall.
   */
  vsMax: {
    diff: number;
    low: number;
    high: number;
    pValue: number;
    pHolm: number;
    /** Not significantly different from kmax (Holm-adjusted p ≥ alpha), settled by sequential resampling. */
    tied: boolean;
    /** False when the Holm decision is undecided at maxResamples. */
    decided: boolean;
    resamples: number;
  } | null;
}

/** The k curve of one configuration (the same settings at every swept k). */
export interface KCurve {
  /** The configuration's id at the primary k (the recommended or a tier-1 row). */
  configId: string;
  /** The largest swept k with per-question recall. */
  maxK: number;
  /** Ascending k. */
  points: KPoint[];
  /**
   * The smallest k such that it and every larger swept k are tied with kmax on recall (decided); kmax itself when no
   * smaller k is; null when a test on the way is undecided.
   */
  smallestTiedK: number | null;
  /** One sentence for the report: {@link KCurve.figures}, then {@link KCurve.advice} when there is one. */
  sentence: string;
  /** The sentence's figures for this configuration alone (what differs from row to row). */
  figures: string;
  /**
   * What to do, when the figures call for it (every smaller k finds significantly less than kmax), else null. The
   * same text for every curve with the same kmax, so a report can say it once for all of them.
   */
  advice: string | null;
}

/** Settings of {@link kCurves}. */
export interface KCurveOptions {
  alpha: number;
  level: number;
  seed: number;
  resamples: number;
  permutationResamples: number;
  maxResamples: number;
}

/** Everything of a config but its id and k: rows with the same key differ only in k. */
function siblingKey(c: ConfigSpec): string {
  const { id: _id, k: _k, ...rest } = c;
  return JSON.stringify(rest); // every row's spec is built by the same code, so key order is the same
}

/** Per-question values of `metric` for a row in `questions` order, or undefined when any is missing. */
function perQuestion(row: ConfigResult, metric: string, qIndex: Map<string, number>, n: number): Float64Array | undefined {
  if (row.status !== 'ok' || row.perQuery.length === 0) return undefined;
  const out = new Float64Array(n).fill(NaN);
  for (const d of row.perQuery) {
    const i = qIndex.get(d.qid);
    const v = d.metrics[metric];
    if (i !== undefined && typeof v === 'number') out[i] = v;
  }
  return out.some((x) => Number.isNaN(x)) ? undefined : out;
}

/**
 * The k curves of the given rows (see {@link KCurve}). A row without siblings at two or more k gets no curve.
 *
 * Test: for each k < kmax, d_q = recall@k − recall@kmax per question; two-sided paired sign-flip test with Holm over
 * the curve's smaller ks, resampled until settled (score/sequential.ts, seed + 5); "tied" = adjusted p ≥ alpha. The
 * difference interval is the percentile bootstrap of the paired differences at `level` (`resamples`, the report's seed).
 *
 * @param result the sweep. @param indices rows (indices in `result.configs`) to draw curves for, in order.
 * @param interval the report's interval of a row's metric (row index, canonical name), or undefined.
 */
export function kCurves(
  result: SweepResult,
  indices: readonly number[],
  interval: (row: number, metric: string) => KInterval | undefined,
  opts: KCurveOptions,
): KCurve[] {
  const n = result.questions.length;
  const qIndex = new Map(result.questions.map((q, i) => [q.id, i]));
  type Draft = { base: ConfigResult; maxK: number; smaller: { r: ConfigResult; i: number }[]; diffs: Float64Array[]; points: KPoint[]; vs: Map<number, NonNullable<KPoint['vsMax']>> };
  const drafts: Draft[] = [];
  // One sign-pattern stream shared by every curve (the same n and seed).
  let patterns: SignPatterns | undefined;
  for (const index of indices) {
    const base = result.configs[index];
    const key = siblingKey(base.config);
    const sibs = result.configs
      .map((r, i) => ({ r, i }))
      .filter(({ r }) => r.status === 'ok' && siblingKey(r.config) === key)
      .sort((a, b) => a.r.config.k - b.r.config.k);
    const withRecall = sibs
      .map((s) => ({ ...s, v: perQuestion(s.r, `recall@${s.r.config.k}`, qIndex, n) }))
      .filter((s): s is typeof s & { v: Float64Array } => s.v !== undefined);
    if (sibs.length < 2 || withRecall.length < 2 || n === 0) continue;
    const top = withRecall[withRecall.length - 1];
    const maxK = top.r.config.k;
    const smaller = withRecall.slice(0, -1);
    const diffs = smaller.map((s) => Float64Array.from(s.v, (x, q) => x - top.v[q]));
    patterns ??= signPatterns(n, opts.seed + 5);
    const tests = sequentialSignFlipHolm(diffs, n, {
      alpha: opts.alpha,
      seed: opts.seed + 5,
      initial: opts.permutationResamples,
      max: opts.maxResamples,
      patterns,
    });
    const vs = new Map<number, NonNullable<KPoint['vsMax']>>();
    smaller.forEach((s, j) => {
      const t = tests[j];
      vs.set(s.i, {
        diff: mean(Array.from(diffs[j])),
        low: NaN,
        high: NaN,
        pValue: t.pValue,
        pHolm: t.pHolm,
        tied: !t.rejected,
        decided: t.decided,
        resamples: t.resamples,
      });
    });
    const points: KPoint[] = sibs.map(({ r, i }) => ({
      k: r.config.k,
      id: r.config.id,
      recall: interval(i, `recall@${r.config.k}`) ?? null,
      hitRate: interval(i, `hit_rate@${r.config.k}`) ?? null,
      vsMax: vs.get(i) ?? null,
    }));
    drafts.push({ base, maxK, smaller, diffs, points, vs });
  }
  // One bootstrap pass over every difference vector of every curve (the report's seed: the same question draws as
  // its row intervals), then each vector's percentile interval.
  const all = drafts.flatMap((d) => d.diffs);
  if (all.length > 0) {
    const matrix = new Float64Array(n * all.length);
    all.forEach((d, c) => {
      for (let q = 0; q < n; q++) matrix[q * all.length + c] = d[q];
    });
    const boot = bootstrapResampleMeans(matrix, n, all.length, opts.resamples, opts.seed);
    let c = 0;
    for (const d of drafts)
      for (const s of d.smaller) {
        const col = new Float64Array(opts.resamples);
        for (let r = 0; r < opts.resamples; r++) col[r] = boot[r * all.length + c];
        const iv = percentileInterval(col, opts.level);
        const v = d.vs.get(s.i)!;
        v.low = iv.low;
        v.high = iv.high;
        c++;
      }
  }
  return drafts.map(({ base, maxK, smaller, points, vs }) => {
    // Walk down from kmax while the smaller k is a settled tie.
    let smallestTiedK: number | null = maxK;
    for (let j = smaller.length - 1; j >= 0; j--) {
      const v = vs.get(smaller[j].i)!;
      if (!v.decided) {
        smallestTiedK = null;
        break;
      }
      if (!v.tied) break;
      smallestTiedK = smaller[j].r.config.k;
    }
    const recallAt = (k: number): string => {
      const p = points.find((x) => x.k === k)?.recall;
      return p ? p.mean.toFixed(3) : '—';
    };
    let sentence: string;
    let figures: string;
    let advice: string | null = null;
    if (smallestTiedK === null) {
      const open = smaller.filter((s) => !vs.get(s.i)!.decided).map((s) => s.r.config.k);
      sentence = figures = `${base.config.id}: whether k = ${open.join(', ')} finds what k = ${maxK} finds is undecided at ${opts.maxResamples} resamples.`;
    } else if (smallestTiedK === maxK) {
      const below = smaller[smaller.length - 1];
      const v = vs.get(below.i)!;
      const head =
        `${base.config.id}: k = ${below.r.config.k} finds significantly less than k = ${maxK} (recall ${recallAt(below.r.config.k)} vs ${recallAt(maxK)}, ` +
        `difference ${v.diff.toFixed(3)}, Holm-adjusted p ${fmtP(v.pHolm)})`;
      advice = kmaxAdvice(maxK);
      figures = `${head}.`;
      sentence = `${head}: ${advice}`;
    } else {
      const v = vs.get(smaller.find((s) => s.r.config.k === smallestTiedK)!.i)!;
      sentence = figures =
        `${base.config.id}: k = ${smallestTiedK} finds what k = ${maxK} finds, within ${Math.abs(v.low).toFixed(3)} recall ` +
        `(recall ${recallAt(smallestTiedK)} vs ${recallAt(maxK)}, difference ${v.diff.toFixed(3)}, ${Math.round(opts.level * 100)}% CI [${v.low.toFixed(3)}, ${v.high.toFixed(3)}], ` +
        `Holm-adjusted p ${fmtP(v.pHolm)}; not significantly different at α = ${opts.alpha}).`;
    }
    return { configId: base.config.id, maxK, points, smallestTiedK, sentence, figures, advice };
  });
}

/** What to do when every smaller k finds significantly less than `maxK` (the same words for every such curve). */
export function kmaxAdvice(maxK: number): string {
  return (
    `every smaller k misses relevant documents that k = ${maxK} finds, so passing fewer than ${maxK} results on costs recall ` +
    "whatever the primary metric's k; sweep a larger k to see where recall levels off."
  );
}

function fmtP(p: number): string {
  return p < 0.001 ? '<0.001' : p.toFixed(3);
}

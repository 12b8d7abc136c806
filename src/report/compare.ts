/**
 * Paired comparison of two finished sweeps (`retrieval-sweep compare A B`): on the questions both scored, per shared
 * configuration id and overall, B − A with a paired bootstrap interval and a paired sign-flip p-value, Holm-corrected
 * over the configurations. Pure and seeded.
 */

import type { SweepResult } from '../types.js';
import {
  bootstrapCI,
  bootstrapResampleMeans,
  exactSignFlip,
  holm,
  monteCarloSignFlip,
  pairedPermutationTest,
  percentileInterval,
  signFlipPlan,
} from '../score/stats.js';
import type { AnalyzeOptions } from './analyze.js';
import { fmt3, fmtP, fmtSigned, fmtSignedCI, textTable } from './format.js';
import { manifestValue, splitMeasure } from './metrics.js';

/** One compared quantity: means of A and B on the shared questions and the paired difference B − A. */
export interface PairedDiff {
  a: number;
  b: number;
  /** mean(B − A). */
  diff: number;
  low: number;
  high: number;
  pValue: number;
}

/** The JSON side of {@link compareSweeps}. */
export interface SweepComparison {
  a: { name: string; createdAt: string; primaryMetric: string; fingerprint: string | null };
  b: { name: string; createdAt: string; primaryMetric: string; fingerprint: string | null };
  /** The metric family compared, from A's primary metric, taken at each row's own k. */
  family: string;
  seed: number;
  resamples: number;
  permutationResamples: number;
  alpha: number;
  /** Shared questions (in A's order) and the ids only one side scored. */
  questions: number;
  onlyInA: string[];
  onlyInB: string[];
  configsOnlyInA: string[];
  configsOnlyInB: string[];
  /** Per question, the mean over shared configurations of the family at each row's k; then B − A. Null without rows. */
  overall: PairedDiff | null;
  /** One entry per shared configuration that is ok in both and has per-question values, in A's grid order. */
  rows: (PairedDiff & { configId: string; metric: string; pHolm: number; significant: boolean })[];
  notes: string[];
}

function fingerprint(r: SweepResult): string | null {
  const f = manifestValue(r, ['dataset', 'fingerprint']);
  return typeof f === 'string' ? f : null;
}

/** Per-question values of `metric` for the shared question ids, or null when any is missing. */
function values(r: SweepResult, configId: string, metric: string, qids: string[]): Float64Array | null {
  const row = r.configs.find((c) => c.config.id === configId);
  if (!row || row.status !== 'ok') return null;
  const byQ = new Map(row.perQuery.map((d) => [d.qid, d]));
  const out = new Float64Array(qids.length);
  for (let i = 0; i < qids.length; i++) {
    const v = byQ.get(qids[i])?.metrics[metric];
    if (typeof v !== 'number' || !Number.isFinite(v)) return null;
    out[i] = v;
  }
  return out;
}

const avg = (v: Float64Array): number => {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i];
  return v.length ? s / v.length : NaN;
};

/**
 * Compares two sweeps on their shared questions and configuration ids.
 *
 * - Metric: A's primary family (`ndcg` from `ndcg@10`) at each row's own k.
 * - Per configuration: mean(B − A) over the shared questions; percentile bootstrap interval of the paired
 *   differences (Efron & Tibshirani 1993; `resamples`, `seed`, the same resampled questions for every row); two-sided
 *   sign-flip test (Smucker, Allan & Carterette 2007; exact when n ≤ 16, else `permutationResamples` patterns from
 *   `seed + 1`); Holm over the configurations (Holm 1979); `significant` when the adjusted p < alpha.
 * - Overall: per question, the mean over the compared configurations; then the same paired interval and test.
 *
 * @returns `text` (a plain-text summary for the terminal) and `json` ({@link SweepComparison}).
 */
export function compareSweeps(a: SweepResult, b: SweepResult, opts: AnalyzeOptions = {}): { text: string; json: SweepComparison } {
  const seed = opts.seed ?? 42;
  const resamples = opts.resamples ?? 2000;
  const permutationResamples = opts.permutationResamples ?? 10000;
  const alpha = opts.alpha ?? 0.05;
  const level = opts.level ?? 0.95;
  bootstrapCI([0], { resamples, seed, level });
  pairedPermutationTest([], [], { resamples: permutationResamples });

  const family = splitMeasure(a.primaryMetric).family;
  const notes: string[] = [];
  if (a.primaryMetric !== b.primaryMetric)
    notes.push(`the sweeps declared different primary metrics (A ${a.primaryMetric}, B ${b.primaryMetric}); comparing ${family} at each row's k`);
  const fa = fingerprint(a);
  const fb = fingerprint(b);
  if (fa && fb && fa !== fb)
    notes.push('the dataset fingerprints differ: documents or questions changed between the runs, so differences mix retrieval and data changes');

  const inB = new Set(b.questions.map((q) => q.id));
  const inA = new Set(a.questions.map((q) => q.id));
  const qids = a.questions.map((q) => q.id).filter((id) => inB.has(id));
  const onlyInA = a.questions.map((q) => q.id).filter((id) => !inB.has(id));
  const onlyInB = b.questions.map((q) => q.id).filter((id) => !inA.has(id));
  if (onlyInA.length || onlyInB.length)
    notes.push(`${onlyInA.length} question(s) only in A and ${onlyInB.length} only in B are left out`);

  const idsB = new Set(b.configs.map((c) => c.config.id));
  const idsA = new Set(a.configs.map((c) => c.config.id));
  const configsOnlyInA = a.configs.filter((c) => !idsB.has(c.config.id)).map((c) => c.config.id);
  const configsOnlyInB = b.configs.filter((c) => !idsA.has(c.config.id)).map((c) => c.config.id);

  const n = qids.length;
  const pairs: { configId: string; metric: string; va: Float64Array; vb: Float64Array }[] = [];
  const skipped: string[] = [];
  for (const row of a.configs) {
    if (!idsB.has(row.config.id)) continue;
    const metric = `${family}@${row.config.k}`;
    const va = values(a, row.config.id, metric, qids);
    const vb = values(b, row.config.id, metric, qids);
    if (!va || !vb || n === 0) skipped.push(row.config.id);
    else pairs.push({ configId: row.config.id, metric, va, vb });
  }
  if (skipped.length) notes.push(`${skipped.length} shared configuration(s) failed or lack per-question values in A or B: ${skipped.slice(0, 5).join(', ')}${skipped.length > 5 ? ', …' : ''}`);

  // Differences matrix, question-major, with the overall column last.
  const M = pairs.length + (pairs.length > 0 ? 1 : 0);
  const matrix = new Float64Array(n * M);
  const overallA = new Float64Array(n);
  const overallB = new Float64Array(n);
  pairs.forEach((p, c) => {
    for (let q = 0; q < n; q++) {
      matrix[q * M + c] = p.vb[q] - p.va[q];
      overallA[q] += p.va[q] / pairs.length;
      overallB[q] += p.vb[q] / pairs.length;
    }
  });
  if (pairs.length > 0) for (let q = 0; q < n; q++) matrix[q * M + M - 1] = overallB[q] - overallA[q];
  const boot = M > 0 && n > 0 ? bootstrapResampleMeans(matrix, n, M, resamples, seed) : new Float64Array(0);
  const exact = n <= 16;
  const signs = exact || M === 0 ? new Int8Array(0) : signFlipPlan(n, permutationResamples, seed + 1);
  const paired = (c: number, va: Float64Array, vb: Float64Array): PairedDiff => {
    const d = new Float64Array(n);
    for (let q = 0; q < n; q++) d[q] = matrix[q * M + c];
    const col = new Float64Array(resamples);
    for (let r = 0; r < resamples; r++) col[r] = boot[r * M + c];
    const { low, high } = percentileInterval(col, level);
    const t = exact ? exactSignFlip(d) : monteCarloSignFlip(d, signs, permutationResamples);
    return { a: avg(va), b: avg(vb), diff: t.meanDiff, low, high, pValue: t.pValue };
  };
  const raw = pairs.map((p, c) => ({ configId: p.configId, metric: p.metric, ...paired(c, p.va, p.vb) }));
  const adj = holm(raw.map((r) => r.pValue));
  const rows = raw.map((r, i) => ({ ...r, pHolm: adj[i], significant: adj[i] < alpha }));
  const overall = pairs.length > 0 ? paired(M - 1, overallA, overallB) : null;

  const json: SweepComparison = {
    a: { name: a.name, createdAt: a.createdAt, primaryMetric: a.primaryMetric, fingerprint: fa },
    b: { name: b.name, createdAt: b.createdAt, primaryMetric: b.primaryMetric, fingerprint: fb },
    family,
    seed,
    resamples,
    permutationResamples,
    alpha,
    questions: n,
    onlyInA,
    onlyInB,
    configsOnlyInA,
    configsOnlyInB,
    overall,
    rows,
    notes,
  };

  const lines: string[] = [];
  lines.push(`A: ${a.name} (${a.createdAt})   B: ${b.name} (${b.createdAt})`);
  lines.push(
    `${n} shared questions, ${rows.length} shared configurations compared on ${family} at each row's k (B − A, paired; ` +
      `95% bootstrap interval; sign-flip p, Holm over configurations, α = ${alpha}).`,
  );
  for (const note of notes) lines.push(`note: ${note}`);
  if (overall)
    lines.push(
      `Overall (mean over the ${rows.length} configurations per question): A ${fmt3(overall.a)}, B ${fmt3(overall.b)}, ` +
        `diff ${fmtSigned(overall.diff)} ${fmtSignedCI(overall.low, overall.high)}, p ${fmtP(overall.pValue)}`,
    );
  if (rows.length > 0) {
    lines.push('');
    const table = [['configuration', 'metric', 'A', 'B', 'B − A', '95% CI', 'p', 'p (Holm)', '']];
    for (const r of rows)
      table.push([r.configId, r.metric, fmt3(r.a), fmt3(r.b), fmtSigned(r.diff), fmtSignedCI(r.low, r.high), fmtP(r.pValue), fmtP(r.pHolm), r.significant ? '*' : '']);
    lines.push(...textTable(table, { leftColumns: 2 }));
    const sig = rows.filter((r) => r.significant);
    lines.push('');
    lines.push(
      sig.length === 0
        ? 'No configuration changed significantly.'
        : `${sig.length} configuration(s) changed significantly (*): ${sig.filter((r) => r.diff > 0).length} better in B, ${sig.filter((r) => r.diff < 0).length} worse in B.`,
    );
  } else lines.push('No shared configuration to compare.');
  if (configsOnlyInA.length || configsOnlyInB.length)
    lines.push(`${configsOnlyInA.length} configuration(s) only in A, ${configsOnlyInB.length} only in B (not compared).`);
  return { text: `${lines.join('\n')}\n`, json };
}

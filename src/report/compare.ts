/**
 * Paired comparison of finished sweeps (`retrieval-sweep compare BASE RUN [RUN…]`): the first sweep is the baseline
 * (as in ranx's `compare`), every other one is compared with it on the questions both scored, per selected
 * configuration id, on one metric: RUN − BASE with a paired bootstrap interval and a paired sign-flip p-value,
 * Holm-corrected over exactly the tests made (runs × rows that differ on at least one question × the one metric).
 * Rows whose differences are exactly 0 on every question are listed as identical and not tested. Pure and seeded.
 */

import { HarnessError } from '../errors.js';
import { parseMeasure, formatMeasure } from '../score/measures.js';
import type { ConfigResult, SweepResult } from '../types.js';
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
import { escapeMd, fmt3, fmtP, fmtSigned, fmtSignedCI, textTable } from './format.js';
import { manifestValue, rerankKey, splitMeasure } from './metrics.js';
import { appendAll } from '../bounded.js';

/** One compared quantity: means of A (the baseline) and B on the shared questions and the paired difference B − A. */
export interface PairedDiff {
  a: number;
  b: number;
  /** mean(B − A). */
  diff: number;
  /**
   * Paired bootstrap percentile interval of `diff`: at {@link SweepComparison.intervalLevel} for a tested row
   * (simultaneous over the Holm family), at the plain `level` for the overall line (one test).
   */
  low: number;
  high: number;
  pValue: number;
}

/** Which rows `compare` looks at: every shared row, the baseline's recommended row, or a list of ids. */
export type RowSelection = 'shared' | 'recommended' | string[];

/** Options of {@link compareSweeps} and {@link compareRuns}, beyond the statistics of {@link AnalyzeOptions}. */
export interface CompareOptions extends AnalyzeOptions {
  /**
   * The metric compared. A measure with a cutoff (`ndcg@10`, `recall@5`; ir_measures spellings are read) compares the
   * rows at that k only; a bare family (`ndcg`, `recall`) compares every selected row at its own k. Default: the
   * baseline's primary metric (so only the rows at the primary k).
   */
  metric?: string;
  /** Default `shared` (every configuration id both sweeps have, at the metric's k). */
  rows?: RowSelection;
  /**
   * A row is a regression when it is significantly worse after Holm (adjusted p < alpha) and its mean difference is
   * below −margin. Metric units (0.01 = one point of nDCG); ≥ 0; default 0.
   */
  margin?: number;
}

/** One tested row of one comparison. */
export interface ComparedRow extends PairedDiff {
  configId: string;
  metric: string;
  fusion: string | null;
  rerank: string | null;
  /** Holm-adjusted p over every test of the command (all runs × all tested rows). */
  pHolm: number;
  significant: boolean;
  /** Significantly worse and `diff < −margin` ({@link CompareOptions.margin}). */
  regression: boolean;
}

/** The JSON of one baseline-vs-run comparison (the whole JSON of `compare A B --json`). */
export interface SweepComparison {
  /** The baseline. */
  a: { name: string; createdAt: string; primaryMetric: string; fingerprint: string | null };
  /** The run compared with the baseline. */
  b: { name: string; createdAt: string; primaryMetric: string; fingerprint: string | null };
  /** The metric family compared (`ndcg`). */
  family: string;
  /** The metric compared as asked: `ndcg@5` (rows at k = 5), or a bare family (`ndcg`: each row at its own k). */
  metric: string;
  /** The row selection: `shared`, `recommended` (then `recommended` holds the id) or the list of ids given. */
  rowSelection: 'shared' | 'recommended' | 'ids';
  /** The baseline's recommended row when `rowSelection` is `recommended`; else null. */
  recommended: string | null;
  seed: number;
  resamples: number;
  permutationResamples: number;
  alpha: number;
  /** Level of the overall line's interval (one test); the tested rows' is {@link intervalLevel}. Default 0.95. */
  level: number;
  /** Regression margin ({@link CompareOptions.margin}). */
  margin: number;
  /** Shared questions (in A's order) and the ids only one side scored. */
  questions: number;
  onlyInA: string[];
  onlyInB: string[];
  configsOnlyInA: string[];
  configsOnlyInB: string[];
  /**
   * Per question, the mean over the compared rows (tested and identical) of the metric; then B − A. One test, not
   * part of the Holm family. Null without rows.
   */
  overall: PairedDiff | null;
  /** Settings that differ between the two sweeps' manifests and grids ({@link settingsDiff}), in a fixed order. */
  settings: SettingDiff[];
  /** Tested rows (not identical), in A's grid order. */
  rows: ComparedRow[];
  /** Rows whose value is the same on every shared question in both sweeps: not tested. `value` is their mean. */
  identical: { configId: string; metric: string; value: number }[];
  /** Size of the Holm family: the tests of the whole command (every run's tested rows). */
  tests: number;
  /**
   * Level of the tested rows' intervals: 1 − alpha/m for the m = {@link tests} tests (Bonferroni), as `analyze` does for
   * the comparisons with the best row, so an interval without 0 agrees with the adjusted p far more often than a plain
   * 95% one (which would exclude 0 for about alpha·m unchanged rows); `level` when m = 0.
   */
  intervalLevel: number;
  /** Ids of this comparison's rows that are regressions. */
  regressions: string[];
  /** Selected configurations not compared, each with the true reason (`failed in A`, `no per-question ndcg@5 in B`, ...). */
  notCompared: { configId: string; reason: string }[];
  notes: string[];
  /** The closing sentence, built from the numbers above. */
  summary: string;
}

/** One setting whose value differs between sweep A and sweep B; values as display text (`—` when absent). */
export interface SettingDiff {
  setting: string;
  a: string;
  b: string;
}

/** A display string of a manifest value: numbers and strings as they are, lists joined by `, `, objects as JSON. */
function show(v: unknown): string {
  if (v === undefined || v === null) return '—';
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return v.length === 0 ? '(none)' : v.map(show).join(', ');
  return JSON.stringify(v);
}

/** The first defined value among manifest paths. */
function firstOf(r: SweepResult, paths: string[][]): unknown {
  for (const p of paths) {
    const v = manifestValue(r, p);
    if (v !== undefined && v !== null) return v;
  }
  return undefined;
}

const byCodePoint = (x: string, y: string): number => (x < y ? -1 : x > y ? 1 : 0);

/**
 * `label = model` of every embedding entry in the manifest (or the embedding labels of the rows when absent), sorted:
 * a set, since the manifest lists the models in the order they finished.
 */
function models(r: SweepResult): string[] {
  const emb = manifestValue(r, ['embeddings']);
  if (Array.isArray(emb) && emb.length > 0)
    return emb
      .map((e) => {
        const o = (e ?? {}) as Record<string, unknown>;
        return o.model !== undefined && o.model !== o.label ? `${show(o.label)} = ${show(o.model)}` : show(o.label ?? o.model);
      })
      .sort(byCodePoint);
  return [...new Set(r.configs.map((c) => c.config.embedding).filter((x): x is string => x !== null))].sort(byCodePoint);
}

const distinct = (r: SweepResult, f: (c: ConfigResult) => string | null | undefined): string[] =>
  [...new Set(r.configs.map(f).filter((x): x is string => typeof x === 'string'))].sort(byCodePoint);

/** `name sha256-prefix` of each retriever module in the manifest (older manifests: none), sorted. */
function retrieverModules(r: SweepResult): string[] {
  const list = manifestValue(r, ['retrievers']);
  if (!Array.isArray(list)) return [];
  return list
    .map((e) => (e && typeof e === 'object' ? (e as { name?: unknown; moduleSha256?: unknown }) : {}))
    .map((e) => `${String(e.name)}${typeof e.moduleSha256 === 'string' ? ` ${e.moduleSha256.slice(0, 12)}` : ''}`)
    .sort(byCodePoint);
}

/** `name sha256-prefix` of each run file in the manifest (older manifests: none), sorted. */
function runFiles(r: SweepResult): string[] {
  const list = manifestValue(r, ['runs']);
  if (!Array.isArray(list)) return [];
  return list
    .map((e) => (e && typeof e === 'object' ? (e as { name?: unknown; sha256?: unknown }) : {}))
    .map((e) => `${String(e.name)}${typeof e.sha256 === 'string' ? ` ${e.sha256.slice(0, 12)}` : ''}`)
    .sort(byCodePoint);
}

/**
 * The settings that differ between two sweeps, in this order: dataset fingerprint, level, primary metric, relevance
 * threshold, BM25 k1 and b (the effective values the manifest recorded, else the config's), RRF constant and hybrid
 * depth, embedding models (`label = model`), chunking tokenizer, chunkings, fusion settings, rerank stages, retriever
 * modules and run files. Lists are compared as sets (sorted before comparing), never by order; values as display text;
 * a setting absent from both is not listed.
 */
export function settingsDiff(a: SweepResult, b: SweepResult): SettingDiff[] {
  const specs: [string, (r: SweepResult) => unknown][] = [
    ['dataset fingerprint', (r) => manifestValue(r, ['dataset', 'fingerprint'])],
    ['level', (r) => r.level],
    ['primary metric', (r) => r.primaryMetric],
    ['relevance threshold', (r) => firstOf(r, [['relevanceThreshold'], ['config', 'relevanceThreshold']])],
    ['BM25 k1', (r) => firstOf(r, [['bm25', 'k1'], ['config', 'bm25', 'k1']])],
    ['BM25 b', (r) => firstOf(r, [['bm25', 'b'], ['config', 'bm25', 'b']])],
    ['RRF constant', (r) => firstOf(r, [['hybrid', 'rrfK'], ['config', 'hybrid', 'rrfK']])],
    ['hybrid depth', (r) => firstOf(r, [['hybrid', 'depth'], ['config', 'hybrid', 'depth']])],
    ['embedding models', models],
    ['tokenizer', (r) => manifestValue(r, ['chunking', 'tokenizer'])],
    ['chunkings', (r) => distinct(r, (c) => c.config.chunkingKey)],
    ['fusion settings', (r) => distinct(r, (c) => c.config.fusion?.key)],
    ['rerank stages', (r) => distinct(r, (c) => rerankKey(c.config.rerank))],
    // A retriever module edited between the runs keeps its name (and ids) but not its file hash.
    ['retriever modules', (r) => retrieverModules(r).join(', ')],
    ['run files', (r) => runFiles(r).join(', ')],
  ];
  const out: SettingDiff[] = [];
  for (const [setting, get] of specs) {
    const va = show(get(a));
    const vb = show(get(b));
    if (va !== vb) out.push({ setting, a: va, b: vb });
  }
  return out;
}

function fingerprint(r: SweepResult): string | null {
  const f = manifestValue(r, ['dataset', 'fingerprint']);
  return typeof f === 'string' ? f : null;
}

/** Per-question values of `metric` for the shared question ids, or null when any is missing. */
function values(row: ConfigResult | undefined, metric: string, qids: string[]): Float64Array | null {
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
 * The baseline's recommended row: among ok rows at the primary metric's k with a mean for it, the highest mean (ties:
 * the earlier grid row), as `run` recommends it (report/analyze.ts `best`). Null when there is none.
 */
export function recommendedRow(r: SweepResult): string | null {
  let best: { id: string; mean: number } | null = null;
  const { k } = splitMeasure(r.primaryMetric);
  for (const row of r.configs) {
    const m = row.means?.[r.primaryMetric];
    if (row.status !== 'ok' || row.config.k !== k || typeof m !== 'number' || !Number.isFinite(m)) continue;
    if (best === null || m > best.mean) best = { id: row.config.id, mean: m };
  }
  return best?.id ?? null;
}

/** The metric as asked: a canonical measure with its k, or a bare family (each row's own k). */
function resolveMetric(asked: string | undefined, base: SweepResult): { name: string; family: string; k: number | null } {
  const name = asked ?? base.primaryMetric;
  if (/^[a-z_]+$/.test(name) && base.configs.some((c) => c.means && Object.keys(c.means).some((m) => m.startsWith(`${name}@`))))
    return { name, family: name, k: null };
  let canonical = name;
  try {
    canonical = formatMeasure(parseMeasure(name));
  } catch {
    // Measures outside the standard set (the evidence level's, say) are taken as written when the rows have them.
  }
  const present = base.configs.some((c) => c.means && canonical in c.means);
  if (!present) {
    const known = [...new Set(base.configs.flatMap((c) => Object.keys(c.means ?? {})))].sort(byCodePoint);
    throw new HarnessError('USAGE', `--metric ${name}: no row of the baseline ${base.name} has ${canonical}`, {
      remedy: `pass one of ${known.slice(0, 12).join(', ')}${known.length > 12 ? ', …' : ''} (or a bare family such as ndcg for each row's own k)`,
    });
  }
  const s = splitMeasure(canonical);
  return { name: canonical, family: s.family, k: s.k };
}

/**
 * One baseline-vs-run pairing before Holm: tested rows with raw p-values and their bootstrap means (`boot`, one per
 * resample), whose interval is cut once the family size is known.
 */
interface Pending {
  json: Omit<SweepComparison, 'rows' | 'tests' | 'intervalLevel' | 'regressions' | 'summary'>;
  raw: (Omit<ComparedRow, 'pHolm' | 'significant' | 'regression' | 'low' | 'high'> & { boot: Float64Array })[];
}

function pairUp(a: SweepResult, b: SweepResult, opts: CompareOptions, metricInfo: ReturnType<typeof resolveMetric>): Pending {
  const seed = opts.seed ?? 42;
  const resamples = opts.resamples ?? 2000;
  const permutationResamples = opts.permutationResamples ?? 10000;
  const alpha = opts.alpha ?? 0.05;
  const level = opts.level ?? 0.95;
  const margin = opts.margin ?? 0;
  const selection = opts.rows ?? 'shared';
  const { family } = metricInfo;

  const notes: string[] = [];
  if (a.primaryMetric !== b.primaryMetric)
    notes.push(`the sweeps declared different primary metrics (A ${a.primaryMetric}, B ${b.primaryMetric}); comparing ${metricInfo.name}`);
  const fa = fingerprint(a);
  const fb = fingerprint(b);
  if (fa && fb && fa !== fb)
    notes.push('the dataset fingerprints differ: documents or questions changed between the runs, so differences mix retrieval and data changes');

  const inB = new Set(b.questions.map((q) => q.id));
  const inA = new Set(a.questions.map((q) => q.id));
  const qids = a.questions.map((q) => q.id).filter((id) => inB.has(id));
  const onlyInA = a.questions.map((q) => q.id).filter((id) => !inB.has(id));
  const onlyInB = b.questions.map((q) => q.id).filter((id) => !inA.has(id));
  if (qids.length === 0)
    throw new HarnessError(
      'USAGE',
      `sweeps ${a.name} and ${b.name} share no scored question (A has ${a.questions.length}, B has ${b.questions.length}; ` +
        `first ids: A ${a.questions.slice(0, 3).map((q) => q.id).join(', ') || '—'}; B ${b.questions.slice(0, 3).map((q) => q.id).join(', ') || '—'}), so nothing can be paired`,
      { remedy: 'compare two sweeps over the same questions (same dataset, or one whose question ids overlap)' },
    );
  if (onlyInA.length || onlyInB.length)
    notes.push(`${onlyInA.length} question(s) only in A and ${onlyInB.length} only in B are left out`);

  const idsB = new Set(b.configs.map((c) => c.config.id));
  const idsA = new Set(a.configs.map((c) => c.config.id));
  const configsOnlyInA = a.configs.filter((c) => !idsB.has(c.config.id)).map((c) => c.config.id);
  const configsOnlyInB = b.configs.filter((c) => !idsA.has(c.config.id)).map((c) => c.config.id);

  // The rows asked for, in A's grid order.
  let recommended: string | null = null;
  let chosen: ConfigResult[];
  if (selection === 'shared') {
    chosen = a.configs.filter((c) => idsB.has(c.config.id) && (metricInfo.k === null || c.config.k === metricInfo.k));
  } else {
    let ids: string[];
    if (selection === 'recommended') {
      recommended = recommendedRow(a);
      if (recommended === null)
        throw new HarnessError('USAGE', `--rows recommended: the baseline ${a.name} has no row to recommend (no ok row at ${a.primaryMetric})`, {
          remedy: 'compare the shared rows (leave --rows out) or name rows by id',
        });
      ids = [recommended];
    } else ids = selection;
    for (const id of ids) {
      const missing = [!idsA.has(id) ? `the baseline ${a.name}` : null, !idsB.has(id) ? b.name : null].filter(Boolean);
      if (missing.length > 0) {
        const shared = a.configs.filter((c) => idsB.has(c.config.id)).map((c) => c.config.id);
        throw new HarnessError('USAGE', `--rows: ${id} is not a configuration of ${missing.join(' or ')}`, {
          remedy: `name rows both sweeps have, e.g. ${shared.slice(0, 4).join(', ') || '(none are shared)'}`,
        });
      }
    }
    const want = new Set(ids);
    chosen = a.configs.filter((c) => want.has(c.config.id));
  }

  const n = qids.length;
  const pairs: { configId: string; metric: string; fusion: string | null; rerank: string | null; va: Float64Array; vb: Float64Array }[] = [];
  const identical: SweepComparison['identical'] = [];
  const notCompared: { configId: string; reason: string }[] = [];
  const rowB = new Map(b.configs.map((c) => [c.config.id, c]));
  for (const row of chosen) {
    const metric = metricInfo.k === null ? `${family}@${row.config.k}` : metricInfo.name;
    const other = rowB.get(row.config.id);
    if (metricInfo.k !== null && row.config.k !== metricInfo.k) {
      notCompared.push({ configId: row.config.id, reason: `the row is at k = ${row.config.k}, the metric ${metric} needs k = ${metricInfo.k}` });
      continue;
    }
    const va = values(row, metric, qids);
    const vb = values(other, metric, qids);
    if (!va || !vb) {
      // The true reason, side by side: a row that did not fail is never called failed.
      const why = (side: 'A' | 'B', r: ConfigResult | undefined, v: Float64Array | null): string | null =>
        r?.status === 'failed' ? `failed in ${side}` : v === null ? `no per-question ${metric} in ${side} for every shared question` : null;
      const reason = [why('A', row, va), why('B', other, vb)].filter((x): x is string => x !== null).join('; ');
      notCompared.push({ configId: row.config.id, reason });
      continue;
    }
    let same = true;
    for (let q = 0; q < n && same; q++) same = va[q] === vb[q];
    const entry = { configId: row.config.id, metric, fusion: row.config.fusion?.key ?? null, rerank: rerankKey(row.config.rerank), va, vb };
    if (same) identical.push({ configId: row.config.id, metric, value: avg(va) });
    else pairs.push(entry);
  }
  if (notCompared.length) {
    const byReason = new Map<string, string[]>();
    for (const x of notCompared) byReason.set(x.reason, [...(byReason.get(x.reason) ?? []), x.configId]);
    for (const [reason, ids] of byReason)
      notes.push(`${ids.length} selected configuration(s) not compared (${reason}): ${ids.slice(0, 5).join(', ')}${ids.length > 5 ? ', …' : ''}`);
  }
  const settings = settingsDiff(a, b);

  // Overall: per question, the mean over every compared row (tested and identical) of A and of B.
  const all = chosen.filter((c) => pairs.some((p) => p.configId === c.config.id) || identical.some((x) => x.configId === c.config.id));
  const overallA = new Float64Array(n);
  const overallB = new Float64Array(n);
  for (const c of all) {
    const metric = metricInfo.k === null ? `${family}@${c.config.k}` : metricInfo.name;
    const va = values(c, metric, qids)!;
    const vb = values(rowB.get(c.config.id), metric, qids)!;
    for (let q = 0; q < n; q++) {
      overallA[q] += va[q] / all.length;
      overallB[q] += vb[q] / all.length;
    }
  }

  // Differences matrix, question-major: one column per tested row, the overall column last.
  const M = pairs.length + (all.length > 0 ? 1 : 0);
  const matrix = new Float64Array(n * M);
  pairs.forEach((p, c) => {
    for (let q = 0; q < n; q++) matrix[q * M + c] = p.vb[q] - p.va[q];
  });
  if (all.length > 0) for (let q = 0; q < n; q++) matrix[q * M + M - 1] = overallB[q] - overallA[q];
  const boot = M > 0 && n > 0 ? bootstrapResampleMeans(matrix, n, M, resamples, seed) : new Float64Array(0);
  const exact = n <= 16;
  const signs = exact || M === 0 ? new Int8Array(0) : signFlipPlan(n, permutationResamples, seed + 1);
  const paired = (c: number, va: Float64Array, vb: Float64Array) => {
    const d = new Float64Array(n);
    for (let q = 0; q < n; q++) d[q] = matrix[q * M + c];
    const col = new Float64Array(resamples);
    for (let r = 0; r < resamples; r++) col[r] = boot[r * M + c];
    const t = exact ? exactSignFlip(d) : monteCarloSignFlip(d, signs, permutationResamples);
    return { a: avg(va), b: avg(vb), diff: t.meanDiff, pValue: t.pValue, boot: col };
  };
  const raw = pairs.map((p, c) => ({ configId: p.configId, metric: p.metric, fusion: p.fusion, rerank: p.rerank, ...paired(c, p.va, p.vb) }));
  let overall: PairedDiff | null = null;
  if (all.length > 0) {
    const { boot: col, ...o } = paired(M - 1, overallA, overallB);
    overall = { ...o, ...percentileInterval(col, level) };
  }

  return {
    raw,
    json: {
      a: { name: a.name, createdAt: a.createdAt, primaryMetric: a.primaryMetric, fingerprint: fa },
      b: { name: b.name, createdAt: b.createdAt, primaryMetric: b.primaryMetric, fingerprint: fb },
      family,
      metric: metricInfo.name,
      rowSelection: selection === 'shared' || selection === 'recommended' ? selection : 'ids',
      recommended,
      seed,
      resamples,
      permutationResamples,
      alpha,
      level,
      margin,
      questions: n,
      onlyInA,
      onlyInB,
      configsOnlyInA,
      configsOnlyInB,
      overall,
      settings,
      identical,
      notCompared,
      notes,
    },
  };
}

/**
 * The closing sentence of one comparison, from its own numbers: identical rows, significant rows after Holm (better
 * and worse), regressions beyond the margin, and, when no row is significant but the overall line's single test is,
 * says so rather than "nothing changed".
 */
function closingSentence(c: Omit<SweepComparison, 'summary'>): string {
  const sig = c.rows.filter((r) => r.significant);
  const better = sig.filter((r) => r.diff > 0).length;
  const worse = sig.filter((r) => r.diff < 0).length;
  const ident = c.identical.length;
  const compared = c.rows.length + ident;
  if (compared === 0) return 'No configuration was compared.';
  if (c.rows.length === 0) return `No differences: ${ident === 1 ? 'the compared configuration gives' : `all ${ident} compared configurations give`} identical ${c.metric} on every question.`;
  const identText = ident > 0 ? `; ${ident} identical on every question (not tested)` : '';
  const head =
    sig.length === 0
      ? `No configuration changed significantly: 0 of ${c.rows.length} tested (Holm over ${c.tests} test(s), α = ${c.alpha})${identText}.`
      : `${sig.length} of ${c.rows.length} tested configuration(s) changed significantly (Holm over ${c.tests} test(s), α = ${c.alpha}): ${better} better in B, ${worse} worse in B${identText}.`;
  const overallNote =
    sig.length === 0 && c.overall !== null && c.overall.pValue < c.alpha
      ? ` The overall line does differ (${fmtSigned(c.overall.diff)}, p ${fmtP(c.overall.pValue)}, one test not corrected for the rows): a change spread thinly over many rows, none large enough alone.`
      : '';
  const reg =
    c.regressions.length > 0
      ? ` Regression${c.regressions.length > 1 ? 's' : ''} (significantly worse by more than ${c.margin}): ${c.regressions.join(', ')}.`
      : '';
  return head + overallNote + reg;
}

/** The result of {@link compareRuns}: one comparison per run, the Holm family size and the regressions of all runs. */
export interface RunsComparison {
  /** The baseline's name. */
  baseline: string;
  comparisons: SweepComparison[];
  /** Size of the Holm family: every tested row of every run. */
  tests: number;
  /** Every regression, run by run: the run's name and index in `runs` (0-based), the row, its metric, difference, interval and adjusted p. */
  regressions: { run: string; runIndex: number; configId: string; metric: string; diff: number; low: number; high: number; pHolm: number }[];
}

/**
 * Compares every run with the baseline (the first sweep) on one metric and the selected rows.
 *
 * - Metric: {@link CompareOptions.metric}, default the baseline's primary metric: rows at its k.
 * - Rows: {@link CompareOptions.rows}, default the ids both sweeps have; `recommended` = {@link recommendedRow} of the
 *   baseline; a list of ids (each must be in both sweeps, else a `USAGE` error naming it).
 * - Per row: when the per-question values are equal on every shared question the row is listed as identical and not
 *   tested. Otherwise mean(B − A) over the shared questions; percentile bootstrap interval of the paired differences
 *   (Efron & Tibshirani 1993; `resamples`, `seed`, the same resampled questions for every row of a comparison);
 *   two-sided sign-flip test (Smucker, Allan & Carterette 2007; exact when n ≤ 16, else `permutationResamples`
 *   patterns from `seed + 1`).
 * - Holm (Holm 1979) over exactly the tests made: all runs × tested rows, on the one metric; `significant` when the
 *   adjusted p < alpha; `regression` when significant with diff < −margin.
 * - Overall: per question, the mean over the compared rows; one test, not in the Holm family.
 * - Settings: {@link settingsDiff}, lists compared as sets.
 *
 * @throws HarnessError `USAGE` when a run shares no scored question with the baseline, when `--metric` names a metric
 *   the baseline's rows lack, when a named row is not in both sweeps, or when `recommended` finds no row.
 */
export function compareRuns(base: SweepResult, runs: SweepResult[], opts: CompareOptions = {}): RunsComparison {
  const resamples = opts.resamples ?? 2000;
  const permutationResamples = opts.permutationResamples ?? 10000;
  bootstrapCI([0], { resamples, seed: opts.seed ?? 42, level: opts.level ?? 0.95 });
  pairedPermutationTest([], [], { resamples: permutationResamples });
  const margin = opts.margin ?? 0;
  if (!(Number.isFinite(margin) && margin >= 0))
    throw new HarnessError('USAGE', `--margin must be a number ≥ 0 in the metric's units (got ${margin})`, { remedy: 'pass e.g. --margin 0.01' });
  const metricInfo = resolveMetric(opts.metric, base);
  const pending = runs.map((r) => pairUp(base, r, opts, metricInfo));
  const flat = pending.flatMap((p) => p.raw.map((r) => r.pValue));
  const adj = holm(flat);
  const alpha = opts.alpha ?? 0.05;
  const intervalLevel = flat.length > 0 ? 1 - alpha / flat.length : (opts.level ?? 0.95);
  let at = 0;
  const comparisons = pending.map((p) => {
    const rows: ComparedRow[] = p.raw.map(({ boot, ...r }) => {
      const pHolm = adj[at++];
      const significant = pHolm < alpha;
      const { low, high } = percentileInterval(boot, intervalLevel);
      return { ...r, low, high, pHolm, significant, regression: significant && r.diff < -margin };
    });
    const partial = { ...p.json, rows, tests: flat.length, intervalLevel, regressions: rows.filter((r) => r.regression).map((r) => r.configId) };
    return { ...partial, summary: closingSentence(partial) };
  });
  const regressions = comparisons.flatMap((c, runIndex) =>
    c.rows.filter((r) => r.regression).map((r) => ({ run: c.b.name, runIndex, configId: r.configId, metric: r.metric, diff: r.diff, low: r.low, high: r.high, pHolm: r.pHolm })),
  );
  return { baseline: base.name, comparisons, tests: flat.length, regressions };
}

/**
 * Compares two sweeps (A the baseline, B the run): {@link compareRuns} with one run.
 * @returns `text` (the terminal summary of {@link formatComparisonText}) and `json` ({@link SweepComparison}).
 */
export function compareSweeps(a: SweepResult, b: SweepResult, opts: CompareOptions = {}): { text: string; json: SweepComparison } {
  const out = compareRuns(a, [b], opts);
  return { text: formatComparisonText(out), json: out.comparisons[0] };
}

/** A level as a percentage with at most two decimals: 0.95 → `95%`, 1 − 0.05/3 → `98.33%`. */
function pct(level: number): string {
  return `${Number((level * 100).toFixed(2))}%`;
}

/** Plain text of a {@link RunsComparison} for the terminal: per run the settings, notes, overall line, tested rows, identical rows and the closing sentence. */
export function formatComparisonText(out: RunsComparison): string {
  const lines: string[] = [];
  for (const [i, c] of out.comparisons.entries()) {
    if (i > 0) lines.push('', '─'.repeat(40), '');
    lines.push(`A (baseline): ${c.a.name} (${c.a.createdAt})   B: ${c.b.name} (${c.b.createdAt})`);
    const scope = c.metric.includes('@') ? c.metric : `${c.family} at each row's k`;
    const rowsText = c.rowSelection === 'recommended' ? `the baseline's recommended row ${c.recommended}` : c.rowSelection === 'ids' ? 'the rows named' : 'the shared rows';
    lines.push(
      `${c.questions} shared questions; ${scope} on ${rowsText}: ${c.rows.length} tested, ${c.identical.length} identical (B − A, paired; ` +
        `${pct(c.intervalLevel)} bootstrap interval, Bonferroni over the ${c.tests} test(s); sign-flip p, Holm over the same tests, α = ${c.alpha}).`,
    );
    if (c.settings.length > 0) {
      lines.push('Settings that differ:');
      lines.push(...textTable([['setting', 'A', 'B'], ...c.settings.map((d) => [d.setting, d.a, d.b])], { leftColumns: 3 }).map((l) => `  ${l}`));
    } else lines.push('Settings: the same in both (fingerprint, level, metric, threshold, BM25, RRF, models, tokenizer, grid).');
    for (const note of c.notes) lines.push(`note: ${note}`);
    if (c.overall && c.rows.length > 0)
      lines.push(
        `Overall (mean over the ${c.rows.length + c.identical.length} compared configurations per question; one test): A ${fmt3(c.overall.a)}, B ${fmt3(c.overall.b)}, ` +
          `diff ${fmtSigned(c.overall.diff)} ${pct(c.level)} CI ${fmtSignedCI(c.overall.low, c.overall.high)}, p ${fmtP(c.overall.pValue)}`,
      );
    if (c.rows.length > 0) {
      lines.push('');
      const table = [['configuration', 'fusion', 'rerank', 'metric', 'A', 'B', 'B − A', `${pct(c.intervalLevel)} CI`, 'p', 'p (Holm)', '']];
      for (const r of c.rows)
        table.push([
          r.configId,
          r.fusion ?? '',
          r.rerank ?? '',
          r.metric,
          fmt3(r.a),
          fmt3(r.b),
          fmtSigned(r.diff),
          fmtSignedCI(r.low, r.high),
          fmtP(r.pValue),
          fmtP(r.pHolm),
          r.regression ? '* regression' : r.significant ? '*' : '',
        ]);
      appendAll(lines, textTable(table, { leftColumns: 4 }));
    }
    if (c.identical.length > 0 && c.rows.length > 0)
      lines.push(`Identical on every question (not tested): ${c.identical.map((x) => x.configId).slice(0, 8).join(', ')}${c.identical.length > 8 ? `, … (${c.identical.length})` : ''}`);
    if (c.configsOnlyInA.length || c.configsOnlyInB.length)
      lines.push(`${c.configsOnlyInA.length} configuration(s) only in A, ${c.configsOnlyInB.length} only in B (not compared).`);
    lines.push('');
    lines.push(c.summary);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * Markdown of a {@link RunsComparison} for a pull-request comment: a heading with the verdict, per run the settings
 * that differ, the tested rows (regressions in bold), the identical rows in one line and the closing sentence. Every
 * name from the results is escaped ({@link escapeMd}).
 */
export function formatComparisonMarkdown(out: RunsComparison): string {
  const md: string[] = [];
  const verdict =
    out.regressions.length > 0
      ? `❌ ${out.regressions.length} regression(s)`
      : out.comparisons.every((c) => c.rows.length === 0)
        ? '✅ no differences'
        : '✅ no regression';
  md.push(`### retrieval-sweep compare: ${verdict}`, '');
  for (const c of out.comparisons) {
    md.push(`**Baseline** \`${escapeMd(c.a.name)}\` (${escapeMd(c.a.createdAt)}) · **run** \`${escapeMd(c.b.name)}\` (${escapeMd(c.b.createdAt)})`, '');
    const scope = c.metric.includes('@') ? `\`${c.metric}\`` : `\`${c.family}\` at each row's k`;
    md.push(
      `${c.questions} shared questions, ${scope}; ${c.rows.length} configuration(s) tested, ${c.identical.length} identical. ` +
        `Paired B − A, ${pct(c.intervalLevel)} bootstrap interval (Bonferroni over the ${c.tests} test(s)), sign-flip p with Holm over the same tests, α = ${c.alpha}` +
        (c.margin > 0 ? `; regression = significantly worse by more than ${c.margin}` : '') +
        '.',
      '',
    );
    if (c.settings.length > 0) {
      md.push('| setting | baseline | run |', '| --- | --- | --- |');
      for (const d of c.settings) md.push(`| ${escapeMd(d.setting)} | ${escapeMd(d.a)} | ${escapeMd(d.b)} |`);
      md.push('');
    }
    for (const note of c.notes) md.push(`> note: ${escapeMd(note)}`, '');
    if (c.rows.length > 0) {
      md.push(`| configuration | metric | baseline | run | run − baseline | ${pct(c.intervalLevel)} CI | p (Holm) | |`, '| --- | --- | ---: | ---: | ---: | --- | ---: | --- |');
      for (const r of c.rows) {
        const id = r.regression ? `**\`${r.configId}\`**` : `\`${r.configId}\``;
        md.push(
          `| ${id} | ${r.metric} | ${fmt3(r.a)} | ${fmt3(r.b)} | ${fmtSigned(r.diff)} | ${fmtSignedCI(r.low, r.high)} | ${fmtP(r.pHolm)} | ${r.regression ? 'regression' : r.significant ? (r.diff > 0 ? 'better' : 'worse') : ''} |`,
        );
      }
      md.push('');
      if (c.overall)
        md.push(`Overall (mean over the compared configurations; one test): ${fmtSigned(c.overall.diff)}, ${pct(c.level)} CI ${fmtSignedCI(c.overall.low, c.overall.high)}, p ${fmtP(c.overall.pValue)}.`, '');
    }
    if (c.identical.length > 0 && c.rows.length > 0)
      md.push(`<details><summary>${c.identical.length} configuration(s) identical on every question (not tested)</summary>\n\n${c.identical.map((x) => `\`${x.configId}\``).join(', ')}\n\n</details>`, '');
    md.push(`**${escapeMd(c.summary)}**`, '');
  }
  return `${md.join('\n')}`;
}

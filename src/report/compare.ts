/**
 * Paired comparison of two finished sweeps (`retrieval-sweep compare A B`): on the questions both scored, per shared
 * configuration id and overall, B − A with a paired bootstrap interval and a paired sign-flip p-value, Holm-corrected
 * over the configurations. Pure and seeded.
 */

import { HarnessError } from '../errors.js';
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
import { fmt3, fmtP, fmtSigned, fmtSignedCI, textTable } from './format.js';
import { manifestValue, rerankKey, splitMeasure } from './metrics.js';
import { appendAll } from '../bounded.js';

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
  /** Settings that differ between the two sweeps' manifests and grids ({@link settingsDiff}), in a fixed order. */
  settings: SettingDiff[];
  /** One entry per shared configuration that is ok in both and has per-question values, in A's grid order. */
  rows: (PairedDiff & { configId: string; metric: string; fusion: string | null; rerank: string | null; pHolm: number; significant: boolean })[];
  /** Shared configurations not compared, each with the true reason (`failed in A`, `no per-question ndcg@5 in B`, ...). */
  notCompared: { configId: string; reason: string }[];
  notes: string[];
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

/** `label = model` of every embedding entry in the manifest (or the embedding labels of the rows when absent). */
function models(r: SweepResult): string[] {
  const emb = manifestValue(r, ['embeddings']);
  if (Array.isArray(emb) && emb.length > 0)
    return emb.map((e) => {
      const o = (e ?? {}) as Record<string, unknown>;
      return o.model !== undefined && o.model !== o.label ? `${show(o.label)} = ${show(o.model)}` : show(o.label ?? o.model);
    });
  return [...new Set(r.configs.map((c) => c.config.embedding).filter((x): x is string => x !== null))];
}

const distinct = (r: SweepResult, f: (c: ConfigResult) => string | null | undefined): string[] =>
  [...new Set(r.configs.map(f).filter((x): x is string => typeof x === 'string'))].sort();

/**
 * The settings that differ between two sweeps, in this order: dataset fingerprint, level, primary metric, relevance
 * threshold, BM25 k1 and b (the effective values the manifest recorded, else the config's), RRF constant and hybrid
 * depth, embedding models (`label = model`), chunking tokenizer, chunkings, fusion settings and rerank stages of the
 * grid. Values are compared as display text; a setting absent from both is not listed.
 */
/** `name sha256-prefix` of each retriever module in the manifest (older manifests: none). */
function retrieverModules(r: SweepResult): string {
  const list = manifestValue(r, ['retrievers']);
  if (!Array.isArray(list)) return '';
  return list
    .map((e) => (e && typeof e === 'object' ? (e as { name?: unknown; moduleSha256?: unknown }) : {}))
    .map((e) => `${String(e.name)}${typeof e.moduleSha256 === 'string' ? ` ${e.moduleSha256.slice(0, 12)}` : ''}`)
    .join(', ');
}

/** `name sha256-prefix` of each run file in the manifest (older manifests: none). */
function runFiles(r: SweepResult): string {
  const list = manifestValue(r, ['runs']);
  if (!Array.isArray(list)) return '';
  return list
    .map((e) => (e && typeof e === 'object' ? (e as { name?: unknown; sha256?: unknown }) : {}))
    .map((e) => `${String(e.name)}${typeof e.sha256 === 'string' ? ` ${e.sha256.slice(0, 12)}` : ''}`)
    .join(', ');
}

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
    ['retriever modules', (r) => retrieverModules(r)],
    ['run files', (r) => runFiles(r)],
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
 * - Settings: every setting of {@link settingsDiff} that differs is listed first.
 *
 * @returns `text` (a plain-text summary for the terminal) and `json` ({@link SweepComparison}).
 * @throws HarnessError `USAGE` when the sweeps share no scored question (nothing can be paired; the CLI exits 1).
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

  const n = qids.length;
  const pairs: { configId: string; metric: string; fusion: string | null; rerank: string | null; va: Float64Array; vb: Float64Array }[] = [];
  const notCompared: { configId: string; reason: string }[] = [];
  const rowB = new Map(b.configs.map((c) => [c.config.id, c]));
  for (const row of a.configs) {
    if (!idsB.has(row.config.id)) continue;
    const metric = `${family}@${row.config.k}`;
    const va = values(a, row.config.id, metric, qids);
    const vb = values(b, row.config.id, metric, qids);
    if (!va || !vb) {
      // The true reason, side by side: a row that did not fail is never called failed.
      const why = (side: 'A' | 'B', r: ConfigResult | undefined, v: Float64Array | null): string | null =>
        r?.status === 'failed' ? `failed in ${side}` : v === null ? `no per-question ${metric} in ${side} for every shared question` : null;
      const reason = [why('A', row, va), why('B', rowB.get(row.config.id), vb)].filter((x): x is string => x !== null).join('; ');
      notCompared.push({ configId: row.config.id, reason });
    } else pairs.push({ configId: row.config.id, metric, fusion: row.config.fusion?.key ?? null, rerank: rerankKey(row.config.rerank), va, vb });
  }
  if (notCompared.length) {
    const byReason = new Map<string, string[]>();
    for (const x of notCompared) byReason.set(x.reason, [...(byReason.get(x.reason) ?? []), x.configId]);
    for (const [reason, ids] of byReason)
      notes.push(`${ids.length} shared configuration(s) not compared (${reason}): ${ids.slice(0, 5).join(', ')}${ids.length > 5 ? ', …' : ''}`);
  }
  const settings = settingsDiff(a, b);

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
  const raw = pairs.map((p, c) => ({ configId: p.configId, metric: p.metric, fusion: p.fusion, rerank: p.rerank, ...paired(c, p.va, p.vb) }));
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
    settings,
    rows,
    notCompared,
    notes,
  };

  const lines: string[] = [];
  lines.push(`A: ${a.name} (${a.createdAt})   B: ${b.name} (${b.createdAt})`);
  lines.push(
    `${n} shared questions, ${rows.length} shared configurations compared on ${family} at each row's k (B − A, paired; ` +
      `95% bootstrap interval; sign-flip p, Holm over configurations, α = ${alpha}).`,
  );
  if (settings.length > 0) {
    lines.push('Settings that differ:');
    lines.push(...textTable([['setting', 'A', 'B'], ...settings.map((d) => [d.setting, d.a, d.b])], { leftColumns: 3 }).map((l) => `  ${l}`));
  } else lines.push('Settings: the same in both (fingerprint, level, metric, threshold, BM25, RRF, models, tokenizer, grid).');
  for (const note of notes) lines.push(`note: ${note}`);
  if (overall)
    lines.push(
      `Overall (mean over the ${rows.length} configurations per question): A ${fmt3(overall.a)}, B ${fmt3(overall.b)}, ` +
        `diff ${fmtSigned(overall.diff)} ${fmtSignedCI(overall.low, overall.high)}, p ${fmtP(overall.pValue)}`,
    );
  if (rows.length > 0) {
    lines.push('');
    const table = [['configuration', 'fusion', 'rerank', 'metric', 'A', 'B', 'B − A', '95% CI', 'p', 'p (Holm)', '']];
    for (const r of rows)
      table.push([r.configId, r.fusion ?? '', r.rerank ?? '', r.metric, fmt3(r.a), fmt3(r.b), fmtSigned(r.diff), fmtSignedCI(r.low, r.high), fmtP(r.pValue), fmtP(r.pHolm), r.significant ? '*' : '']);
    appendAll(lines, textTable(table, { leftColumns: 4 }));
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

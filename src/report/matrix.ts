/**
 * The matrix files: `matrix.csv` and `matrix.json`, one row per configuration in grid order. Pure.
 *
 * Columns (CSV header, JSON keys): config_id, chunking (`none` or the chunk size in tokens), overlap (tokens), mode,
 * retriever (the id's retriever part: `keyword`, `hybrid-cvx-mm-a0.5`, an external name), embedding (empty for keyword;
 * `null` in JSON), fusion (the fusion key of a hybrid row, `rrf`, `cvx-mm-a0.5`; empty otherwise), rerank
 * (`<label>-d<depth>` of a reranked row; empty otherwise), k, the seven metric families at the row's own k (hit_rate, recall,
 * precision, mrr, ndcg, ndcg_exp, map), questions, build_seconds, mean_query_ms, status, error, then
 * `<family>_ci_low`, `<family>_ci_high` for each family, then tier (1, 2 or empty). Numbers are written at full
 * precision (`String(x)`, which round-trips through `Number`); a missing value is an empty CSV cell or JSON `null`.
 * Text cells a spreadsheet would evaluate are neutralised ({@link csvField}); numbers are written as numbers.
 */

import type { SweepResult } from '../types.js';
import type { Analysis, Interval } from './analyze.js';
import { ROW_FAMILIES, rerankKey } from './metrics.js';

/** The CSV header, in order. */
export const MATRIX_COLUMNS: readonly string[] = Object.freeze([
  'config_id',
  'chunking',
  'overlap',
  'mode',
  'retriever',
  'embedding',
  'fusion',
  'rerank',
  'k',
  ...ROW_FAMILIES,
  'questions',
  'build_seconds',
  'mean_query_ms',
  'status',
  'error',
  ...ROW_FAMILIES.flatMap((f) => [`${f}_ci_low`, `${f}_ci_high`]),
  'tier',
]);

type Cell = string | number | null;

/** Evidence-level families at the row's k (level: evidence only), after the standard columns. */
const EVIDENCE_FAMILIES = ['evidence_recall', 'evidence_precision', 'evidence_iou', 'tokens'] as const;

/** Token budgets found in the rows' means (`evidence_recall@512t` → 512), ascending. */
function budgetsOf(result: SweepResult): number[] {
  const set = new Set<number>();
  for (const r of result.configs) for (const name of Object.keys(r.means)) {
    const m = /^evidence_recall@(\d+)t$/.exec(name);
    if (m) set.add(Number(m[1]));
  }
  return [...set].sort((a, b) => a - b);
}

/** True when some row has `ann_recall@<k>` (an approximate-index row, src/run/sweep.ts). */
function hasAnnRecall(result: SweepResult): boolean {
  return result.configs.some((r) => Object.keys(r.means).some((n) => n.startsWith('ann_recall@')));
}

/**
 * The CSV header for this sweep: {@link MATRIX_COLUMNS}, plus at level `evidence` the evidence families at the row's
 * k (`evidence_recall`, `evidence_precision`, `evidence_iou`, `tokens`) and `evidence_recall_<B>t` per token budget,
 * plus `ann_recall` (the row's `ann_recall@k`, empty for exact rows) when some row uses an approximate index.
 */
export function matrixColumns(result: SweepResult): string[] {
  const ann = hasAnnRecall(result) ? ['ann_recall'] : [];
  if (result.level !== 'evidence') return [...MATRIX_COLUMNS, ...ann];
  return [...MATRIX_COLUMNS, ...EVIDENCE_FAMILIES, ...budgetsOf(result).map((b) => `evidence_recall_${b}t`), ...ann];
}

/** One matrix row as JSON values (numbers stay numbers), plus `metrics` and `ci` keyed by canonical name. */
export interface MatrixRow {
  [column: string]: Cell | Record<string, number> | Record<string, [number, number]>;
  metrics: Record<string, number>;
  ci: Record<string, [number, number]>;
}

/** Builds the rows shared by the CSV and JSON files. */
export function matrixRows(result: SweepResult, analysis: Analysis): MatrixRow[] {
  const budgets = budgetsOf(result);
  const ann = hasAnnRecall(result);
  return result.configs.map((row, i) => {
    const c = row.config;
    const ra = analysis.rows[i] && analysis.rows[i].id === c.id ? analysis.rows[i] : undefined;
    const interval = (name: string): Interval | undefined => ra?.metrics[name];
    const ci: Record<string, [number, number]> = {};
    if (ra) {
      for (const [name, iv] of Object.entries(ra.metrics)) if (iv.low !== null && iv.high !== null) ci[name] = [iv.low, iv.high];
    } else if (row.ci) {
      Object.assign(ci, row.ci);
    }
    const out: MatrixRow = {
      config_id: c.id,
      chunking: c.chunking.size === null ? 'none' : c.chunking.size,
      overlap: c.chunking.overlap,
      mode: c.mode,
      retriever: c.retriever ?? c.mode,
      embedding: c.embedding,
      fusion: c.fusion?.key ?? null,
      rerank: rerankKey(c.rerank ?? null),
      k: c.k,
      metrics: { ...row.means },
      ci,
    };
    for (const f of ROW_FAMILIES) out[f] = num(row.means[`${f}@${c.k}`]);
    out.questions = row.questions;
    out.build_seconds = num(row.buildSeconds);
    out.mean_query_ms = num(row.meanQueryMs);
    out.status = row.status;
    out.error = row.error ?? null;
    for (const f of ROW_FAMILIES) {
      const name = `${f}@${c.k}`;
      const iv = interval(name);
      const pair = iv && iv.low !== null && iv.high !== null ? [iv.low, iv.high] : ci[name];
      out[`${f}_ci_low`] = pair ? pair[0] : null;
      out[`${f}_ci_high`] = pair ? pair[1] : null;
    }
    out.tier = ra?.tier ?? row.tier ?? null;
    if (result.level === 'evidence') {
      for (const f of EVIDENCE_FAMILIES) out[f] = num(row.means[`${f}@${c.k}`]);
      for (const b of budgets) out[`evidence_recall_${b}t`] = num(row.means[`evidence_recall@${b}t`]);
    }
    if (ann) out.ann_recall = num(row.means[`ann_recall@${c.k}`]);
    return out;
  });
}

function num(x: unknown): number | null {
  return typeof x === 'number' && Number.isFinite(x) ? x : null;
}

/** First characters that make a spreadsheet evaluate a cell as a formula (OWASP, "CSV Injection"). */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * One CSV field, RFC 4180: quoted when it holds a comma, quote, CR or LF; quotes doubled.
 *
 * Formula safety (OWASP's CSV Injection rule): a TEXT cell whose first character is `=`, `+`, `-`, `@`, a tab or a
 * carriage return gets a leading single quote and is quoted (`=HYPERLINK(…)` → `"'=HYPERLINK(…)"`), so Excel,
 * LibreOffice and Google Sheets show it as text instead of running it. Numbers are not text: a number cell is written
 * with `String(x)` as it is, so a negative number (`-0.25`) stays a number. Callers pass numbers as `number`, never as
 * strings, and every id, question, error message and label as `string`.
 */
export function csvField(v: Cell): string {
  if (v === null) return '';
  if (typeof v === 'number') return String(v);
  if (FORMULA_START.test(v)) return `"'${v.replace(/"/g, '""')}"`;
  return /[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v;
}

/** `matrix.csv`: header plus one line per configuration, `\n` line ends, trailing newline. */
export function renderMatrixCsv(result: SweepResult, analysis: Analysis): string {
  const columns = matrixColumns(result);
  const lines = [columns.join(',')];
  for (const r of matrixRows(result, analysis)) lines.push(columns.map((col) => csvField(r[col] as Cell)).join(','));
  return `${lines.join('\n')}\n`;
}

/**
 * `matrix.json`: `{"primary_metric", "rows": [...], "selection", "choose_k"}`: the rows with the CSV columns as keys
 * plus `metrics` and `ci`; `selection` is {@link selectionJson} (null without a recommendation); `choose_k` the k
 * curves of the recommended and tier-1 rows (`Analysis.kCurves`, as analysed).
 */
export function renderMatrixJson(result: SweepResult, analysis: Analysis): string {
  const columns = matrixColumns(result);
  const rows = matrixRows(result, analysis).map((r) => {
    const o: Record<string, unknown> = {};
    for (const col of columns) o[col] = r[col];
    o.metrics = r.metrics;
    o.ci = r.ci;
    return o;
  });
  return `${JSON.stringify({ primary_metric: result.primaryMetric, rows, selection: selectionJson(analysis), choose_k: analysis.kCurves }, null, 2)}\n`;
}

/**
 * The winner's-curse estimate for JSON consumers (matrix.json, `run --json`): `{ metric, folds, stratified,
 * in_sample: {id, mean}, estimate: {mean, low, high}, optimism, choices: [{id, folds}], per_fold: [...] }`, or null.
 */
export function selectionJson(analysis: Analysis): Record<string, unknown> | null {
  const s = analysis.selection;
  if (!s) return null;
  return {
    metric: analysis.primaryMetric,
    folds: s.folds,
    stratified: s.stratified,
    in_sample: s.inSample,
    estimate: s.estimate,
    optimism: s.optimism,
    choices: s.choices,
    per_fold: s.perFold,
  };
}

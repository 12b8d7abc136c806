/**
 * The matrix files: `matrix.csv` and `matrix.json`, one row per configuration in grid order. Pure.
 *
 * Columns (CSV header, JSON keys): config_id, chunking (`none` or the chunk size in tokens; in JSON the size or `null`,
 * followed by `chunking_key`, see {@link renderMatrixJson}), overlap (tokens), mode,
 * retriever (the id's retriever part: `keyword`, `hybrid-cvx-mm-a0.5`, an external name), embedding (empty for keyword;
 * `null` in JSON), fusion (the fusion key of a hybrid row, `rrf`, `cvx-mm-a0.5`; empty otherwise), rerank
 * (`<label>-d<depth>` of a reranked row; empty otherwise), k, the seven metric families at the row's own k (hit_rate, recall,
 * precision, mrr, ndcg, ndcg_exp, map), questions, build_seconds, mean_query_ms, status, error, then
 * `<family>_ci_low`, `<family>_ci_high` for each family, then tier (1, 2 or empty); then, when the rows have them
 * (levels document and chunk; not in results written before they existed), judged (the row's `judged@k`: the share
 * of its top k with a label of any grade) and, with `unjudged.condensed`, `<family>_condensed` for each family (the
 * row's `<family>_condensed@k`, trec_eval `-J`). Numbers are written at full
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

/** The condensed-list columns (`ndcg_condensed` = the row's `ndcg_condensed@k`), when some row has them. */
const CONDENSED_COLUMNS: readonly string[] = ROW_FAMILIES.map((f) => `${f}_condensed`);

/** True when some row has `judged@<k>` (sweeps at levels document and chunk since issue 20). */
function hasJudged(result: SweepResult): boolean {
  return result.configs.some((r) => Object.keys(r.means).some((n) => n.startsWith('judged@')));
}

/** True when some row has a `<family>_condensed@<k>` value (config `unjudged: { condensed: true }`). */
function hasCondensed(result: SweepResult): boolean {
  return result.configs.some((r) => Object.keys(r.means).some((n) => /^[a-z_]+_condensed@\d+$/.test(n)));
}

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
 * plus `judged` and the condensed columns (`ndcg_condensed`, ...) when some row has them (levels document and chunk), plus
 * `ann_recall` (the row's `ann_recall@k`, empty for exact rows) when some row uses an approximate index.
 */
export function matrixColumns(result: SweepResult): string[] {
  const ann = hasAnnRecall(result) ? ['ann_recall'] : [];
  const unjudged = [...(hasJudged(result) ? ['judged'] : []), ...(hasCondensed(result) ? CONDENSED_COLUMNS : [])];
  if (result.level !== 'evidence') return [...MATRIX_COLUMNS, ...unjudged, ...ann];
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
    out.judged = num(row.means[`judged@${c.k}`]);
    for (const f of ROW_FAMILIES) out[`${f}_condensed`] = num(row.means[`${f}_condensed@${c.k}`]);
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
 * curves of the recommended and tier-1 rows (`Analysis.kCurves`, as analysed). Each key has
 * one JSON type (docs/report.md lists them): `chunking` is the chunk size in tokens or `null` for whole documents (the
 * CSV's `none`), and `chunking_key` (after it) is the id part, `none` or `cs<size>-ov<overlap>`, always a string.
 *
 * When the rows have judged@k (levels document and chunk), each row also has `unjudged_bounds`: for a row at the
 * primary k, `{ "judged": judged@k, "lower": the primary metric as scored (unjudged documents not relevant), "upper":
 * the primary metric if every unjudged document of its top k were relevant at the threshold grade (null when it
 * cannot be computed) }` (report/unjudged.ts, src/score/bounds.ts); null for the other rows. And the top level has
 * `unjudged`: `{ "judged_metric", "warn_below", "max_spread", "spread" (tier-1 max − min judged@k, null with fewer
 * than two), "warning" (text or null), "could_change" (true when another candidate's upper bound exceeds the
 * recommended row's lower bound; null without bounds), "overtaking" (those rows' ids) }`.
 */
export function renderMatrixJson(result: SweepResult, analysis: Analysis): string {
  const columns = matrixColumns(result);
  const u = analysis.unjudged ?? null;
  const boundsOf = new Map((u?.rows ?? []).map((r) => [r.index, { judged: r.judged, lower: r.lower, upper: r.upper }]));
  const rows = matrixRows(result, analysis).map((r, i) => {
    const o: Record<string, unknown> = {};
    for (const col of columns) {
      if (col === 'chunking') {
        o.chunking = typeof r.chunking === 'number' ? r.chunking : null;
        o.chunking_key = result.configs[i].config.chunkingKey;
      } else o[col] = r[col];
    }
    o.metrics = r.metrics;
    o.ci = r.ci;
    if (u) o.unjudged_bounds = boundsOf.get(i) ?? null;
    return o;
  });
  const top: Record<string, unknown> = { primary_metric: result.primaryMetric };
  if (u)
    top.unjudged = {
      judged_metric: u.metric,
      warn_below: u.warnBelow,
      max_spread: u.maxSpread,
      spread: u.spread,
      warning: u.warning,
      could_change: u.bounds ? u.bounds.couldChange : null,
      overtaking: u.bounds ? u.bounds.overtaking : [],
    };
  top.rows = rows;
  top.selection = selectionJson(analysis);
  top.choose_k = analysis.kCurves;
  return `${JSON.stringify(top, null, 2)}\n`;
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

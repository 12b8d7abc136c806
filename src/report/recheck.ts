/**
 * `recheck`: re-scores every exported TREC run of a finished sweep with the evaluator (`retrieval-sweep evaluate`'s
 * code) and compares each value with matrix.json. Pure: the caller reads the files and passes the parsed qrels and
 * runs in; nothing here touches the disk.
 *
 * Two rules the old script got wrong:
 * - The relevance threshold is the sweep's (`manifest.relevanceThreshold`), not trec_eval's default 1: a sweep run
 *   with threshold 2 counts grade-1 documents as not relevant, and so must the re-score.
 * - `maxDiff` is the largest |matrix − run| over EVERY value compared, the disagreeing ones included (a value the run
 *   cannot give counts as an infinite difference).
 */

import type { Level } from '../types.js';
import { evaluate, type Qrels, type Run } from '../score/evaluate.js';
import { parseMeasure } from '../score/measures.js';

/** Values that differ by more than this disagree. */
export const RECHECK_TOLERANCE = 1e-12;

/** One matrix.json row, as far as the recheck reads it. */
export interface RecheckRow {
  config_id: string;
  status: string;
  /** The chunk size in tokens, or null for whole documents (`none` in results written before issue 22). */
  chunking: string | number | null;
  overlap: number;
  /** Canonical measure name → value. */
  metrics: Record<string, number>;
}

/** What {@link recheckRuns} needs: the matrix rows, the sweep's level and threshold, and the parsed TREC files. */
export interface RecheckInput {
  level: Level;
  /** The sweep's relevance threshold (`manifest.relevanceThreshold`), integer ≥ 1. */
  relevanceThreshold: number;
  rows: readonly RecheckRow[];
  /**
   * The qrels a row is scored against: at level document the one `qrels.trec` (chunking key null); at levels chunk and
   * evidence `qrels/<chunking key>.trec` (`none`, `cs256-ov32`).
   */
  qrels: (chunkingKey: string | null) => Qrels;
  /** `runs/<config id>.trec`. */
  run: (configId: string) => Run;
  /**
   * The other copies of the numbers (issue 24): matrix.json's flat columns (read from `rows` themselves), matrix.csv's
   * rows (header → cell text, by `config_id`), and per-query.jsonl's metrics (config id → qid → measure → value).
   * Each is compared when given.
   */
  csvRows?: readonly Record<string, string>[];
  perQuery?: ReadonlyMap<string, ReadonlyMap<string, Record<string, number>>>;
}

/** One value that does not agree. `run` is null when the evaluator gave no value for the measure. */
export interface RecheckDisagreement {
  configId: string;
  /** `ndcg@5`; for a per-question copy `ndcg@5 q12`. */
  measure: string;
  /**
   * Which copy disagrees with which: `matrix.json` (nested metrics vs the run, the default), `matrix.json flat`
   * (flat column vs nested), `matrix.csv` (csv cell vs matrix.json), `per-query.jsonl` (a question's value vs the run).
   */
  copy?: string;
  matrix: number;
  run: number | null;
  /** |matrix − run|, Infinity when run is null. */
  diff: number;
}

/** The outcome of {@link recheckRuns}. */
export interface RecheckReport {
  /** ok rows re-scored. */
  configs: number;
  /** Values compared. */
  values: number;
  /** Largest |matrix − run| over every value compared (disagreeing ones included); 0 when nothing was compared. */
  maxDiff: number;
  /** The threshold used. */
  relevanceThreshold: number;
  disagreements: RecheckDisagreement[];
  /** Rows not re-scored because their status is not `ok` (a failed row has no run file), in matrix order. */
  skipped: { configId: string; status: string }[];
}

/** The chunking key of a matrix row: `none` (chunking null, or `none` in older folders) or `cs<size>-ov<overlap>`. */
export function chunkingKeyOfRow(row: Pick<RecheckRow, 'chunking' | 'overlap'>): string {
  return row.chunking === 'none' || row.chunking === null ? 'none' : `cs${row.chunking}-ov${row.overlap}`;
}

/**
 * The measures a row can be re-scored on: the trec_eval families at a cut k (`ndcg@5`), and at levels document and
 * chunk also `judged@5` and the condensed forms (`ndcg_condensed@5`, trec_eval `-J`); at the evidence level recall
 * counts evidence spans, not a trec_eval measure, so it is left out. Chunk- and evidence-level extras
 * (`evidence_recall@5`, `tokens@5`, budgets) are never TREC measures.
 */
export function recheckableMeasures(level: Level, names: readonly string[]): string[] {
  const re =
    level === 'evidence'
      ? /^(hit_rate|precision|mrr|ndcg|ndcg_exp|map)@\d+$/
      : /^((hit_rate|recall|precision|mrr|ndcg|ndcg_exp|map)(_condensed)?|judged)@\d+$/;
  return names.filter((n) => re.test(n));
}

/**
 * Re-scores every ok row's run against its qrels at the sweep's threshold and compares each value with the matrix.
 * @throws HarnessError `USAGE` for a threshold that is not an integer ≥ 1 (from the evaluator), `MEASURE_UNKNOWN` for
 *   a malformed measure name, and whatever the `qrels`/`run` callbacks throw (`QRELS_INVALID`, `RUN_INVALID`).
 */
export function recheckRuns(input: RecheckInput): RecheckReport {
  let configs = 0;
  let values = 0;
  let maxDiff = 0;
  const disagreements: RecheckDisagreement[] = [];
  const skipped: RecheckReport['skipped'] = [];
  for (const row of input.rows) {
    if (row.status !== 'ok') {
      skipped.push({ configId: row.config_id, status: row.status });
      continue;
    }
    const names = recheckableMeasures(input.level, Object.keys(row.metrics));
    const qrels = input.qrels(input.level === 'document' ? null : chunkingKeyOfRow(row));
    const ev = evaluate(qrels, input.run(row.config_id), names.map(parseMeasure), { relevanceThreshold: input.relevanceThreshold });
    const compare = (measure: string, matrix: number, got: unknown, copy?: string) => {
      const other = typeof got === 'number' && Number.isFinite(got) ? got : null;
      const diff = other === null ? Infinity : Math.abs(other - matrix);
      values++;
      maxDiff = Math.max(maxDiff, diff);
      if (!(diff <= RECHECK_TOLERANCE)) disagreements.push({ configId: row.config_id, measure, matrix, run: other, diff, ...(copy ? { copy } : {}) });
    };
    for (const n of names) compare(n, row.metrics[n], ev.mean[n]);
    // Every other copy of the row's numbers: the flat columns (`ndcg` of a k = 5 row is `ndcg@5`), matrix.csv, and
    // each question's values in per-query.jsonl against the run's per-question values.
    const flat = row as unknown as Record<string, unknown>;
    const csv = input.csvRows?.find((r) => r.config_id === row.config_id);
    if (input.csvRows && !csv) compare('(row)', 0, null, 'matrix.csv');
    for (const n of Object.keys(row.metrics)) {
      const at = n.lastIndexOf('@');
      const column = n.slice(0, at);
      if (at < 0 || n.slice(at + 1) !== String(flat.k) || !(column in flat)) continue;
      compare(n, row.metrics[n], flat[column], 'matrix.json flat');
      if (csv) compare(n, row.metrics[n], csv[column] === undefined || csv[column] === '' ? null : Number(csv[column]), 'matrix.csv');
    }
    const pq = input.perQuery?.get(row.config_id);
    if (input.perQuery && !pq) compare('(rows)', 0, null, 'per-query.jsonl');
    for (const [qid, values] of pq ?? []) {
      for (const n of names) compare(`${n} ${qid}`, ev.perQuery[qid]?.[n] ?? Number.NaN, values[n], 'per-query.jsonl');
    }
    configs++;
  }
  return { configs, values, maxDiff, relevanceThreshold: input.relevanceThreshold, disagreements, skipped };
}

/**
 * The recheck's text: one summary line, a line naming the rows not re-scored (status not ok; at most `shown` ids) when
 * there are any, then at most `shown` disagreements (default 20), `\n` line ends.
 */
export function formatRecheck(r: RecheckReport, shown = 20): string {
  const lines = [
    `${r.configs} configurations, ${r.values} values re-scored from runs/*.trec at relevance threshold ${r.relevanceThreshold}; ` +
      `max |diff| ${r.maxDiff === Infinity ? 'Infinity (a value is missing from the run)' : r.maxDiff.toExponential(2)}; ${r.disagreements.length} disagree`,
  ];
  if (r.skipped.length > 0) {
    const ids = r.skipped.slice(0, shown).map((x) => `${x.configId} (${x.status})`).join(', ');
    lines.push(`${r.skipped.length} configuration${r.skipped.length > 1 ? 's' : ''} not re-scored, no run to check: ${ids}${r.skipped.length > shown ? `, … and ${r.skipped.length - shown} more` : ''}`);
  }
  for (const d of r.disagreements.slice(0, shown))
    lines.push(
      d.copy
        ? `  ${d.configId} ${d.measure}: ${d.copy} holds ${d.run ?? 'nothing'} where ${d.copy === 'per-query.jsonl' ? 'the run gives' : 'matrix.json holds'} ${d.matrix} (|diff| ${d.diff === Infinity ? 'Infinity' : d.diff.toExponential(2)})`
        : `  ${d.configId} ${d.measure}: matrix ${d.matrix} vs run ${d.run ?? 'missing'} (|diff| ${d.diff === Infinity ? 'Infinity' : d.diff.toExponential(2)})`,
    );
  if (r.disagreements.length > shown) lines.push(`  … and ${r.disagreements.length - shown} more`);
  return `${lines.join('\n')}\n`;
}

/**
 * Re-scores every exported TREC run of a finished results folder with the evaluator (`retrieval-sweep evaluate`'s
 * code) and compares each value with matrix.json. Backs `retrieval-sweep recheck DIR`.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { HarnessError } from '../errors.js';
import { readQrels, readRun } from '../load/trec.js';
import { evaluate } from '../score/evaluate.js';
import { parseMeasure } from '../score/measures.js';

/** What {@link recheckResults} found. */
export interface RecheckResult {
  /** Results folder, resolved. */
  dir: string;
  /** Configurations (rows with status `ok`) re-scored. */
  configurations: number;
  /** Metric values compared. */
  values: number;
  /** Largest |matrix − re-scored| among the values that agree (0 when none). */
  maxDiff: number;
  /** One line per value that differs by more than the tolerance: `<config id> <measure>: matrix <a> vs run <b>`. */
  disagreements: string[];
  /** Absolute tolerance used: 1e-12. */
  tolerance: number;
}

const TOLERANCE = 1e-12;

function readJson<T>(file: string): T {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch (e) {
    throw new HarnessError('RESULTS_INVALID', `${file} cannot be read as JSON: ${(e as Error).message}`, {
      location: { file },
      remedy: 'pass a results folder written by retrieval-sweep run (it holds matrix.json, configs.json, runs/)',
      cause: e,
    });
  }
}

/**
 * Re-scores `DIR/runs/<config id>.trec` against `DIR/qrels.trec` (level document) or `DIR/qrels/<chunking>.trec`
 * (levels chunk and evidence) for every `ok` row of `DIR/matrix.json`, on the document-level TREC measures the row
 * holds (`hit_rate|recall|precision|mrr|ndcg|ndcg_exp|map@k`; at the evidence level recall counts evidence spans,
 * not a trec_eval measure, so it is skipped). A value agrees when |difference| ≤ 1e-12.
 * Reads files only. @throws HarnessError('RESULTS_INVALID') when matrix.json or configs.json is missing or not JSON,
 *   and whatever reading a qrels or run file throws (QRELS_INVALID, RUN_INVALID) naming the file.
 */
export function recheckResults(dir: string): RecheckResult {
  const abs = path.resolve(dir);
  for (const name of ['matrix.json', 'configs.json']) {
    if (!existsSync(path.join(abs, name)))
      throw new HarnessError('RESULTS_INVALID', `no ${name} in ${abs}: not a results folder`, {
        remedy: 'pass a results folder written by retrieval-sweep run (it holds matrix.json, configs.json, qrels, runs/)',
      });
  }
  const matrix = readJson<{
    rows: { config_id: string; status: string; chunking: string | number; overlap: number; metrics: Record<string, number> }[];
  }>(path.join(abs, 'matrix.json'));
  const configs = readJson<{ level: string }>(path.join(abs, 'configs.json'));
  const perChunking = configs.level !== 'document';
  const qrelsCache = new Map<string, ReturnType<typeof readQrels>>();
  const qrelsFor = (row: { chunking: string | number; overlap: number }) => {
    const file = perChunking
      ? path.join(abs, 'qrels', `${row.chunking === 'none' ? 'none' : `cs${row.chunking}-ov${row.overlap}`}.trec`)
      : path.join(abs, 'qrels.trec');
    let q = qrelsCache.get(file);
    if (!q) qrelsCache.set(file, (q = readQrels(file)));
    return q;
  };
  const families =
    configs.level === 'evidence' ? 'hit_rate|precision|mrr|ndcg|ndcg_exp|map' : 'hit_rate|recall|precision|mrr|ndcg|ndcg_exp|map';
  const pattern = new RegExp(`^(${families})@\\d+$`);
  let checked = 0;
  let values = 0;
  let maxDiff = 0;
  const disagreements: string[] = [];
  for (const row of matrix.rows ?? []) {
    if (row.status !== 'ok') continue;
    // Chunk- and evidence-level extras (evidence_recall@k, tokens@k, ...) are not document-level TREC measures.
    const names = Object.keys(row.metrics).filter((n) => pattern.test(n));
    const ev = evaluate(qrelsFor(row), readRun(path.join(abs, 'runs', `${row.config_id}.trec`)), names.map(parseMeasure));
    for (const n of names) {
      const d = Math.abs((ev.mean[n] ?? NaN) - row.metrics[n]);
      values++;
      if (!(d <= TOLERANCE)) disagreements.push(`${row.config_id} ${n}: matrix ${row.metrics[n]} vs run ${ev.mean[n]}`);
      else maxDiff = Math.max(maxDiff, d);
    }
    checked++;
  }
  return { dir: abs, configurations: checked, values, maxDiff, disagreements, tolerance: TOLERANCE };
}

/** The one-line summary `recheck` prints, then up to 20 disagreements indented. */
export function formatRecheck(r: RecheckResult): string {
  const lines = [
    `${r.configurations} configurations, ${r.values} values re-scored from runs/*.trec; max |diff| ${r.maxDiff.toExponential(2)}; ${r.disagreements.length} disagree`,
    ...r.disagreements.slice(0, 20).map((b) => `  ${b}`),
  ];
  if (r.disagreements.length > 20) lines.push(`  ... and ${r.disagreements.length - 20} more`);
  return `${lines.join('\n')}\n`;
}

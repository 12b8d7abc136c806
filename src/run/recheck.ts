/**
 * Re-scores every exported TREC run of a finished results folder with the evaluator (`retrieval-sweep evaluate`'s
 * code) and compares each value with matrix.json. Backs `retrieval-sweep recheck DIR`.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { HarnessError } from '../errors.js';
import { readQrels, readRun } from '../load/trec.js';
import { formatRecheck, recheckRuns, type RecheckReport, type RecheckRow } from '../report/recheck.js';
import type { Level } from '../types.js';

/** What {@link recheckResults} found: the pure recheck's report (src/report/recheck.ts) and the folder. */
export interface RecheckResult extends RecheckReport {
  /** Results folder, resolved. */
  dir: string;
}


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

/** matrix.csv as one object per data row (header → cell text); RFC 4180 quoting (`"a,b"`, `""` for a quote). */
export function parseCsv(text: string): Record<string, string>[] {
  const records: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(cell);
      records.push(row);
      row = [];
      cell = '';
    } else cell += c;
  }
  if (cell !== '' || row.length > 0) {
    row.push(cell);
    records.push(row);
  }
  const [header, ...rows] = records;
  return (rows ?? []).map((r) => Object.fromEntries((header ?? []).map((h, i) => [h, r[i] ?? ''])));
}

function readCsv(file: string): Record<string, string>[] {
  return parseCsv(readFileSync(file, 'utf8'));
}

/** per-query.jsonl as config id → qid → measure → value. @throws HarnessError('RESULTS_INVALID') naming the line. */
function readPerQuery(file: string): Map<string, Map<string, Record<string, number>>> {
  const out = new Map<string, Map<string, Record<string, number>>>();
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      if (line.trim() === '') return;
      let o: { config_id?: unknown; qid?: unknown; metrics?: unknown };
      try {
        o = JSON.parse(line) as typeof o;
      } catch (e) {
        throw new HarnessError('RESULTS_INVALID', `${file} line ${i + 1} is not JSON: ${(e as Error).message}`, { location: { file, line: i + 1 } });
      }
      if (typeof o.config_id !== 'string' || typeof o.qid !== 'string' || !o.metrics || typeof o.metrics !== 'object') return;
      let m = out.get(o.config_id);
      if (!m) out.set(o.config_id, (m = new Map()));
      m.set(o.qid, o.metrics as Record<string, number>);
    });
  return out;
}

/**
 * Re-scores `DIR/runs/<config id>.trec` against `DIR/qrels.trec` (level document) or `DIR/qrels/<chunking>.trec`
 * (levels chunk and evidence) for every `ok` row of `DIR/matrix.json`, on the document-level TREC measures the row
 * holds (`hit_rate|recall|precision|mrr|ndcg|ndcg_exp|map@k`; at the evidence level recall counts evidence spans,
 * not a trec_eval measure, so it is skipped). A value agrees when |difference| ≤ 1e-12. Every other copy is checked
 * too: matrix.json's flat columns and matrix.csv against the nested metrics, and each question's values in
 * per-query.jsonl against the run's per-question values.
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
  const matrix = readJson<{ rows?: RecheckRow[] }>(path.join(abs, 'matrix.json'));
  const configs = readJson<{ level: Level }>(path.join(abs, 'configs.json'));
  const manifestFile = path.join(abs, 'manifest.json');
  const manifest = existsSync(manifestFile) ? readJson<{ relevanceThreshold?: number }>(manifestFile) : {};
  const qrelsCache = new Map<string, ReturnType<typeof readQrels>>();
  const report = recheckRuns({
    level: configs.level,
    // The sweep's own threshold: a threshold-2 sweep rechecked at 1 would report false disagreements.
    relevanceThreshold: manifest.relevanceThreshold ?? 1,
    rows: matrix.rows ?? [],
    qrels: (key) => {
      const file = key === null ? path.join(abs, 'qrels.trec') : path.join(abs, 'qrels', `${key}.trec`);
      let q = qrelsCache.get(file);
      if (!q) qrelsCache.set(file, (q = readQrels(file)));
      return q;
    },
    run: (id) => readRun(path.join(abs, 'runs', `${id}.trec`)),
    // Every other copy the sweep wrote (issue 24): matrix.csv and per-query.jsonl, when present.
    ...(existsSync(path.join(abs, 'matrix.csv')) ? { csvRows: readCsv(path.join(abs, 'matrix.csv')) } : {}),
    ...(existsSync(path.join(abs, 'per-query.jsonl')) ? { perQuery: readPerQuery(path.join(abs, 'per-query.jsonl')) } : {}),
  });
  return { ...report, dir: abs };
}

export { formatRecheck };

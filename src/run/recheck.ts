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
  });
  return { ...report, dir: abs };
}

export { formatRecheck };

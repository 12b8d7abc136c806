/**
 * Re-scores every exported TREC run of a finished sweep with the evaluator (`retrieval-sweep evaluate`'s code) at the
 * sweep's relevance threshold and compares each value with matrix.json (logic: src/report/recheck.ts). Exit 0 when
 * every value of every configuration agrees to 1e-12, 1 otherwise.
 *
 *   npx tsx scripts/recheck-runs.ts results/helpdesk
 */
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { readQrels, readRun } from '../src/load/trec.js';
import { formatRecheck, recheckRuns, type RecheckRow } from '../src/report/recheck.js';
import type { Level } from '../src/types.js';

const dir = process.argv[2];
if (!dir || !existsSync(path.join(dir, 'matrix.json'))) {
  process.stderr.write('usage: npx tsx scripts/recheck-runs.ts <results folder with matrix.json, qrels.trec, runs/>\n');
  process.exit(1);
}
const matrix = JSON.parse(readFileSync(path.join(dir, 'matrix.json'), 'utf8')) as { rows: RecheckRow[] };
const configs = JSON.parse(readFileSync(path.join(dir, 'configs.json'), 'utf8')) as { level: Level };
const manifest = JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as { relevanceThreshold?: number };
const qrelsCache = new Map<string, ReturnType<typeof readQrels>>();
const report = recheckRuns({
  level: configs.level,
  relevanceThreshold: manifest.relevanceThreshold ?? 1,
  rows: matrix.rows,
  qrels: (key) => {
    const file = key === null ? path.join(dir, 'qrels.trec') : path.join(dir, 'qrels', `${key}.trec`);
    let q = qrelsCache.get(file);
    if (!q) qrelsCache.set(file, (q = readQrels(file)));
    return q;
  },
  run: (id) => readRun(path.join(dir, 'runs', `${id}.trec`)),
});
process.stdout.write(formatRecheck(report));
process.exit(report.disagreements.length === 0 ? 0 : 1);

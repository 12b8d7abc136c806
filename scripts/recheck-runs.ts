/**
 * Re-scores every exported TREC run of a finished sweep with the evaluator (`retrieval-sweep evaluate`'s code) and
 * compares each value with matrix.json. Exit 0 when every value of every configuration agrees to 1e-12, 1 otherwise.
 *
 *   npx tsx scripts/recheck-runs.ts results/helpdesk
 */
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { readQrels, readRun } from '../src/load/trec.js';
import { evaluate } from '../src/score/evaluate.js';
import { parseMeasure } from '../src/score/measures.js';

const dir = process.argv[2];
if (!dir || !existsSync(path.join(dir, 'matrix.json'))) {
  process.stderr.write('usage: npx tsx scripts/recheck-runs.ts <results folder with matrix.json, qrels.trec, runs/>\n');
  process.exit(1);
}
const matrix = JSON.parse(readFileSync(path.join(dir, 'matrix.json'), 'utf8')) as {
  rows: { config_id: string; status: string; chunking: string | number; overlap: number; metrics: Record<string, number> }[];
};
const configs = JSON.parse(readFileSync(path.join(dir, 'configs.json'), 'utf8')) as { level: string };
// Level document: one qrels.trec. Levels chunk and evidence: qrels/<chunking>.trec with chunk ids; at the evidence
// level recall counts evidence spans (not a trec_eval measure), so it is not re-checked.
const perChunking = configs.level !== 'document';
const qrelsCache = new Map<string, ReturnType<typeof readQrels>>();
const qrelsFor = (row: { chunking: string | number; overlap: number }) => {
  const file = perChunking
    ? path.join(dir, 'qrels', `${row.chunking === 'none' ? 'none' : `cs${row.chunking}-ov${row.overlap}`}.trec`)
    : path.join(dir, 'qrels.trec');
  let q = qrelsCache.get(file);
  if (!q) qrelsCache.set(file, (q = readQrels(file)));
  return q;
};
const families = configs.level === 'evidence' ? 'hit_rate|precision|mrr|ndcg|ndcg_exp|map' : 'hit_rate|recall|precision|mrr|ndcg|ndcg_exp|map';
let checked = 0;
let values = 0;
let maxDiff = 0;
const bad: string[] = [];
for (const row of matrix.rows) {
  if (row.status !== 'ok') continue;
  // Chunk- and evidence-level extras (evidence_recall@k, tokens@k, ...) are not document-level TREC measures.
  const names = Object.keys(row.metrics).filter((n) => new RegExp(`^(${families})@\\d+$`).test(n));
  const ev = evaluate(qrelsFor(row), readRun(path.join(dir, 'runs', `${row.config_id}.trec`)), names.map(parseMeasure));
  for (const n of names) {
    const d = Math.abs((ev.mean[n] ?? NaN) - row.metrics[n]);
    values++;
    if (!(d <= 1e-12)) bad.push(`${row.config_id} ${n}: matrix ${row.metrics[n]} vs run ${ev.mean[n]}`);
    else maxDiff = Math.max(maxDiff, d);
  }
  checked++;
}
process.stdout.write(`${checked} configurations, ${values} values re-scored from runs/*.trec; max |diff| ${maxDiff.toExponential(2)}; ${bad.length} disagree\n`);
for (const b of bad.slice(0, 20)) process.stdout.write(`  ${b}\n`);
process.exit(bad.length === 0 ? 0 : 1);

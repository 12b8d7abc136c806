/**
 * The figures of docs/judging.md ("Measured on the helpdesk demo"): a pool from a finished helpdesk sweep (the top 10
 * unjudged documents of two rows, made here without the `pool` command), `judge` through the in-process test chat
 * server (cold, warm, with faults), a scripted "person" grading 40 pairs into the judgments log, the judge's
 * calibration and decision check, then `generate` 60 questions. Everything runs on a copy of datasets/helpdesk.
 *
 *   npm run sweep -- --out /tmp/hd && npx tsx scripts/judge-demo.ts /tmp/hd /tmp/judge-demo
 *   npm run cli -- run /tmp/judge-demo/sweep.yaml --out /tmp/judge-demo/results   # human + synthetic questions
 */
import { appendFileSync, cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli } from '../src/cli/main.js';
import { judgmentsLogPath, readJudgments, resolveLabels, writePool, type PoolHeader, type PoolPair } from '../src/label/formats.js';
import { loadDataset } from '../src/load/dataset.js';
import type { Question } from '../src/types.js';
import { fakeTokens, startFakeServer, type Fault } from '../test/helpers/fake-server.js';

const wt = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const [results, work] = process.argv.slice(2).map((p) => path.resolve(p));
if (results === undefined || work === undefined) throw new Error('usage: tsx scripts/judge-demo.ts <sweep results folder> <work folder>');

rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
const ds = path.join(work, 'helpdesk');
cpSync(path.join(wt, 'datasets/helpdesk'), ds, { recursive: true });
const dataset = await loadDataset({ path: ds });
const docs = new Map(dataset.docs.map((d) => [d.id, d.text] as const));
const qs = new Map<string, Question>(dataset.questions.map((q) => [q.id, q]));
const rows = ['none.keyword.k10', 'none.semantic.use-lite.k10'];
const seen = new Map<string, Omit<PoolPair, 'pair'>>();
for (const line of readFileSync(path.join(results, 'per-query.jsonl'), 'utf8').split('\n')) {
  if (!line) continue;
  const o = JSON.parse(line) as { config_id: string; qid: string; ranked_docs: string[] };
  if (!rows.includes(o.config_id)) continue;
  const q = qs.get(o.qid) as Question;
  o.ranked_docs.slice(0, 10).forEach((doc: string, i: number) => {
    if (q.relevant[doc] !== undefined) return;
    const key = `${o.qid} ${doc}`;
    const cur = seen.get(key);
    if (cur) { cur.rows.push(o.config_id); cur.bestRank = Math.min(cur.bestRank, i + 1); return; }
    const text = docs.get(doc) as string;
    seen.set(key, { qid: o.qid, question: q.text, doc, start: 0, end: text.length, passage: text, rows: [o.config_id], bestRank: i + 1 });
  });
}
const pairs: PoolPair[] = [...seen.values()].sort((a, b) => a.bestRank - b.bestRank || b.rows.length - a.rows.length || (a.qid < b.qid ? -1 : a.qid > b.qid ? 1 : a.doc < b.doc ? -1 : 1)).map((p, i) => ({ pair: i + 1, ...p }));
const header: PoolHeader = { format: 'retrieval-sweep.pool', version: 1, dataset: { name: 'helpdesk', root: ds, corpus: '0'.repeat(64) }, results, level: 'document', depth: 10, rows, pairs: pairs.length, threshold: 1 };
const pool = path.join(work, 'pool.jsonl');
writePool(pool, header, pairs);
console.log(`pool: ${pairs.length} pairs over ${new Set(pairs.map((p) => p.qid)).size} questions`);

const cli = async (args: string[]) => {
  let out = '', err = '';
  const t = performance.now();
  const code = await runCli(['node', 'retrieval-sweep', ...args], { stdout: (s: string) => void (out += s), stderr: (s: string) => void (err += s) });
  return { code, out, err, s: (performance.now() - t) / 1000 };
};
const labels = path.join(ds, 'questions.jsonl');
const judgeArgs = (url: string, cache: string, lab = labels) => ['judge', pool, '--model', 'openai-chat:fake-7b', '--base-url', `${url}/v1`, '--cache-dir', cache, '--labels', lab, '--config', path.join(work, 'chat.yaml')];
writeFileSync(path.join(work, 'chat.yaml'), 'concurrency: 4\ntimeoutMs: 2000\nbackoffBaseMs: 5\nbackoffMaxMs: 50\npricePer1kInput: 0.15\npricePer1kOutput: 0.6\n');

const server = await startFakeServer();
let r = await cli([...judgeArgs(server.url, path.join(work, 'cache')), '--json']);
let j = JSON.parse(r.out);
console.log(`cold: exit ${r.code}, ${server.requests.length} requests to the server (summary: ${j.usage.requests}), ${j.asked} asked, ${j.cached} cached, grades ${j.grades.join('/')}, tokens ${j.usage.tokensIn}/${j.usage.tokensOut}, cost ${j.usage.cost?.toFixed(4)}, ${r.s.toFixed(2)} s`);
let before = server.requests.length;
r = await cli([...judgeArgs(server.url, path.join(work, 'cache')), '--json']);
j = JSON.parse(r.out);
console.log(`warm: exit ${r.code}, ${server.requests.length - before} requests, ${j.cached} cached, ${j.appended} appended, ${r.s.toFixed(2)} s`);

// faults: a second labels file and cache, every 3rd request hit by one of six faults
const faulty = await startFakeServer({ faultFilter: (_p: string, b: Record<string, unknown>) => JSON.stringify(b.messages).includes('##final score') });
const kinds: Fault[] = [{ kind: 'status', status: 429, retryAfter: '0' }, { kind: 'status', status: 500 }, { kind: 'slow', ms: 2500 }, { kind: 'reset' }, { kind: 'answer', content: 'Relevant, I think.' }, { kind: 'answer', content: '##final score: 5' }];
for (let i = 0; i < 60; i++) faulty.faults.push(i % 3 === 0 ? kinds[(i / 3) % kinds.length] : { kind: 'none' });
const labels2 = path.join(work, 'faulty-questions.jsonl');
r = await cli([...judgeArgs(faulty.url, path.join(work, 'cache-faulty'), labels2), '--json']);
j = JSON.parse(r.out);
const a = resolveLabels(readJudgments(judgmentsLogPath(labels)).judgments).map((l) => `${l.qid} ${l.doc} ${l.grade}`).sort();
const b = resolveLabels(readJudgments(judgmentsLogPath(labels2)).judgments).map((l) => `${l.qid} ${l.doc} ${l.grade}`).sort();
const failedFirst = j.failed;
console.log(`faulty: exit ${r.code}, ${faulty.requests.length} requests, ${j.usage.retries} HTTP retries, ${j.parseRetries} re-asked after an unparsable answer, ${j.failed} failed, wait ${j.usage.waitSeconds.toFixed(2)} s, ${r.s.toFixed(2)} s; labels identical to the clean run: ${JSON.stringify(a) === JSON.stringify(b)} (${a.length} labels)`);

{
  const n0 = faulty.requests.length;
  const r2 = await cli([...judgeArgs(faulty.url, path.join(work, 'cache-faulty'), labels2), '--json']);
  const j2 = JSON.parse(r2.out);
  const b2 = resolveLabels(readJudgments(judgmentsLogPath(labels2)).judgments).map((l) => `${l.qid} ${l.doc} ${l.grade}`).sort();
  console.log(`faulty rerun: ${faulty.requests.length - n0} requests (${failedFirst} failed pairs asked again + probe), ${j2.failed} failed; labels identical to the clean run: ${JSON.stringify(a) === JSON.stringify(b2)}`);
}
// scripted person: grades the first 40 pairs by a different rule (words of 3+ letters shared, minus stop words, /2)
const stop = new Set(['the', 'and', 'for', 'you', 'your', 'can', 'how', 'what', 'does', 'are', 'with', 'our', 'not', 'any', 'this', 'that', 'from', 'will']);
for (const p of pairs.slice(0, 40)) {
  const pw = new Set(fakeTokens(p.passage));
  const shared = new Set(fakeTokens(p.question).filter((w) => w.length >= 3 && !stop.has(w) && pw.has(w))).size;
  const g = Math.min(3, Math.floor(shared / 2));
  appendFileSync(judgmentsLogPath(labels), JSON.stringify({ v: 1, time: new Date().toISOString(), assessor: 'alice', action: 'grade', qid: p.qid, doc: p.doc, start: p.start, end: p.end, grade: g }) + '\n');
}
before = server.requests.length;
r = await cli([...judgeArgs(server.url, path.join(work, 'cache')), '--calibrate', '60']);
console.log(`after 40 person grades: exit ${r.code}, ${server.requests.length - before} requests\n${r.out}${r.err}`);
await server.close();
await faulty.close();

// generate 60 questions into the copy, cold then warm
{
  const gs = await startFakeServer();
  const gargs = ['generate', ds, '--model', 'openai-chat:fake-7b', '--base-url', `${gs.url}/v1`, '--cache-dir', path.join(work, 'cache'), '--out', labels, '--questions', '60', '--per-document', '2', '--chunk-size', '128', '--styles', 'keyword,paraphrase', '--json'];
  let g = await cli(gargs);
  const gj = JSON.parse(g.out);
  console.log(`generate: exit ${g.code}, ${gs.requests.length} requests, written ${gj.written} of ${gj.asked}, passages ${gj.passages}, filters ${JSON.stringify(gj.filters)}, ${g.s.toFixed(2)} s`);
  const n0 = gs.requests.length;
  g = await cli(gargs);
  console.log(`generate warm: exit ${g.code}, ${gs.requests.length - n0} requests, written ${JSON.parse(g.out).written}`);
  await gs.close();
  writeFileSync(path.join(work, 'sweep.yaml'), `name: helpdesk-synthetic\ndataset: { path: ./helpdesk }\nchunking: { sizes: [none] }\ntopK: [1, 3, 5, 10]\nmodes: [keyword, semantic]\nembeddings: [use-lite]\nprimaryMetric: ndcg@5\ncacheDir: ${path.join(wt, '.cache/retrieval-sweep')}\n`);
}

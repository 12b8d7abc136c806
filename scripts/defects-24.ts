/**
 * Re-checks issue 24's defects that a CLI command provokes, one command each, on the current code (in-process,
 * through `runCli`, as the CLI runs them): prints a markdown table of defect, command, exit code, first line of the
 * message, and whether it holds as fixed (the expected exit code and a message naming what the issue asked for). The
 * defects of cached state (10 alterations) are scripts/adversarial-cache.ts's; kill -9 temporaries are
 * scripts/kill-sweep.ts's; full disks and permissions are scripts/resource-errors.sh's; a 1.5 GB HTTP body and a
 * factory that never resolves are test/net/http-bounds.test.ts and test/cli/exit-codes.test.ts.
 *
 *   npx tsx scripts/defects-24.ts [--work /tmp/defects-24]
 *
 * Exit 0 when every case holds, 1 otherwise. Light: the tiny fixture (5 documents), keyword rows; about 20 s.
 */
import { cpSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli } from '../src/cli/main.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tiny = path.join(repo, 'test/fixtures/sweep/tiny');
const wi = process.argv.indexOf('--work');
const work = path.resolve(wi >= 0 ? process.argv[wi + 1] : '/tmp/defects-24');
rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });

async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(['node', 'retrieval-sweep', ...args], { stdout: (s) => void (out += s), stderr: (s) => void (err += s) });
  process.exitCode = undefined;
  return { code, out, err };
}

/**
 * A config file: the tiny dataset (or `dataset`), keyword, k 1 and 3, the work folder's cache, plus `extra` YAML lines
 * (an `extra` holding `dataset:`, `modes:`, `topK:` or `cacheDir:` replaces that default line).
 */
function config(name: string, extra = '', dataset = tiny): string {
  const file = path.join(work, `${name}.yaml`);
  const defaults: [string, string][] = [
    ['dataset:', `dataset: { path: ${dataset} }`],
    ['topK:', 'topK: [1, 3]'],
    ['modes:', 'modes: [keyword]'],
    ['cacheDir:', `cacheDir: ${path.join(work, 'cache')}`],
  ];
  const lines = [`name: ${name}`, 'primaryMetric: ndcg@3', ...defaults.filter(([k]) => !extra.includes(k)).map(([, l]) => l)];
  writeFileSync(file, `${lines.join('\n')}\n${extra}`);
  return file;
}

/** A copy of the tiny dataset, changed by `edit(dir)`. */
function dataset(name: string, edit: (dir: string) => void): string {
  const dir = path.join(work, name);
  cpSync(tiny, dir, { recursive: true });
  edit(dir);
  return dir;
}

const firstLine = (s: string) => (s.split('\n').find((l) => /^(error|warning|internal error)/.test(l)) ?? s.split('\n').find((l) => l.trim()) ?? '').slice(0, 200);
const rows: string[] = [];
let allHeld = true;
/** Runs one case: `held(result)` says whether the defect is fixed. */
async function check(defect: string, command: string, args: string[], held: (r: { code: number; out: string; err: string }) => boolean, show?: (r: { code: number; out: string; err: string }) => string) {
  const r = await cli(...args);
  const ok = held(r);
  allHeld &&= ok;
  const msg = (show ? show(r) : firstLine(r.err)).split(work + '/').join('').replace(/\|/g, '\\|');
  rows.push(`| ${defect} | \`${command}\` | ${r.code} | ${msg ? `\`${msg}\`` : ''} | ${ok ? 'yes' : '**NO**'} |`);
  process.stderr.write(`${defect}: ${r.code} ${ok ? 'fixed' : 'NOT FIXED'}\n`);
}

// Unbounded inputs.
const sizes = Array.from({ length: 250 }, (_, i) => i + 1);
const ks = Array.from({ length: 400 }, (_, i) => i + 1);
await check('grid of 100,000 configurations passes validate, then dies of heap exhaustion', 'validate (250 sizes × 400 k)', ['validate', config('grid', `chunking: { sizes: [${sizes.join(', ')}] }\ntopK: [${ks.join(', ')}]\n`)], (r) => r.code === 1 && /limits\.maxConfigurations/.test(r.err));
await check('statistics.resamples: 1e12 passes validate, then exit 70', 'validate (resamples 1e12)', ['validate', config('resamples', 'statistics: { resamples: 1000000000000 }\n')], (r) => r.code === 1 && /statistics\.resamples/.test(r.err), (r) => r.err.split('\n').find((l) => /statistics\.resamples:/.test(l))?.trim().slice(0, 200) ?? firstLine(r.err));
const big = dataset('big-line', (d) => writeFileSync(path.join(d, 'questions.jsonl'), `{"id":"q1","question":"${'x'.repeat(17 * 1024 * 1024)}","relevant":["billing/refunds.md"]}\n`));
await check('a huge questions.jsonl read as one string (exit 70)', 'validate (a 17 MiB line)', ['validate', config('bigline', '', big)], (r) => r.code === 1 && /16 MiB|limit/.test(r.err));
// A retriever returning 1,000,000 hits per question.
writeFileSync(path.join(work, 'flood.mjs'), 'export default async () => ({ search: async () => Array.from({ length: 1_000_000 }, (_, i) => ({ id: `x${i}`, score: 1 })) });\n');
await check('a plug-in returning 1,000,000 hits exhausts memory', 'run (retriever flood.mjs) --fail-on failed-rows', ['run', config('flood', `modes: []\nretrievers: [{ name: flood, module: ${path.join(work, 'flood.mjs')} }]\n`), '--out', path.join(work, 'res-flood'), '--fail-on', 'failed-rows'], (r) => r.code === 1 && /10 ×|more than|too many|longer/.test(r.err), (r) => r.err.split('\n').find((l) => /flood/.test(l) && /hits|long|more/.test(l))?.slice(0, 200) ?? firstLine(r.err));
await check('a port fetch refuses (1) retried six times as a dropped connection', 'validate (openai baseUrl port 1)', ['validate', config('port', 'modes: [semantic]\nembeddings: [{ model: "openai:m", baseUrl: "http://127.0.0.1:1/v1" }]\n')], (r) => r.code === 1 && /port 1\b/.test(r.err), (r) => r.err.split('\n').find((l) => /port 1\b/.test(l))?.trim().slice(0, 200) ?? firstLine(r.err));

// validate disagrees with run.
const extraKey = dataset('extra-key', (d) => writeFileSync(path.join(d, 'questions.jsonl'), readFileSync(path.join(tiny, 'questions.jsonl'), 'utf8').replace('"tags"', '"extra": 1, "tags"')));
await check('validate ignores dataset.strictness: warn', 'validate (strictness warn, unknown key)', ['validate', config('strict-warn', `dataset: { path: ${extraKey}, strictness: warn }\n`)], (r) => r.code === 0 && /unknown key "extra" ignored/.test(r.out + r.err), (r) => (r.out + r.err).split('\n').find((l) => /unknown key "extra"/.test(l))?.slice(0, 200) ?? '');
await check('validate passes a config with 0 configurations', 'validate (modes: [])', ['validate', config('zero', 'modes: []\n')], (r) => r.code === 1 && /nothing to sweep/.test(r.err), (r) => r.err.split('\n').find((l) => /nothing to sweep/.test(l))?.trim().slice(0, 200) ?? firstLine(r.err));
writeFileSync(path.join(work, 'a-file'), 'x');
await check('validate passes a cacheDir that is a file', 'validate (cacheDir under a file)', ['validate', config('cachefile', `cacheDir: ${path.join(work, 'a-file', 'sub')}\n`)], (r) => r.code === 1 && /is a file/.test(r.err));
const sampleDs = path.join(repo, '../shared/datasets/scifact');
await check('validate ignores dataset.sample (plans 5,183 documents where run uses 500)', 'validate --json (SciFact, sample 500)', ['validate', config('sample', `dataset: { path: ${sampleDs}, sample: { documents: 500, seed: 42 } }\n`), '--json'], (r) => r.code === 0 && /"documents":\s*500\b/.test(r.out), (r) => (/"documents":\s*\d+/.exec(r.out)?.[0] ?? firstLine(r.err)));

// Silent input changes and wrong messages.
const badUtf8 = dataset('bad-utf8', (d) => writeFileSync(path.join(d, 'questions.jsonl'), Buffer.concat([Buffer.from(readFileSync(path.join(tiny, 'questions.jsonl'), 'utf8').replace('How long', 'How \u0000long').split('\u0000').join(''), 'utf8'), Buffer.from('{"id":"q9","question":"bad \xff byte","relevant":["billing/refunds.md"]}\n', 'latin1')])));
await check('invalid UTF-8 in questions.jsonl becomes U+FFFD without a warning', 'validate (a 0xFF byte)', ['validate', config('utf8', '', badUtf8)], (r) => /not valid UTF-8/.test(r.out + r.err), (r) => (r.out + r.err).split('\n').find((l) => /UTF-8/.test(l))?.slice(0, 200) ?? firstLine(r.err));
await check('an unknown key inside a fusion entry: "Invalid input" with no key name', 'validate (hybrid.fusion weigth)', ['validate', config('fusion', 'modes: [hybrid]\nembeddings: [glove-100d]\nhybrid: { fusion: [{ method: rrf, weigth: [0.5] }] }\n')], (r) => r.code === 1 && /weigth/.test(r.err) && /weights/.test(r.err), (r) => r.err.split('\n').find((l) => /weigth/.test(l))?.trim().slice(0, 200) ?? firstLine(r.err));
const lockOut = path.join(work, 'res-lockdir');
mkdirSync(`${lockOut}.lock`, { recursive: true });
await check('a lock path that is a directory says "wait a moment"', 'run (out.lock a folder)', ['run', config('lockdir'), '--out', lockOut], (r) => r.code === 1 && /is a folder/.test(r.err));
const links = dataset('links', (d) => {
  symlinkSync(path.join(d, 'docs', 'billing'), path.join(d, 'docs', 'loop'));
  symlinkSync('/nonexistent/gone.md', path.join(d, 'docs', 'broken.md'));
});
await check('folder links and broken links reported as "extension not read"', 'validate (a folder link, a broken link)', ['validate', config('links', '', links)], (r) => r.code === 0 && /link\(s\) to a folder not followed/.test(r.out + r.err) && /broken link/.test(r.out + r.err) && !/extension not read/.test(r.out + r.err), (r) => (r.out + r.err).split('\n').filter((l) => /link\(s\)/.test(l)).map((l) => l.slice(0, 110)).join(' / '));
writeFileSync(path.join(work, 'empty.qrels'), '');
writeFileSync(path.join(work, 'one.run'), 'q1 Q0 d1 1 1.0 x\n');
await check('evaluate with an empty qrels file exits 0', 'evaluate empty.qrels one.run', ['evaluate', path.join(work, 'empty.qrels'), path.join(work, 'one.run')], (r) => r.code === 1);
// ids used as object keys: a question named __proto__ (questions.jsonl) keeps its label.
const protoDs = dataset('proto', (d) => writeFileSync(path.join(d, 'questions.jsonl'), readFileSync(path.join(tiny, 'questions.jsonl'), 'utf8').replace('"id": "q1"', '"id": "__proto__"')));
{
  const out = path.join(work, 'res-proto');
  await check('ids from user data used as object keys are dropped (__proto__)', 'run (a question __proto__) then read per-query.jsonl', ['run', config('proto', '', protoDs), '--out', out], (r) => r.code === 0 && readFileSync(path.join(out, 'per-query.jsonl'), 'utf8').includes('"qid":"__proto__"'), (r) => `exit ${r.code}; __proto__ rows in per-query.jsonl: ${r.code === 0 ? readFileSync(path.join(out, 'per-query.jsonl'), 'utf8').split('"qid":"__proto__"').length - 1 : 0}`);
}
// Cold cache progress: the CLI draws progress on the process's stderr (not through runCli's io), so it is captured there.
{
  const write = process.stderr.write.bind(process.stderr);
  let progress = '';
  process.stderr.write = ((chunk: string | Uint8Array) => ((progress += String(chunk)), true)) as typeof process.stderr.write;
  try {
    await check('cold caches print "N already done"', 'run (empty cache folder)', ['run', config('cold', `cacheDir: ${path.join(work, 'cold-cache')}\n`), '--out', path.join(work, 'res-cold')], (r) => r.code === 0 && /to do/.test(progress) && !/already done/.test(progress), () => progress.split('\n').filter((l) => /to do/.test(l)).slice(0, 2).join(' / '));
  } finally {
    process.stderr.write = write;
  }
}
// recheck compares only the nested copy.
{
  const out = path.join(work, 'res-cold');
  const csv = path.join(out, 'matrix.csv');
  const lines = readFileSync(csv, 'utf8').split('\n');
  const cols = lines[0].split(',');
  const j = cols.indexOf('ndcg'); // matrix.csv's metric columns carry no @k (k is a column)
  const cells = lines[1].split(',');
  cells[j] = String(Number(cells[j]) + 0.25);
  lines[1] = cells.join(',');
  writeFileSync(csv, lines.join('\n'));
  await check('recheck passes edits to matrix.csv as "0 disagree"', 'recheck (matrix.csv ndcg of row 1 + 0.25)', ['recheck', out], (r) => r.code === 1, (r) => (r.out + r.err).split('\n').find((l) => /disagree|matrix\.csv/.test(l))?.slice(0, 200) ?? '');
}
// runs: percent-encoding of the tool's own export (a document named with a space).
const spaced = dataset('spaced', (d) => {
  cpSync(path.join(d, 'docs', 'billing', 'refunds.md'), path.join(d, 'docs', 'billing', 'my refunds.md'));
  rmSync(path.join(d, 'docs', 'billing', 'refunds.md'));
  writeFileSync(path.join(d, 'questions.jsonl'), readFileSync(path.join(tiny, 'questions.jsonl'), 'utf8').split('billing/refunds.md').join('billing/my refunds.md'));
});
{
  const out = path.join(work, 'res-spaced');
  const first = await cli('run', config('spaced', '', spaced), '--out', out);
  const runFile = path.join(out, 'runs', 'none.keyword.k3.trec');
  await check(
    "runs: cannot read the tool's own export of a document named with a space",
    'run (runs: its own none.keyword.k3.trec)',
    ['run', config('spaced-back', `modes: []\nruns: [{ name: back, path: ${runFile} }]\n`, spaced), '--out', path.join(work, 'res-spaced-back')],
    (r) => first.code === 0 && r.code === 0 && /percent-encoded/.test(readFileSync(path.join(work, 'res-spaced-back', 'report.md'), 'utf8')),
    (r) => (r.code === 0 ? readFileSync(path.join(work, 'res-spaced-back', 'report.md'), 'utf8').split('\n').find((l) => /percent-encoded/.test(l)) ?? '' : firstLine(r.err)).slice(0, 200),
  );
}

process.stdout.write(['| defect (issue 24) | command | exit | message (first line) | fixed |', '|---|---|---|---|---|', ...rows].join('\n') + '\n');
process.exit(allHeld ? 0 : 1);

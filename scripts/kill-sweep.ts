/**
 * Acceptance measurement for issue 24 (kill -9 over every stage, no temporary survives): runs a reference sweep once,
 * then for every kill point below starts the same sweep from an empty cache folder (with the previous results in
 * `--out`), kills it with SIGKILL at that point (scripts/crash-child.ts sends it to itself), lists every file under
 * the cache folder and the `--out` parent flagging temporaries, runs the sweep again, and checks that (a) its results
 * equal the reference's (scripts/compare-results.ts: matrix.csv and matrix.json without timing, per-query.jsonl,
 * runs/*.trec) and (b) no temporary is left anywhere under the cache folder and the `--out` parent.
 *
 *   npx tsx scripts/kill-sweep.ts [--work /tmp/kill-sweep] [--only 1,4,12]
 *
 * The config has every unit kind the executor runs: the helpdesk demo, chunkings none and 128, keyword, semantic and
 * hybrid over glove-100d, a retriever module (examples/retrievers/words.mjs), an imported TREC run
 * (examples/runs/helpdesk-minisearch.trec) and the tiny cross-encoder of the rerank tests (scripts/build-tiny-model.ts)
 * at depth 5. The glove-100d binary table is built once into a folder beside `--work` and linked into every run's
 * cache, except for the kill point inside the table's own write, which gets a folder of its own.
 *
 * A temporary is any name that is not a final artefact: `*.tmp-<pid>-<ms>` (src/store/temp.ts) and `.<out>.tmp-*`,
 * `.<out>.probe-*`, `<out>.old-*` (src/run/lock.ts), SQLite's side files (`-wal`, `-shm`, `-journal`), the `--out` lock, `.partial-*`.
 * Prints a markdown table to stdout (kill point, what the kill left, what the re-run left, results equal); the full
 * listings go to `<work>/<n>/listing-after-kill.txt` and `listing-after-rerun.txt`; progress on stderr.
 * Exit 0 when every point was reached, resumed to equal results and left no temporary; 1 otherwise.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, lstatSync, mkdirSync, readdirSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { compareResults } from './compare-results.js';
import { buildTinyCrossEncoder } from './build-tiny-model.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const opt = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const work = path.resolve(opt('--work') ?? '/tmp/kill-sweep');
const only = opt('--only')?.split(',').map(Number);

/** [kill point for crash-child --kill-at, what it interrupts, needs a glove-100d folder of its own]. */
export const KILL_SWEEP_POINTS: [string, string, boolean?][] = [
  ['unit:chunking#2', 'chunking: second chunking computed, its chunk file not written'],
  ['write:\\.chunks\\.tmp-#1', 'chunk file write: temporary written, not renamed'],
  ['unit:keyword#1', 'keyword index + ranking done, checkpoint not written'],
  ['stage:embed glove-100d#1', 'model load'],
  ['write:\\.f32bin\\.tmp-#5', 'GloVe table write: matrix written, words not (80+ MB temporary)', true],
  ['progress:embed glove-100d#3', 'embedding batches: some embedded'],
  ['cache-put#1', 'embedding cache write: first batch committed to the WAL'],
  ['unit:dense#1', 'dense search done, checkpoint not written'],
  ['unit:fusion#1', 'fusion done, checkpoint not written'],
  ['progress:retriever words#40', 'external retriever: half the questions searched'],
  ['unit:run#1', 'imported run read, checkpoint not written'],
  ['progress:rerank ce d5#200', 'rerank: some pairs scored (rerank cache written)'],
  ['write:checkpoints/[0-9a-f]+\\.json\\.tmp-#3', 'ranking checkpoint write: third temporary written, not renamed'],
  ['unit:scoring#1', 'scoring'],
  ['write', 'results writing: temporary folder holds the reports and manifest'],
  ['rename:/out$#1', 'results writing: between the two renames (previous results moved to out.old-*, new ones not in place)'],
];

/** True for a path (relative to a run's folder) that is not a final artefact. */
export function isTemporary(rel: string): boolean {
  const name = path.basename(rel);
  return (
    /\.tmp-\d+-\d+$/.test(name) ||
    /^\..*\.(tmp|probe)-\d+-\d+$/.test(name) ||
    /\.old-\d+-\d+$/.test(name) ||
    rel.split(path.sep).some((p) => /\.(tmp|probe)-\d+-\d+$/.test(p)) ||
    /-(wal|shm|journal)$/.test(name) ||
    /\.lock$/.test(name) ||
    /\.partial-\d+$/.test(name)
  );
}

/** Every file and folder under `dir` (relative), following the one glove-100d link, with byte sizes. */
function listing(dir: string): { rel: string; bytes: number }[] {
  const out: { rel: string; bytes: number }[] = [];
  const walk = (abs: string, rel: string) => {
    for (const name of readdirSync(abs).sort()) {
      const a = path.join(abs, name);
      const r = path.join(rel, name);
      let st = lstatSync(a);
      let target = a;
      if (st.isSymbolicLink()) {
        target = path.resolve(path.dirname(a), readlinkSync(a));
        if (!existsSync(target)) {
          out.push({ rel: `${r} -> (broken)`, bytes: 0 });
          continue;
        }
        st = lstatSync(target);
      }
      if (st.isDirectory()) {
        out.push({ rel: `${r}/`, bytes: 0 });
        walk(target, r);
      } else out.push({ rel: r, bytes: st.size });
    }
  };
  walk(dir, '');
  return out;
}

interface Ran {
  code: number | null;
  signal: string | null;
  ms: number;
  tail: string;
  killedAt?: string;
}
function child(childArgs: string[]): Promise<Ran> {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const p = spawn(process.execPath, ['--import', 'tsx', path.join(repo, 'scripts', 'crash-child.ts'), ...childArgs], {
      cwd: repo,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let tail = '';
    let killedAt: string | undefined;
    p.stderr.on('data', (d: Buffer) => {
      for (const l of String(d).split('\n')) {
        if (l.startsWith('killing myself')) killedAt = l.replace(/^killing myself at \d+ ms: /, '');
        if (l && !l.startsWith('event ')) tail = (tail + l + '\n').slice(-3000);
      }
    });
    p.on('close', (code, signal) => resolve({ code, signal, ms: Date.now() - t0, tail, killedAt }));
  });
}

const sharedGlove = path.join(path.dirname(work), `${path.basename(work)}-models`, 'glove-100d');
const ceDir = path.join(path.dirname(work), `${path.basename(work)}-models`, 'tiny-ce');

/** Writes `<dir>/config.json` with its own cache folder; glove-100d linked to the shared table unless `ownGlove`. */
function configIn(dir: string, ownGlove = false): string {
  const cacheDir = path.join(dir, 'cache');
  mkdirSync(cacheDir, { recursive: true });
  if (!ownGlove) symlinkSync(sharedGlove, path.join(cacheDir, 'glove-100d'));
  const file = path.join(dir, 'config.json');
  writeFileSync(
    file,
    JSON.stringify({
      name: 'kill-sweep',
      dataset: { path: path.join(repo, 'datasets/helpdesk') },
      chunking: { sizes: ['none', 128], overlap: 16 },
      topK: [1, 3, 5],
      modes: ['keyword', 'semantic', 'hybrid'],
      embeddings: ['glove-100d'],
      primaryMetric: 'ndcg@5',
      cacheDir,
      retrievers: [{ name: 'words', module: path.join(repo, 'examples/retrievers/words.mjs'), options: { minShared: 1 } }],
      runs: [{ name: 'minisearch', path: path.join(repo, 'examples/runs/helpdesk-minisearch.trec') }],
      rerank: ['none', { model: `transformers:${ceDir}`, label: 'ce', depth: [5] }],
      statistics: { seed: 7, resamples: 1000, alpha: 0.05 },
    }),
  );
  return file;
}

const temporaries = (dir: string) => listing(dir).filter((f) => isTemporary(f.rel.replace(/\/$/, '')));
const names = (fs: { rel: string; bytes: number }[]) =>
  fs.length === 0 ? '0' : `${fs.length}: ${fs.map((f) => `\`${f.rel}\`${f.bytes ? ` (${f.bytes > 1e6 ? `${(f.bytes / 1e6).toFixed(0)} MB` : `${f.bytes} B`})` : ''}`).join(', ')}`;
const dump = (file: string, dir: string) =>
  writeFileSync(file, listing(dir).map((f) => `${isTemporary(f.rel.replace(/\/$/, '')) ? 'TEMP ' : '     '}${f.rel}${f.rel.endsWith('/') ? '' : ` ${f.bytes}`}`).join('\n') + '\n');

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  mkdirSync(sharedGlove, { recursive: true });
  if (!existsSync(path.join(ceDir, 'config.json'))) await buildTinyCrossEncoder(ceDir);
  if (!readdirSync(sharedGlove).some((n) => n.endsWith('.f32bin'))) {
    process.stderr.write('building the shared glove-100d table...\n');
    const d = path.join(work, 'warm');
    const w = await child([configIn(d), path.join(d, 'out')]);
    if (w.code !== 0) throw new Error(`warm-up run failed (${w.code} ${w.signal}):\n${w.tail}`);
  }
  const refDir = path.join(work, 'reference');
  const ref = await child([configIn(refDir), path.join(refDir, 'out')]);
  if (ref.code !== 0) throw new Error(`reference run failed (${ref.code} ${ref.signal}):\n${ref.tail}`);
  const refOut = path.join(refDir, 'out');
  process.stderr.write(`reference: ${(ref.ms / 1000).toFixed(1)} s\n`);

  const rows: string[] = [];
  let ok = true;
  for (const [i, [point, what, ownGlove]] of KILL_SWEEP_POINTS.entries()) {
    if (only && !only.includes(i + 1)) continue;
    const dir = path.join(work, String(i + 1));
    const config = configIn(dir, ownGlove);
    const out = path.join(dir, 'out');
    cpSync(refOut, out, { recursive: true }); // previous results, which the kill must leave alone
    const killed = await child([config, out, '--kill-at', point]);
    const reached = killed.signal === 'SIGKILL';
    if (!reached) process.stderr.write(`point ${i + 1} (${point}) not reached: exit ${killed.code}\n${killed.tail}\n`);
    dump(path.join(dir, 'listing-after-kill.txt'), dir);
    const afterKill = temporaries(dir);
    const again = await child([config, out]);
    if (again.code !== 0) process.stderr.write(`point ${i + 1}: the re-run failed (${again.code} ${again.signal}):\n${again.tail}\n`);
    dump(path.join(dir, 'listing-after-rerun.txt'), dir);
    const afterRerun = temporaries(dir);
    const diffs = again.code === 0 ? compareResults(refOut, out) : ['re-run failed'];
    if (diffs.length > 0) process.stderr.write(`point ${i + 1}: ${diffs.slice(0, 5).join('\n')}\n`);
    ok &&= reached && again.code === 0 && diffs.length === 0 && afterRerun.length === 0;
    const row = `| ${i + 1} | \`${point}\` (${what}) | ${reached ? (killed.killedAt ?? 'SIGKILL').split(`${dir}/`).join('') : `NOT REACHED (exit ${killed.code})`} | ${names(afterKill)} | ${names(afterRerun)} | ${diffs.length === 0 ? 'yes' : `NO (${diffs.length})`} |`;
    process.stderr.write(`${row}\n`);
    rows.push(row);
  }
  process.stdout.write(
    [
      `Reference (uninterrupted, empty cache): ${(ref.ms / 1000).toFixed(1)} s. Listings: ${work}/<n>/listing-after-{kill,rerun}.txt.`,
      '',
      '| # | kill point | killed at | temporaries after the kill | after the re-run | results equal the reference |',
      '|---|---|---|---|---|---|',
      ...rows,
    ].join('\n') + '\n',
  );
  process.exit(ok ? 0 : 1);
}

/**
 * Acceptance pass for issue 24 §1 ("trust nothing on disk"): the cached state of a sweep over the helpdesk demo is
 * altered in 11 ways, one at a time; after each, the sweep runs again and the script records what detected the
 * alteration (the warning naming the file, or recheck's exit code), and whether every metric and every retrieved list
 * equals the reference run's. Each rerun repairs what it found, so the cases share one warm cache folder.
 *
 *   npx tsx scripts/adversarial-cache.ts [--work /tmp/adversarial-cache]
 *
 * Grid: the demo dataset, chunkings none and 128 (overlap 16), top-k 1 and 5, keyword + semantic + hybrid with
 * glove-100d (its binary table is built once in the work folder, about 8 s). Cases on ranking checkpoints and chunk
 * files run with checkpoints (resume); cases on vectors and the GloVe table run without (resume: false), so vectors
 * are read back. Prints a markdown table to stdout; progress on stderr. Exit 1 when a case is not detected or its
 * metrics differ.
 */
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { runCli } from '../src/cli/main.js';
import { parseConfig } from '../src/config/schema.js';
import { joinCacheKey, rowChecksum } from '../src/embed/cache.js';
import { clearGloveMemo } from '../src/embed/glove.js';
import { runSweep } from '../src/run/sweep.js';
import type { SweepResult } from '../src/types.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const wi = args.indexOf('--work');
const work = path.resolve(wi >= 0 ? args[wi + 1] : '/tmp/adversarial-cache');
const cacheDir = path.join(work, 'cache');
const cpDir = path.join(cacheDir, 'checkpoints');
const log = (s: string): void => void process.stderr.write(`${s}\n`);

const configObject = {
  name: 'adversarial',
  dataset: { path: path.join(repo, 'datasets/helpdesk') },
  chunking: { sizes: ['none', 128], overlap: 16 },
  topK: [1, 5],
  modes: ['keyword', 'semantic', 'hybrid'],
  embeddings: ['glove-100d'],
  primaryMetric: 'ndcg@5',
  cacheDir,
};

async function sweep(resume: boolean): Promise<SweepResult> {
  return (await runSweep(parseConfig(configObject), { resume, now: () => new Date('2026-01-01T00:00:00Z') })).result;
}

/** Every row's status, means and retrieved lists (ids and scores), as one JSON string. */
function digest(r: SweepResult): string {
  return JSON.stringify(r.configs.map((c) => [c.config.id, c.status, c.means, c.perQuery.map((q) => [q.qid, q.retrieved])]));
}

interface Row {
  name: string;
  detectedBy: string;
  message: string;
  equal: boolean;
}

/** The ranking checkpoints: file, key, body. */
function checkpoints(): { file: string; key: string; body: { lists: [string, number | string][][] } & Record<string, unknown> }[] {
  return readdirSync(cpDir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => {
      const text = readFileSync(path.join(cpDir, f), 'utf8');
      const nl = text.indexOf('\n');
      return { file: path.join(cpDir, f), key: f.slice(0, -5), body: JSON.parse(text.slice(nl + 1)) };
    });
}

/** Writes a body under a checkpoint's file with a correct header (key and SHA-256), so only content checks catch it. */
function rewrite(file: string, key: string, body: unknown): void {
  const b = JSON.stringify(body);
  writeFileSync(file, `${JSON.stringify({ format: 2, key, sha256: createHash('sha256').update(b).digest('hex') })}\n${b}`);
}

/** A checkpoint whose lists hold at least two hits with different scores (for reordering). */
function richCheckpoint(): ReturnType<typeof checkpoints>[number] {
  const cp = checkpoints().find((c) => c.body.lists.some((l) => l.length >= 2 && l[0][1] !== l[1][1]));
  if (!cp) throw new Error('no checkpoint with two distinct scores');
  return cp;
}

function warningAbout(r: SweepResult, needle: string): string | undefined {
  return (r.manifest.warnings as string[]).find((w) => w.includes(needle));
}

function shorten(s: string | undefined, n = 150): string {
  if (s === undefined) return '(none)';
  const one = s
    .replaceAll(`${cacheDir}/`, '')
    .replaceAll(`${work}/`, '')
    .replace(/\b([0-9a-f]{8})[0-9a-f]{56}\b/g, '$1…')
    .replaceAll('\n', ' ')
    .replaceAll('|', '\\|');
  return one.length > n ? `${one.slice(0, n - 3)}...` : one;
}

async function main(): Promise<void> {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  log('reference run (builds the glove-100d table once)...');
  const reference = digest(await sweep(true));
  const rows: Row[] = [];

  /** Runs one case: `alter()` returns the file altered; the rerun must warn about it and equal the reference. */
  const caseOf = async (name: string, resume: boolean, alter: () => string): Promise<void> => {
    log(`case: ${name}`);
    const file = alter();
    const r = await sweep(resume);
    const w = warningAbout(r, path.basename(file)) ?? warningAbout(r, 'discarded');
    const by = w === undefined ? 'NOT DETECTED' : /checksum|sha256|SHA-256|hash/i.test(w) ? 'content hash / checksum' : 'content check';
    rows.push({ name, detectedBy: `${by} (warning)`, message: shorten(w), equal: digest(r) === reference });
  };

  await caseOf('checkpoint: two hits of a list reordered (hash fixed up)', true, () => {
    const cp = richCheckpoint();
    const l = cp.body.lists.find((x) => x.length >= 2 && x[0][1] !== x[1][1])!;
    [l[0], l[1]] = [l[1], l[0]];
    rewrite(cp.file, cp.key, cp.body);
    return cp.file;
  });
  await caseOf('checkpoint: an unknown id (hash fixed up)', true, () => {
    const cp = richCheckpoint();
    cp.body.lists.find((x) => x.length > 0)![0][0] = 'no-such-doc.md#0';
    rewrite(cp.file, cp.key, cp.body);
    return cp.file;
  });
  await caseOf('checkpoint: a "NaN" score (hash fixed up)', true, () => {
    const cp = richCheckpoint();
    cp.body.lists.find((x) => x.length > 0)![0][1] = 'NaN';
    rewrite(cp.file, cp.key, cp.body);
    return cp.file;
  });
  await caseOf("checkpoint: another unit's file copied under this key", true, () => {
    const [a, b] = checkpoints();
    cpSync(b.file, a.file);
    return a.file;
  });
  await caseOf('checkpoint: fewer lists than questions (hash fixed up)', true, () => {
    const cp = richCheckpoint();
    cp.body.lists.pop();
    rewrite(cp.file, cp.key, cp.body);
    return cp.file;
  });
  await caseOf('chunk file: one chunk range moved by a character, in bounds', true, () => {
    const files = readdirSync(cpDir).filter((f) => f.endsWith('.chunks'));
    const sizes = files.map((f) => readFileSync(path.join(cpDir, f)).readUInt32LE(8));
    let most = 0;
    for (let i = 1; i < sizes.length; i++) if (sizes[i] > sizes[most]) most = i;
    const file = path.join(cpDir, files[most]);
    const buf = readFileSync(file);
    buf.writeInt32LE(buf.readInt32LE(76 + 8) + 1, 76 + 8);
    writeFileSync(file, buf);
    return file;
  });
  const db = path.join(cacheDir, 'embeddings.sqlite');
  await caseOf('SQLite vectors: two rows swapped (checksums left)', false, () => {
    const d = new Database(db);
    const rs = d.prepare('SELECT rowid, vec FROM embeddings ORDER BY rowid LIMIT 2').all() as { rowid: number; vec: Buffer }[];
    const up = d.prepare('UPDATE embeddings SET vec = ? WHERE rowid = ?');
    up.run(rs[1].vec, rs[0].rowid);
    up.run(rs[0].vec, rs[1].rowid);
    d.close();
    return db;
  });
  await caseOf('SQLite vectors: a NaN stored with a valid checksum', false, () => {
    const d = new Database(db);
    // schema 3 stores a key as (model id, digest); the checksum covers the whole key string (src/embed/cache.ts)
    const r = d.prepare('SELECT e.rowid AS rowid, m.key AS model, e.digest AS digest, e.vec AS vec FROM embeddings e JOIN models m ON m.id = e.model ORDER BY e.rowid LIMIT 1').get() as { rowid: number; model: string; digest: Buffer; vec: Buffer };
    const vec = Buffer.from(r.vec);
    vec.writeFloatLE(Number.NaN, 0);
    d.prepare('UPDATE embeddings SET vec = ?, sum = ? WHERE rowid = ?').run(vec, rowChecksum(joinCacheKey(r.model, r.digest), vec), r.rowid);
    d.close();
    return db;
  });
  await caseOf('GloVe table: 16 bytes altered in the matrix', false, () => {
    clearGloveMemo(); // the table is loaded once per process: read it from disk again, as a new run would
    const dir = path.join(cacheDir, 'glove-100d');
    const file = path.join(dir, readdirSync(dir).find((n) => n.endsWith('.f32bin'))!);
    const buf = readFileSync(file);
    const at = Math.floor(buf.length / 2);
    for (let i = 0; i < 16; i++) buf[at + i] ^= 0x5a;
    writeFileSync(file, buf);
    return file;
  });

  // The results folder's copies: edited, then recheck must exit 1; a rerun writes them again and recheck passes.
  const cfgFile = path.join(work, 'adversarial.yaml');
  writeFileSync(cfgFile, JSON.stringify(configObject));
  const out = path.join(work, 'results');
  const quiet = { stdout: () => undefined, stderr: () => undefined };
  let err = '';
  const capture = { stdout: (s: string) => void (err += s), stderr: (s: string) => void (err += s) };
  if ((await runCli(['node', 'rs', 'run', cfgFile, '--out', out, '--quiet'], quiet)) !== 0) throw new Error('reference run --out failed');
  const referenceCsv = readFileSync(path.join(out, 'matrix.csv'), 'utf8');
  const recheckCase = async (name: string, alter: () => void): Promise<void> => {
    log(`case: ${name}`);
    alter();
    err = '';
    const code = await runCli(['node', 'rs', 'recheck', out], capture);
    const first = err.split('\n').filter((l) => /disagree|differ|error|≠|!=/i.test(l)).slice(0, 2).join(' / ');
    const again = await runCli(['node', 'rs', 'run', cfgFile, '--out', out, '--quiet'], quiet);
    const ok = again === 0 && (await runCli(['node', 'rs', 'recheck', out], quiet)) === 0;
    const csvEqual = metricCells(readFileSync(path.join(out, 'matrix.csv'), 'utf8')) === metricCells(referenceCsv);
    rows.push({ name, detectedBy: code === 1 ? 'recheck exit 1' : `NOT DETECTED (recheck exit ${code})`, message: shorten(first || err.split('\n')[0]), equal: ok && csvEqual });
  };
  await recheckCase('matrix.json: a flat metric value edited', () => {
    const f = path.join(out, 'matrix.json');
    const j = JSON.parse(readFileSync(f, 'utf8'));
    const row = j.rows.find((r: Record<string, unknown>) => typeof r['ndcg'] === 'number');
    row.ndcg = Number(row.ndcg) === 0.5 ? 0.25 : 0.5;
    writeFileSync(f, JSON.stringify(j, null, 2));
  });
  await recheckCase('matrix.csv: a metric cell edited', () => {
    const f = path.join(out, 'matrix.csv');
    const [header, ...lines] = readFileSync(f, 'utf8').split('\n');
    const col = header.split(',').indexOf('ndcg');
    const cells = lines[0].split(',');
    cells[col] = String(Number(cells[col]) === 0.5 ? 0.25 : 0.5);
    writeFileSync(f, [header, cells.join(','), ...lines.slice(1)].join('\n'));
  });

  process.stdout.write('| # | case | detected by | message | metrics equal to the reference |\n| --- | --- | --- | --- | --- |\n');
  rows.forEach((r, i) => process.stdout.write(`| ${i + 1} | ${r.name} | ${r.detectedBy} | ${r.message} | ${r.equal ? 'yes' : 'NO'} |\n`));
  if (rows.some((r) => r.detectedBy.startsWith('NOT') || !r.equal)) process.exitCode = 1;
  if (!existsSync(out)) process.exitCode = 1;
}

/** matrix.csv without its timing columns (build_seconds, mean_query_ms), which differ run to run. */
function metricCells(csv: string): string {
  const lines = csv.split('\n').map((l) => l.split(','));
  const timing = new Set(['build_seconds', 'mean_query_ms'].map((n) => lines[0].indexOf(n)));
  return lines.map((cells) => cells.filter((_, i) => !timing.has(i)).join(',')).join('\n');
}

await main();

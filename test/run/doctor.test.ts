/** Issue 24 §1: `doctor CACHEDIR` verifies a cache folder, lists what it would drop (exit 1), and `--fix` drops it. */
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../src/config/schema.js';
import { runSweep } from '../../src/run/sweep.js';
import { EXIT, runCli } from '../../src/cli/main.js';
import { EmbeddingCache } from '../../src/embed/cache.js';

const require = createRequire(import.meta.url);
const Database = require('better-sqlite3') as typeof import('better-sqlite3');

const here = path.dirname(new URL(import.meta.url).pathname);
const tiny = path.resolve(here, '../fixtures/sweep/tiny');

async function cli(...args: string[]): Promise<{ code: number; out: string }> {
  let out = '';
  const code = await runCli(['node', 'retrieval-sweep', ...args], { stdout: (s) => void (out += s), stderr: () => {} });
  process.exitCode = undefined;
  return { code, out };
}

describe('doctor', () => {
  it('lists an altered checkpoint and a dead run\'s temporaries, one a BM25 run file (exit 1), drops them with --fix, then finds nothing', async () => {
    const cacheDir = path.join(mkdtempSync(path.join(tmpdir(), 'rs-doctor-')), 'c');
    const config = parseConfig({ dataset: { path: tiny }, chunking: { sizes: ['none', 16], overlap: 4 }, topK: [1, 3], modes: ['keyword'], primaryMetric: 'ndcg@3', cacheDir });
    await runSweep(config);
    const cp = path.join(cacheDir, 'checkpoints');
    expect((await cli('doctor', cacheDir)).out).toContain('2 ranking checkpoints, 2 chunking checkpoints, 0 cached vectors, 0 GloVe tables checked; 0 to drop');
    const file = path.join(cp, readdirSync(cp).find((f) => f.endsWith('.json'))!);
    writeFileSync(file, readFileSync(file, 'utf8').replace(/\d(?=\]\])/, (d) => String((Number(d) + 1) % 10)));
    const deadPid = spawnSync(process.execPath, ['-e', '']).pid;
    const dead = path.join(cp, `x.json.tmp-${deadPid}-1`);
    writeFileSync(dead, '{');
    mkdirSync(path.join(cacheDir, 'bm25-runs'));
    const deadRun = path.join(cacheDir, 'bm25-runs', `bm25-run-0-0.tmp-${deadPid}-1`);
    writeFileSync(deadRun, 'x');
    // a killed run's dense vector file (issue 25: vectors past the limits.memory share)
    mkdirSync(path.join(cacheDir, 'vectors'));
    const deadVectors = path.join(cacheDir, 'vectors', `m.none.f32.tmp-${deadPid}-1`);
    writeFileSync(deadVectors, 'x');
    const r = await cli('doctor', cacheDir);
    expect(r.code).toBe(EXIT.input);
    expect(r.out).toContain('; 4 to drop (run again with --fix');
    expect(r.out).toContain(`would drop ${deadRun}: temporary of a run that is gone`);
    expect(r.out).toContain(`would drop ${deadVectors}: temporary of a run that is gone`);
    expect(r.out).toContain(`would drop ${file}: does not match its content hash`);
    expect(r.out).toContain(`would drop ${dead}: temporary of a run that is gone`);
    expect(existsSync(file)).toBe(true); // nothing changed without --fix
    const fixed = await cli('doctor', cacheDir, '--fix');
    expect(fixed.code).toBe(EXIT.ok);
    expect([existsSync(file), existsSync(dead), existsSync(deadRun), existsSync(deadVectors)]).toEqual([false, false, false, false]);
    const again = await cli('doctor', cacheDir);
    expect([again.code, again.out.includes('1 ranking checkpoints, 2 chunking checkpoints, 0 cached vectors, 0 GloVe tables checked; 0 to drop')]).toEqual([EXIT.ok, true]);
  });

  it('lists the SQLite logs (-wal, -shm) a killed run left beside embeddings.sqlite and rerank.sqlite, with sizes; its own check merges the embedding cache\'s, keeping the rows; not findings (exit 0)', async () => {
    const cacheDir = mkdtempSync(path.join(tmpdir(), 'rs-doctor-wal-'));
    const emb = path.join(cacheDir, 'embeddings.sqlite');
    EmbeddingCache.open(emb).close();
    const clock = () => {
      const db = new Database(emb); // read-write: its close checkpoints, so it leaves no log of its own
      const v = (db.prepare("SELECT value FROM meta WHERE key = 'clock'").get() as { value: number }).value;
      db.close();
      return v;
    };
    const before = clock();
    // a writer killed with SIGKILL while each database is open: a committed write sits in its -wal
    for (const [file, sql] of [
      [emb, "UPDATE meta SET value = value + 5 WHERE key = 'clock'"],
      [path.join(cacheDir, 'rerank.sqlite'), 'CREATE TABLE t (k INTEGER); INSERT INTO t VALUES (7)'],
    ]) {
      const writer = `const D = require(${JSON.stringify(require.resolve('better-sqlite3'))}); const db = new D(${JSON.stringify(file)});
        db.pragma('journal_mode = WAL'); db.exec(${JSON.stringify(sql)}); process.kill(process.pid, 'SIGKILL');`;
      expect(spawnSync(process.execPath, ['-e', writer]).signal).toBe('SIGKILL');
    }
    const logs = ['embeddings.sqlite-wal', 'embeddings.sqlite-shm', 'rerank.sqlite-wal', 'rerank.sqlite-shm'].map((n) => path.join(cacheDir, n));
    const sizes = logs.map((f) => statSync(f).size);
    expect(sizes.every((b) => b > 0)).toBe(true);
    const r = await cli('doctor', cacheDir);
    expect(r.code).toBe(EXIT.ok);
    const shown = (b: number) => (b < 104858 ? `${b} bytes` : `${(b / 1048576).toFixed(1)} MB`);
    for (let i = 0; i < 2; i++) {
      expect(r.out).toContain(`SQLite log ${logs[i]} (${shown(sizes[i])}): left by a run that ended with embeddings.sqlite open (committed rows, kept); merged into ${emb} by this check`);
    }
    for (let i = 2; i < 4; i++) {
      expect(r.out).toContain(`SQLite log ${logs[i]} (${shown(sizes[i])}): left by a run that ended with rerank.sqlite open (committed rows, kept); the next run merges it into ${path.join(cacheDir, 'rerank.sqlite')}`);
    }
    expect(logs.map((f) => existsSync(f))).toEqual([false, false, true, true]);
    expect(clock()).toBe(before + 5); // the killed run's committed write was merged, not lost
    const json = JSON.parse((await cli('doctor', cacheDir, '--json')).out) as { logs: { file: string; merged: boolean }[] };
    expect(json.logs.map((l) => [path.basename(l.file), l.merged])).toEqual([['rerank.sqlite-wal', false], ['rerank.sqlite-shm', false]]);
  });

  it('a folder that does not exist is exit 1 naming it', async () => {
    expect((await cli('doctor', '/nonexistent/cache')).code).toBe(EXIT.input);
  });
});

/** Issue 24 §1: `doctor CACHEDIR` verifies a cache folder, lists what it would drop (exit 1), and `--fix` drops it. */
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../src/config/schema.js';
import { runSweep } from '../../src/run/sweep.js';
import { EXIT, runCli } from '../../src/cli/main.js';

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

  it('a folder that does not exist is exit 1 naming it', async () => {
    expect((await cli('doctor', '/nonexistent/cache')).code).toBe(EXIT.input);
  });
});

/**
 * Issue 24 §3: every temporary the tool writes in the cache folder (ranking checkpoints, chunk files, the GloVe table,
 * LanceDB sidecars) is named `<file>.tmp-<pid>-<ms>`, and the next run removes those whose owner is gone. A child
 * process writes the leftovers under its own pid and is killed with SIGKILL; doctor lists them, then each folder's
 * owner removes them when it opens the folder, and a live process's temporary is kept.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadGloveTable } from '../../src/embed/glove.js';
import { openLanceFolder } from '../../src/retrieve/lancedb.js';
import { CheckpointStore } from '../../src/run/checkpoint.js';
import { doctorCache } from '../../src/run/doctor.js';
import { tempPathFor } from '../../src/store/temp.js';

let cacheDir: string;
let leftovers: string[];
let live: string;

/** Runs a node child that writes `files` (relative to cacheDir, `PID` replaced by its pid), then kills it with SIGKILL. */
async function writeThenKill(files: string[]): Promise<string[]> {
  const script =
    `const fs = require('fs'), path = require('path');` +
    `for (const f of ${JSON.stringify(files)}) fs.writeFileSync(path.join(${JSON.stringify(cacheDir)}, f.replace('PID', process.pid)), 'half');` +
    `process.stdout.write('ready\\n'); setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await exited;
  return files.map((f) => path.join(cacheDir, f.replace('PID', String(child.pid))));
}

beforeAll(async () => {
  cacheDir = mkdtempSync(path.join(tmpdir(), 'rs-dead-tmp-'));
  for (const d of ['checkpoints', 'glove-100d', 'lancedb']) mkdirSync(path.join(cacheDir, d));
  leftovers = await writeThenKill([
    'checkpoints/abc.json.tmp-PID-1',
    'checkpoints/abc.chunks.tmp-PID-2',
    'glove-100d/words.1-x.f32bin.tmp-PID-3',
    'lancedb/v-123.json.tmp-PID-4',
  ]);
  live = tempPathFor(path.join(cacheDir, 'lancedb', 'mine.json'));
  writeFileSync(live, 'being written');
});
afterAll(() => rmSync(cacheDir, { recursive: true, force: true }));

describe('temporaries of a killed run', () => {
  it('are all on the temp-name scheme, and doctor lists each of them (and not the live one)', () => {
    for (const f of leftovers) expect(path.basename(f)).toMatch(/\.tmp-\d+-\d+$/);
    expect(leftovers.every((f) => existsSync(f))).toBe(true);
    const report = doctorCache(cacheDir);
    expect(report.findings.map((f) => f.what).sort()).toEqual([...leftovers].sort());
  });

  it('opening the checkpoint store removes the checkpoint and chunk-file temporaries', () => {
    const store = new CheckpointStore(cacheDir);
    expect([...store.removedTemporaries].sort()).toEqual(leftovers.slice(0, 2).sort());
    expect(readdirSync(path.join(cacheDir, 'checkpoints'))).toEqual([]);
  });

  it('loading the GloVe table removes the table temporary', async () => {
    const src = path.join(cacheDir, 'small.json');
    writeFileSync(
      src,
      '{"precision":8,"l2NormIndex":1,"wordIndex":2,"size":1,"dimensions":1,"words":["a"],"vectors":{"a":[1,1,0]},"unkVector":[0,-1]}',
    );
    await loadGloveTable(cacheDir, { sourceFile: src });
    expect(existsSync(leftovers[2])).toBe(false);
    expect(readdirSync(path.join(cacheDir, 'glove-100d')).filter((n) => n.includes('.tmp-'))).toEqual([]);
  });

  it('opening the LanceDB folder removes the sidecar temporary and keeps a live process\'s', () => {
    openLanceFolder(cacheDir);
    expect(existsSync(leftovers[3])).toBe(false);
    expect(existsSync(live)).toBe(true);
  });

  it('afterwards doctor finds nothing to drop', () => {
    expect(doctorCache(cacheDir).findings).toEqual([]);
  });
});

/**
 * Progress counts are true on a first run (issue 22): a stage whose work all happens in this run starts at done 0, so
 * the CLI never says "already done" of work this run did ("324406 of 341479 to do, 17073 already done").
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createProgress } from '../../src/cli/progress.js';
import { parseConfig } from '../../src/config/schema.js';
import { progressFromZero, runSweep, type SweepEvent } from '../../src/run/sweep.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const tiny = path.resolve(here, '../fixtures/sweep/tiny');
const cacheDir = mkdtempSync(path.join(tmpdir(), 'rs-progress-'));
afterAll(() => rmSync(cacheDir, { recursive: true, force: true }));

describe('progressFromZero', () => {
  it('puts a done-0 event before a first report that comes after some work, and passes the rest through', () => {
    const events: SweepEvent[] = [];
    const on = progressFromZero((e) => events.push(e), 'glove-100d one-time table');
    on(17073, 341479);
    on(341479, 341479);
    expect(events).toEqual([
      { kind: 'progress', stage: 'glove-100d one-time table', done: 0, total: 341479 },
      { kind: 'progress', stage: 'glove-100d one-time table', done: 17073, total: 341479 },
      { kind: 'progress', stage: 'glove-100d one-time table', done: 341479, total: 341479 },
    ]);
    const plain: SweepEvent[] = [];
    const zero = progressFromZero((e) => plain.push(e), 's');
    zero(0, 3);
    expect(plain).toEqual([{ kind: 'progress', stage: 's', done: 0, total: 3 }]);
  });

  it('the printer then says "N to do", never "already done", for the first run of such a stage', () => {
    const lines: string[] = [];
    const stream = { write: (s: string) => (lines.push(...s.split('\n').filter((l) => l !== '')), true), isTTY: false };
    const p = createProgress({ stream: stream as unknown as NodeJS.WritableStream, tty: false, now: () => 0 });
    const on = progressFromZero(p.onEvent, 'glove-100d one-time table');
    on(17073, 341479);
    p.stop();
    expect(lines[0]).toBe('glove-100d one-time table: 341479 to do');
  });
});

describe('a first sweep: every chunking and retriever stage starts at 0', () => {
  it('chunk and retriever stages report done 0 first (no cache, no checkpoint)', async () => {
    const words = path.resolve(here, '../../examples/retrievers/words.mjs');
    const config = parseConfig({
      name: 'progress',
      dataset: { path: tiny },
      chunking: { sizes: ['none', 16], overlap: 4 },
      topK: [1],
      primaryMetric: 'ndcg@1',
      modes: [],
      retrievers: [{ name: 'words', module: words, chunking: 16 }],
      cacheDir,
    });
    const events: SweepEvent[] = [];
    await runSweep(config, { onEvent: (e) => events.push(e), resume: false });
    const first = new Map<string, number>();
    for (const e of events) if (e.kind === 'progress' && !first.has(e.stage)) first.set(e.stage, e.done);
    const stages = [...first.keys()];
    expect(stages).toContain('chunk cs16-ov4');
    expect(stages).toContain('retriever words');
    for (const [stage, done] of first) expect([stage, done]).toEqual([stage, 0]);
  });
});

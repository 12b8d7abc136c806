/**
 * The stall watchdog (src/run/stall.ts, issue 26): a unit without progress for limits.stallSeconds fails its rows with
 * an error naming the unit, what it waited for and the remedy, and the rest of the grid is written. The watchdog's
 * clock is tested with fake timers (no real waiting); the sweep test uses a 1 s limit and a retriever module that never
 * answers (test/fixtures/retrievers/stuck.mjs).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../src/config/schema.js';
import { isHarnessError } from '../../src/errors.js';
import { runSweep, type SweepEvent } from '../../src/run/sweep.js';
import { StallWatchdog, noteProgress, type StallHeartbeat } from '../../src/run/stall.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const tiny = path.join(repo, 'test/fixtures/sweep/tiny');
const stuck = path.join(repo, 'test/fixtures/retrievers/stuck.mjs');

describe('StallWatchdog (fake timers)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('fails a unit that never answers after stallSeconds, naming the unit, what it waited for and the remedy', async () => {
    vi.useFakeTimers();
    const beats: StallHeartbeat[] = [];
    const w = new StallWatchdog({ stallSeconds: 30, onHeartbeat: (b) => beats.push(b) });
    let signal: AbortSignal | undefined;
    const p = w.run(
      'none.keyword-lance-fts',
      'the index build',
      (watch) => {
        signal = watch.signal;
        return new Promise<never>(() => {});
      },
      'check LANCE_CPU_THREADS',
    );
    const caught = p.catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(29_000);
    expect(signal!.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1_000);
    const e = await caught;
    expect(isHarnessError(e, 'UNIT_STALLED')).toBe(true);
    const err = e as Error & { remedy?: string };
    expect(err.message).toBe('unit none.keyword-lance-fts made no progress for 30 s while waiting for the index build; its rows fail');
    expect(err.remedy).toBe('check LANCE_CPU_THREADS; if it is only slow, raise limits.stallSeconds (now 30) in the config');
    expect(signal!.aborted).toBe(true);
    // A heartbeat at 10 s and at 20 s without progress (30 s is the failure itself).
    expect(beats.map((b) => b.quietSeconds)).toEqual([10, 20]);
    expect(beats[0]).toEqual({ unit: 'none.keyword-lance-fts', waitingFor: 'the index build', runningSeconds: 10, quietSeconds: 10, stallSeconds: 30 });
  });

  it('progress from inside the unit (noteProgress, also through awaits) resets the clock and renames what it waits for', async () => {
    vi.useFakeTimers();
    const beats: StallHeartbeat[] = [];
    const w = new StallWatchdog({ stallSeconds: 30, onHeartbeat: (b) => beats.push(b) });
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    // 25 s of work, progress every 25 s, four times: 100 s in all, never 30 s quiet.
    const p = w.run('u', 'start', async () => {
      for (let i = 0; i < 4; i++) {
        await sleep(25_000);
        noteProgress(`step ${i + 1}`);
      }
      return 'done';
    });
    await vi.advanceTimersByTimeAsync(100_000);
    await expect(p).resolves.toBe('done');
    // Quiet stretches of 25 s: one heartbeat in each (at 10 s quiet; the next would be at 20 s quiet, 10 s after it).
    expect(beats.map((b) => b.waitingFor)).toEqual(['start', 'start', 'step 1', 'step 1', 'step 2', 'step 2', 'step 3', 'step 3']);
    expect(beats.map((b) => b.quietSeconds)).toEqual([10, 20, 10, 20, 10, 20, 10, 20]);
  });

  it('a unit that throws rejects with its own error; noteProgress outside any unit does nothing', async () => {
    const w = new StallWatchdog({ stallSeconds: 30 });
    noteProgress('nobody listens');
    await expect(w.run('u', 'x', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(w.run('u', 'x', () => { throw new Error('sync boom'); })).rejects.toThrow('sync boom');
  });

  it('refuses a limit that is not > 0', () => {
    expect(() => new StallWatchdog({ stallSeconds: 0 })).toThrow(/limits\.stallSeconds \(0\) must be a number of seconds > 0/);
  });
});

describe('limits.stallSeconds in the config', () => {
  it('defaults to 300 and refuses 0', () => {
    const base = { dataset: { path: tiny }, topK: [1], modes: ['keyword'], primaryMetric: 'ndcg@1' };
    expect(parseConfig(base).limits.stallSeconds).toBe(300);
    expect(parseConfig({ ...base, limits: { stallSeconds: 1.5 } }).limits.stallSeconds).toBe(1.5);
    expect(() => parseConfig({ ...base, limits: { stallSeconds: 0 } })).toThrow(/limits\.stallSeconds/);
    expect(() => parseConfig({ ...base, limits: { stalSeconds: 5 } })).toThrow(/stalSeconds/);
  });
});

describe('a stalled unit in the sweep', () => {
  it('fails only its rows, with the unit and what it waited for; every other row is written', async () => {
    const config = parseConfig({
      dataset: { path: tiny },
      topK: [1, 3],
      modes: ['keyword'],
      primaryMetric: 'ndcg@3',
      cacheDir: path.join(mkdtempSync(path.join(tmpdir(), 'rs-stall-')), 'c'),
      limits: { stallSeconds: 1 },
      retrievers: [
        { name: 'stuck-build', module: stuck, options: { at: 'build' } },
        // A per-search timeout far beyond the limit: only the watchdog can end it.
        { name: 'stuck-search', module: stuck, options: { at: 'search' }, timeoutMs: 600_000 },
      ],
    });
    const events: SweepEvent[] = [];
    const { result } = await runSweep(config, { onEvent: (e) => events.push(e) });
    const byId = new Map(result.configs.map((c) => [c.config.id, c]));
    expect([...byId.keys()]).toEqual(['none.keyword.k1', 'none.keyword.k3', 'none.stuck-build.k1', 'none.stuck-build.k3', 'none.stuck-search.k1', 'none.stuck-search.k3']);
    expect(['none.keyword.k1', 'none.keyword.k3'].map((id) => byId.get(id)!.status)).toEqual(['ok', 'ok']);
    const waited = { 'stuck-build': 'its index build and first results', 'stuck-search': 'answers to its searches (5 questions)' }; // q6 has no relevant document: 6 − 1 scored
    for (const [name, what] of Object.entries(waited))
      for (const k of [1, 3]) {
        const row = byId.get(`none.${name}.k${k}`)!;
        expect(row.status).toBe('failed');
        expect(row.error).toBe(
          `unit none.${name} made no progress for 1 s while waiting for ${what}; its rows fail (remedy: if it is only slow, raise limits.stallSeconds (now 1) in the config)`,
        );
      }
    const manifest = result.manifest.retrievers as { name: string; error?: string }[];
    expect(manifest.map((r) => [r.name, /made no progress for 1 s/.test(r.error ?? '')])).toEqual([
      ['stuck-build', true],
      ['stuck-search', true],
    ]);
    expect(events.filter((e) => e.kind === 'warning' && /unit none\.stuck-(build|search) made no progress/.test(e.message))).toHaveLength(2);
  }, 30_000);
});

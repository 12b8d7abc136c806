/**
 * src/retrieve/native-work.ts (issue 26): a LanceDB index build counts as progress only through its own signals (the
 * CPU of LanceDB's threads, the bytes of its own table folder), not through the process's CPU, so a busy unit beside
 * it no longer keeps a stalled one alive. The /proc reader is tested on a hand-written task folder (exact arithmetic)
 * and on this process's real threads; the watchdog test drives the real StallWatchdog with fake timers.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isHarnessError } from '../../src/errors.js';
import {
  LANCEDB_THREAD_PREFIXES,
  folderBytes,
  readThreadCpu,
  threadCpuCounter,
  threadCpuDelta,
  watchNativeCall,
} from '../../src/retrieve/native-work.js';
import { StallWatchdog, noteProgress, type StallHeartbeat } from '../../src/run/stall.js';

/** A /proc/<pid>/stat line: pid (comm) state ppid … with utime and stime (ticks) as fields 14 and 15. */
function statLine(tid: number, comm: string, utime: number, stime: number): string {
  // fields 3..13 after the name: state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
  return `${tid} (${comm}) S 1 1 1 0 -1 4194560 100 0 0 0 ${utime} ${stime} 0 0 20 0 9 0 100 1000 200\n`;
}

function taskDir(threads: { tid: number; comm: string; utime: number; stime: number }[]): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'rs-task-'));
  for (const t of threads) {
    mkdirSync(path.join(dir, String(t.tid)));
    writeFileSync(path.join(dir, String(t.tid), 'stat'), statLine(t.tid, t.comm, t.utime, t.stime));
  }
  return dir;
}

describe('readThreadCpu and threadCpuCounter (a hand-written /proc/self/task)', () => {
  it("sums utime + stime (USER_HZ = 100 ticks a second) of LanceDB's threads only, per thread; names with spaces and parentheses parse", () => {
    const dir = taskDir([
      { tid: 10, comm: 'node', utime: 5000, stime: 300 },
      { tid: 11, comm: 'lance-cpu', utime: 250, stime: 50 },
      { tid: 12, comm: 'tokio-rt-worker', utime: 40, stime: 2 },
      { tid: 13, comm: 'odd (name) x', utime: 999, stime: 1 },
      { tid: 14, comm: 'libuv-worker', utime: 7, stime: 0 },
    ]);
    const cpu = readThreadCpu(LANCEDB_THREAD_PREFIXES, dir)!;
    expect([...cpu.keys()].sort()).toEqual(['11', '12']);
    expect(cpu.get('11')).toBeCloseTo((250 + 50) / 100, 10);
    expect(cpu.get('12')).toBeCloseTo((40 + 2) / 100, 10);
    expect(readThreadCpu(['odd (name'], dir)!.get('13')).toBeCloseTo((999 + 1) / 100, 10);
    expect(readThreadCpu(LANCEDB_THREAD_PREFIXES, path.join(dir, 'absent'))).toBeUndefined();
  });

  it('a thread that exits does not make the counter fall; a new thread counts from its first tick', () => {
    const dir = taskDir([
      { tid: 11, comm: 'lance-cpu', utime: 100, stime: 0 },
      { tid: 12, comm: 'lance-cpu', utime: 200, stime: 0 },
    ]);
    const counter = threadCpuCounter(['lance-cpu'], dir)!;
    expect(counter()).toBe(0);
    // thread 11 works 30 ticks, then thread 12 exits and thread 15 appears with 5 ticks
    writeFileSync(path.join(dir, '11', 'stat'), statLine(11, 'lance-cpu', 130, 0));
    expect(counter()).toBeCloseTo(30 / 100, 10);
    rmSync(path.join(dir, '12'), { recursive: true });
    mkdirSync(path.join(dir, '15'));
    writeFileSync(path.join(dir, '15', 'stat'), statLine(15, 'lance-cpu', 4, 1));
    expect(counter()).toBeCloseTo(30 / 100 + (4 + 1) / 100, 10);
    expect(threadCpuDelta(new Map([['1', 2]]), new Map([['1', 1.5]]))).toBe(0);
  });

  it('folderBytes sums the files of a folder tree (0 for a missing folder)', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rs-bytes-'));
    mkdirSync(path.join(dir, 'a', 'b'), { recursive: true });
    writeFileSync(path.join(dir, 'x'), 'x'.repeat(10));
    writeFileSync(path.join(dir, 'a', 'y'), 'y'.repeat(200));
    writeFileSync(path.join(dir, 'a', 'b', 'z'), 'z'.repeat(3000));
    expect(folderBytes(dir)).toBe(10 + 200 + 3000);
    expect(folderBytes(path.join(dir, 'missing'))).toBe(0);
  });
});

describe.runIf(process.platform === 'linux')("this process's real threads", () => {
  it("a busy worker thread raises the process's CPU time but not the CPU counted for LanceDB's threads", async () => {
    const lance = threadCpuCounter(LANCEDB_THREAD_PREFIXES)!;
    const nodeThreads = threadCpuCounter(['node'])!;
    const before = process.cpuUsage();
    // A fixed amount of work (not a time), so the CPU it takes does not depend on the machine's load.
    const w = new Worker('let x = 0; for (let i = 0; i < 1e8; i++) x = (x + i) % 1000003; require("node:worker_threads").parentPort.postMessage(x);', {
      eval: true,
    });
    const sampled: number[] = [];
    const poll = setInterval(() => sampled.push(nodeThreads()), 20);
    await new Promise((resolve, reject) => w.once('message', resolve).once('error', reject));
    clearInterval(poll);
    const used = process.cpuUsage(before);
    // The worker's thread is named `node`: the reader sees its CPU (sampled while it ran; an exited thread leaves /proc)
    expect(Math.max(0, ...sampled)).toBeGreaterThan(0.05);
    expect((used.user + used.system) / 1e6).toBeGreaterThan(0.05);
    // … and none of it is LanceDB's (this test file never loads LanceDB; threads of other files' LanceDB would be idle)
    expect(lance()).toBe(0);
    await w.terminate();
  }, 60_000);
});

describe('a stalled LanceDB build next to a busy unit (StallWatchdog, fake timers)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("fails the stalled build at stallSeconds although the process is busy; the process-wide rule would have kept it alive", async () => {
    vi.useFakeTimers();
    // The counters the units read: the whole process's CPU (the busy BM25 unit adds 1 s of CPU each second), LanceDB's
    // threads' CPU (a deadlocked build: parked, constant) and the stalled build's table folder (constant).
    let processCpu = 0;
    const lanceCpu = 0.42;
    const tableBytes = 4096;
    const beats: StallHeartbeat[] = [];
    const w = new StallWatchdog({ stallSeconds: 30, onHeartbeat: (b) => beats.push(b) });
    const never = () => new Promise<never>(() => {});
    const stalled = w
      .run('none.keyword-lance-fts', 'the LanceDB full-text index build', (watch) =>
        watchNativeCall(never(), { onProgress: () => watch.progress(), pollMs: 5000, sources: { cpuSeconds: () => lanceCpu, bytes: () => tableBytes } }),
      )
      .catch((e: unknown) => e);
    // The same stalled build read the way it was before (process-wide CPU): kept alive while any unit is busy.
    let oldRuleSettled = false;
    const oldRule = w
      .run('none.semantic-lance-ivfpq.glove-100d', 'the LanceDB vector index build', (watch) =>
        watchNativeCall(never(), { onProgress: () => watch.progress(), pollMs: 5000, sources: { cpuSeconds: () => processCpu, bytes: () => tableBytes } }),
      )
      .catch((e: unknown) => e)
      .finally(() => {
        oldRuleSettled = true;
      });
    // The busy unit: 60 s of BM25 work on worker threads, reporting its own progress every second.
    const busy = w.run('none.keyword', 'the BM25 index build', async () => {
      for (let s = 0; s < 60; s++) {
        await new Promise((r) => setTimeout(r, 1000));
        processCpu += 1;
        noteProgress();
      }
      return 'built';
    });
    await vi.advanceTimersByTimeAsync(60_000);
    await expect(busy).resolves.toBe('built');
    const e = await stalled;
    expect(isHarnessError(e, 'UNIT_STALLED')).toBe(true);
    expect((e as Error).message).toBe('unit none.keyword-lance-fts made no progress for 30 s while waiting for the LanceDB full-text index build; its rows fail');
    expect(oldRuleSettled).toBe(false);
    // Once the busy unit is done the process is idle and the old rule too lets the stalled build fail, 30 s after the
    // last poll that saw CPU (at 60 or 65 s, depending on which timer fires first at 60 s).
    await vi.advanceTimersByTimeAsync(40_000);
    expect(isHarnessError(await oldRule, 'UNIT_STALLED')).toBe(true);
    // The stalled build's heartbeats: every 10 s of its 30 (the failure is the third).
    expect(beats.filter((b) => b.unit === 'none.keyword-lance-fts').map((b) => b.quietSeconds)).toEqual([10, 20]);
  });

  it('a build whose own threads work, or whose own folder grows, stays alive without any other progress', async () => {
    vi.useFakeTimers();
    let lanceCpu = 0;
    let bytes = 0;
    let done: (v: string) => void = () => {};
    const w = new StallWatchdog({ stallSeconds: 30 });
    // 0.2 s of LanceDB CPU per 5 s poll = 4 % of one core (≥ the 2 % rule) for 50 s, then 50 s of folder growth only.
    const cpuPhase = setInterval(() => (lanceCpu += 0.2), 5000);
    const p = w.run('none.semantic-lance-ivfpq.glove-100d', 'the LanceDB vector index build', (watch) =>
      watchNativeCall(new Promise<string>((r) => (done = r)), {
        onProgress: () => watch.progress(),
        pollMs: 5000,
        sources: { cpuSeconds: () => lanceCpu, bytes: () => bytes },
      }),
    );
    await vi.advanceTimersByTimeAsync(50_000);
    clearInterval(cpuPhase);
    const growPhase = setInterval(() => (bytes += 1 << 20), 5000);
    await vi.advanceTimersByTimeAsync(50_000);
    clearInterval(growPhase);
    done('indexed');
    await expect(p).resolves.toBe('indexed');
  });

  it('CPU below 2 % of one core does not count (the deadlock used about 0.5 %)', async () => {
    vi.useFakeTimers();
    let lanceCpu = 0;
    const seen: number[] = [];
    // 0.09 s per 5 s poll = 1.8 % of one core: no progress; 0.1 s = exactly 2 %: progress.
    const call = watchNativeCall(new Promise<void>(() => {}), {
      onProgress: () => seen.push(Date.now()),
      pollMs: 5000,
      sources: { cpuSeconds: () => lanceCpu, bytes: () => 0 },
    });
    void call;
    const start = Date.now();
    lanceCpu += 0.09;
    await vi.advanceTimersByTimeAsync(5000);
    expect(seen).toEqual([]);
    lanceCpu += 0.1;
    await vi.advanceTimersByTimeAsync(5000);
    expect(seen).toEqual([start + 10_000]);
  });
});

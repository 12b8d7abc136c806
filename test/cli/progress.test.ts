/** The progress reporter without a terminal (plain lines), and with two stages running at once. */
import { describe, expect, it } from 'vitest';
import { createProgress } from '../../src/cli/progress.js';

function capture() {
  const lines: string[] = [];
  const stream = { write: (s: string) => (lines.push(...s.split('\n').filter((l) => l !== '')), true), isTTY: false };
  return { lines, stream: stream as unknown as NodeJS.WritableStream };
}

describe('progress without a terminal', () => {
  it('a line when a stage starts, one after each 10 s, one at the end with the rate since the first event', () => {
    const { lines, stream } = capture();
    let t = 0;
    const p = createProgress({ stream, tty: false, now: () => t });
    p.onEvent({ kind: 'progress', stage: 'embed use-lite', done: 20, total: 120 }); // 20 from the cache
    t = 5_000;
    p.onEvent({ kind: 'progress', stage: 'embed use-lite', done: 40, total: 120 }); // < 10 s: no line
    t = 10_000;
    p.onEvent({ kind: 'progress', stage: 'embed use-lite', done: 70, total: 120 });
    t = 20_000;
    p.onEvent({ kind: 'progress', stage: 'embed use-lite', done: 120, total: 120 });
    p.stop();
    expect(lines).toEqual([
      'embed use-lite: 100 of 120 to do, 20 already done', // 120 − 20 = 100 left
      // (70 − 20) / 10 s = 5.0/s; (120 − 70) / 5.0 = 10 s left.
      'embed use-lite: 70/120 (10 s, 5.0/s, ETA 10 s)',
      // (120 − 20) / 20 s = 5.0/s.
      'embed use-lite: 120/120 in 20 s (5.0/s)',
    ]);
  });

  it('two models embedding at once keep their own counts (no restart on every event)', () => {
    const { lines, stream } = capture();
    let t = 0;
    const p = createProgress({ stream, tty: false, now: () => t });
    p.onEvent({ kind: 'progress', stage: 'embed a', done: 0, total: 10 });
    p.onEvent({ kind: 'progress', stage: 'embed b', done: 0, total: 4 });
    t = 1_000;
    p.onEvent({ kind: 'progress', stage: 'embed a', done: 5, total: 10 });
    p.onEvent({ kind: 'progress', stage: 'embed b', done: 4, total: 4 });
    t = 2_000;
    p.onEvent({ kind: 'progress', stage: 'embed a', done: 10, total: 10 });
    p.stop();
    expect(lines).toEqual([
      'embed a: 10 to do',
      'embed b: 4 to do',
      'embed b: 4/4 in 1 s (4.0/s)',
      'embed a: 10/10 in 2 s (5.0/s)',
    ]);
  });

  it('quiet keeps warnings; a stage that starts complete (all cached) is one line', () => {
    const { lines, stream } = capture();
    const q = createProgress({ stream, tty: false, quiet: true });
    q.onEvent({ kind: 'stage', stage: 'load' });
    q.onEvent({ kind: 'warning', message: 'w' });
    q.onEvent({ kind: 'progress', stage: 'x', done: 1, total: 2 });
    expect(lines).toEqual(['warning: w']);
    const { lines: l2, stream: s2 } = capture();
    createProgress({ stream: s2, tty: false }).onEvent({ kind: 'progress', stage: 'embed a', done: 5, total: 5 });
    expect(l2).toEqual(['embed a: 5/5']);
  });

  it('after stop() (Ctrl-C) later events print nothing, so the interrupted message stays the last line', () => {
    const { lines, stream } = capture();
    const p = createProgress({ stream, tty: false });
    p.onEvent({ kind: 'progress', stage: 'embed a', done: 0, total: 10 });
    p.stop();
    p.onEvent({ kind: 'progress', stage: 'embed a', done: 5, total: 10 });
    p.onEvent({ kind: 'warning', message: 'late' });
    expect(lines).toEqual(['embed a: 10 to do']);
  });
});

/**
 * Progress of a sweep on stderr. On a terminal: one bar per stage that is running (cli-progress MultiBar), so two
 * models embedding at once get a bar each, with the rate and the ETA; a finished stage's bar is replaced by one line.
 * Without a terminal: a line when a stage starts, one every 10 s while it runs, and one when it ends.
 */
import cliProgress from 'cli-progress';
import type { SweepEvent } from '../run/sweep.js';

/** Options of {@link createProgress}. */
export interface ProgressOptions {
  /** Where to write (default process.stderr). */
  stream?: NodeJS.WritableStream & { isTTY?: boolean };
  /** Draw bars (default: the stream is a terminal). */
  tty?: boolean;
  /** No progress, only warnings. */
  quiet?: boolean;
  /** Milliseconds clock (default Date.now); tests pass a fake. */
  now?: () => number;
  /** Interval of the plain lines, in milliseconds (default 10 000). */
  intervalMs?: number;
}

/** The progress reporter: feed it sweep events, call `stop()` once the sweep ends (idempotent; later events are ignored). */
export interface Progress {
  onEvent(e: SweepEvent): void;
  /** Writes a line above the bars (or plainly without a terminal). */
  log(line: string): void;
  stop(): void;
}

interface StageState {
  bar?: cliProgress.SingleBar;
  total: number;
  /** `done` of the first event (cache hits arrive at once): the rate counts only what came after. */
  first: number;
  startedAt: number;
  lastLine: number;
  done: number;
}

/** `12.3/s` (texts or items per second since the stage's first event). */
function rateOf(st: StageState, now: number): string {
  const secs = (now - st.startedAt) / 1000;
  if (secs <= 0 || st.done <= st.first) return '-';
  const r = (st.done - st.first) / secs;
  return r >= 100 ? r.toFixed(0) : r.toFixed(1);
}

/** Seconds left at the rate so far, or null. */
function etaOf(st: StageState, now: number): number | null {
  const secs = (now - st.startedAt) / 1000;
  if (secs <= 0 || st.done <= st.first) return null;
  return ((st.total - st.done) * secs) / (st.done - st.first);
}

function fmtSeconds(s: number | null): string {
  if (s === null || !Number.isFinite(s)) return '?';
  if (s < 60) return `${Math.round(s)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(Math.round(s % 60)).padStart(2, '0')} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
}

/** Creates a reporter (see the module comment). */
export function createProgress(options: ProgressOptions = {}): Progress {
  const stream = options.stream ?? process.stderr;
  const tty = options.tty ?? Boolean(stream.isTTY);
  const quiet = Boolean(options.quiet);
  const now = options.now ?? Date.now;
  const interval = options.intervalMs ?? 10_000;
  const stages = new Map<string, StageState>();
  /** Stages whose end was reported: repeated final events stay silent. */
  const finished = new Set<string>();
  let multi: cliProgress.MultiBar | undefined;

  const write = (line: string) => {
    if (multi) multi.log(`${line}\n`);
    else stream.write(`${line}\n`);
  };
  const bars = () => {
    multi ??= new cliProgress.MultiBar(
      {
        format: '{stage} [{bar}] {value}/{total} {rate}/s ETA {left}',
        barsize: 24,
        stream,
        hideCursor: true,
        clearOnComplete: true,
        autopadding: true,
        etaBuffer: 50,
      },
      cliProgress.Presets.shades_classic,
    );
    return multi;
  };
  const finish = (stage: string, st: StageState) => {
    const t = now();
    if (st.bar) {
      multi?.remove(st.bar);
      st.bar = undefined;
    }
    stages.delete(stage);
    finished.add(stage);
    if (multi && stages.size === 0) {
      // Stop the bars first: a line logged just before stop() would be lost with the cleared bars.
      multi.stop();
      multi = undefined;
    }
    write(`${stage}: ${st.done}/${st.total} in ${fmtSeconds((t - st.startedAt) / 1000)} (${rateOf(st, t)}/s)`);
  };

  let stopped = false;
  const onEvent = (e: SweepEvent) => {
    if (stopped) return;
    if (e.kind === 'warning') {
      write(`warning: ${e.message}`);
      return;
    }
    if (quiet) return;
    if (e.kind === 'stage') {
      write(`${e.stage}${e.detail ? `: ${e.detail}` : ''}`);
      return;
    }
    const t = now();
    let st = stages.get(e.stage);
    if (!st) {
      if (e.done >= e.total && finished.has(e.stage)) return;
      finished.delete(e.stage);
      if (e.done >= e.total) {
        finished.add(e.stage);
        // A stage that starts finished (everything from the cache): one line, no bar.
        write(`${e.stage}: ${e.done}/${e.total}`);
        return;
      }
      st = { total: e.total, first: e.done, startedAt: t, lastLine: t, done: e.done };
      stages.set(e.stage, st);
      if (tty) {
        st.bar = bars().create(e.total, e.done, { stage: e.stage.padEnd(20), rate: '-', left: '?' });
      } else {
        write(e.done > 0 ? `${e.stage}: ${e.total - e.done} of ${e.total} to do, ${e.done} already done` : `${e.stage}: ${e.total} to do`);
      }
    }
    st.done = e.done;
    st.total = e.total;
    if (st.bar) {
      st.bar.setTotal(e.total);
      st.bar.update(e.done, { rate: rateOf(st, t), left: fmtSeconds(etaOf(st, t)) });
    } else if (t - st.lastLine >= interval && e.done < e.total) {
      st.lastLine = t;
      write(`${e.stage}: ${e.done}/${e.total} (${fmtSeconds((t - st.startedAt) / 1000)}, ${rateOf(st, t)}/s, ETA ${fmtSeconds(etaOf(st, t))})`);
    }
    if (e.done >= e.total) finish(e.stage, st);
  };

  const stop = () => {
    stopped = true;
    for (const st of stages.values()) if (st.bar) multi?.remove(st.bar);
    stages.clear();
    multi?.stop();
    multi = undefined;
  };
  return { onEvent, log: write, stop };
}

/**
 * The stall watchdog (issue 26): no unit of the sweep may wait forever in silence.
 *
 * The executor runs each unit (a ranking unit today; any unit of the later plan) through {@link StallWatchdog.run}.
 * While the unit runs:
 * - progress resets its clock: a call of {@link noteProgress} from anywhere inside the unit's asynchronous call tree
 *   (the sweep calls it for every `progress` event it emits, so existing progress reporting counts), or of
 *   `watch.progress()` on the handle the unit receives;
 * - after `heartbeatSeconds` (10) without progress, and every `heartbeatSeconds` after that, `onHeartbeat` is called
 *   with what the unit is waiting for and for how long, so a long unit still says something at least every 10 s;
 * - after `stallSeconds` without progress the unit's promise rejects with HarnessError('UNIT_STALLED') naming the
 *   unit, what it was waiting for and the remedy, and `watch.signal` is aborted. The work itself cannot be killed
 *   (a native call that never returns stays pending; its later result or error is ignored), but the caller goes on:
 *   the unit's rows fail and the rest of the grid runs.
 *
 * "What it is waiting for" is the last text given to `noteProgress(text)` / `watch.progress(text)` (or the one given
 * to `run`): name the phase you enter, e.g. `noteProgress('the LanceDB full-text index build')`.
 *
 * The unit is found through `AsyncLocalStorage`, so concurrent units (models run in parallel) each reset only their
 * own clock. Times are read from `Date.now()` (so tests can drive them with fake timers); a timer ticks every
 * min(1 s, stallSeconds / 4) while a unit runs and is cleared when it settles.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { HarnessError } from '../errors.js';

/** What a unit sees of its watchdog. */
export interface UnitWatch {
  /** Marks progress (resets the stall clock); `waitingFor`, when given, names what the unit waits for from now on. */
  progress(waitingFor?: string): void;
  /** Aborted when the unit is declared stalled (the work may stop early; nobody waits for it any more). */
  readonly signal: AbortSignal;
}

/** One heartbeat: a unit has run `quietSeconds` without progress (whole seconds, ≥ heartbeatSeconds). */
export interface StallHeartbeat {
  unit: string;
  waitingFor: string;
  /** Seconds since the unit started. */
  runningSeconds: number;
  /** Seconds since its last progress. */
  quietSeconds: number;
  /** The limit after which it fails, seconds. */
  stallSeconds: number;
}

/** Options of {@link StallWatchdog}. */
export interface StallOptions {
  /** Seconds without progress after which a unit fails; a number > 0 (the config's `limits.stallSeconds`). */
  stallSeconds: number;
  /** Seconds without progress between heartbeats; default 10, > 0. */
  heartbeatSeconds?: number;
  /** Called for each heartbeat (the sweep turns it into a `stage` event). */
  onHeartbeat?: (beat: StallHeartbeat) => void;
}

interface Running {
  unit: string;
  waitingFor: string;
  last: number;
}

const current = new AsyncLocalStorage<Running>();

/**
 * Marks progress of the unit whose asynchronous call tree this call is in (no-op outside a watched unit).
 * `waitingFor`, when given, replaces what the unit is said to be waiting for.
 */
export function noteProgress(waitingFor?: string): void {
  const r = current.getStore();
  if (r === undefined) return;
  r.last = Date.now();
  if (waitingFor !== undefined) r.waitingFor = waitingFor;
}

/**
 * A progress function bound to the unit this call is in (a no-op function outside a unit): for callbacks that may run
 * outside the unit's asynchronous context, e.g. a worker thread's message handler.
 */
export function progressHandle(): (waitingFor?: string) => void {
  const r = current.getStore();
  if (r === undefined) return () => {};
  return (waitingFor?: string) => {
    r.last = Date.now();
    if (waitingFor !== undefined) r.waitingFor = waitingFor;
  };
}

/** Runs units under a stall limit (see the module comment). */
export class StallWatchdog {
  private readonly stallMs: number;
  private readonly heartbeatMs: number;

  /** @throws HarnessError('CONFIG_INVALID') when stallSeconds or heartbeatSeconds is not a finite number > 0. */
  constructor(private readonly options: StallOptions) {
    for (const [key, v] of [
      ['limits.stallSeconds', options.stallSeconds],
      ['heartbeatSeconds', options.heartbeatSeconds ?? 10],
    ] as const)
      if (!Number.isFinite(v) || v <= 0)
        throw new HarnessError('CONFIG_INVALID', `${key} (${v}) must be a number of seconds > 0`, { location: { path: key }, remedy: `set ${key} to e.g. 300` });
    this.stallMs = options.stallSeconds * 1000;
    this.heartbeatMs = (options.heartbeatSeconds ?? 10) * 1000;
  }

  /**
   * Runs `work` as unit `unit` (a name the user can find in the grid, e.g. `none.keyword-lance-fts`), first waiting for
   * `waitingFor` (e.g. `its first result`). Resolves or rejects as `work` does, unless it makes no progress for
   * `stallSeconds`: then rejects with HarnessError('UNIT_STALLED') whose remedy starts with `remedy` (what to check for
   * this kind of unit, optional) and ends with raising `limits.stallSeconds`.
   */
  run<T>(unit: string, waitingFor: string, work: (watch: UnitWatch) => Promise<T>, remedy?: string): Promise<T> {
    const state: Running = { unit, waitingFor, last: Date.now() };
    const started = state.last;
    const abort = new AbortController();
    const watch: UnitWatch = {
      progress: (w?: string) => {
        state.last = Date.now();
        if (w !== undefined) state.waitingFor = w;
      },
      signal: abort.signal,
    };
    return new Promise<T>((resolve, reject) => {
      let lastBeat = started;
      let settled = false;
      const tick = Math.max(10, Math.min(1000, this.stallMs / 4));
      const timer = setInterval(() => {
        const now = Date.now();
        const quiet = now - state.last;
        if (quiet >= this.stallMs) {
          finish();
          abort.abort();
          const s = this.options.stallSeconds;
          reject(
            new HarnessError('UNIT_STALLED', `unit ${unit} made no progress for ${s} s while waiting for ${state.waitingFor}; its rows fail`, {
              remedy: `${remedy ? `${remedy}; ` : ''}if it is only slow, raise limits.stallSeconds (now ${s}) in the config`,
            }),
          );
          return;
        }
        if (quiet >= this.heartbeatMs && now - lastBeat >= this.heartbeatMs) {
          lastBeat = now;
          this.options.onHeartbeat?.({
            unit,
            waitingFor: state.waitingFor,
            runningSeconds: Math.floor((now - started) / 1000),
            quietSeconds: Math.floor(quiet / 1000),
            stallSeconds: this.options.stallSeconds,
          });
        }
      }, tick);
      const finish = () => {
        settled = true;
        clearInterval(timer);
      };
      let p: Promise<T>;
      try {
        p = current.run(state, () => work(watch));
      } catch (e) {
        p = Promise.reject(e);
      }
      p.then(
          (v) => {
            if (settled) return;
            finish();
            resolve(v);
          },
          (e: unknown) => {
            if (settled) return;
            finish();
            reject(e);
          },
        );
    });
  }
}

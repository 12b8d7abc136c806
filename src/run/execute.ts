/**
 * The executor (issue 23): runs the units of a plan (src/plan/graph.ts) through their kinds' handlers
 * (src/run/units/), knowing no kind by name.
 *
 * - **Order**: a unit starts when every input has finished; units of one lane (`handler.lane`) run one at a time in
 *   plan order; at most `concurrency` units run at once across lanes (two models, or a keyword build beside a server's
 *   embedding). When a slot frees and several units are ready, the one on the longest remaining path starts first
 *   (src/run/schedule.ts: critical-path list scheduling, Hu 1961, Graham 1966/1969), with each unit's cost from its
 *   kind's `cost` (default 1) and plan order breaking ties; scheduling changes when units start, never what they
 *   compute.
 * - **Checkpoints**: the handler gives the unit's key (`key`, deferred parts filled from the inputs); a stored result
 *   that reads back intact (`restore`) is used, else the unit runs and its result is stored (`save`). The keys are the
 *   ones the sweep used before the executor, so existing checkpoints stay valid.
 * - **Failure**: a unit that throws fails with its kind's message (`failed`; a `UnitFailure`'s message as is); a unit
 *   whose required input failed does not run and carries that input's error (`propagated`), so a failed unit fails
 *   exactly the rows that depend on it.
 * - **Stalls**: every unit runs under the stall watchdog (src/run/stall.ts): a heartbeat `stage` event at least every
 *   10 s without progress, and UNIT_STALLED after `stallSeconds`, which fails that unit only.
 * - **Cancellation**: when `ctx.signal` is aborted, no unit starts any more and `executePlan` rejects with
 *   HarnessError('RUN_FAILED', interrupted) once the running ones have settled.
 * - **The machine's resources** (issue 24 §3): a unit that fails with a full disk, a permission, a read-only file
 *   system or too many open files (`resourceErrnoOf`, src/store/resource.ts: the errno anywhere in its cause chain)
 *   is not a row failure but the user's problem for the whole run: no unit starts any more, and `executePlan` rejects
 *   with that first error once the running ones have settled (the caller names the folder's config key).
 * - **Resources**: a value with `dispose` (a loaded model) is told of each dependent that finishes and disposed after
 *   the last; run-wide shared resources (`ctx.shared`) are closed when the plan ends.
 *
 * Units are plain data, so an executor that hands them to worker processes or a job queue can replace this one
 * without touching the handlers (ARCHITECTURE.md, "A plan that is data").
 */
import { performance } from 'node:perf_hooks';
import type { Plan, PlanUnit, UnitKind } from '../plan/graph.js';
import { HarnessError } from '../errors.js';
import { resourceErrnoOf } from '../store/resource.js';
import { StallWatchdog } from './stall.js';
import { pathRanks, pickNext } from './schedule.js';
import { errorText } from './inputs.js';
import { UnitFailure, type Disposable, type SweepEvent, type UnitContext, type UnitKindHandler, type UnitResult } from './units/types.js';

/** What the caller gives every unit; the executor adds the rest of {@link UnitContext}. */
export type BaseContext = Omit<UnitContext, 'result' | 'unit' | 'dependents' | 'shared' | 'setInfo'>;

/** Options of {@link executePlan}. */
export interface ExecuteOptions {
  /** The units to run: a subset of `plan.units` that holds every input of each (`unitsFor`), in plan order. */
  units: readonly PlanUnit[];
  /** Handlers by kind (src/run/units/index.ts `UNIT_KINDS`). */
  handlers: ReadonlyMap<UnitKind, UnitKindHandler>;
  /** Units running at once across lanes, ≥ 1 (the config's `concurrency`). */
  concurrency: number;
  /** Seconds without progress after which a unit fails (`limits.stallSeconds`), > 0. */
  stallSeconds: number;
}

/** What {@link executePlan} returns. */
export interface Execution {
  /** Every executed unit's result, by id, in plan order. */
  results: Map<string, UnitResult>;
  /** Manifest entries stored by shared resources (e.g. `reranker:<label>`). */
  infos: Map<string, Record<string, unknown>>;
}

/** HarnessError('RUN_FAILED') for a sweep stopped by its signal (Ctrl-C). */
export function interruptedError(): HarnessError {
  return new HarnessError('RUN_FAILED', 'the sweep was interrupted', {
    remedy: 'run the same command again: finished stages are checkpointed and are not repeated',
  });
}

const isDisposable = (v: unknown): v is Disposable => v !== null && typeof v === 'object' && typeof (v as Disposable).dispose === 'function';

/**
 * Runs `options.units` of `plan` (see the module comment) and returns their results.
 * @throws HarnessError('RUN_FAILED') when interrupted; HarnessError('CONFIG_INVALID') for a stallSeconds ≤ 0; a
 *   resource's close error (after every unit has settled); Error for a unit kind with no handler (a bug).
 */
export async function executePlan(plan: Plan, base: BaseContext, options: ExecuteOptions): Promise<Execution> {
  const units = options.units;
  const ids = new Set(units.map((u) => u.id));
  const byId = new Map(plan.units.map((u) => [u.id, u]));
  const dependents = new Map<string, PlanUnit[]>();
  for (const u of units) for (const i of u.inputs) if (ids.has(i)) dependents.set(i, [...(dependents.get(i) ?? []), u]);
  const results = new Map<string, UnitResult>();
  const infos = new Map<string, Record<string, unknown>>();
  const shared = new Map<string, { value: Promise<unknown>; close: (v: unknown) => Promise<void> }>();
  const ctx: UnitContext = {
    ...base,
    result: (id) => results.get(id),
    unit: (id) => byId.get(id),
    dependents: (id) => dependents.get(id) ?? [],
    shared<T>(name: string, open: () => Promise<T>, close: (v: T) => Promise<void>): Promise<T> {
      let s = shared.get(name);
      if (!s) {
        s = { value: open(), close: close as (v: unknown) => Promise<void> };
        s.value.catch(() => undefined); // a failed open is remembered; each caller sees the rejection
        shared.set(name, s);
      }
      return s.value as Promise<T>;
    },
    setInfo: (name, info) => void infos.set(name, info),
  };
  const handlerOf = (u: PlanUnit): UnitKindHandler => {
    const h = options.handlers.get(u.kind);
    if (!h) throw new Error(`no handler for unit kind ${u.kind} (unit ${u.id})`);
    return h;
  };
  const watchdog = new StallWatchdog({
    stallSeconds: options.stallSeconds,
    onHeartbeat: (b) =>
      ctx.emit({ kind: 'stage', stage: `unit ${b.unit}`, detail: `waiting for ${b.waitingFor}, ${b.quietSeconds} s without progress (fails at ${b.stallSeconds} s)` }),
  });

  // `done of total` progress per kind that names a stage.
  const totals = new Map<UnitKind, number>();
  for (const u of units) totals.set(u.kind, (totals.get(u.kind) ?? 0) + 1);
  const started = new Map<UnitKind, number>();
  const finished = new Map<UnitKind, number>();

  // Disposal: a value with dispose() goes once every dependent has finished.
  const waiting = new Map(units.map((u) => [u.id, (dependents.get(u.id) ?? []).length]));
  const disposed = new Set<string>();
  const closeErrors: unknown[] = [];
  const dispose = async (id: string) => {
    const r = results.get(id);
    if (disposed.has(id) || !r || !('value' in r) || !isDisposable(r.value)) return;
    disposed.add(id);
    try {
      await r.value.dispose();
    } catch (e) {
      closeErrors.push(e);
    }
  };

  /** The first unit error that is a resource problem: it ends the run (see the module comment). */
  let resourceFailure: { error: unknown } | undefined;
  const runOne = async (u: PlanUnit): Promise<void> => {
    if (ctx.signal.aborted) throw interruptedError();
    if (resourceFailure) throw resourceFailure.error;
    const h = handlerOf(u);
    const total = totals.get(u.kind)!;
    if (h.stage) {
      ctx.emit({ kind: 'progress', stage: h.stage, done: started.get(u.kind) ?? 0, total });
      started.set(u.kind, (started.get(u.kind) ?? 0) + 1);
    }
    const t0 = performance.now();
    const inputs = new Map(u.inputs.filter((i) => ids.has(i)).map((i) => [i, results.get(i)!]));
    const optional = h.optionalInputs?.(u) ?? [];
    const failedInput = optional === 'all' ? undefined : u.inputs.find((i) => inputs.has(i) && 'error' in inputs.get(i)! && !optional.includes(i));
    let r: UnitResult;
    if (failedInput !== undefined) r = { error: (inputs.get(failedInput) as { error: string }).error, propagated: true, seconds: 0 };
    else {
      try {
        const key = await h.key(u, inputs, ctx);
        const restored = key !== null && h.restore ? h.restore(key, u, inputs, ctx) : undefined;
        if (restored) r = restored;
        else {
          // A progress event a unit emits (embedding batches, rerank, scoring) resets its own stall clock.
          const out = await watchdog.run(
            u.id,
            h.waitingFor,
            (watch) => {
              const emit = (e: SweepEvent): void => {
                if (e.kind === 'progress') watch.progress();
                ctx.emit(e);
              };
              return h.run(u, inputs, { ...ctx, emit }, watch);
            },
            h.remedy?.(u),
          );
          if (key !== null) h.save?.(key, u, out, ctx);
          r = { ...out, seconds: (performance.now() - t0) / 1000 } as UnitResult;
        }
      } catch (e) {
        if (ctx.signal.aborted) throw interruptedError();
        if (resourceErrnoOf(e)) {
          resourceFailure ??= { error: e };
          throw resourceFailure.error;
        }
        const seconds = (performance.now() - t0) / 1000;
        const f = e instanceof UnitFailure ? { error: e.message, warn: e.warn, info: e.info } : (h.failed?.(u, errorText(e), ctx) ?? { error: errorText(e) });
        r = { error: f.error, ...(f.info ? { info: f.info } : {}), cause: e, seconds };
        if (f.warn) ctx.warn(f.error);
      }
    }
    results.set(u.id, r);
    if (h.stage) {
      finished.set(u.kind, (finished.get(u.kind) ?? 0) + 1);
      if (finished.get(u.kind) === total) ctx.emit({ kind: 'progress', stage: h.stage, done: total, total });
    }
    for (const i of new Set(u.inputs)) {
      if (!ids.has(i)) continue;
      const v = results.get(i);
      if (v && 'value' in v && isDisposable(v.value)) v.value.dependentDone?.(u);
      const left = waiting.get(i)! - 1;
      waiting.set(i, left);
      if (left === 0) await dispose(i);
    }
    if (waiting.get(u.id) === 0) await dispose(u.id);
  };

  // Scheduling (src/run/schedule.ts): a unit is ready when its inputs and the unit before it in its lane have settled;
  // a free slot goes to the ready unit on the longest remaining path (costs from the handlers, recomputed after each
  // unit finishes, since a cost may read what finished: a chunking's chunk count), plan order breaking ties.
  const planIndex = new Map(units.map((u, i) => [u.id, i]));
  const unitById = new Map(units.map((u) => [u.id, u]));
  const lanePrev = new Map<string, string>();
  const laneNext = new Map<string, string>();
  const laneLast = new Map<string, string>();
  for (const u of units) {
    const lane = handlerOf(u).lane(u, ctx);
    const prev = laneLast.get(lane);
    if (prev !== undefined) {
      lanePrev.set(u.id, prev);
      laneNext.set(prev, u.id);
    }
    laneLast.set(lane, u.id);
  }
  const readers = new Map<string, string[]>();
  for (const [id, ds] of dependents) readers.set(id, [...new Set(ds.map((d) => d.id))]);
  const successors = (id: string): string[] => {
    const next = laneNext.get(id);
    return next === undefined ? (readers.get(id) ?? []) : [...(readers.get(id) ?? []), next];
  };
  const blockers = new Map(units.map((u) => [u.id, new Set(u.inputs.filter((i) => ids.has(i))).size + (lanePrev.has(u.id) ? 1 : 0)]));
  const order = units.map((u) => u.id);
  const costOf = (id: string): number => {
    const u = unitById.get(id)!;
    return handlerOf(u).cost?.(u, ctx) ?? 1;
  };
  const outcome = new Map<string, { reason: unknown } | null>();
  const ready = new Set(units.filter((u) => blockers.get(u.id) === 0).map((u) => u.id));
  let running = 0;
  let ranks = new Map<string, number>();
  let stale = true;
  /** A scheduling error (a handler's cost threw or returned a bad value): no unit starts any more. */
  let scheduleFailure: { error: unknown } | undefined;
  const slots = Math.max(1, options.concurrency);
  let finish!: () => void;
  const allSettled = new Promise<void>((resolve) => (finish = resolve));
  // A unit's rejection (interrupted, a resource failure) rejects its dependents without running them, as a chain of
  // promises would; its lane goes on (the next unit of the lane then rejects on its own when it starts).
  const settle = (id: string, rejected: { reason: unknown } | null): void => {
    if (outcome.has(id)) return;
    outcome.set(id, rejected);
    ready.delete(id);
    for (const d of readers.get(id) ?? []) {
      if (rejected) settle(d, rejected);
      else if (!outcome.has(d)) unblock(d);
    }
    const next = laneNext.get(id);
    if (next !== undefined && !outcome.has(next)) unblock(next);
  };
  const unblock = (id: string): void => {
    const left = blockers.get(id)! - 1;
    blockers.set(id, left);
    if (left === 0) ready.add(id);
  };
  const pump = (): void => {
    while (running < slots && ready.size > 0 && !scheduleFailure) {
      if (stale && ready.size > 1) {
        try {
          ranks = pathRanks(order, successors, costOf);
          stale = false;
        } catch (e) {
          scheduleFailure = { error: e };
          break;
        }
      }
      const id = ready.size === 1 ? ready.values().next().value! : pickNext(ready, ranks, planIndex);
      ready.delete(id);
      running++;
      runOne(unitById.get(id)!).then(
        () => after(id, null),
        (reason: unknown) => after(id, { reason }),
      );
    }
    if (running === 0 && (ready.size === 0 || scheduleFailure)) finish();
  };
  const after = (id: string, rejected: { reason: unknown } | null): void => {
    running--;
    stale = true;
    settle(id, rejected);
    pump();
  };
  pump();
  await allSettled;
  for (const u of units) await dispose(u.id);
  for (const s of shared.values()) {
    let v: unknown;
    try {
      v = await s.value;
    } catch {
      continue; // nothing was opened
    }
    try {
      await s.close(v);
    } catch (e) {
      closeErrors.push(e);
    }
  }
  if (scheduleFailure) throw scheduleFailure.error;
  const failure = order.map((id) => outcome.get(id)).find((o) => o);
  if (failure) throw failure.reason;
  if (closeErrors.length > 0) throw closeErrors[0];
  return { results: new Map(units.flatMap((u) => (results.has(u.id) ? [[u.id, results.get(u.id)!] as const] : []))), infos };
}

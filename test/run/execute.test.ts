/**
 * The executor on its own (src/run/execute.ts), with handlers made for the test: it knows no kind by name, so any
 * handler map drives it. Dependency order, failure propagation (a failed unit fails exactly its dependents), optional
 * inputs, checkpoints through the handler, lanes and bounded concurrency, disposal after the last dependent, the stall
 * watchdog on every unit, and cancellation.
 */
import { describe, expect, it } from 'vitest';
import { executePlan, type BaseContext } from '../../src/run/execute.js';
import type { Plan, PlanUnit, UnitKind } from '../../src/plan/graph.js';
import type { UnitContext, UnitKindHandler, UnitResult } from '../../src/run/units/types.js';
import { UnitFailure } from '../../src/run/units/types.js';

/** A unit of kind `kind` (the handler is looked up by kind; these tests use `keyword` and `scoring` as plain names). */
const unit = (id: string, inputs: string[] = [], kind: UnitKind = 'keyword', params: Record<string, unknown> = {}): PlanUnit => ({ id, kind, params, inputs, keyParts: null, deferred: [], key: null, depth: null });
const planOf = (units: PlanUnit[]): Plan => ({ units, rows: [], corpusFingerprint: 'x', common: {}, baseDepth: 1, rowDepth: 1 });

function base(events: { kind: string; stage?: string; message?: string }[] = [], signal = new AbortController().signal): BaseContext {
  return { signal, emit: (e: { kind: string }) => events.push(e), warn: (m: string) => events.push({ kind: 'warning', message: m }) } as unknown as BaseContext;
}

/** A handler whose units run `body(unit, inputs)`; lane = params.lane or the unit id. */
function handler(kind: UnitKind, body: (u: PlanUnit, inputs: ReadonlyMap<string, UnitResult>, ctx: UnitContext) => Promise<unknown>, extra: Partial<UnitKindHandler> = {}): UnitKindHandler {
  return {
    kind,
    waitingFor: 'the test',
    lane: (u) => String(u.params.lane ?? u.id),
    key: async () => null,
    run: async (u, inputs, ctx) => ({ value: await body(u, inputs, ctx) }),
    ...extra,
  };
}

const valueOf = (r: UnitResult | undefined) => (r && 'value' in r ? r.value : undefined);
const errorOf = (r: UnitResult | undefined) => (r && 'error' in r ? r.error : undefined);

describe('executePlan', () => {
  it('runs units after their inputs; a failure fails exactly its dependents with its message, optional inputs excepted', async () => {
    const order: string[] = [];
    const kw = handler('keyword', async (u, inputs) => {
      order.push(u.id);
      if (u.id === 'b') throw new Error('boom');
      return [...inputs.values()].reduce((s, r) => s + Number(valueOf(r) ?? 0), 1);
    }, { failed: (u, e) => ({ error: `unit ${u.id} failed: ${e}` }) });
    // `d` reads b optionally: it runs and sees b's error.
    const sc = handler('scoring', async (_u, inputs) => [...inputs.values()].map((r) => errorOf(r) ?? valueOf(r)), { optionalInputs: () => 'all' });
    const units = [unit('a'), unit('b', ['a']), unit('c', ['b']), unit('e', ['a']), unit('d', ['b', 'e'], 'scoring')];
    const { results } = await executePlan(planOf(units), base(), { units, handlers: new Map([['keyword', kw], ['scoring', sc]]), concurrency: 2, stallSeconds: 60 });
    expect(order.indexOf('a')).toBeLessThan(order.indexOf('b'));
    expect(order).not.toContain('c');
    expect(valueOf(results.get('a'))).toBe(1);
    expect(valueOf(results.get('e'))).toBe(1 + 1);
    expect(errorOf(results.get('b'))).toBe('unit b failed: boom');
    expect(results.get('c')).toMatchObject({ error: 'unit b failed: boom', propagated: true });
    expect(valueOf(results.get('d'))).toEqual(['unit b failed: boom', 2]);
    expect([...results.keys()]).toEqual(['a', 'b', 'c', 'e', 'd']);
  });

  it("a UnitFailure's message is final and warned when asked; other errors go through the kind's failed()", async () => {
    const events: { kind: string; message?: string }[] = [];
    const h = handler('keyword', async (u) => {
      throw u.id === 'x' ? new UnitFailure('model m could not be loaded', true) : new Error('plain');
    }, { failed: (_u, e) => ({ error: `wrapped: ${e}` }) });
    const units = [unit('x'), unit('y')];
    const { results } = await executePlan(planOf(units), base(events), { units, handlers: new Map([['keyword', h]]), concurrency: 1, stallSeconds: 60 });
    expect(errorOf(results.get('x'))).toBe('model m could not be loaded');
    expect(errorOf(results.get('y'))).toBe('wrapped: plain');
    expect(events.filter((e) => e.kind === 'warning').map((e) => e.message)).toEqual(['model m could not be loaded']);
  });

  it('reads a checkpoint back through the handler instead of running; stores what it computed under the key', async () => {
    const saved: [string, unknown][] = [];
    let ran = 0;
    const h = handler('keyword', async () => ++ran, {
      key: async (u) => `key-${u.id}`,
      restore: (key) => (key === 'key-old' ? { value: 'from disk', seconds: 0 } : undefined),
      save: (key, _u, out) => void saved.push([key, out.value]),
    });
    const units = [unit('old'), unit('new')];
    const { results } = await executePlan(planOf(units), base(), { units, handlers: new Map([['keyword', h]]), concurrency: 1, stallSeconds: 60 });
    expect(valueOf(results.get('old'))).toBe('from disk');
    expect(valueOf(results.get('new'))).toBe(1);
    expect(ran).toBe(1);
    expect(saved).toEqual([['key-new', 1]]);
  });

  it('one lane runs one unit at a time; lanes run side by side up to the concurrency', async () => {
    let running = 0;
    let most = 0;
    const gates: (() => void)[] = [];
    const h = handler('keyword', async () => {
      running++;
      most = Math.max(most, running);
      await new Promise<void>((resolve) => gates.push(resolve));
      running--;
      return null;
    });
    const release = setInterval(() => gates.shift()?.(), 5);
    try {
      const sameLane = [unit('a', [], 'keyword', { lane: 'L' }), unit('b', [], 'keyword', { lane: 'L' }), unit('c', [], 'keyword', { lane: 'L' })];
      await executePlan(planOf(sameLane), base(), { units: sameLane, handlers: new Map([['keyword', h]]), concurrency: 3, stallSeconds: 60 });
      expect(most).toBe(1);
      most = 0;
      const lanes = [unit('a'), unit('b'), unit('c'), unit('d')];
      await executePlan(planOf(lanes), base(), { units: lanes, handlers: new Map([['keyword', h]]), concurrency: 2, stallSeconds: 60 });
      expect(most).toBe(2);
    } finally {
      clearInterval(release);
    }
  });

  it('disposes a value once its last dependent has finished, and tells it of each dependent', async () => {
    const log: string[] = [];
    const model = handler('embedding', async () => ({ dependentDone: (d: PlanUnit) => log.push(`done ${d.id}`), dispose: async () => void log.push('dispose') }));
    const dense = handler('dense', async (u) => void log.push(`run ${u.id}`));
    const units = [unit('m', [], 'embedding'), unit('d1', ['m'], 'dense', { lane: 'x' }), unit('d2', ['m'], 'dense', { lane: 'x' })];
    await executePlan(planOf(units), base(), { units, handlers: new Map([['embedding', model], ['dense', dense]]), concurrency: 1, stallSeconds: 60 });
    expect(log).toEqual(['run d1', 'done d1', 'run d2', 'done d2', 'dispose']);
  });

  it('every unit runs under the stall watchdog: a silent one fails with UNIT_STALLED naming it and what it waited for', async () => {
    const h = handler('scoring', (u) => (u.id === 'hang' ? new Promise(() => {}) : Promise.resolve('ok')));
    const units = [unit('hang', [], 'scoring'), unit('fine', [], 'scoring')];
    const { results } = await executePlan(planOf(units), base(), { units, handlers: new Map([['scoring', h]]), concurrency: 2, stallSeconds: 0.2 });
    const hang = results.get('hang') as { error: string; cause: { code: string } };
    expect(hang.cause.code).toBe('UNIT_STALLED');
    expect(hang.error).toContain('unit hang made no progress for 0.2 s while waiting for the test; its rows fail');
    expect(valueOf(results.get('fine'))).toBe('ok');
  });

  it("a unit's own progress events (embedding batches, rerank, scoring) reset its stall clock: 0.6 s of work with an event every 50 ms passes a 0.2 s limit", async () => {
    const events: { kind: string; stage?: string }[] = [];
    const h = handler('scoring', async (_u, _inputs, ctx) => {
      for (let i = 1; i <= 12; i++) {
        await new Promise((r) => setTimeout(r, 50));
        ctx.emit({ kind: 'progress', stage: 'embed', done: i, total: 12 });
      }
      return 'done';
    });
    const units = [unit('busy', [], 'scoring')];
    const { results } = await executePlan(planOf(units), base(events), { units, handlers: new Map([['scoring', h]]), concurrency: 1, stallSeconds: 0.2 });
    expect(valueOf(results.get('busy'))).toBe('done');
    expect(events.filter((e) => e.stage === 'embed')).toHaveLength(12);
  });

  it('a full disk (an errno of the resource table) in a unit ends the run with that error; no unit starts after it', async () => {
    const ran: string[] = [];
    const full = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', syscall: 'write' });
    const h = handler('keyword', async (u) => {
      ran.push(u.id);
      if (u.id === 'a') throw new Error('checkpoint write failed', { cause: full });
      return null;
    });
    const units = [unit('a', [], 'keyword', { lane: 'L' }), unit('b', [], 'keyword', { lane: 'L' }), unit('c', ['a'])];
    const run = executePlan(planOf(units), base(), { units, handlers: new Map([['keyword', h]]), concurrency: 1, stallSeconds: 60 });
    await expect(run).rejects.toMatchObject({ message: 'checkpoint write failed', cause: full });
    expect(ran).toEqual(['a']);
  });

  it('an aborted signal stops the plan: RUN_FAILED (interrupted), and no unit starts after it', async () => {
    const ac = new AbortController();
    const ran: string[] = [];
    const h = handler('keyword', async (u) => {
      ran.push(u.id);
      ac.abort();
      return null;
    });
    const units = [unit('a', [], 'keyword', { lane: 'L' }), unit('b', [], 'keyword', { lane: 'L' })];
    await expect(executePlan(planOf(units), base([], ac.signal), { units, handlers: new Map([['keyword', h]]), concurrency: 1, stallSeconds: 60 })).rejects.toMatchObject({
      code: 'RUN_FAILED',
      message: 'the sweep was interrupted',
    });
    expect(ran).toEqual(['a']);
  });
});

/**
 * The scheduling policy (src/run/schedule.ts) and the executor using it (src/run/execute.ts): ranks worked out by hand,
 * and start orders of plans where plan order and the longest remaining path differ. Units finish only when the test
 * releases them (no timing), so each start order is exact.
 */
import { describe, expect, it } from 'vitest';
import { executePlan, type BaseContext } from '../../src/run/execute.js';
import { pathRanks, pickNext } from '../../src/run/schedule.js';
import type { Plan, PlanUnit, UnitKind } from '../../src/plan/graph.js';
import { chunkCountOf, type UnitContext, type UnitKindHandler } from '../../src/run/units/types.js';
import { keywordUnit } from '../../src/run/units/keyword.js';
import { embeddingUnit } from '../../src/run/units/embedding.js';
import { denseUnit } from '../../src/run/units/dense.js';
import { chunkingUnit } from '../../src/run/units/chunking.js';

/** A unit; `lane` defaults to the unit id, `cost` to none (the executor's default 1). */
const unit = (id: string, inputs: string[] = [], params: { lane?: string; cost?: number } = {}): PlanUnit => ({ id, kind: 'keyword', params, inputs, keyParts: null, deferred: [], key: null, depth: null });
const planOf = (units: PlanUnit[]): Plan => ({ units, rows: [], corpusFingerprint: 'x', common: {}, baseDepth: 1, rowDepth: 1 });
const base = (): BaseContext => ({ signal: new AbortController().signal, emit: () => undefined, warn: () => undefined }) as unknown as BaseContext;

/**
 * Runs `units` with a handler whose units start in `started` and finish when released (`release(id)`), with the cost
 * `cost(unit, ctx)` (default: params.cost, else none). Returns the run's promise and the controls.
 */
function gated(units: PlanUnit[], concurrency: number, cost?: (u: PlanUnit, ctx: UnitContext) => number, value: (u: PlanUnit) => unknown = () => null) {
  const started: string[] = [];
  const gates = new Map<string, () => void>();
  let wake: (() => void) | undefined;
  const h: UnitKindHandler = {
    kind: 'keyword',
    waitingFor: 'the test',
    lane: (u) => String(u.params.lane ?? u.id),
    key: async () => null,
    run: async (u) => {
      started.push(u.id);
      wake?.();
      await new Promise<void>((resolve) => gates.set(u.id, resolve));
      return { value: value(u) };
    },
    ...(cost ? { cost } : { cost: (u: PlanUnit) => (u.params.cost as number | undefined) ?? 1 }),
  };
  const run = executePlan(planOf(units), base(), { units, handlers: new Map<UnitKind, UnitKindHandler>([['keyword', h]]), concurrency, stallSeconds: 60 });
  /** Waits until `n` units have started (or fails after 2 s). */
  const startedCount = async (n: number): Promise<string[]> => {
    const until = Date.now() + 2000;
    while (started.length < n) {
      if (Date.now() > until) throw new Error(`only ${started.length} of ${n} units started: ${started.join(', ')}`);
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, 20);
      });
    }
    // let any further start that the same event allowed happen, so that a wrong extra start is seen
    await new Promise((r) => setTimeout(r, 20));
    return [...started];
  };
  const release = (id: string) => {
    const g = gates.get(id);
    if (!g) throw new Error(`unit ${id} has not started`);
    g();
  };
  return { run, started, startedCount, release };
}

describe('pathRanks: rank = own cost + the largest rank among the units that wait for it', () => {
  it('a diamond with a long arm: ranks by hand', () => {
    // a → b → d, a → c → d; costs a 1, b 10, c 2, d 3
    const succ: Record<string, string[]> = { a: ['b', 'c'], b: ['d'], c: ['d'], d: [] };
    const cost: Record<string, number> = { a: 1, b: 10, c: 2, d: 3 };
    const r = pathRanks(['a', 'b', 'c', 'd'], (id) => succ[id], (id) => cost[id]);
    expect(r.get('d')).toBe(3);
    expect(r.get('c')).toBe(2 + 3);
    expect(r.get('b')).toBe(10 + 3);
    expect(r.get('a')).toBe(1 + Math.max(10 + 3, 2 + 3));
  });

  it('ignores successors outside the order (units not executed), and counts a zero cost as nothing', () => {
    const r = pathRanks(['a', 'b'], (id) => (id === 'a' ? ['b', 'elsewhere'] : []), (id) => (id === 'a' ? 0 : 0.5));
    expect(r.get('a')).toBeCloseTo(0 + 0.5, 10);
  });

  it('a cost that is negative, NaN or infinite is a bug named with its unit and value', () => {
    expect(() => pathRanks(['a'], () => [], () => -1)).toThrow('unit a: cost -1 is not a finite number ≥ 0');
    expect(() => pathRanks(['a'], () => [], () => Number.NaN)).toThrow('unit a: cost NaN is not a finite number ≥ 0');
    expect(() => pathRanks(['a'], () => [], () => Infinity)).toThrow('unit a: cost Infinity');
  });

  it('a successor placed before its unit is refused (not a plan order)', () => {
    expect(() => pathRanks(['b', 'a'], (id) => (id === 'a' ? ['b'] : []), () => 1)).toThrow('unit b must come after unit a');
  });
});

describe('pickNext', () => {
  const index = new Map([['a', 0], ['b', 1], ['c', 2]]);
  it('takes the highest rank', () => {
    expect(pickNext(['a', 'b', 'c'], new Map([['a', 1], ['b', 5], ['c', 3]]), index)).toBe('b');
  });
  it('breaks a tie by plan order, whatever order the ready set is in', () => {
    expect(pickNext(['c', 'b', 'a'], new Map([['a', 2], ['b', 2], ['c', 2]]), index)).toBe('a');
    expect(pickNext(['c', 'b'], new Map([['a', 9], ['b', 4], ['c', 4]]), index)).toBe('b');
  });
  it('throws on an empty ready set', () => {
    expect(() => pickNext([], new Map(), index)).toThrow('no unit is ready');
  });
});

describe('executePlan starts the ready unit on the longest remaining path first', () => {
  it('issue 25 shape: two keyword builds first in plan order, the embedding chain later: the embedding gets a slot as soon as the chunking is done', async () => {
    // chunk → kw1, kw2 (their own lanes), emb → dense → fusion (reads kw1) → scoring (reads all)
    const units = [
      unit('chunk', [], { cost: 1 }),
      unit('kw1', ['chunk'], { cost: 5 }),
      unit('kw2', ['chunk'], { cost: 5 }),
      unit('emb', ['chunk'], { cost: 20 }),
      unit('dense', ['emb'], { cost: 2 }),
      unit('fusion', ['dense', 'kw1'], { cost: 1 }),
      unit('scoring', ['kw1', 'kw2', 'dense', 'fusion'], { cost: 1 }),
    ];
    // ranks: scoring 1; fusion 1 + 1 = 2; dense 2 + 2 = 4; emb 20 + 4 = 24; kw1 5 + max(2, 1) = 7; kw2 5 + 1 = 6
    const g = gated(units, 2);
    expect(await g.startedCount(1)).toEqual(['chunk']);
    g.release('chunk');
    expect(await g.startedCount(3)).toEqual(['chunk', 'emb', 'kw1']); // plan order would start kw1, kw2
    g.release('kw1');
    expect(await g.startedCount(4)).toEqual(['chunk', 'emb', 'kw1', 'kw2']);
    g.release('emb');
    expect(await g.startedCount(5)).toEqual(['chunk', 'emb', 'kw1', 'kw2', 'dense']);
    g.release('dense');
    expect(await g.startedCount(6)).toEqual(['chunk', 'emb', 'kw1', 'kw2', 'dense', 'fusion']);
    g.release('fusion');
    g.release('kw2');
    expect(await g.startedCount(7)).toEqual(['chunk', 'emb', 'kw1', 'kw2', 'dense', 'fusion', 'scoring']);
    g.release('scoring');
    const { results } = await g.run;
    expect([...results.keys()]).toEqual(units.map((u) => u.id)); // results stay in plan order
  });

  it('one slot: a short unit first in plan order waits for the long chain (rank 11 against 1)', async () => {
    const units = [unit('a', [], { cost: 1 }), unit('b', [], { cost: 10 }), unit('c', ['b'], { cost: 1 })];
    const g = gated(units, 1);
    expect(await g.startedCount(1)).toEqual(['b']);
    g.release('b');
    // ready a (rank 1) and c (rank 1): a tie, plan order
    expect(await g.startedCount(2)).toEqual(['b', 'a']);
    g.release('a');
    expect(await g.startedCount(3)).toEqual(['b', 'a', 'c']);
    g.release('c');
    await g.run;
  });

  it('ties keep plan order: equal costs and equal chains start exactly in plan order', async () => {
    const units = [unit('a'), unit('b'), unit('c'), unit('a2', ['a']), unit('b2', ['b']), unit('c2', ['c'])];
    const g = gated(units, 1);
    const expected = ['a', 'b', 'c', 'a2', 'b2', 'c2'];
    for (let i = 0; i < expected.length; i++) {
      expect(await g.startedCount(i + 1)).toEqual(expected.slice(0, i + 1));
      g.release(expected[i]);
    }
    await g.run;
  });

  it('lanes still serialise in plan order, and the next unit of a lane counts in the path: x (1) then y (100) in lane L beat z (50)', async () => {
    const units = [unit('x', [], { lane: 'L', cost: 1 }), unit('y', [], { lane: 'L', cost: 100 }), unit('z', [], { cost: 50 })];
    // ranks: y 100; x 1 + 100 = 101; z 50. y is the highest but waits for x, its lane predecessor.
    const g = gated(units, 2);
    expect(await g.startedCount(2)).toEqual(['x', 'z']); // two slots: x (101) and z; y cannot start beside x
    g.release('z');
    expect(await g.startedCount(2)).toEqual(['x', 'z']);
    g.release('x');
    expect(await g.startedCount(3)).toEqual(['x', 'z', 'y']);
    g.release('y');
    await g.run;

    const one = gated(units, 1);
    expect(await one.startedCount(1)).toEqual(['x']);
    one.release('x');
    expect(await one.startedCount(2)).toEqual(['x', 'y']); // y 100 > z 50 (plan order and FIFO would start z)
    one.release('y');
    expect(await one.startedCount(3)).toEqual(['x', 'y', 'z']);
    one.release('z');
    await one.run;
  });

  it('costs are read again after each unit finishes: a cost that depends on a finished input changes the order', async () => {
    // c1 and c2 share lane C; k1 reads c1, k2 reads c2; a k's cost is its input's value once finished, else 10.
    const run = async (c2Value: number) => {
      const units = [unit('c1', [], { lane: 'C' }), unit('c2', [], { lane: 'C' }), unit('k1', ['c1']), unit('k2', ['c2'])];
      const values: Record<string, number> = { c1: 3, c2: c2Value };
      const cost = (u: PlanUnit, ctx: UnitContext) => {
        if (u.inputs.length === 0) return 1;
        const r = ctx.result(u.inputs[0]);
        return r && 'value' in r ? (r.value as number) : 10;
      };
      const g = gated(units, 1, cost, (u) => values[u.id]);
      for (let i = 1; i <= 4; i++) {
        await g.startedCount(i);
        g.release(g.started[i - 1]);
      }
      await g.run;
      return g.started;
    };
    // after c1: k1 costs 3; c2 = 1 + 10 (k2 estimated) = 11 → c2. Then k1 3 against k2 = c2's value.
    expect(await run(50)).toEqual(['c1', 'c2', 'k2', 'k1']);
    expect(await run(0)).toEqual(['c1', 'c2', 'k1', 'k2']);
  });

  it("a handler's bad cost ends the run with an error naming the unit once the running units have settled", async () => {
    const units = [unit('a'), unit('b'), unit('c', [], { cost: Number.NaN })];
    const h: UnitKindHandler = {
      kind: 'keyword',
      waitingFor: 'the test',
      lane: (u) => u.id,
      key: async () => null,
      run: async () => ({ value: null }),
      cost: (u) => (u.params.cost as number | undefined) ?? 1,
    };
    await expect(executePlan(planOf(units), base(), { units, handlers: new Map([['keyword', h]]), concurrency: 1, stallSeconds: 60 })).rejects.toThrow(
      'unit c: cost NaN is not a finite number ≥ 0',
    );
  });
});

describe('the built-in kinds declare costs from the chunk count', () => {
  const docs = Array.from({ length: 40_000 }, (_, i) => ({ id: `d${i}`, text: 'x' }));
  const chunks = Array.from({ length: 100_000 }, (_, i) => ({ id: `c${i}` }));
  const ctxWith = (finished: boolean) =>
    ({
      dataset: { docs },
      scored: Array.from({ length: 300 }),
      result: (id: string) => (finished && id === 'chunking:cs256' ? { value: { chunks }, seconds: 0 } : undefined),
    }) as unknown as UnitContext;
  const kw: PlanUnit = { id: 'cs256.keyword', kind: 'keyword', params: {}, inputs: ['chunking:cs256'], keyParts: null, deferred: [], key: null, depth: 10 };
  const emb: PlanUnit = { id: 'embedding:m', kind: 'embedding', params: {}, inputs: ['chunking:none', 'chunking:cs256'], keyParts: null, deferred: [], key: null, depth: null };
  const dense: PlanUnit = { id: 'cs256.semantic.m', kind: 'dense', params: {}, inputs: ['embedding:m', 'chunking:cs256'], keyParts: null, deferred: [], key: null, depth: 10 };

  it('chunkCountOf: a finished chunking counts its chunks, an unfinished one the documents', () => {
    expect(chunkCountOf(kw, ctxWith(true))).toBe(100_000);
    expect(chunkCountOf(kw, ctxWith(false))).toBe(40_000);
    expect(chunkCountOf(emb, ctxWith(true))).toBe(40_000 + 100_000);
  });

  it('keyword 10,000 chunks/s, embedding 2,000 texts/s, dense 2·10⁷ chunk-questions/s, chunking 20,000 documents/s', () => {
    const ctx = ctxWith(true);
    expect(keywordUnit.cost!(kw, ctx)).toBeCloseTo(100_000 / 10_000, 10);
    expect(embeddingUnit.cost!(emb, ctx)).toBeCloseTo((40_000 + 100_000) / 2_000, 10);
    expect(denseUnit.cost!(dense, ctx)).toBeCloseTo((100_000 * 300) / 2e7, 10);
    expect(chunkingUnit.cost!({ ...kw, id: 'chunking:cs256', inputs: [] }, ctx)).toBeCloseTo(40_000 / 20_000, 10);
    // the embedding outranks both keyword builds it competes with at issue 25's 1M: 1.76M texts against 1.1M chunks
    expect(embeddingUnit.cost!(emb, ctx)).toBeGreaterThan(2 * keywordUnit.cost!(kw, ctx));
  });
});

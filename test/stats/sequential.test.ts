import { describe, expect, it } from 'vitest';
import { analyze } from '../../src/report/analyze.js';
import { isDagger, recommendationText } from '../../src/report/markdown.js';
import {
  bootstrapResampleMeans,
  exactSignFlip,
  monteCarloSignFlip,
  percentileInterval,
  signFlipPlan,
} from '../../src/score/stats.js';
import {
  quantileMcError,
  sequentialBootstrapDiff,
  sequentialSignFlipHolm,
  signFlipStream,
  wilsonInterval,
} from '../../src/score/sequential.js';
import { question, row, spec, sweep } from '../report/fixtures.js';

/** n differences: `neg` of −0.5, then `pos` of +0.5, then zeros. */
function diffs(n: number, neg: number, pos: number): Float64Array {
  return Float64Array.from({ length: n }, (_, j) => (j < neg ? -0.5 : j < neg + pos ? 0.5 : 0));
}

describe('Monte Carlo error helpers', () => {
  it('Wilson interval of 0 of 10000 at z = 3: [0, (9/20000 + 3·√(9/(4·10^8))) / (1 + 9/10000)]', () => {
    const w = wilsonInterval(0, 10000, 3);
    expect(w.low).toBeCloseTo(0, 10);
    expect(w.high).toBeCloseTo((9 / 20000 + 3 * Math.sqrt(9 / (4 * 1e8))) / (1 + 9 / 10000), 10);
  });

  it('Wilson interval of 50 of 100 at z = 1 is symmetric about 0.5: 0.5 ± √(0.25/100 + 1/40000)/(1 + 1/100)', () => {
    const w = wilsonInterval(50, 100, 1);
    const half = Math.sqrt(0.25 / 100 + 1 / 40000) / (1 + 1 / 100);
    expect(w.low).toBeCloseTo(0.5 - half, 10);
    expect(w.high).toBeCloseTo(0.5 + half, 10);
  });

  it('quantile MC error of 0..99 at p = 0.5: ranks 50 ∓ √25 → (55 − 45)/2 = 5', () => {
    const sorted = Float64Array.from({ length: 100 }, (_, i) => i);
    expect(quantileMcError(sorted, 0.5)).toBeCloseTo((55 - 45) / 2, 10);
  });

  it('the sign-pattern stream continues signFlipPlan: 300 patterns in two pieces are the plan of 300', () => {
    const s = signFlipStream(7, 5);
    const a = s.next(100);
    const b = s.next(200);
    const plan = signFlipPlan(7, 300, 5);
    expect(Array.from(a)).toEqual(Array.from(plan.subarray(0, 700)));
    expect(Array.from(b)).toEqual(Array.from(plan.subarray(700)));
  });
});

describe('sequentialSignFlipHolm', () => {
  const opts = { alpha: 0.05, seed: 9, initial: 1000, max: 64000 };

  it('n ≤ 16: exact p = the exhaustive count, decided; a zero vector has p = 1', () => {
    const d = diffs(10, 10, 0); // all ten −0.5: p = 2/2^10
    const [t, z] = sequentialSignFlipHolm([d, new Float64Array(10)], 10, opts);
    expect(t.exact).toBe(true);
    expect(t.pValue).toBeCloseTo(2 / 1024, 12);
    expect(t.mcError).toBe(0);
    expect(t.decided).toBe(true);
    expect(z.pValue).toBe(1);
    // Holm over 2: 2 × 2/1024, then max(·, 1).
    expect(t.pHolm).toBeCloseTo(4 / 1024, 12);
    expect(t.rejected).toBe(true);
    expect(z.rejected).toBe(false);
  });

  it('a p-value far from alpha stops at the initial patterns and equals the fixed-R Monte Carlo p', () => {
    const n = 20;
    const d = diffs(n, 5, 5); // balanced: p near 1
    const [t] = sequentialSignFlipHolm([d], n, opts);
    expect(t.resamples).toBe(1000);
    const fixed = monteCarloSignFlip(d, signFlipPlan(n, 1000, 9), 1000);
    expect(t.pValue).toBe(fixed.pValue);
    expect(t.mcError).toBeCloseTo(Math.sqrt((t.pValue * (1 - t.pValue)) / 1000), 12);
    expect(t.decided).toBe(true);
  });

  it('a p-value near alpha (exact 0.0414) is resampled further; its p is the fixed-R p at the R it reached', () => {
    const n = 20;
    const d = diffs(n, 15, 5);
    expect(exactSignFlip(d).pValue).toBeCloseTo(0.04138946533203125, 12);
    const [t] = sequentialSignFlipHolm([d], n, opts);
    expect(t.resamples).toBeGreaterThan(1000);
    expect(t.decided).toBe(true);
    expect(t.rejected).toBe(true); // the exact p is below 0.05
    const fixed = monteCarloSignFlip(d, signFlipPlan(n, t.resamples, 9), t.resamples);
    expect(t.pValue).toBe(fixed.pValue);
  });

  it('a knife-edge p-value (exact 0.04904) with a bound of 1000 patterns is undecided, not guessed', () => {
    const n = 20;
    const d = Float64Array.from({ length: n }, (_, j) => (j < 13 ? -0.5 : j < 17 ? 0.5 : 0));
    expect(exactSignFlip(d).pValue).toBeCloseTo(0.049041748046875, 12);
    const [t] = sequentialSignFlipHolm([d], n, { ...opts, max: 1000 });
    expect(t.resamples).toBe(1000);
    expect(t.decided).toBe(false);
  });

  it('max below initial is a usage error', () => {
    expect(() => sequentialSignFlipHolm([diffs(20, 3, 0)], 20, { ...opts, max: 10 })).toThrow(/initial/);
  });
});

describe('sequentialBootstrapDiff', () => {
  it('decided at the initial resamples: the interval is the fixed-R paired interval', () => {
    const a = Float64Array.from({ length: 12 }, (_, j) => (j % 3 === 0 ? 1 : 0.5));
    const b = a.map((x) => x - 0.3);
    const iv = sequentialBootstrapDiff(b, a, { level: 0.95, seed: 42, initial: 500, max: 8000 });
    // Every difference is −0.3: every resample is −0.3, far from 0.
    expect(iv.resamples).toBe(500);
    expect(iv.decided).toBe(true);
    expect(iv.low).toBeCloseTo(-0.3, 10);
    expect(iv.high).toBeCloseTo(-0.3, 10);
    expect(iv.excludesZero).toBe(true);
  });

  it('an end near 0 is resampled further, from the same stream: the interval equals the fixed-R one at the R reached', () => {
    const n = 12;
    const a = new Float64Array(n).fill(0.5);
    const b = Float64Array.from(a, (x, j) => (j === 5 ? x - 0.4 : x)); // one question differs: P*(D ≥ 0) = (11/12)^12 ≈ 0.35
    const iv = sequentialBootstrapDiff(b, a, { level: 1 - 0.05 / 3, seed: 42, initial: 500, max: 64000 });
    const d = Float64Array.from(b, (x, j) => x - a[j]);
    const fixed = percentileInterval(bootstrapResampleMeans(d, n, 1, iv.resamples, 42), 1 - 0.05 / 3);
    expect(iv.low).toBeCloseTo(fixed.low, 10);
    expect(iv.high).toBeCloseTo(fixed.high, 10);
    expect(iv.high).toBe(0); // a third of the resamples leave the question out: the upper end is 0
    expect(iv.excludesZero).toBe(false);
  });
});

/**
 * Twenty questions in two tags; the best row, a row whose exact sign-flip p against the best is 0.0414 (near α: Holm
 * tests it at α/1 once the three clearly worse rows are rejected; its bootstrap share of resamples ≥ 0 is
 * P(Binomial(20, 1/4) ≥ 10) = 0.0139 against the tail 0.05/4/2 = 0.00625), and three clearly worse rows. The
 * verdicts must not move with the seed.
 */
function nearBoundaryFixture() {
  const n = 20;
  const qs = Array.from({ length: n }, (_, j) => question(`q${j}`, { [`d${j}`]: 1 }, [j % 2 === 0 ? 'even' : 'odd']));
  const best = new Array<number>(n).fill(0.5);
  const near = best.map((x, j) => x + diffs(n, 15, 5)[j]); // 15 × 0, 5 × 1: p = 0.0414 exactly
  const worse = best.map(() => 0);
  const rows = [
    row(spec({ k: 5 }), qs, { ndcg: best }),
    row(spec({ k: 5, chunkingKey: 'cs128-ov0' }), qs, { ndcg: near }),
    row(spec({ k: 5, chunkingKey: 'cs256-ov0' }), qs, { ndcg: worse }),
    row(spec({ k: 5, chunkingKey: 'cs512-ov0' }), qs, { ndcg: worse.map((x) => x + 0.1) }),
    row(spec({ k: 5, chunkingKey: 'cs1024-ov0' }), qs, { ndcg: worse.map((x) => x + 0.2) }),
  ];
  return sweep(qs, rows, { primaryMetric: 'ndcg@5' });
}

describe('stable verdicts: one fixture under 20 seeds', () => {
  const result = nearBoundaryFixture();
  const verdicts = (seed: number) => {
    const a = analyze(result, { seed, resamples: 1000, permutationResamples: 1000, minQuestions: 10 });
    return {
      tier1: a.tier1,
      undecided: a.undecided,
      tiers: a.rows.map((r) => r.tier ?? null),
      dagger: a.comparisons.map((c) => [c.id, isDagger(c)]),
      segments: a.segments!.segments.map((s) => [s.name, s.tier1, s.undecided, s.recommendedInTier1]),
      recommendation: recommendationText(result, a).join(' '),
      enough: a.evidence.enough,
    };
  };

  it('tier membership, †, segments and the recommendation are identical for seeds 1..20', () => {
    const first = verdicts(1);
    // Decided, and on the side of the exact test: Holm rejects the three worse rows first (p = 2/2^20 each, × 4, × 3,
    // × 2), then near at α/1: 0.0414 < 0.05 → tier 2. † applies to tier-1 rows only: none here.
    expect(first.undecided).toEqual([]);
    expect(first.tier1).toEqual(['none.keyword.k5']);
    expect(first.tiers).toEqual([1, 2, 2, 2, 2]);
    expect(first.dagger.map(([, d]) => d)).toEqual([false, false, false, false]);
    for (let seed = 2; seed <= 20; seed++) expect(verdicts(seed)).toEqual(first);
  });

  it('the fixture is near the boundary: 200 fixed patterns put the near row on both sides of 0.05 across the seeds', () => {
    const d = diffs(20, 15, 5);
    const sides = new Set<boolean>();
    for (let seed = 1; seed <= 20; seed++) sides.add(monteCarloSignFlip(d, signFlipPlan(20, 200, seed), 200).pValue < 0.05);
    expect(sides.size).toBe(2);
  });
});

describe('an undecided verdict is named, never given a side', () => {
  it('exact p = 0.04904 with a bound of 10000 patterns: in neither tier, and every output says "undecided at 10000 resamples"', async () => {
    const { renderMarkdown } = await import('../../src/report/markdown.js');
    const { renderTerminal } = await import('../../src/report/terminal.js');
    const { renderMatrixJson } = await import('../../src/report/matrix.js');
    const n = 20;
    const qs = Array.from({ length: n }, (_, j) => question(`q${j}`, { [`d${j}`]: 1 }));
    const best = new Array<number>(n).fill(0.5);
    const knife = best.map((x, j) => (j < 13 ? 0 : j < 17 ? 1 : x)); // 13 × −0.5, 4 × +0.5, 3 × 0: p = 0.04904
    const result = sweep(qs, [row(spec({ k: 5 }), qs, { ndcg: best }), row(spec({ k: 5, chunkingKey: 'cs128-ov0' }), qs, { ndcg: knife })]);
    const a = analyze(result, { permutationResamples: 10000, maxResamples: 10000, minQuestions: 10 });
    expect(a.undecided).toEqual(['cs128-ov0.keyword.k5']);
    expect(a.tier1).toEqual(['none.keyword.k5']);
    expect(a.rows[1].tier).toBeUndefined();
    expect(recommendationText(result, a).join(' ')).toContain('Undecided at 10000 resamples: 1 configuration(s)');
    expect(renderMarkdown(result, a)).toContain('## Undecided at 10000 resamples');
    expect(renderTerminal(result, a)).toContain('(1 undecided at 10000 resamples)');
    expect(JSON.parse(renderMatrixJson(result, a)).rows[1].tier).toBeNull();
  });
});

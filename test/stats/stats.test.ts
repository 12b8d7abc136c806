import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  bootstrapCI,
  bootstrapResampleMeans,
  holm,
  mean,
  minimumDetectableDifference,
  normalQuantile,
  pairedPermutationTest,
  quantileSorted,
  seededRandom,
} from '../../src/score/stats.js';
import { isHarnessError } from '../../src/errors.js';

describe('seededRandom (mulberry32)', () => {
  it('same seed gives the same stream; different seeds differ', () => {
    const a = seededRandom(42);
    const b = seededRandom(42);
    const c = seededRandom(43);
    const xa = Array.from({ length: 5 }, () => a());
    const xb = Array.from({ length: 5 }, () => b());
    const xc = Array.from({ length: 5 }, () => c());
    expect(xa).toEqual(xb);
    expect(xa).not.toEqual(xc);
  });

  it('stays in [0, 1) and has mean about 1/2 over 100000 draws', () => {
    const r = seededRandom(1);
    let s = 0;
    let lo = 1;
    let hi = 0;
    for (let i = 0; i < 100000; i++) {
      const x = r();
      s += x;
      lo = Math.min(lo, x);
      hi = Math.max(hi, x);
    }
    expect(lo).toBeGreaterThanOrEqual(0);
    expect(hi).toBeLessThan(1);
    // sd of the mean of 1e5 uniforms = sqrt(1/12)/sqrt(1e5) ≈ 0.0009; 5 sd ≈ 0.0046.
    expect(Math.abs(s / 100000 - 0.5)).toBeLessThan(0.0046);
  });

  it('reduces the seed to 32 bits: 42 and 42 + 2^32 give the same stream', () => {
    expect(seededRandom(42)()).toBe(seededRandom(42 + 2 ** 32)());
  });
});

describe('mean and quantiles', () => {
  it('mean of [1, 2, 3, 4] is 10/4; of nothing is NaN', () => {
    expect(mean([1, 2, 3, 4])).toBeCloseTo(10 / 4, 10);
    expect(Number.isNaN(mean([]))).toBe(true);
  });

  it('type-7 quantile interpolates between order statistics: [0, 10, 20, 30] at 0.25 → h = 0.75 → 7.5', () => {
    // h = (n - 1) p = 3 × 0.25 = 0.75; x[0] + 0.75 × (x[1] − x[0]) = 0 + 0.75 × 10.
    expect(quantileSorted([0, 10, 20, 30], 0.25)).toBeCloseTo(7.5, 10);
    expect(quantileSorted([0, 10, 20, 30], 1)).toBeCloseTo(30, 10);
    expect(quantileSorted([5], 0.3)).toBeCloseTo(5, 10);
  });
});

describe('pairedPermutationTest', () => {
  it('diffs [1, 2, 3]: 2^3 = 8 sign patterns, |mean| ≥ 2 for 2 of them → exact p = 2/8', () => {
    // Sums of ±1 ±2 ±3: +6, +4, +2, 0, 0, −2, −4, −6. The observed sum is 6 (mean 2);
    // |sum| ≥ 6 for (+,+,+) and (−,−,−) only: p = 2 / 8 = 0.25.
    const r = pairedPermutationTest([1, 2, 3], [0, 0, 0]);
    expect(r.exact).toBe(true);
    expect(r.meanDiff).toBeCloseTo(2, 10);
    expect(r.pValue).toBeCloseTo(2 / 8, 10);
  });

  it('counts ties at the observed |mean|: diffs [1, 1] → all 4 patterns have |sum| ∈ {0, 2}, 2 reach 2 → p = 2/4', () => {
    const r = pairedPermutationTest([1, 1], [0, 0]);
    expect(r.pValue).toBeCloseTo(2 / 4, 10);
  });

  it('a tie that appears only through float rounding still counts: diffs [−0.6, 0.7, −0.1, −0.1] → p = 16/16', () => {
    // Exact sum −0.6 + 0.7 − 0.1 − 0.1 = −0.1; every sign pattern of ±0.6 ±0.7 ±0.1 ±0.1 has |sum| ≥ 0.1
    // (the smallest are |−0.6 + 0.7 ± 0.1 ∓ 0.1| = 0.1 and |0.6 − 0.7 ...| = 0.1), so p = 16/16 = 1.
    // In floating point the observed sum is −0.10000000000000003 and four patterns come out as 0.09999999999999998:
    // a test without a tolerance would say 12/16 = 0.75.
    const r = pairedPermutationTest([-0.6, 0.7, -0.1, -0.1], [0, 0, 0, 0]);
    expect(r.pValue).toBeCloseTo(16 / 16, 10);
  });

  it('identical systems give p = 1', () => {
    const v = [0.5, 0.25, 1, 0];
    expect(pairedPermutationTest(v, v).pValue).toBeCloseTo(1, 10);
  });

  it('Monte Carlo p = (count + 1)/(R + 1): a large consistent difference over 40 questions gives exactly 1/(R + 1)', () => {
    // 40 diffs of +1: only the all-plus and all-minus patterns reach |sum| = 40 (probability 2^-39 per draw),
    // so with R = 999 the count is 0 and p = (0 + 1) / (999 + 1).
    const a = Array.from({ length: 40 }, () => 1);
    const b = Array.from({ length: 40 }, () => 0);
    const r = pairedPermutationTest(a, b, { resamples: 999, seed: 5 });
    expect(r.exact).toBe(false);
    expect(r.pValue).toBeCloseTo(1 / 1000, 10);
  });

  it('Monte Carlo agrees with exact enumeration within sampling error (n = 12)', () => {
    const rand = seededRandom(9);
    const a = Array.from({ length: 12 }, () => rand());
    const b = a.map((x) => x - 0.1 + rand() * 0.25);
    const exact = pairedPermutationTest(a, b).pValue;
    const mc = pairedPermutationTest(a, b, { exactUpTo: 0, resamples: 20000, seed: 3 }).pValue;
    // sd of a Monte Carlo p near 0.5 with R = 20000 is about sqrt(0.25/20000) ≈ 0.0035; allow 5 sd.
    expect(Math.abs(mc - exact)).toBeLessThan(0.018);
  });

  it('same seed gives the same p; the test is symmetric in a and b', () => {
    const rand = seededRandom(11);
    const a = Array.from({ length: 50 }, () => rand());
    const b = Array.from({ length: 50 }, () => rand());
    const p1 = pairedPermutationTest(a, b, { seed: 7 });
    const p2 = pairedPermutationTest(a, b, { seed: 7 });
    const p3 = pairedPermutationTest(b, a, { seed: 7 });
    expect(p1).toEqual(p2);
    expect(p3.pValue).toBe(p1.pValue);
    expect(p3.meanDiff).toBeCloseTo(-p1.meanDiff, 10);
  });

  it('refuses unequal lengths with a HarnessError', () => {
    try {
      pairedPermutationTest([1, 2], [1]);
      expect.unreachable();
    } catch (e) {
      expect(isHarnessError(e, 'USAGE')).toBe(true);
    }
  });
});

describe('holm', () => {
  it('[0.01, 0.04, 0.03, 0.005]: sorted p × (m − i + 1), then running max, back in input order', () => {
    // Sorted: 0.005 (input 3), 0.01 (input 0), 0.03 (input 2), 0.04 (input 1); m = 4.
    // 0.005 × 4 = 0.02; 0.01 × 3 = 0.03; 0.03 × 2 = 0.06; 0.04 × 1 = 0.04 → monotone: max(0.06, 0.04) = 0.06.
    const adj = holm([0.01, 0.04, 0.03, 0.005]);
    expect(adj[0]).toBeCloseTo(0.01 * 3, 10);
    expect(adj[1]).toBeCloseTo(0.03 * 2, 10);
    expect(adj[2]).toBeCloseTo(0.03 * 2, 10);
    expect(adj[3]).toBeCloseTo(0.005 * 4, 10);
  });

  it('caps at 1: [0.3, 0.6] → [min(1, 0.6), max(0.6, 0.6)]', () => {
    // 0.3 × 2 = 0.6; 0.6 × 1 = 0.6.
    const adj = holm([0.6, 0.3]);
    expect(adj[0]).toBeCloseTo(0.6, 10);
    expect(adj[1]).toBeCloseTo(0.6, 10);
    expect(holm([0.9, 0.8])).toEqual([1, 1]);
  });

  it('property: adjusted ≥ raw, ≤ 1, and monotone in the raw order', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 1, maxLength: 30 }), (ps) => {
        const adj = holm(ps);
        const order = ps.map((_, i) => i).sort((x, y) => ps[x] - ps[y] || x - y);
        for (let j = 0; j < ps.length; j++) {
          expect(adj[j]).toBeGreaterThanOrEqual(ps[j] - 1e-15);
          expect(adj[j]).toBeLessThanOrEqual(1);
        }
        for (let j = 1; j < order.length; j++) expect(adj[order[j]]).toBeGreaterThanOrEqual(adj[order[j - 1]]);
      }),
    );
  });
});

describe('bootstrapCI (percentile bootstrap)', () => {
  const base = [0, 1, 0.5, 0.25, 1, 0.75, 0, 1, 0.5, 0.2];

  it('contains the mean and narrows as the same distribution is repeated (10 → 40 → 160 questions)', () => {
    const widths: number[] = [];
    for (const reps of [1, 4, 16]) {
      const v = Array.from({ length: reps }, () => base).flat();
      const ci = bootstrapCI(v, { seed: 1 });
      expect(ci.mean).toBeCloseTo(base.reduce((a, b) => a + b, 0) / base.length, 10);
      expect(ci.low).toBeLessThanOrEqual(ci.mean);
      expect(ci.high).toBeGreaterThanOrEqual(ci.mean);
      widths.push(ci.high - ci.low);
    }
    expect(widths[1]).toBeLessThan(widths[0]);
    expect(widths[2]).toBeLessThan(widths[1]);
    // The width shrinks like 1/sqrt(n): quadrupling n roughly halves it (within 25%).
    expect(widths[2] / widths[1]).toBeGreaterThan(0.5 * 0.75);
    expect(widths[2] / widths[1]).toBeLessThan(0.5 * 1.25);
  });

  it('160 questions: the interval is close to mean ± 1.96 sd/sqrt(n)', () => {
    const v = Array.from({ length: 16 }, () => base).flat();
    const m = mean(v);
    const sd = Math.sqrt(v.reduce((a, x) => a + (x - m) ** 2, 0) / v.length);
    const half = 1.959964 * (sd / Math.sqrt(v.length));
    const ci = bootstrapCI(v, { seed: 3, resamples: 4000 });
    expect(Math.abs(ci.high - ci.low - 2 * half)).toBeLessThan(0.15 * 2 * half);
  });

  it('same seed same numbers; a constant series gives a zero-width interval', () => {
    expect(bootstrapCI(base, { seed: 9 })).toEqual(bootstrapCI(base, { seed: 9 }));
    expect(bootstrapCI(base, { seed: 9 })).not.toEqual(bootstrapCI(base, { seed: 10 }));
    const c = bootstrapCI([0.4, 0.4, 0.4]);
    expect(c.low).toBeCloseTo(0.4, 10);
    expect(c.high).toBeCloseTo(0.4, 10);
  });

  it('matches the batch resampler column for column (indices drawn once, reused for every column)', () => {
    const a = [0.1, 0.9, 0.3, 0.7, 0.5];
    const b = [1, 0, 1, 0, 1];
    const n = 5;
    const matrix = new Float64Array(n * 2);
    for (let q = 0; q < n; q++) {
      matrix[q * 2] = a[q];
      matrix[q * 2 + 1] = b[q];
    }
    const boot = bootstrapResampleMeans(matrix, n, 2, 300, 4);
    const single = bootstrapResampleMeans(Float64Array.from(b), n, 1, 300, 4);
    for (let r = 0; r < 300; r++) expect(boot[r * 2 + 1]).toBe(single[r]);
  });

  it('refuses resamples < 1 and a level outside (0, 1)', () => {
    expect(() => bootstrapCI(base, { resamples: 0 })).toThrow(/resamples/);
    expect(() => bootstrapCI(base, { level: 1 })).toThrow(/level/);
  });
});

describe('minimumDetectableDifference (normal approximation)', () => {
  it('(z_{0.975} + z_{0.8}) × sd / sqrt(n): sd 0.2, n 25 → 2.801585 × 0.2 / 5', () => {
    expect(normalQuantile(0.975)).toBeCloseTo(1.959963984540054, 10);
    expect(normalQuantile(0.8)).toBeCloseTo(0.8416212335729143, 10);
    expect(minimumDetectableDifference(0.2, 25)).toBeCloseTo(((1.959963984540054 + 0.8416212335729143) * 0.2) / 5, 10);
  });

  it('alpha 0.01 and power 0.9: (2.575829 + 1.281552) × sd / sqrt(n)', () => {
    expect(minimumDetectableDifference(0.3, 100, { alpha: 0.01, power: 0.9 })).toBeCloseTo(
      ((2.5758293035489004 + 1.2815515655446004) * 0.3) / 10,
      10,
    );
  });

  it('normalQuantile tails (AS 241): Φ⁻¹(0.001) = −3.090232306167813, Φ⁻¹(1e−10) = −6.361340902404056', () => {
    expect(normalQuantile(0.001)).toBeCloseTo(-3.090232306167813, 10);
    expect(normalQuantile(1e-10)).toBeCloseTo(-6.361340902404056, 10);
    expect(normalQuantile(0.5)).toBeCloseTo(0, 10);
  });
});

import { describe, expect, it } from 'vitest';
import { analyze } from '../../src/report/analyze.js';
import { renderMarkdown } from '../../src/report/markdown.js';
import { renderHtml } from '../../src/report/html.js';
import { kmaxAdvice } from '../../src/report/choose-k.js';
import { question, row, spec, sweep } from './fixtures.js';

/**
 * Ten questions, one keyword configuration at k = 1, 3 and 5 (the primary k is 5). recall@5 = 1 everywhere;
 * recall@3 misses one question; recall@1 misses eight.
 */
function fixture() {
  const qs = Array.from({ length: 10 }, (_, j) => question(`q${j}`, { [`d${j}`]: 1 }));
  const r5 = new Array<number>(10).fill(1);
  const r3 = r5.map((_, j) => (j === 0 ? 0 : 1));
  const r1 = r5.map((_, j) => (j < 8 ? 0 : 1));
  const rows = [
    row(spec({ k: 1 }), qs, { ndcg: r1, recall: r1, hit_rate: r1 }),
    row(spec({ k: 3 }), qs, { ndcg: r3, recall: r3, hit_rate: r3 }),
    row(spec({ k: 5 }), qs, { ndcg: r5, recall: r5, hit_rate: r5 }),
  ];
  return sweep(qs, rows, { primaryMetric: 'ndcg@5' });
}

describe('choosing k', () => {
  const result = fixture();
  const a = analyze(result);

  it('one curve for the recommended row with recall and hit rate at every swept k', () => {
    expect(a.kCurves).toHaveLength(1);
    const c = a.kCurves[0];
    expect(c.configId).toBe('none.keyword.k5');
    expect(c.maxK).toBe(5);
    expect(c.points.map((p) => p.k)).toEqual([1, 3, 5]);
    expect(c.points.map((p) => p.recall!.mean)).toEqual([2 / 10, 9 / 10, 10 / 10]);
    expect(c.points[1].hitRate!.mean).toBeCloseTo(9 / 10, 10);
  });

  it('exact sign-flip tests against k = 5, Holm over two: k = 3 p = 1 (tied), k = 1 p = 2·(2/2^8) < 0.05 (less)', () => {
    const [p1, p3] = a.kCurves[0].points;
    // k = 3: one difference of −1, every pattern has |sum| = 1 → p = 1.
    expect(p3.vsMax!.diff).toBeCloseTo(-1 / 10, 10);
    expect(p3.vsMax!.pValue).toBeCloseTo(1, 10);
    expect(p3.vsMax!.tied).toBe(true);
    // k = 1: eight differences of −1: only the all-minus and all-plus patterns reach |sum| = 8 → 2/2^8; Holm × 2.
    expect(p1.vsMax!.diff).toBeCloseTo(-8 / 10, 10);
    expect(p1.vsMax!.pValue).toBeCloseTo(2 / 256, 10);
    expect(p1.vsMax!.pHolm).toBeCloseTo(2 * (2 / 256), 10);
    expect(p1.vsMax!.tied).toBe(false);
    expect(a.kCurves[0].smallestTiedK).toBe(3);
    expect(a.kCurves[0].sentence).toMatch(/^none\.keyword\.k5: k = 3 finds what k = 5 finds, within /);
  });

  it('report.md and report.html show the sentence and the curve', () => {
    const md = renderMarkdown(result, a);
    expect(md).toContain('## Choosing k');
    expect(md).toContain('k = 3 finds what k = 5 finds');
    expect(renderHtml(result, a)).toContain('k = 3 finds what k = 5 finds');
  });

  it('advice shared by several curves is said once: two tier-1 rows whose k = 1 finds significantly less than k = 5', () => {
    const qs = result.questions;
    const r5 = new Array<number>(10).fill(1);
    const r1 = r5.map((_, j) => (j < 8 ? 0 : 1)); // eight misses: exact p = 2/2^8 < 0.05, one smaller k so no Holm factor
    const rows = (['keyword', 'semantic'] as const).flatMap((mode) => [
      row(spec({ mode, k: 1, ...(mode === 'semantic' ? { embedding: 'use-lite' } : {}) }), qs, { ndcg: r1, recall: r1, hit_rate: r1 }),
      row(spec({ mode, k: 5, ...(mode === 'semantic' ? { embedding: 'use-lite' } : {}) }), qs, { ndcg: r5, recall: r5, hit_rate: r5 }),
    ]);
    const two = sweep(qs, rows, { primaryMetric: 'ndcg@5' });
    const b = analyze(two);
    expect(b.kCurves).toHaveLength(2);
    for (const c of b.kCurves) {
      expect(c.points[0].vsMax!.pHolm).toBeCloseTo(2 / 256, 10);
      expect(c.smallestTiedK).toBe(5);
      expect(c.advice).toBe(kmaxAdvice(5));
      expect(c.sentence).toBe(`${c.figures.slice(0, -1)}: ${kmaxAdvice(5)}`);
    }
    const md = renderMarkdown(two, b);
    const advice = kmaxAdvice(5).slice(0, 60);
    expect(md.split(advice).length - 1).toBe(1);
    expect(md).toContain(`For all 2 configurations: ${advice}`);
    expect(md).toContain(`${b.kCurves[1].configId}: k = 1 finds significantly less than k = 5 (recall 0.200 vs 1.000`);
    expect(renderHtml(two, b).split(advice).length - 1).toBe(1);
  });

  it('a row swept at one k only gets no curve', () => {
    const qs = result.questions;
    const one = analyze(sweep(qs, [row(spec({ k: 5 }), qs, { ndcg: new Array(10).fill(1) })], { primaryMetric: 'ndcg@5' }));
    expect(one.kCurves).toEqual([]);
  });
});

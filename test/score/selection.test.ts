import { describe, expect, it } from 'vitest';
import { assignFolds, crossValidatedSelection } from '../../src/score/selection.js';
import { analyze } from '../../src/report/analyze.js';
import { renderMarkdown } from '../../src/report/markdown.js';
import { question, row, spec, sweep } from '../report/fixtures.js';

/** The worked example of docs/statistics.md: three candidates, six questions, folds {q0,q1}, {q2,q3}, {q4,q5}. */
const A = [1, 0, 1, 0, 1, 1]; // total 4
const B = [0, 1, 1, 1, 0, 0]; // total 3
const C = [1, 1, 0, 0, 0, 0]; // total 2
const candidates = [
  { id: 'A', values: A },
  { id: 'B', values: B },
  { id: 'C', values: C },
];

describe('crossValidatedSelection: the worked example, by hand', () => {
  const r = crossValidatedSelection(candidates, { assignment: [0, 0, 1, 1, 2, 2] })!;

  it('in-sample best: A at 4/6', () => {
    expect(r.inSample.id).toBe('A');
    expect(r.inSample.mean).toBeCloseTo(4 / 6, 10);
  });

  it('fold 0 trains on q2..q5: A (4 − 1)/4, B (3 − 1)/4, C (2 − 2)/4 → A, held out (1 + 0)/2', () => {
    expect(r.perFold[0]).toEqual({ fold: 0, questions: 2, chosen: 'A', trainMean: (4 - 1) / 4, heldOutMean: (1 + 0) / 2 });
  });

  it('fold 1: A (4 − 1)/4, B (3 − 2)/4, C (2 − 0)/4 → A, held out (1 + 0)/2', () => {
    expect(r.perFold[1].chosen).toBe('A');
    expect(r.perFold[1].trainMean).toBeCloseTo((4 - 1) / 4, 10);
    expect(r.perFold[1].heldOutMean).toBeCloseTo((1 + 0) / 2, 10);
  });

  it('fold 2: A (4 − 2)/4, B (3 − 0)/4, C (2 − 0)/4 → B, held out (0 + 0)/2', () => {
    expect(r.perFold[2].chosen).toBe('B');
    expect(r.perFold[2].trainMean).toBeCloseTo(3 / 4, 10);
    expect(r.perFold[2].heldOutMean).toBeCloseTo(0, 10);
  });

  it('estimate (1 + 0 + 1 + 0 + 0 + 0)/6 = 1/3, optimism 4/6 − 2/6, choices A 2, B 1', () => {
    expect(r.estimate.mean).toBeCloseTo(2 / 6, 10);
    expect(r.optimism).toBeCloseTo(4 / 6 - 2 / 6, 10);
    expect(r.choices).toEqual([
      { id: 'A', folds: 2 },
      { id: 'B', folds: 1 },
    ]);
    expect(r.folds).toBe(3);
    expect(r.estimate.low).toBeLessThanOrEqual(2 / 6);
    expect(r.estimate.high).toBeGreaterThanOrEqual(2 / 6);
  });

  it('a training tie goes to the earlier candidate', () => {
    const t = crossValidatedSelection(
      [
        { id: 'X', values: [1, 0, 1, 0] },
        { id: 'Y', values: [0, 1, 1, 0] },
      ],
      { assignment: [0, 0, 1, 1] },
    )!;
    // Fold 0 trains on q2, q3: X (1 + 0)/2 = Y (1 + 0)/2 → X. Fold 1 trains on q0, q1: X 1/2 = Y 1/2 → X.
    expect(t.perFold.map((f) => f.chosen)).toEqual(['X', 'X']);
    expect(t.optimism).toBeCloseTo(0, 10);
  });

  it('one question or no candidate: null; folds < 2 is a usage error', () => {
    expect(crossValidatedSelection([{ id: 'A', values: [1] }])).toBeNull();
    expect(crossValidatedSelection([])).toBeNull();
    expect(() => crossValidatedSelection(candidates, { folds: 1 })).toThrow(/folds/);
  });
});

describe('assignFolds', () => {
  it('13 questions in 5 folds: sizes 3, 3, 3, 2, 2; the same seed gives the same folds', () => {
    const f = assignFolds(13, 5, 7);
    const sizes = [0, 1, 2, 3, 4].map((k) => f.filter((x) => x === k).length);
    expect(sizes).toEqual([3, 3, 3, 2, 2]);
    expect(assignFolds(13, 5, 7)).toEqual(f);
    expect(assignFolds(13, 5, 8)).not.toEqual(f);
  });

  it('stratified: 10 "a" and 5 "b" questions over 5 folds put 2 "a" and 1 "b" in every fold', () => {
    const strata = [...Array(10).fill('a'), ...Array(5).fill('b')] as string[];
    const f = assignFolds(15, 5, 3, strata);
    for (let k = 0; k < 5; k++) {
      expect(f.filter((x, q) => x === k && strata[q] === 'a').length).toBe(2);
      expect(f.filter((x, q) => x === k && strata[q] === 'b').length).toBe(1);
    }
  });
});

describe('analyze: selection and the report section', () => {
  it('the analysis carries the estimate over the candidates and report.md shows the optimism and the fold choices', () => {
    const qs = Array.from({ length: 10 }, (_, j) => question(`q${j}`, { [`d${j}`]: 1 }, [j < 5 ? 'x' : 'y']));
    const result = sweep(qs, [
      row(spec({ k: 5 }), qs, { ndcg: [1, 1, 1, 1, 1, 0, 0, 0, 0, 0] }),
      row(spec({ k: 5, chunkingKey: 'cs128-ov0' }), qs, { ndcg: [0, 0, 0, 0, 0, 1, 1, 1, 1, 0.5] }),
    ]);
    const a = analyze(result);
    const s = a.selection!;
    expect(s.stratified).toBe(true);
    expect(s.folds).toBe(5);
    expect(s.inSample).toEqual({ id: 'none.keyword.k5', mean: 5 / 10 });
    expect(s.choices.reduce((t, c) => t + c.folds, 0)).toBe(5);
    expect(s.optimism).toBeCloseTo(s.inSample.mean - s.estimate.mean, 12);
    const md = renderMarkdown(result, a);
    expect(md).toContain("## Selection: the winner's curse");
    expect(md).toContain(`optimism ${(s.inSample.mean - s.estimate.mean).toFixed(3)}`);
  });
});

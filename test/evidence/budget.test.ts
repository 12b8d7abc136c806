import { describe, expect, it } from 'vitest';
import { isHarnessError } from '../../src/errors.js';
import {
  atTokenBudget,
  budgetValues,
  evidenceCoverage,
  intersectionLength,
  mergeIntervals,
} from '../../src/score/budget.js';
import { chunk, span } from './helpers.js';

describe('interval arithmetic', () => {
  it('merges overlapping and touching intervals, drops empty ones, sorts', () => {
    expect(
      mergeIntervals([
        [50, 60],
        [0, 10],
        [10, 20],
        [5, 8],
        [30, 30],
        [55, 70],
      ]),
    ).toEqual([
      [0, 20],
      [50, 70],
    ]);
  });

  it('does not change its input', () => {
    const input: [number, number][] = [
      [5, 9],
      [0, 6],
    ];
    mergeIntervals(input);
    expect(input).toEqual([
      [5, 9],
      [0, 6],
    ]);
  });

  it('intersection length of merged lists: [0,20)+[50,70) vs [15,55) = 5 + 5', () => {
    expect(
      intersectionLength(
        [
          [0, 20],
          [50, 70],
        ],
        [[15, 55]],
      ),
    ).toBe(5 + 5);
  });
});

describe('evidenceCoverage by hand with overlapping chunks and overlapping spans', () => {
  // Evidence: a.md [100,400) and [350,500) overlap -> union [100,500) = 400 chars; b.md [0,50) = 50 chars. |E| = 450.
  const spans = [span('a.md', 100, 400), span('a.md', 350, 500, 2), span('b.md', 0, 50)];
  // Retrieved: a.md [0,200) and [150,350) overlap -> union [0,350) = 350 chars; b.md [20,220) = 200 chars. |R| = 550.
  //            c.md [100,400) has the same offsets as evidence but another document -> 300 chars, no evidence.
  const retrieved = [chunk('a.md', 0, 0, 200, 40), chunk('a.md', 1, 150, 350, 45), chunk('b.md', 0, 20, 220, 50), chunk('c.md', 3, 100, 400, 70)];
  // |R| = 350 + 200 + 300 = 850. E ∩ R: a.md [100,350) = 250; b.md [20,50) = 30; c.md 0 -> 280.
  const m = evidenceCoverage(retrieved, spans);

  it('evidenceRecall = |E ∩ R| / |E| = 280 / 450', () => {
    expect(m.evidenceRecall).toBeCloseTo(280 / 450, 10);
  });
  it('evidencePrecision = |E ∩ R| / |R| = 280 / 850 (the overlap [150,200) counted once)', () => {
    expect(m.evidencePrecision).toBeCloseTo(280 / 850, 10);
  });
  it('iou = |E ∩ R| / (|E| + |R| - |E ∩ R|) = 280 / (450 + 850 - 280)', () => {
    expect(m.iou).toBeCloseTo(280 / (450 + 850 - 280), 10);
  });
  it('tokens and chars count every chunk handed over, overlaps again: 40+45+50+70 tokens, 200+200+200+300 chars', () => {
    expect(m.tokens).toBe(40 + 45 + 50 + 70);
    expect(m.chars).toBe(200 + 200 + 200 + 300);
  });
  it('the order of the retrieved chunks does not matter', () => {
    expect(evidenceCoverage([...retrieved].reverse(), spans)).toEqual(m);
  });
});

describe('evidenceCoverage edge cases', () => {
  it('nothing retrieved: recall, precision and IoU are 0, tokens 0', () => {
    expect(evidenceCoverage([], [span('a.md', 0, 10)])).toEqual({
      evidenceRecall: 0,
      evidencePrecision: 0,
      iou: 0,
      tokens: 0,
      chars: 0,
    });
  });
  it('no evidence: recall 0 and IoU 0 by convention (the caller excludes such a question), precision 0', () => {
    const m = evidenceCoverage([chunk('a.md', 0, 0, 10, 3)], []);
    expect(m.evidenceRecall).toBe(0);
    expect(m.evidencePrecision).toBe(0);
    expect(m.iou).toBe(0);
    expect(m.tokens).toBe(3);
  });
  it('a chunk equal to the span: all three are 1', () => {
    const m = evidenceCoverage([chunk('a.md', 0, 10, 20)], [span('a.md', 10, 20)]);
    expect([m.evidenceRecall, m.evidencePrecision, m.iou]).toEqual([1, 1, 1]);
  });
  it('a malformed span -> LABEL_INVALID', () => {
    try {
      evidenceCoverage([], [span('a.md', 10, 5)]);
      expect.unreachable();
    } catch (e) {
      expect(isHarnessError(e, 'LABEL_INVALID')).toBe(true);
    }
  });
});

describe('fair across chunk sizes: at the same character budget, one big chunk and ten small ones cover the same', () => {
  it('ten 100-char chunks [0,1000) and one 1,000-char chunk [0,1000) both cover span [100,400) fully at precision 300/1000', () => {
    const small = Array.from({ length: 10 }, (_, i) => chunk('a.md', i, i * 100, i * 100 + 100, 25));
    const big = [chunk('a.md', 0, 0, 1000, 250)];
    const s = [span('a.md', 100, 400)];
    const a = evidenceCoverage(small, s);
    const b = evidenceCoverage(big, s);
    expect(a).toEqual(b);
    expect(a.evidencePrecision).toBeCloseTo(300 / 1000, 10);
    expect(a.tokens).toBe(10 * 25);
  });
});

describe('atTokenBudget: the longest prefix whose token sum <= budget', () => {
  const ranked = [chunk('a', 0, 0, 10, 40), chunk('a', 1, 10, 20, 40), chunk('a', 2, 20, 30, 20), chunk('a', 3, 30, 40, 5)];
  const ids = (b: number) => atTokenBudget(ranked, b).map((c) => c.id);

  it('budget 100: 40 + 40 + 20 = 100 fits exactly -> first three', () => {
    expect(ids(100)).toEqual(['a#0', 'a#1', 'a#2']);
  });
  it('budget 99: 40 + 40 = 80, the third (80 + 20 = 100 > 99) does not fit, and the later 5-token chunk is not squeezed in', () => {
    expect(ids(99)).toEqual(['a#0', 'a#1']);
  });
  it('a first chunk larger than the budget -> empty', () => {
    expect(ids(39)).toEqual([]);
    expect(ids(0)).toEqual([]);
  });
  it('Infinity keeps everything', () => {
    expect(ids(Number.POSITIVE_INFINITY)).toEqual(['a#0', 'a#1', 'a#2', 'a#3']);
  });
  it('returns a new array and leaves the input alone', () => {
    const out = atTokenBudget(ranked, 1000);
    expect(out).not.toBe(ranked);
    expect(ranked).toHaveLength(4);
  });
  it.each([-1, Number.NaN])('budget %s -> USAGE', (b) => {
    try {
      atTokenBudget(ranked, b);
      expect.unreachable();
    } catch (e) {
      expect(isHarnessError(e, 'USAGE')).toBe(true);
    }
  });
});

describe('budgetValues', () => {
  it('keys the measures by name at k', () => {
    expect(budgetValues({ evidenceRecall: 0.5, evidencePrecision: 0.25, iou: 0.2, tokens: 12, chars: 48 }, 5)).toEqual({
      'evidence_recall@5': 0.5,
      'evidence_precision@5': 0.25,
      'evidence_iou@5': 0.2,
      'tokens@5': 12,
      'chars@5': 48,
    });
  });
});

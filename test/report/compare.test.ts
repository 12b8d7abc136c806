import { describe, expect, it } from 'vitest';
import { compareRuns, compareSweeps, formatComparisonMarkdown, recommendedRow } from '../../src/report/compare.js';
import { bootstrapCI } from '../../src/score/stats.js';
import { question, row, spec, sweep } from './fixtures.js';

const qs = Array.from({ length: 10 }, (_, j) => question(`q${j}`, { [`d${j}`]: 1 }));
const X = spec({ mode: 'keyword', k: 5 });
const Y = spec({ mode: 'semantic', embedding: 'm', k: 5 });
const Z = spec({ mode: 'keyword', k: 10 });
const base = [0.2, 0.4, 0.1, 0.3, 0.5, 0.2, 0.4, 0.1, 0.3, 0.5];

function pair() {
  const a = sweep(qs, [row(X, qs, { ndcg: base }), row(Y, qs, { ndcg: base }), row(Z, qs, { ndcg: base })], { name: 'A' });
  // B improves X by 0.3 on every question, leaves Y unchanged; Z only exists in A.
  const b = sweep(qs, [row(X, qs, { ndcg: base.map((v) => v + 0.3) }), row(Y, qs, { ndcg: base })], { name: 'B' });
  return { a, b };
}

describe('compareSweeps', () => {
  it('per shared configuration at the primary k: B − A, exact sign-flip p over 10 questions; an identical row is not tested', () => {
    const { a, b } = pair();
    const { json } = compareSweeps(a, b);
    expect(json.questions).toBe(10);
    expect(json.metric).toBe('ndcg@5');
    expect(json.rows.map((r) => r.configId)).toEqual(['none.keyword.k5']);
    // Y: every difference is exactly 0, so it is listed as identical and left out of the Holm family.
    expect(json.identical).toEqual([{ configId: 'none.semantic.m.k5', metric: 'ndcg@5', value: expect.closeTo(3 / 10, 10) }]);
    expect(json.tests).toBe(1);
    const x = json.rows[0];
    expect(x.metric).toBe('ndcg@5');
    expect(x.diff).toBeCloseTo(0.3, 10);
    expect(x.a).toBeCloseTo(3 / 10, 10); // mean of base = 3.0 / 10
    expect(x.b).toBeCloseTo(6 / 10, 10);
    // All ten differences are +0.3: only all-plus and all-minus reach |sum| = 3 → p = 2 / 2^10.
    expect(x.pValue).toBeCloseTo(2 / 1024, 10);
    // Holm over m = 1 test: unchanged.
    expect(x.pHolm).toBeCloseTo(2 / 1024, 10);
    expect(x.significant).toBe(true);
    expect(x.regression).toBe(false);
    // The interval of a constant difference is that constant.
    expect(x.low).toBeCloseTo(0.3, 10);
    expect(x.high).toBeCloseTo(0.3, 10);
    expect(json.configsOnlyInA).toEqual(['none.keyword.k10']);
  });

  it('tested rows get simultaneous intervals at 1 − alpha/m (Bonferroni over the Holm family); the overall line keeps 95%', () => {
    const { a } = pair();
    // B changes X by d1 and Y by d2 per question: two tests, so the rows' intervals are at 1 − 0.05/2 = 0.975.
    const d1 = [0.3, 0.1, 0.2, 0.0, 0.4, 0.1, 0.3, 0.2, 0.0, 0.1];
    const d2 = [-0.1, 0.0, 0.2, -0.2, 0.1, 0.0, -0.1, 0.3, 0.0, -0.1];
    const b = sweep(qs, [row(X, qs, { ndcg: base.map((v, j) => v + d1[j]) }), row(Y, qs, { ndcg: base.map((v, j) => v + d2[j]) })], { name: 'B' });
    const { json, text } = compareSweeps(a, b, { seed: 7, resamples: 500 });
    expect(json.tests).toBe(2);
    expect(json.intervalLevel).toBeCloseTo(1 - 0.05 / 2, 10);
    // The same resampled questions for every column (one random stream), so each column is the one-column bootstrap.
    const x = bootstrapCI(d1, { resamples: 500, seed: 7, level: 0.975 });
    const y = bootstrapCI(d2, { resamples: 500, seed: 7, level: 0.975 });
    expect(json.rows[0].low).toBeCloseTo(x.low, 10);
    expect(json.rows[0].high).toBeCloseTo(x.high, 10);
    expect(json.rows[1].low).toBeCloseTo(y.low, 10);
    expect(json.rows[1].high).toBeCloseTo(y.high, 10);
    // Overall: per question (d1 + d2) / 2, one test, at the plain level.
    const o = bootstrapCI(d1.map((v, j) => (v + d2[j]) / 2), { resamples: 500, seed: 7, level: 0.95 });
    expect(json.level).toBe(0.95);
    expect(json.overall!.low).toBeCloseTo(o.low, 10);
    expect(json.overall!.high).toBeCloseTo(o.high, 10);
    expect(text).toContain('97.5% bootstrap interval, Bonferroni over the 2 test(s)');
    expect(text).toContain('97.5% CI');
  });

  it('overall: per question the mean over the compared configurations, then B − A', () => {
    const { a, b } = pair();
    const { json } = compareSweeps(a, b);
    // Per question: A = (v + v) / 2 = v; B = ((v + 0.3) + v) / 2 = v + 0.15 → diff 0.15 on every question.
    expect(json.overall?.diff).toBeCloseTo(0.15, 10);
    expect(json.overall?.a).toBeCloseTo(0.3, 10);
    expect(json.overall?.pValue).toBeCloseTo(2 / 1024, 10);
  });

  it('compares only the shared questions and says how many were left out', () => {
    const { a, b } = pair();
    b.questions = b.questions.slice(0, 8);
    for (const r of b.configs) r.perQuery = r.perQuery.slice(0, 8);
    const { json, text } = compareSweeps(a, b);
    expect(json.questions).toBe(8);
    expect(json.onlyInA).toEqual(['q8', 'q9']);
    // X over q0..q7: A mean (0.2+0.4+0.1+0.3+0.5+0.2+0.4+0.1)/8 = 2.2/8.
    expect(json.rows[0].a).toBeCloseTo(2.2 / 8, 10);
    expect(text).toContain('2 question(s) only in A and 0 only in B are left out');
  });

  it('notes a changed dataset fingerprint and a different primary metric', () => {
    const { a, b } = pair();
    b.manifest = { dataset: { fingerprint: 'zzz' } };
    b.primaryMetric = 'recall@5';
    const { json } = compareSweeps(a, b);
    expect(json.notes.some((n) => n.includes('fingerprints differ'))).toBe(true);
    expect(json.notes.some((n) => n.includes('different primary metrics'))).toBe(true);
    expect(json.family).toBe('ndcg');
  });

  it('text lists every compared configuration and marks the significant ones', () => {
    const { a, b } = pair();
    const { text } = compareSweeps(a, b);
    const line = text.split('\n').find((l) => l.startsWith('none.keyword.k5'))!;
    expect(line).toContain('+0.300');
    expect(line.trimEnd().endsWith('*')).toBe(true);
    expect(text).toContain(
      '1 of 1 tested configuration(s) changed significantly (Holm over 1 test(s), α = 0.05): 1 better in B, 0 worse in B; 1 identical on every question (not tested).',
    );
  });

  it('same seed, same result', () => {
    const many = Array.from({ length: 40 }, (_, j) => question(`q${j}`, { [`d${j}`]: 1 }));
    const va = many.map((_, j) => (j % 5) / 5);
    const vb = many.map((_, j) => ((j * 3) % 5) / 5);
    const A = sweep(many, [row(X, many, { ndcg: va })]);
    const B = sweep(many, [row(X, many, { ndcg: vb })]);
    expect(compareSweeps(A, B, { seed: 1 }).json).toEqual(compareSweeps(A, B, { seed: 1 }).json);
  });
});

describe('compareSweeps, issue 13', () => {
  it('exits 1 when the sweeps share no question: a HarnessError, not an empty table', () => {
    const { a } = pair();
    const other = Array.from({ length: 3 }, (_, j) => question(`z${j}`, { d: 1 }));
    const b = sweep(other, [row(X, other, { ndcg: [1, 0, 1] })], { name: 'B' });
    expect(() => compareSweeps(a, b)).toThrow(expect.objectContaining({ code: 'USAGE', message: expect.stringContaining('share no scored question') }));
  });

  it('shows what differs between the two configs: BM25 k1 and b, RRF constant, models, fingerprint', () => {
    const { a, b } = pair();
    a.manifest = { dataset: { fingerprint: 'aaa' }, bm25: { k1: 1.2, b: 0.75 }, hybrid: { rrfK: 60, depth: 50 }, embeddings: [{ label: 'm', model: 'use-lite' }] };
    b.manifest = { dataset: { fingerprint: 'bbb' }, bm25: { k1: 0.9, b: 0.4 }, hybrid: { rrfK: 10, depth: 50 }, embeddings: [{ label: 'm', model: 'transformers:./x' }] };
    const { json, text } = compareSweeps(a, b);
    expect(json.settings).toEqual([
      { setting: 'dataset fingerprint', a: 'aaa', b: 'bbb' },
      { setting: 'BM25 k1', a: '1.2', b: '0.9' },
      { setting: 'BM25 b', a: '0.75', b: '0.4' },
      { setting: 'RRF constant', a: '60', b: '10' },
      { setting: 'embedding models', a: 'm = use-lite', b: 'm = transformers:./x' },
    ]);
    expect(text).toContain('Settings that differ:');
    expect(text).toMatch(/BM25 k1\s+1\.2\s+0\.9/);
  });

  it('a retriever module or run file edited between the sweeps shows as a changed setting (same names, other hashes)', () => {
    const { a, b } = pair();
    a.manifest = { retrievers: [{ name: 'words', moduleSha256: 'a'.repeat(64) }], runs: [{ name: 'es', sha256: 'c'.repeat(64) }] };
    b.manifest = { retrievers: [{ name: 'words', moduleSha256: 'b'.repeat(64) }], runs: [{ name: 'es', sha256: 'c'.repeat(64) }] };
    expect(compareSweeps(a, b).json.settings).toEqual([{ setting: 'retriever modules', a: `words ${'a'.repeat(12)}`, b: `words ${'b'.repeat(12)}` }]);
  });

  it('does not call a row failed that did not fail', () => {
    const { a, b } = pair();
    // Y is ok in B but has no per-question values.
    b.configs[1] = { ...b.configs[1], perQuery: [] };
    const { json, text } = compareSweeps(a, b);
    expect(json.notCompared).toEqual([{ configId: 'none.semantic.m.k5', reason: 'no per-question ndcg@5 in B for every shared question' }]);
    expect(text).not.toContain('failed');
    b.configs[1] = { ...b.configs[1], status: 'failed', error: 'x' };
    expect(compareSweeps(a, b).json.notCompared[0].reason).toBe('failed in B');
  });
});

describe('compare for changes and for CI, issue 22', () => {
  const W = spec({ mode: 'hybrid', embedding: 'm', k: 5 });
  const Z10 = spec({ mode: 'keyword', k: 10 });
  const minus = (d: number) => base.map((v) => v - d);

  it('Holm runs over the rows at the metric\'s k only (not every k), and a bare family compares every row at its own k', () => {
    // X and Z (k10) are both 0.3 worse on every question in B; W unchanged.
    const a = sweep(qs, [row(X, qs, { ndcg: base }), row(W, qs, { ndcg: base }), row(Z10, qs, { ndcg: base })], { name: 'A' });
    const b = sweep(qs, [row(X, qs, { ndcg: minus(0.3) }), row(W, qs, { ndcg: base }), row(Z10, qs, { ndcg: minus(0.3) })], { name: 'B' });
    const at5 = compareSweeps(a, b).json;
    expect(at5.rows.map((r) => r.configId)).toEqual(['none.keyword.k5']);
    expect(at5.tests).toBe(1);
    expect(at5.rows[0].pHolm).toBeCloseTo(2 / 1024, 10);
    const at10 = compareSweeps(a, b, { metric: 'nDCG@10' }).json; // an ir_measures spelling, stored canonical
    expect(at10.metric).toBe('ndcg@10');
    expect(at10.rows.map((r) => r.configId)).toEqual(['none.keyword.k10']);
    const every = compareSweeps(a, b, { metric: 'ndcg' }).json;
    expect(every.rows.map((r) => [r.configId, r.metric])).toEqual([
      ['none.keyword.k5', 'ndcg@5'],
      ['none.keyword.k10', 'ndcg@10'],
    ]);
    // Two tests, both p = 2/1024: Holm gives 2 × 2/1024 to the first, max(that, 1 × 2/1024) to the second.
    expect(every.tests).toBe(2);
    expect(every.rows[0].pHolm).toBeCloseTo(4 / 1024, 10);
    expect(every.rows[1].pHolm).toBeCloseTo(4 / 1024, 10);
    expect(() => compareSweeps(a, b, { metric: 'recall@3' })).toThrow(expect.objectContaining({ code: 'USAGE', message: expect.stringContaining('recall@3') }));
  });

  it('a folder compared with itself: nothing tested, every row identical, the closing sentence says no differences', () => {
    const { a } = pair();
    const { json, text } = compareSweeps(a, a);
    expect(json.rows).toEqual([]);
    expect(json.identical.map((x) => x.configId)).toEqual(['none.keyword.k5', 'none.semantic.m.k5']);
    expect(json.tests).toBe(0);
    expect(json.settings).toEqual([]);
    expect(json.summary).toBe('No differences: all 2 compared configurations give identical ndcg@5 on every question.');
    expect(text).not.toContain('B − A  ');
  });

  it('settings are compared as sets: models listed in another (finishing) order are not a difference', () => {
    const { a, b } = pair();
    a.manifest = { embeddings: [{ label: 'glove-100d', model: 'glove-100d' }, { label: 'use-lite', model: 'use-lite' }] };
    b.manifest = { embeddings: [{ label: 'use-lite', model: 'use-lite' }, { label: 'glove-100d', model: 'glove-100d' }] };
    expect(compareSweeps(a, b).json.settings).toEqual([]);
    b.manifest = { embeddings: [{ label: 'use-lite', model: 'use-lite' }] };
    expect(compareSweeps(a, b).json.settings).toEqual([{ setting: 'embedding models', a: 'glove-100d, use-lite', b: 'use-lite' }]);
  });

  it('a regression is significantly worse by more than the margin', () => {
    const a = sweep(qs, [row(X, qs, { ndcg: base })], { name: 'A' });
    const b = sweep(qs, [row(X, qs, { ndcg: minus(0.02) })], { name: 'B' });
    // −0.02 on all 10 questions: p = 2/1024 < 0.05, significant.
    const r1 = compareRuns(a, [b], { margin: 0.01 });
    expect(r1.comparisons[0].rows[0].diff).toBeCloseTo(-0.02, 10);
    expect(r1.regressions.map((r) => [r.run, r.runIndex, r.configId])).toEqual([['B', 0, 'none.keyword.k5']]);
    expect(r1.comparisons[0].summary).toContain('Regression (significantly worse by more than 0.01): none.keyword.k5.');
    // A margin of 0.05 is more than the 0.02 lost: significant, worse, but no regression.
    const r2 = compareRuns(a, [b], { margin: 0.05 });
    expect(r2.comparisons[0].rows[0].significant).toBe(true);
    expect(r2.regressions).toEqual([]);
    // Better is never a regression.
    expect(compareRuns(b, [a], { margin: 0 }).regressions).toEqual([]);
    expect(formatComparisonMarkdown(r1)).toContain('### retrieval-sweep compare: ❌ 1 regression(s)');
    expect(formatComparisonMarkdown(r1)).toContain('| **`none.keyword.k5`** | ndcg@5 |');
    expect(formatComparisonMarkdown(r2)).toContain('### retrieval-sweep compare: ✅ no regression');
  });

  it('several runs against one baseline: Holm over every run × row tested', () => {
    const a = sweep(qs, [row(X, qs, { ndcg: base })], { name: 'base' });
    const b = sweep(qs, [row(X, qs, { ndcg: minus(0.1) })], { name: 'b' });
    const c = sweep(qs, [row(X, qs, { ndcg: base.map((v) => v + 0.1) })], { name: 'c' });
    const out = compareRuns(a, [b, c]);
    expect(out.tests).toBe(2);
    expect(out.comparisons.map((x) => x.b.name)).toEqual(['b', 'c']);
    // Both p = 2/1024; Holm over m = 2: 4/1024 each.
    for (const x of out.comparisons) expect(x.rows[0].pHolm).toBeCloseTo(4 / 1024, 10);
    expect(out.comparisons[0].rows[0].diff).toBeCloseTo(-0.1, 10);
    expect(out.comparisons[1].rows[0].diff).toBeCloseTo(0.1, 10);
  });

  it('--rows recommended: the baseline\'s highest row at the primary metric; named rows must be in both sweeps', () => {
    // Y is higher than X in A (base + 0.1), so Y is the recommended row.
    const a = sweep(qs, [row(X, qs, { ndcg: base }), row(Y, qs, { ndcg: base.map((v) => v + 0.1) })], { name: 'A' });
    const b = sweep(qs, [row(X, qs, { ndcg: minus(0.1) }), row(Y, qs, { ndcg: base })], { name: 'B' });
    expect(recommendedRow(a)).toBe('none.semantic.m.k5');
    const rec = compareSweeps(a, b, { rows: 'recommended' }).json;
    expect(rec.recommended).toBe('none.semantic.m.k5');
    expect(rec.rows.map((r) => r.configId)).toEqual(['none.semantic.m.k5']);
    expect(rec.tests).toBe(1);
    expect(compareSweeps(a, b, { rows: ['none.keyword.k5'] }).json.rows.map((r) => r.configId)).toEqual(['none.keyword.k5']);
    expect(() => compareSweeps(a, b, { rows: ['none.keyword.k7'] })).toThrow(
      expect.objectContaining({ code: 'USAGE', message: expect.stringContaining('none.keyword.k7 is not a configuration of') }),
    );
  });

  it('the closing sentence agrees with the numbers: no row significant but the overall line is says both', () => {
    // Eight rows, row i 0.1 better on question i only: each row p = 1 (one non-zero difference), so none is
    // significant; per question the overall diff is 0.1/8 on q0..q7 and 0 on q8, q9, all the same sign: exact
    // p = 2 × 2^2 / 2^10 = 8/1024 < 0.05.
    const specs = Array.from({ length: 8 }, (_, i) => spec({ mode: 'keyword', k: 5, id: `r${i}.k5` }));
    const a = sweep(qs, specs.map((s) => row(s, qs, { ndcg: base })), { name: 'A' });
    const b = sweep(qs, specs.map((s, i) => row(s, qs, { ndcg: base.map((v, j) => (j === i ? v + 0.1 : v)) })), { name: 'B' });
    const { json } = compareSweeps(a, b);
    expect(json.rows.every((r) => !r.significant)).toBe(true);
    expect(json.overall!.pValue).toBeCloseTo(8 / 1024, 10);
    expect(json.summary).toMatch(/^No configuration changed significantly: 0 of 8 tested \(Holm over 8 test\(s\), α = 0\.05\)\. The overall line does differ \(\+0\.010, p 0\.008/);
  });
});

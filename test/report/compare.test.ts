import { describe, expect, it } from 'vitest';
import { compareSweeps } from '../../src/report/compare.js';
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
  it('per shared configuration: B − A, exact sign-flip p over 10 questions, Holm over the configurations', () => {
    const { a, b } = pair();
    const { json } = compareSweeps(a, b);
    expect(json.questions).toBe(10);
    expect(json.rows.map((r) => r.configId)).toEqual(['none.keyword.k5', 'none.semantic.m.k5']);
    const x = json.rows[0];
    const y = json.rows[1];
    expect(x.metric).toBe('ndcg@5');
    expect(x.diff).toBeCloseTo(0.3, 10);
    expect(x.a).toBeCloseTo(3 / 10, 10); // mean of base = 3.0 / 10
    expect(x.b).toBeCloseTo(6 / 10, 10);
    // All ten differences are +0.3: only all-plus and all-minus reach |sum| = 3 → p = 2 / 2^10.
    expect(x.pValue).toBeCloseTo(2 / 1024, 10);
    // Y: all differences 0 → p = 1.
    expect(y.diff).toBeCloseTo(0, 10);
    expect(y.pValue).toBeCloseTo(1, 10);
    // Holm, m = 2: 2/1024 × 2 = 4/1024; then max(4/1024, 1) = 1.
    expect(x.pHolm).toBeCloseTo(4 / 1024, 10);
    expect(y.pHolm).toBeCloseTo(1, 10);
    expect(x.significant).toBe(true);
    expect(y.significant).toBe(false);
    // The interval of a constant difference is that constant.
    expect(x.low).toBeCloseTo(0.3, 10);
    expect(x.high).toBeCloseTo(0.3, 10);
    expect(json.configsOnlyInA).toEqual(['none.keyword.k10']);
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
    expect(text).toContain('1 configuration(s) changed significantly (*): 1 better in B, 0 worse in B.');
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

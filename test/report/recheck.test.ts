import { describe, expect, it } from 'vitest';
import { chunkingKeyOfRow, formatRecheck, recheckRuns, type RecheckRow } from '../../src/report/recheck.js';
import type { Qrels, Run } from '../../src/score/evaluate.js';

// q1: d1 has grade 2, d2 grade 1; the run ranks d2 first, d1 second.
const qrels: Qrels = new Map([['q1', new Map([['d1', 2], ['d2', 1]])]]);
const run: Run = new Map([['q1', [{ docno: 'd2', score: 2 }, { docno: 'd1', score: 1 }]]]);
// The sweep ran at threshold 2: only d1 is relevant → mrr@5 = 1/2, precision@5 = 1/5, hit_rate@5 = 1.
const row = (metrics: Record<string, number>): RecheckRow => ({ config_id: 'none.keyword.k5', status: 'ok', chunking: 'none', overlap: 0, metrics });
const input = (threshold: number, metrics: Record<string, number>) => ({
  level: 'document' as const,
  relevanceThreshold: threshold,
  rows: [row(metrics), { ...row({}), config_id: 'x', status: 'failed' }],
  qrels: () => qrels,
  run: () => run,
});

describe('recheck', () => {
  it("uses the sweep's relevance threshold: a threshold-2 sweep has no false disagreements", () => {
    const r = recheckRuns(input(2, { 'mrr@5': 1 / 2, 'precision@5': 1 / 5, 'hit_rate@5': 1 }));
    expect(r).toMatchObject({ configs: 1, values: 3, relevanceThreshold: 2, disagreements: [] });
    expect(r.maxDiff).toBeLessThanOrEqual(1e-12);
  });

  it('at the default threshold 1 the same matrix disagrees (the old defect): mrr 1/2 vs 1, precision 1/5 vs 2/5', () => {
    const r = recheckRuns(input(1, { 'mrr@5': 1 / 2, 'precision@5': 1 / 5, 'hit_rate@5': 1 }));
    expect(r.disagreements.map((d) => d.measure).sort()).toEqual(['mrr@5', 'precision@5']);
  });

  it('max |diff| includes the disagreeing values', () => {
    // mrr@5 written as 0.9 instead of 0.5: |0.9 − 0.5| = 0.4 is the largest difference and must be reported.
    const r = recheckRuns(input(2, { 'mrr@5': 0.9, 'precision@5': 1 / 5 }));
    expect(r.disagreements).toHaveLength(1);
    expect(r.maxDiff).toBeCloseTo(0.4, 10);
    expect(formatRecheck(r)).toContain('max |diff| 4.00e-1; 1 disagree');
    expect(formatRecheck(r)).toContain('at relevance threshold 2');
  });

  it('names the rows it did not re-score: a failed row has no run', () => {
    const r = recheckRuns(input(2, { 'mrr@5': 1 / 2 }));
    expect(r.skipped).toEqual([{ configId: 'x', status: 'failed' }]);
    expect(formatRecheck(r).split('\n')[1]).toBe('1 configuration not re-scored, no run to check: x (failed)');
  });

  it('levels chunk and evidence read qrels/<chunking key>.trec; evidence recall is not re-checked', () => {
    const keys: (string | null)[] = [];
    const r = recheckRuns({
      ...input(2, { 'mrr@5': 1 / 2, 'recall@5': 0.123, 'evidence_recall@5': 0.5 }),
      level: 'evidence',
      rows: [{ ...row({ 'mrr@5': 1 / 2, 'recall@5': 0.123, 'evidence_recall@5': 0.5 }), chunking: 256, overlap: 32 }],
      qrels: (k) => (keys.push(k), qrels),
    });
    expect(keys).toEqual(['cs256-ov32']);
    expect(r.values).toBe(1);
  });
});

describe('chunkingKeyOfRow (issue 22: matrix.json chunking is the size or null)', () => {
  it('null (this version) and "none" (older folders) are whole documents; a size reads cs<size>-ov<overlap>', () => {
    expect(chunkingKeyOfRow({ chunking: null, overlap: 0 })).toBe('none');
    expect(chunkingKeyOfRow({ chunking: 'none', overlap: 0 })).toBe('none');
    expect(chunkingKeyOfRow({ chunking: 128, overlap: 16 })).toBe('cs128-ov16');
  });
});

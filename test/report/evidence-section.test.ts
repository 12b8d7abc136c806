import { describe, expect, it } from 'vitest';
import { evidenceSection } from '../../src/report/evidence.js';
import { matrixColumns, MATRIX_COLUMNS } from '../../src/report/matrix.js';
import type { ConfigResult, SweepResult } from '../../src/types.js';

function row(id: string, k: number, means: Record<string, number>): ConfigResult {
  return {
    config: { id, chunkingKey: id.split('.')[0], chunking: { size: 64, overlap: 0 }, mode: 'keyword', retriever: 'keyword', embedding: null, fusion: null, rerank: null, k },
    status: 'ok',
    means,
    questions: 2,
    buildSeconds: 0,
    meanQueryMs: 0,
    perQuery: [],
  };
}

const base: SweepResult = {
  name: 't',
  createdAt: '2026-01-01T00:00:00Z',
  primaryMetric: 'recall@5',
  level: 'evidence',
  configs: [
    row('cs64-ov0.keyword.k5', 5, {
      'recall@5': 0.75,
      'evidence_recall@5': 2 / 3,
      'evidence_precision@5': 0.125,
      'evidence_iou@5': 0.1,
      'tokens@5': 245.5,
      'evidence_recall@256t': 0.5,
    }),
    row('cs64-ov0.keyword.k1', 1, { 'recall@1': 0.5 }),
  ],
  questions: [],
  excluded: [],
  manifest: {
    evidence: {
      minOverlap: 0.5,
      budgets: [256],
      projection: { 'cs64-ov0': { spans: 4, spansWithNoRelevantChunk: 1, meanChunksPerSpan: 1.25, maxChunksPerSpan: 2, relevantChunks: 5 } },
    },
  },
};

describe('evidence section of the report', () => {
  it('is absent for document-level sweeps', () => {
    expect(evidenceSection({ ...base, level: 'document' })).toBeNull();
  });

  it('lists projection statistics per chunking', () => {
    const s = evidenceSection(base)!;
    expect(s.projection.rows).toEqual([['cs64-ov0', '4', '1', '1.3', '2']]);
    expect(s.projection.caption).toContain('0.5 of the span or of the chunk');
  });

  it('shows rows at the primary k only, with span recall, character measures, tokens and budget recall', () => {
    const s = evidenceSection(base)!;
    expect(s.budget.header).toEqual([
      'configuration',
      'span recall@5',
      'evidence recall@5',
      'evidence precision@5',
      'IoU@5',
      'tokens@5',
      'evidence recall ≤ 256 tokens',
    ]);
    // 2/3 rounds to 0.667; 245.5 tokens prints with one decimal.
    expect(s.budget.rows).toEqual([['cs64-ov0.keyword.k5', '0.750', '0.667', '0.125', '0.100', '245.5', '0.500']]);
  });
});

describe('matrix columns at the evidence level', () => {
  it('adds the evidence families at the row k and one column per token budget', () => {
    expect(matrixColumns(base)).toEqual([...MATRIX_COLUMNS, 'evidence_recall', 'evidence_precision', 'evidence_iou', 'tokens', 'evidence_recall_256t']);
  });
  it('adds nothing at the document level', () => {
    expect(matrixColumns({ ...base, level: 'document' })).toEqual([...MATRIX_COLUMNS]);
  });
  it('warns when the primary metric counts chunks (ndcg) rather than spans', () => {
    expect(evidenceSection({ ...base, primaryMetric: 'ndcg@5' })!.intro).toContain('does not compare chunk sizes fairly');
    expect(evidenceSection(base)!.intro).not.toContain('does not compare chunk sizes fairly');
  });
});

import { describe, expect, it } from 'vitest';
import { isHarnessError } from '../../src/errors.js';
import { evaluateChunkLevel, projectEvidence, scoreChunkLevel } from '../../src/score/evidence.js';
import { byDoc, contiguous, span } from './helpers.js';

/**
 * Hand example. a.md (1,200 chars) and b.md (300 chars), both cut into 100-character chunks.
 *   S0 = a.md [100,400) grade 2 -> a.md#1, a.md#2, a.md#3 (each inside the span) grade 2
 *   S1 = b.md [50,80)   grade 1 -> b.md#0 (overlap 30 = the whole span) grade 1
 * Relevant chunks: 4 (R = 4).
 */
const chunks = byDoc(contiguous('a.md', 100, 1200), contiguous('b.md', 100, 300));
const P = projectEvidence([span('a.md', 100, 400, 2), span('b.md', 50, 80, 1)], chunks);

describe('chunk-level measures on a hand example', () => {
  it('the projection is as worked out', () => {
    expect(P.chunkGrades).toEqual({ 'a.md#1': 2, 'a.md#2': 2, 'a.md#3': 2, 'b.md#0': 1 });
  });

  // ranks:      1 a.md#2 (2)  2 c.md#0 (-)  3 b.md#0 (1)  4 a.md#9 (-)  5 a.md#1 (2)
  const ranking = ['a.md#2', 'c.md#0', 'b.md#0', 'a.md#9', 'a.md#1'];

  it('k = 5: every measure by hand', () => {
    const v = scoreChunkLevel(ranking, P, 5);
    expect(v).not.toBeNull();
    if (v === null) return;
    expect(Object.keys(v)).toEqual(['hit_rate@5', 'recall@5', 'precision@5', 'mrr@5', 'ndcg@5', 'ndcg_exp@5', 'map@5']);
    expect(v['hit_rate@5']).toBeCloseTo(1, 10);
    expect(v['mrr@5']).toBeCloseTo(1 / 1, 10);
    // relevant slots at ranks 1, 3, 5 -> 3 of 5
    expect(v['precision@5']).toBeCloseTo(3 / 5, 10);
    // recall counts spans, not chunks: S0 found (a.md#2), S1 found (b.md#0) -> 2 / 2 (chunk recall would be 3 / 4)
    expect(v['recall@5']).toBeCloseTo(2 / 2, 10);
    // DCG = 2/log2(2) + 1/log2(4) + 2/log2(6); ideal = grades 2,2,2,1 -> 2/log2 2 + 2/log2 3 + 2/log2 4 + 1/log2 5
    const dcg = 2 / Math.log2(2) + 1 / Math.log2(4) + 2 / Math.log2(6);
    const idcg = 2 / Math.log2(2) + 2 / Math.log2(3) + 2 / Math.log2(4) + 1 / Math.log2(5);
    expect(v['ndcg@5']).toBeCloseTo(dcg / idcg, 10);
    // exponential gain 2^g - 1: 3 and 1
    const dcgE = 3 / Math.log2(2) + 1 / Math.log2(4) + 3 / Math.log2(6);
    const idcgE = 3 / Math.log2(2) + 3 / Math.log2(3) + 3 / Math.log2(4) + 1 / Math.log2(5);
    expect(v['ndcg_exp@5']).toBeCloseTo(dcgE / idcgE, 10);
    // AP: precision at relevant slots 1/1, 2/3, 3/5, divided by R = 4 relevant chunks
    expect(v['map@5']).toBeCloseTo((1 / 1 + 2 / 3 + 3 / 5) / 4, 10);
  });

  it('k = 2: recall = 1 of 2 spans found; nDCG ideal cut at 2', () => {
    const d = evaluateChunkLevel(ranking, P, 2);
    expect(d).not.toBeNull();
    if (d === null) return;
    expect(d.spansFound).toBe(1);
    expect(d.spansJudged).toBe(2);
    expect(d.values['recall@2']).toBeCloseTo(1 / 2, 10);
    expect(d.values['precision@2']).toBeCloseTo(1 / 2, 10);
    expect(d.values['ndcg@2']).toBeCloseTo(2 / (2 / Math.log2(2) + 2 / Math.log2(3)), 10);
    expect(d.firstRelevantRank).toBe(1);
  });

  it('a span is found by ANY of its relevant chunks: a.md#3 alone finds S0', () => {
    const v = scoreChunkLevel(['a.md#3'], P, 1);
    expect(v?.['recall@1']).toBeCloseTo(1 / 2, 10);
    // one relevant chunk of 4: nDCG@1 = 2/1 over the ideal 2/1
    expect(v?.['ndcg@1']).toBeCloseTo(1, 10);
  });

  it('firstRelevantRank is the first relevant chunk within k, null when none', () => {
    expect(evaluateChunkLevel(['x#0', 'b.md#0'], P, 5)?.firstRelevantRank).toBe(2);
    expect(evaluateChunkLevel(['x#0', 'b.md#0'], P, 1)?.firstRelevantRank).toBeNull();
  });

  it('a chunk id repeated later in the ranking is credited once (precision 1/2, not 2/2)', () => {
    const v = scoreChunkLevel(['a.md#1', 'a.md#1'], P, 2);
    expect(v?.['precision@2']).toBeCloseTo(1 / 2, 10);
  });

  it('an empty ranking scores 0 on every measure but stays scored (not null)', () => {
    const v = scoreChunkLevel([], P, 3);
    expect(v).not.toBeNull();
    for (const x of Object.values(v ?? {})) expect(x).toBe(0);
  });
});

describe('chunk-level recall: a span with no relevant chunk in this chunking counts as not found', () => {
  it('span [150,250) on 200-character chunks at minOverlap 0.6 has none (50/100 of span, 50/200 of chunk each side)', () => {
    const c200 = byDoc(contiguous('a.md', 200, 1200));
    const p = projectEvidence([span('a.md', 150, 250), span('a.md', 600, 700)], c200, { minOverlap: 0.6 });
    expect(p.spanChunks).toEqual([[], ['a.md#3']]);
    // Every chunk of the document retrieved: only the second span can be found -> 1 / 2
    const all = c200.get('a.md')?.map((c) => c.id) ?? [];
    expect(scoreChunkLevel(all, p, all.length)?.[`recall@${all.length}`]).toBeCloseTo(1 / 2, 10);
  });
});

describe('chunk-level exclusion: a question with no relevant chunk at all returns null', () => {
  it('every span lost in this chunking -> null (like a question with no label)', () => {
    const p = projectEvidence([span('a.md', 150, 250)], byDoc(contiguous('a.md', 200, 1200)), { minOverlap: 0.6 });
    expect(scoreChunkLevel(['a.md#0', 'a.md#1'], p, 2)).toBeNull();
  });

  it('no evidence -> null', () => {
    expect(scoreChunkLevel(['a.md#0'], projectEvidence([], chunks), 1)).toBeNull();
  });

  it('relevance threshold 2 with only grade-1 chunks -> null', () => {
    const p = projectEvidence([span('b.md', 50, 80, 1)], chunks);
    expect(scoreChunkLevel(['b.md#0'], p, 1, { relevanceThreshold: 2 })).toBeNull();
  });
});

describe('chunk-level relevance threshold', () => {
  it('threshold 2: only grade-2 spans count for recall and only grade-2 chunks for precision; nDCG still gains from grade 1', () => {
    // ranking: b.md#0 (grade 1), a.md#1 (grade 2)
    const v = scoreChunkLevel(['b.md#0', 'a.md#1'], P, 2, { relevanceThreshold: 2 });
    expect(v).not.toBeNull();
    if (v === null) return;
    // spans with grade >= 2: S0 only; found by a.md#1 -> 1 / 1
    expect(v['recall@2']).toBeCloseTo(1 / 1, 10);
    // relevant slots (grade >= 2): rank 2 only
    expect(v['precision@2']).toBeCloseTo(1 / 2, 10);
    expect(v['mrr@2']).toBeCloseTo(1 / 2, 10);
    // nDCG uses every grade > 0: DCG = 1/log2 2 + 2/log2 3, ideal = 2/log2 2 + 2/log2 3
    expect(v['ndcg@2']).toBeCloseTo((1 + 2 / Math.log2(3)) / (2 + 2 / Math.log2(3)), 10);
  });
});

describe('chunk-level bad input', () => {
  it('k = 0 -> MEASURE_UNKNOWN', () => {
    try {
      scoreChunkLevel(['a.md#1'], P, 0);
      expect.unreachable();
    } catch (e) {
      expect(isHarnessError(e, 'MEASURE_UNKNOWN')).toBe(true);
    }
  });
  it('threshold 0 -> USAGE', () => {
    try {
      scoreChunkLevel(['a.md#1'], P, 1, { relevanceThreshold: 0 });
      expect.unreachable();
    } catch (e) {
      expect(isHarnessError(e, 'USAGE')).toBe(true);
    }
  });
});

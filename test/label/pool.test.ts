/** Pool order (src/label/pool.ts poolPairs): hand-worked weights w(r) = 1/log2(1 + r), tier-1 rows first. */
import { describe, expect, it } from 'vitest';
import { poolPairs, type PoolItem, type PoolRow } from '../../src/label/pool.js';

const doc = (id: string): PoolItem => ({ doc: id, start: 0, end: 100 });
const row = (id: string, tier1: boolean, lists: Record<string, string[]>): PoolRow => ({
  id,
  tier1,
  lists: new Map(Object.entries(lists).map(([q, ds]) => [q, ds.map(doc)])),
});

describe('poolPairs', () => {
  // Rows A, B in tier 1, C and D not; depth 3; (q1, d3) already judged.
  const rows = [
    row('A', true, { q1: ['d1', 'd2', 'd3'], q2: ['e1', 'e1'] }),
    row('B', true, { q1: ['d2', 'd4', 'd1'], q2: [] }),
    row('C', false, { q1: ['d5', 'd1', 'd2', 'd7'], q2: ['e2', 'e1'] }),
    row('D', false, { q1: ['d6'] }),
  ];
  const judged = (qid: string, it: PoolItem) => qid === 'q1' && it.doc === 'd3';
  const pool = poolPairs(rows, 3, judged);
  const find = (q: string, d: string) => pool.find((p) => p.qid === q && p.doc === d)!;

  it('weights are sums of 1/log2(1 + rank), tier-1 rows apart from the others', () => {
    expect(find('q1', 'd1').tier1Weight).toBeCloseTo(1 / Math.log2(2) + 1 / Math.log2(4), 10); // A rank 1, B rank 3
    expect(find('q1', 'd1').otherWeight).toBeCloseTo(1 / Math.log2(3), 10); // C rank 2
    expect(find('q1', 'd2').tier1Weight).toBeCloseTo(1 / Math.log2(3) + 1 / Math.log2(2), 10); // A rank 2, B rank 1
    expect(find('q1', 'd2').otherWeight).toBeCloseTo(1 / Math.log2(4), 10); // C rank 3
    expect(find('q2', 'e1').tier1Weight).toBeCloseTo(1, 10); // A rank 1 (its second e1 slot is not counted again)
    expect(find('q2', 'e1').ranks.get('A')).toBe(1);
  });

  it('queue order: tier-1 weight, other weight, best rank, then question and document id', () => {
    // d2 (1.631) > d1 (1.5) > e1 (1) > d4 (0.631); then tier-1 weight 0: d5, d6, e2 (other weight 1 each, best rank 1)
    // tie on weights and rank: q1 before q2, d5 before d6.
    expect(pool.map((p) => `${p.qid}/${p.doc}`)).toEqual(['q1/d2', 'q1/d1', 'q2/e1', 'q1/d4', 'q1/d5', 'q1/d6', 'q2/e2']);
  });

  it('leaves out judged pairs and ranks beyond the depth, and keeps the rows that retrieved each pair', () => {
    expect(pool.some((p) => p.doc === 'd3' || p.doc === 'd7')).toBe(false);
    expect([...find('q1', 'd1').ranks.entries()]).toEqual([['A', 1], ['B', 3], ['C', 2]]);
    expect(find('q1', 'd4').bestRank).toBe(2);
  });

  it('does not depend on the order the rows are given in', () => {
    const again = poolPairs([...rows].reverse(), 3, judged);
    expect(again.map((p) => `${p.qid}/${p.doc}`)).toEqual(pool.map((p) => `${p.qid}/${p.doc}`));
  });

  it('chunks of one document with different ranges are different pairs', () => {
    const r: PoolRow = { id: 'A', tier1: true, lists: new Map([['q1', [{ doc: 'a', chunk: 'a#0', start: 0, end: 10 }, { doc: 'a', chunk: 'a#1', start: 8, end: 20 }]]]) };
    expect(poolPairs([r], 10, () => false).map((p) => p.chunk)).toEqual(['a#0', 'a#1']);
  });
});

/** batchesByChars: hand-worked ranges for the batching shared by the chunking pool and the threaded BM25 build. */
import { describe, expect, it } from 'vitest';
import { batchesByChars } from '../src/batches.js';

const items = (...lengths: number[]): { text: string }[] => lengths.map((n) => ({ text: 'x'.repeat(n) }));

describe('batchesByChars', () => {
  it('closes a batch as soon as its texts reach batchChars', () => {
    // 4+3 = 7 < 10, +5 = 12 >= 10: [0,3); 2+8 = 10 >= 10: [3,5); 1 left: [5,6).
    expect(batchesByChars(items(4, 3, 5, 2, 8, 1), 10)).toEqual([[0, 3], [3, 5], [5, 6]]);
  });
  it('an item longer than batchChars is a batch alone; empty texts join the running batch', () => {
    expect(batchesByChars(items(25, 0, 0, 3), 10)).toEqual([[0, 1], [1, 4]]);
  });
  it('no items: no batches; every range is consecutive and covers all items', () => {
    expect(batchesByChars([], 10)).toEqual([]);
    const lengths = Array.from({ length: 200 }, (_, i) => (i * 37) % 23);
    const ranges = batchesByChars(items(...lengths), 50);
    expect(ranges[0][0]).toBe(0);
    expect(ranges.at(-1)![1]).toBe(200);
    for (let i = 1; i < ranges.length; i++) expect(ranges[i][0]).toBe(ranges[i - 1][1]);
  });
});

import { describe, expect, it } from 'vitest';
import { shareByCounts } from '../../src/run/share.js';

describe('shareByCounts: a model embedding time attributed once, by texts per chunking', () => {
  it('6 s over chunkings of 100 and 200 chunk texts: 6 × 100/300 and 6 × 200/300, summing to 6', () => {
    const s = shareByCounts(6, [100, 200]);
    expect(s[0]).toBeCloseTo((6 * 100) / 300, 10);
    expect(s[1]).toBeCloseTo((6 * 200) / 300, 10);
    expect(s[0] + s[1]).toBeCloseTo(6, 10);
  });

  it('one chunking carries the whole time; no texts share nothing', () => {
    expect(shareByCounts(4.5, [10])).toEqual([4.5]);
    expect(shareByCounts(3, [0, 0])).toEqual([0, 0]);
    expect(shareByCounts(3, [])).toEqual([]);
  });
});

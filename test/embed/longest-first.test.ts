/**
 * The embedding's order of cache misses (slotsLongestFirst): longest text first, ties by slot, by a counting sort;
 * checked by hand and against the comparison sort it replaced on random inputs.
 */
import { describe, expect, it } from 'vitest';
import { COUNTING_SORT_MAX_LENGTH, slotsLongestFirst } from '../../src/embed/embed-texts.js';
import { seededRandom } from '../../src/score/stats.js';

const reference = (have: Uint8Array, lengths: Int32Array, windows?: Int32Array): number[] => {
  const out: number[] = [];
  for (let s = 0; s < have.length; s++) if (have[s] === 0) out.push(s);
  return out.sort((a, b) => (windows ? windows[a] - windows[b] : 0) || lengths[b] - lengths[a] || a - b);
};

describe('slotsLongestFirst', () => {
  it('by hand: misses only, longest first, ties in slot order', () => {
    // slots:          0  1  2  3  4  5  6
    const lengths = Int32Array.from([3, 9, 3, 0, 9, 5, 7]);
    const have = Uint8Array.from([0, 0, 0, 0, 1, 0, 1]); // 4 and 6 are hits
    // misses 0,1,2,3,5 with lengths 3,9,3,0,5: 1 (9), 5 (5), 0 and 2 (3, ties by slot), 3 (0)
    expect(Array.from(slotsLongestFirst(have, lengths))).toEqual([1, 5, 0, 2, 3]);
    expect(Array.from(slotsLongestFirst(new Uint8Array(0), new Int32Array(0)))).toEqual([]);
    expect(Array.from(slotsLongestFirst(Uint8Array.from([1, 1]), Int32Array.from([4, 2])))).toEqual([]);
  });

  it('equals the comparison sort on 200 random inputs (few and many distinct lengths, all or some misses)', () => {
    const next = seededRandom(2026);
    for (let round = 0; round < 200; round++) {
      const n = Math.floor(next() * 300);
      const spread = round % 2 === 0 ? 4 : 5000;
      const lengths = Int32Array.from({ length: n }, () => Math.floor(next() * spread));
      const hitRate = [0, 0.3, 0.9][round % 3];
      const have = Uint8Array.from({ length: n }, () => (next() < hitRate ? 1 : 0));
      expect(Array.from(slotsLongestFirst(have, lengths))).toEqual(reference(have, lengths));
    }
  });

  it('a length above COUNTING_SORT_MAX_LENGTH (2^24) takes the comparison sort, same order', () => {
    expect(COUNTING_SORT_MAX_LENGTH).toBe(2 ** 24);
    const lengths = Int32Array.from([5, 2 ** 24 + 1, 5, 1]);
    const have = new Uint8Array(4);
    expect(Array.from(slotsLongestFirst(have, lengths))).toEqual([1, 0, 2, 3]);
  });

  it('with read windows, by hand: window ascending, then longest first, ties in slot order; hits ignored', () => {
    // slots:          0  1  2  3  4  5  6  7
    const lengths = Int32Array.from([3, 9, 3, 8, 9, 5, 7, 2]);
    const windows = Int32Array.from([1, 1, 0, 2, 0, 0, 1, 0]);
    const have = Uint8Array.from([0, 0, 0, 0, 1, 0, 0, 0]); // 4 is a hit
    // window 0: slots 2 (3), 5 (5), 7 (2) → 5, 2, 7; window 1: 0 (3), 1 (9), 6 (7) → 1, 6, 0; window 2: 3
    expect(Array.from(slotsLongestFirst(have, lengths, windows))).toEqual([5, 2, 7, 1, 6, 0, 3]);
    // every miss in window 0: the order without windows
    expect(Array.from(slotsLongestFirst(have, lengths, new Int32Array(8)))).toEqual(Array.from(slotsLongestFirst(have, lengths)));
    // a hit's window is not looked at
    expect(Array.from(slotsLongestFirst(Uint8Array.from([1, 0]), Int32Array.from([1, 1]), Int32Array.from([-1, 0])))).toEqual([1]);
    expect(() => slotsLongestFirst(Uint8Array.from([0, 0]), Int32Array.from([1, 1]), Int32Array.from([0, -1]))).toThrow(/slot 1: read window -1/);
  });

  it('with read windows: equals the comparison sort on 200 random inputs (few and many windows and lengths)', () => {
    const next = seededRandom(2027);
    for (let round = 0; round < 200; round++) {
      const n = Math.floor(next() * 300);
      const spread = round % 2 === 0 ? 4 : 5000;
      const windowCount = [1, 3, 60][round % 3];
      const lengths = Int32Array.from({ length: n }, () => Math.floor(next() * spread));
      const windows = Int32Array.from({ length: n }, () => Math.floor(next() * windowCount));
      const have = Uint8Array.from({ length: n }, () => (next() < [0, 0.5][round % 2] ? 1 : 0));
      expect(Array.from(slotsLongestFirst(have, lengths, windows))).toEqual(reference(have, lengths, windows));
    }
  });

  it('a window above 2^24 takes the comparison sort, same order', () => {
    const lengths = Int32Array.from([5, 7, 5, 1]);
    const windows = Int32Array.from([2 ** 24 + 1, 0, 2 ** 24 + 1, 3]);
    expect(Array.from(slotsLongestFirst(new Uint8Array(4), lengths, windows))).toEqual([1, 3, 0, 2]);
  });
});

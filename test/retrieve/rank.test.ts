import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { compareByRule, compareCodePoints, rankByRule } from '../../src/retrieve/rank.js';

/** The oracle: UTF-8 byte order, as trec_eval's strcmp sees docnos. */
function byteOrder(x: string, y: string): number {
  return Buffer.compare(Buffer.from(x, 'utf8'), Buffer.from(y, 'utf8'));
}

describe('the tie rule: score descending, then id descending in trec_eval (byte) order', () => {
  it('orders by score first', () => {
    expect(rankByRule([{ id: 'a', score: 1 }, { id: 'b', score: 2 }]).map((h) => h.id)).toEqual(['b', 'a']);
  });

  it('breaks ties by id descending', () => {
    expect(rankByRule([{ id: 'a', score: 1 }, { id: 'c', score: 1 }, { id: 'b', score: 1 }]).map((h) => h.id)).toEqual(['c', 'b', 'a']);
  });

  it('an emoji id (U+1F600, bytes F0 ...) sorts above a fullwidth letter (U+FF21, bytes EF ...) as strcmp does', () => {
    // UTF-16 code units would say '\uFF21' > '\uD83D', the opposite of byte order.
    expect('\uFF21' > '😀').toBe(true);
    expect(compareCodePoints('😀', 'Ａ')).toBeGreaterThan(0);
    expect(rankByRule([{ id: 'Ａ', score: 1 }, { id: '😀', score: 1 }]).map((h) => h.id)).toEqual(['😀', 'Ａ']);
  });

  it('agrees with UTF-8 byte order on any strings (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), (x, y) => {
        expect(Math.sign(compareCodePoints(x, y))).toBe(Math.sign(byteOrder(x, y)));
      }),
      { numRuns: 2000 },
    );
  });

  it('the comparator is antisymmetric and never says two different ids are equal', () => {
    expect(compareByRule({ id: 'x', score: 1 }, { id: 'y', score: 1 })).toBe(-compareByRule({ id: 'y', score: 1 }, { id: 'x', score: 1 }));
    expect(compareByRule({ id: 'x', score: 1 }, { id: 'x', score: 1 })).toBe(0);
  });
});

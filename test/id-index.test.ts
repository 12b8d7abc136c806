/**
 * IdIndex (src/id-index.ts): the string id → entry table that replaced the loaders' and the sweep's Maps of document
 * and chunk ids (V8 caps a Map at 2^24 entries). Hand-worked cases, then a differential test against a Map over
 * random operations on ids from a three-letter alphabet (so probe chains through other ids are common), with the table
 * growing from its smallest size.
 */
import { describe, expect, it } from 'vitest';
import { IdIndex } from '../src/id-index.js';
import { seededRandom } from '../src/score/stats.js';

describe('IdIndex', () => {
  it('add keeps the first entry of an id and returns it; set replaces; get, has and size follow', () => {
    const ids = ['d1', 'd2', 'd1', 'd3'];
    const index = new IdIndex((i) => ids[i]);
    expect(index.add('d1', 0)).toBe(-1);
    expect(index.add('d2', 1)).toBe(-1);
    expect(index.add('d1', 2)).toBe(0); // held by entry 0; nothing changes
    expect(index.get('d1')).toBe(0);
    expect(index.size).toBe(2);
    index.set('d1', 2);
    expect(index.get('d1')).toBe(2);
    expect(index.size).toBe(2);
    index.set('d3', 3);
    expect([index.get('d3'), index.size]).toEqual([3, 3]);
    expect([index.has('d2'), index.has('d4'), index.get('d4'), index.has(''), index.get('')]).toEqual([true, false, undefined, false, undefined]);
  });

  it('over(count, idAt) holds what new Map(ids.map((id, i) => [id, i])) holds: the last entry of a repeated id', () => {
    const ids = ['b', 'a', 'b', '', 'c', 'a'];
    const index = IdIndex.over(ids.length, (i) => ids[i]);
    const map = new Map(ids.map((id, i) => [id, i]));
    expect(index.size).toBe(map.size);
    expect(index.size).toBe(4); // b, a, '', c
    for (const id of [...ids, 'x', 'ab']) expect(index.get(id)).toBe(map.get(id));
    expect(index.get('b')).toBe(2);
    expect(index.get('a')).toBe(5);
  });

  it('entry 0 and an empty id are held (0 is the empty slot only inside the table)', () => {
    const ids = [''];
    const index = new IdIndex((i) => ids[i]);
    expect(index.add('', 0)).toBe(-1);
    expect([index.get(''), index.has(''), index.add('', 0)]).toEqual([0, true, 0]);
  });

  it('the same answers as a Map over 20,000 random adds, sets and lookups of ids on a three-letter alphabet, growing from 16 slots, each entry stored after its call', () => {
    const next = seededRandom(2025);
    const ids: string[] = []; // entry i's id
    const index = new IdIndex((i) => ids[i]);
    const map = new Map<string, number>();
    const randomId = (): string => Array.from({ length: 1 + Math.floor(next() * 7) }, () => 'abc'[Math.floor(next() * 3)]).join('');
    for (let op = 0; op < 20000; op++) {
      const id = randomId();
      const r = next();
      if (r < 0.4) {
        // the entry is stored after add() says it is new, as the BEIR loader does (add never asks for it)
        const i = ids.length;
        const had = map.get(id);
        expect(index.add(id, i)).toBe(had ?? -1);
        ids.push(had === undefined ? id : `unused ${i}`);
        if (had === undefined) map.set(id, i);
      } else if (r < 0.6) {
        // set to a new entry of the same id, stored after the call
        const i = ids.length;
        index.set(id, i);
        ids.push(id);
        map.set(id, i);
      } else {
        expect(index.get(id)).toBe(map.get(id));
        expect(index.has(id)).toBe(map.has(id));
      }
      expect(index.size).toBe(map.size);
    }
    // every id of length ≤ 7 on the alphabet: 3 + 9 + … + 3^7 = (3^8 − 3) / 2 = 3,279 possible, most of them seen
    expect(map.size).toBeLessThanOrEqual((3 ** 8 - 3) / 2);
    expect(map.size).toBeGreaterThan(1000);
    for (const [id, i] of map) expect(index.get(id)).toBe(i);
  });

  it('two ids with one FNV-1a hash are told apart by their strings, across a growth', () => {
    // FNV-1a 32-bit by hand: h = 2166136261; per code unit c: h = (h XOR c) × 16777619 mod 2^32
    const fnv = (id: string): number => {
      let h = 2166136261;
      for (const c of id) h = Number((BigInt((h ^ c.charCodeAt(0)) >>> 0) * 16777619n) % 2n ** 32n);
      return h;
    };
    expect(fnv('d549599')).toBe(fnv('d712382')); // a collision found by search over d0, d1, …
    const ids = ['d549599', 'd712382', ...Array.from({ length: 40 }, (_, i) => `x${i}`)];
    const index = new IdIndex((i) => ids[i]);
    expect(index.add('d549599', 0)).toBe(-1);
    expect(index.has('d712382')).toBe(false);
    expect(index.add('d712382', 1)).toBe(-1);
    for (let i = 2; i < ids.length; i++) index.add(ids[i], i); // grows from 16 slots to 128
    expect([index.get('d549599'), index.get('d712382'), index.size]).toEqual([0, 1, 42]);
  });

  it('a table larger than 2^30 slots is refused with a RangeError naming the count', () => {
    expect(() => new IdIndex(() => '', 2 ** 29 + 1)).toThrow(/536870913 ids need more than 1073741824 slots/);
  });
});

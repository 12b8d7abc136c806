/**
 * The embedding's read windows (issue 25, the 10M run: `readWindowBytes`): the misses are read window by window of
 * their position in the text store, longest first within a window, so each window's pages come from the disk about
 * once. Orders worked out by hand; the vectors are the same whatever the order; a chunk's position in the store by hand.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isHarnessError } from '../../src/errors.js';
import { embedTextsToMatrices, rowsByPosition, type TextSource } from '../../src/embed/embed-texts.js';
import { seededRandom } from '../../src/score/stats.js';
import { chunkOf, createTextStore, inTextStore, StoredDoc, textPosition } from '../../src/load/text-store.js';
import { FakeEmbedder } from '../helpers/fake-embedder.js';

/** A source over `texts` whose text i sits at byte `positions[i]`. */
const located = (texts: string[], positions: number[]): TextSource => ({
  count: texts.length,
  textAt: (i) => texts[i],
  localityAt: (i) => positions[i],
});

describe('readWindowBytes', () => {
  it('orders the misses by window of 100 bytes, then longest first, ties in first-seen order', async () => {
    // texts:       'aaaa' 'b'  'cc' 'ddd' 'ee' 'f'   (second source: 'gggggg', and 'b' again: a duplicate)
    // positions:     250   10   120   30   130  260                  5              999
    // windows:        2     0    1     0    1    2                   0
    const first = located(['aaaa', 'b', 'cc', 'ddd', 'ee', 'f'], [250, 10, 120, 30, 130, 260]);
    const second = located(['gggggg', 'b'], [5, 999]);
    const p = new FakeEmbedder();
    const { matrices } = await embedTextsToMatrices(p, [first, second], 'document', { readWindowBytes: 100 });
    // window 0: b (1), ddd (3), gggggg (6) → gggggg, ddd, b; window 1: cc, ee (2, 2: first-seen) ; window 2: aaaa, f
    expect(p.embedded).toEqual(['gggggg', 'ddd', 'b', 'cc', 'ee', 'aaaa', 'f']);
    // the vectors are each text's, whatever the order: [length, first code, 3] normalised
    const norm = (t: string) => Math.hypot(t.length, t.charCodeAt(0), 3);
    expect(matrices[0].row(0)[0]).toBeCloseTo(4 / norm('aaaa'), 6);
    expect(matrices[1].row(1)[1]).toBeCloseTo('b'.charCodeAt(0) / norm('b'), 6);

    // without the option, or with sources that have no positions: longest first over everything
    const q = new FakeEmbedder();
    await embedTextsToMatrices(q, [first, second], 'document');
    expect(q.embedded).toEqual(['gggggg', 'aaaa', 'ddd', 'cc', 'ee', 'b', 'f']);
    const r = new FakeEmbedder();
    await embedTextsToMatrices(r, [['aaaa', 'b', 'cc', 'ddd', 'ee', 'f'], ['gggggg', 'b']], 'document', { readWindowBytes: 100 });
    expect(r.embedded).toEqual(q.embedded);
  });

  it('a window that is not a whole number >= 1 is CONFIG_INVALID; a bad position is named', async () => {
    for (const bad of [0, -5, 1.5]) {
      const e = await embedTextsToMatrices(new FakeEmbedder(), [located(['x'], [0])], 'document', { readWindowBytes: bad }).catch((x: unknown) => x);
      expect(isHarnessError(e) && e.code === 'CONFIG_INVALID' && e.message.includes(`readWindowBytes (${bad})`)).toBe(true);
    }
    await expect(embedTextsToMatrices(new FakeEmbedder(), [located(['x', 'y'], [0, Number.NaN])], 'document', { readWindowBytes: 8 })).rejects.toThrow(
      /text 1: position NaN/,
    );
  });
});

describe('textPosition', () => {
  let dir = '';
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'rs-windows-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('a stored document is at its byte offset; a chunk adds start code units of 1 byte (latin1, UTF-8) or 2 (UTF-16LE)', () => {
    const store = createTextStore(dir);
    const a = new StoredDoc('a', store, store.append('0123456789')); // latin1, bytes [0, 10)
    const b = new StoredDoc('b', store, store.append('xy\u0100z\ud800')); // a lone surrogate: UTF-16LE, bytes [10, 20)
    const c = new StoredDoc('c', store, store.append('hello')); // latin1, bytes [20, 25)
    const d = new StoredDoc('d', store, store.append('\u0100\u0101ab')); // UTF-8: 2 + 2 + 1 + 1 bytes [25, 31)
    expect([a, b, c, d].map((x) => store.positionOf(x.index))).toEqual([0, 10, 20, 25]);
    expect([a, b, c, d].map(textPosition)).toEqual([0, 10, 20, 25]);
    expect(textPosition(chunkOf(a, 1, 4, 8, 1))).toBe(0 + 4);
    expect(textPosition(chunkOf(b, 1, 3, 5, 1))).toBe(10 + 3 * 2);
    expect(textPosition(chunkOf(c, 0, 2, 5, 1))).toBe(20 + 2);
    // UTF-8: the document's offset plus the code units, a lower bound of the true 25 + 2 + 2 (ordering only)
    expect(textPosition(chunkOf(d, 1, 2, 4, 1))).toBe(25 + 2);
    expect(inTextStore(a) && inTextStore(chunkOf(c, 0, 2, 5, 1))).toBe(true);
    // resident texts: position 0, not in a store
    const resident = { id: 'r', text: 'abc' };
    expect(textPosition(resident)).toBe(0);
    expect(textPosition(chunkOf(resident, 0, 1, 3, 1))).toBe(0);
    expect(inTextStore(resident)).toBe(false);
    expect(() => store.positionOf(4)).toThrow(RangeError);
    store.remove();
  });
});

describe('rowsByPosition (the deduplication reads a stored source in position order)', () => {
  const reference = (positions: number[]): number[] => positions.map((_, i) => i).sort((a, b) => positions[a] - positions[b] || a - b);

  it('by hand: ascending position, ties by index; undefined when already in order', () => {
    const positions = [70000, 5, 70000, 65536, 0, 131072 + 3];
    // 4 (0), 1 (5), 3 (65536), 0 and 2 (70000, ties by index), 5 (131075)
    expect(Array.from(rowsByPosition(6, (i) => positions[i])!)).toEqual([4, 1, 3, 0, 2, 5]);
    expect(rowsByPosition(3, (i) => [1, 1, 9][i])).toBeUndefined();
    expect(rowsByPosition(0, () => 0)).toBeUndefined();
    expect(() => rowsByPosition(2, (i) => [0, 1.5][i])).toThrow(/text 1: position 1.5/);
    expect(() => rowsByPosition(2, (i) => [0, -1][i])).toThrow(/text 1: position -1/);
  });

  it('equals the comparison sort on 200 random inputs (one, two and three 16-bit digits; past 2^48)', () => {
    const next = seededRandom(2028);
    for (let round = 0; round < 200; round++) {
      const n = Math.floor(next() * 400);
      const spread = [50, 2 ** 20, 2 ** 40, 2 ** 50][round % 4];
      const positions = Array.from({ length: n }, () => Math.floor(next() * spread));
      const got = rowsByPosition(n, (i) => positions[i]);
      expect(got === undefined ? positions.map((_, i) => i) : Array.from(got)).toEqual(reference(positions));
    }
  });

  it('the deduplication reads a located source in position order: the first occurrence is the first position', async () => {
    // 'dup' at rows 0 (position 900) and 2 (position 100): its first occurrence is row 2, read first
    const reads: number[] = [];
    const src: TextSource = {
      count: 4,
      textAt: (i) => (reads.push(i), ['dup', 'zz', 'dup', 'y'][i]),
      localityAt: (i) => [900, 500, 100, 300][i],
    };
    const p = new FakeEmbedder();
    await embedTextsToMatrices(p, [src], 'document');
    // dedupe reads 2, 3, 1, 0 (positions 100, 300, 500, 900); the misses, longest first (dup, zz, y), are read again
    expect(reads.slice(0, 4)).toEqual([2, 3, 1, 0]);
    expect(reads.slice(4)).toEqual([2, 1, 3]);
    expect(p.embedded).toEqual(['dup', 'zz', 'y']);
  });
});

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
import { embedTextsToMatrices, type TextSource } from '../../src/embed/embed-texts.js';
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

  it('a stored document is at its byte offset; a chunk adds start code units of 1 byte (latin1) or 2 (UTF-16LE)', () => {
    const store = createTextStore(dir);
    const a = new StoredDoc('a', store, store.append('0123456789')); // latin1, bytes [0, 10)
    const b = new StoredDoc('b', store, store.append('xy\u0100zw')); // UTF-16LE, bytes [10, 20)
    const c = new StoredDoc('c', store, store.append('hello')); // latin1, bytes [20, 25)
    expect([a, b, c].map((d) => store.positionOf(d.index))).toEqual([0, 10, 20]);
    expect([a, b, c].map(textPosition)).toEqual([0, 10, 20]);
    expect(textPosition(chunkOf(a, 1, 4, 8, 1))).toBe(0 + 4);
    expect(textPosition(chunkOf(b, 1, 3, 5, 1))).toBe(10 + 3 * 2);
    expect(textPosition(chunkOf(c, 0, 2, 5, 1))).toBe(20 + 2);
    expect(inTextStore(a) && inTextStore(chunkOf(c, 0, 2, 5, 1))).toBe(true);
    // resident texts: position 0, not in a store
    const resident = { id: 'r', text: 'abc' };
    expect(textPosition(resident)).toBe(0);
    expect(textPosition(chunkOf(resident, 0, 1, 3, 1))).toBe(0);
    expect(inTextStore(resident)).toBe(false);
    expect(() => store.positionOf(3)).toThrow(RangeError);
    store.remove();
  });
});

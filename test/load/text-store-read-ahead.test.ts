/**
 * Session 12 (issue 25): the text store's read-ahead window. Reads that walk the file forwards are served from one
 * read of up to `readAheadBytes`; others read their own bytes. Differential: every read through a store with a window
 * (tiny windows, so that texts cross their edges) equals the string appended, sliced, and the same read through a
 * store with no window (`readAheadBytes: 0`), for latin1, UTF-16 (lone surrogates included) and mixed texts, in the
 * orders the sweep reads (chunks in order with overlaps, whole documents in order) and in random order. The number of
 * positioned reads is counted by the store (`readCount`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { seededRandom } from '../../src/score/stats.js';
import { createTextStore, READ_AHEAD_BYTES } from '../../src/load/text-store.js';

let dir = '';
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'rs-readahead-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const rng = seededRandom;

/** A text of 0-120 code units: latin1 only, or with code units ≥ 256 (surrogate halves among them). */
function textOf(next: () => number): string {
  const n = Math.floor(next() * 121);
  const wide = next() < 0.4;
  let s = '';
  for (let i = 0; i < n; i++) {
    const r = next();
    s += String.fromCharCode(!wide || r < 0.5 ? 32 + Math.floor(next() * 224) : r < 0.6 ? 0xd800 + Math.floor(next() * 0x800) : 256 + Math.floor(next() * 0xfd00));
  }
  return s;
}

/** Ranges [i, start, end) as the sweep reads them: chunks in order with overlaps, whole texts, or at random. */
function reads(texts: readonly string[], order: 'chunks' | 'whole' | 'random', next: () => number): [number, number, number][] {
  const out: [number, number, number][] = [];
  if (order === 'random') {
    for (let k = 0; k < 400; k++) {
      const i = Math.floor(next() * texts.length);
      const a = Math.floor(next() * (texts[i].length + 1));
      out.push([i, a, a + Math.floor(next() * (texts[i].length - a + 1))]);
    }
    return out;
  }
  texts.forEach((t, i) => {
    if (order === 'whole') return void out.push([i, 0, t.length]);
    for (let a = 0; a < t.length; ) {
      const b = Math.min(t.length, a + 1 + Math.floor(next() * 30));
      out.push([i, a, b]);
      a = b >= t.length ? b : Math.max(a + 1, b - Math.floor(next() * 5)); // overlap of 0-4 code units
    }
  });
  return out;
}

describe('TextStore read-ahead', () => {
  for (const window of [1, 2, 7, 64, 301, 4096]) {
    for (const order of ['chunks', 'whole', 'random'] as const) {
      it(`window ${window} bytes, ${order} reads: every read equals the text sliced and the read without a window`, () => {
        const next = rng(window * 7 + order.length);
        const texts = Array.from({ length: 60 }, () => textOf(next));
        const a = createTextStore(dir, { readAheadBytes: window, readBufferBytes: 8 });
        const b = createTextStore(dir, { readAheadBytes: 0, readBufferBytes: 8 });
        for (const t of texts) {
          a.append(t);
          b.append(t);
        }
        for (const [i, s, e] of reads(texts, order, next)) {
          const got = a.slice(i, s, e);
          expect(got).toBe(texts[i].slice(s, e));
          expect(got).toBe(b.slice(i, s, e));
        }
        a.remove();
        b.remove();
      });
    }
  }

  it('reads appended after the window was filled are read from the file, not from the stale window', () => {
    const store = createTextStore(dir, { readAheadBytes: 1000 });
    store.append('abc');
    store.append('def');
    expect(store.get(0)).toBe('abc');
    expect(store.get(1)).toBe('def'); // fills the window with the 3 bytes there are
    store.append('ghi');
    expect(store.get(2)).toBe('ghi');
    expect([store.get(0), store.get(1), store.get(2)]).toEqual(['abc', 'def', 'ghi']);
    store.remove();
  });

  it('in order, 1,000 texts of 100 bytes: the first fill is twice the run so far, then one read per window of 512 bytes; at random, one read of its own bytes each', () => {
    const store = createTextStore(dir, { readAheadBytes: 512 });
    for (let i = 0; i < 1000; i++) store.append(String(i).padStart(100, '.'));
    store.flush();
    for (let i = 0; i < 1000; i++) expect(store.get(i)).toBe(String(i).padStart(100, '.'));
    const inOrder = store.readCount;
    const inOrderBytes = store.bytesRead;
    const next = rng(3);
    for (let k = 0; k < 200; k++) store.get(Math.floor(next() * 1000));
    const random = store.readCount - inOrder;
    const randomBytes = store.bytesRead - inOrderBytes;
    store.remove();
    // the first read has no previous read to follow: its own 100 bytes; text 1 continues the run (200 bytes so far),
    // so it fills 2 · 200 = 400 bytes at byte 100: texts 1-4. Text 5 (run 600 bytes) fills the whole 512: 5 whole texts
    // a window, so texts 5-999 take 995 / 5 = 199 windows
    expect(inOrder).toBe(1 + 1 + 995 / Math.floor(512 / 100));
    // window w starts at text 5 + 5w (byte 500 + 500w) and reads 512 bytes, the last (w = 198) only the 500 left
    expect(inOrderBytes).toBe(100 + 400 + 198 * 512 + (100_000 - (500 + 198 * 500)));
    // a far jump asks for its own 100 bytes; one within a window of the previous read's end (about 2 % of jumps here)
    // fills a window, and one inside the current window reads nothing
    expect(random).toBeGreaterThanOrEqual(180);
    expect(randomBytes).toBeLessThan(200 * 100 + 10 * 512);
    expect(READ_AHEAD_BYTES).toBe(2 ** 20);
  });

  it('documents read chunk by chunk in an order that jumps between them: the second chunk fills twice its run, not the window', () => {
    // 1,000 texts of 100 bytes, read in the order t = 7i mod 1000 (ids sorted, file in load order: 7 texts, 700 bytes,
    // between consecutive documents, more than the 512-byte window away), each as two chunks [0, 60) and [50, 100)
    const store = createTextStore(dir, { readAheadBytes: 512 });
    for (let i = 0; i < 1000; i++) store.append(String(i).padStart(100, '.'));
    store.flush();
    for (let i = 0; i < 1000; i++) {
      const t = (7 * i) % 1000;
      const text = String(t).padStart(100, '.');
      expect(store.slice(t, 0, 60)).toBe(text.slice(0, 60));
      expect(store.slice(t, 50, 100)).toBe(text.slice(50, 100));
    }
    // chunk 1 is far from the previous read: its own 60 bytes. Chunk 2 starts 10 bytes before chunk 1's end: a run of
    // 60 + 50 = 110 bytes, so it fills 220 bytes at byte 100t + 50, fewer for the last two texts (150 and 50 left)
    expect(store.readCount).toBe(2 * 1000);
    expect(store.bytesRead).toBe(1000 * 60 + 998 * 220 + (100_000 - 99_850) + (100_000 - 99_950));
    store.remove();
  });

  it('readAheadBytes must be an integer ≥ 0', () => {
    expect(() => createTextStore(dir, { readAheadBytes: -1 })).toThrow(/readAheadBytes \(-1\) must be an integer >= 0/);
    expect(() => createTextStore(dir, { readAheadBytes: 1.5 })).toThrow(/readAheadBytes/);
  });
});

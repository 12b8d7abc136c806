/**
 * The document text store (src/load/text-store.ts, issue 25 item 1): texts read back exactly (lone surrogates,
 * latin1 vs UTF-16 flags, empty texts, texts longer than the read buffer), byte offsets worked out by hand, slices,
 * errors after close and remove, a killed run's file removed, and stored documents and chunks behaving as plain ones
 * for JSON, lengths and the worker-thread copy.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isHarnessError } from '../../src/errors.js';
import { chunkOf, createTextStore, isStored, plainDocs, StoredChunk, StoredDoc, textLength, textStoreOf } from '../../src/load/text-store.js';
import { batchesByChars } from '../../src/batches.js';

let dir = '';
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'rs-textstore-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('TextStore', () => {
  it('reads back hand-made texts exactly: lone surrogates, pairs, latin1, empty, with the flag and offsets by hand', () => {
    const store = createTextStore(dir);
    const texts = [
      'plain ascii', // 11 code units, latin1: bytes [0, 11)
      '', // empty: offset 11, no bytes
      'caf\u00e9 \u00ff', // 6 code units, all < 256: latin1, bytes [11, 17)
      'lone \ud800 high', // 11 code units, one lone high surrogate: UTF-16LE, bytes [17, 39)
      'lone \udc00 low at end \udfff', // 19 code units: UTF-16LE, bytes [39, 77)
      'pair \ud83d\ude00 \u0100', // 9 code units: UTF-16LE, bytes [77, 95)
      '\u0000nul\u0000', // 5 code units, latin1: bytes [95, 100)
    ];
    const ids = texts.map((t) => store.append(t));
    expect(ids).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(store.size).toBe(7);
    expect(texts.map((_, i) => store.isWide(i))).toEqual([false, false, false, true, true, true, false]);
    expect(texts.map((_, i) => store.lengthOf(i))).toEqual([11, 0, 6, 11, 19, 9, 5]);
    expect(store.byteLength).toBe(11 + 0 + 6 + 2 * 11 + 2 * 19 + 2 * 9 + 5);
    for (const [i, t] of texts.entries()) expect(store.get(i)).toBe(t);
    store.flush();
    expect(statSync(store.path).size).toBe(100);
    // the lone-surrogate text sits at bytes [17, 39) as UTF-16LE
    const raw = readFileSync(store.path);
    expect(raw.subarray(17, 39).toString('utf16le')).toBe(texts[3]);
    expect(raw.subarray(11, 17).toString('latin1')).toBe(texts[2]);
    store.remove();
  });

  it('slices by code units without reading the rest, surrogate halves included', () => {
    const store = createTextStore(dir);
    const t = 'ab\ud83d\ude00cd\ud800';
    store.append('x');
    store.append(t);
    for (let s = 0; s <= t.length; s++) for (let e = s; e <= t.length; e++) expect(store.slice(1, s, e)).toBe(t.slice(s, e));
    expect(() => store.slice(1, 2, t.length + 1)).toThrow(RangeError);
    expect(() => store.slice(1, 3, 2)).toThrow(RangeError);
    expect(() => store.get(2)).toThrow(RangeError);
    store.remove();
  });

  it('reads a text longer than the read buffer in pieces (odd and even lengths, both encodings)', () => {
    const store = createTextStore(dir, { readBufferBytes: 6 });
    const latin = 'abcdefghijklmnopq'; // 17 bytes: pieces of 6, 6, 5
    const wide = '\u0100bc\ud800efghij\udfffk'; // 13 code units, 26 bytes: pieces of 3 code units
    store.append(latin);
    store.append(wide);
    expect(store.get(0)).toBe(latin);
    expect(store.get(1)).toBe(wide);
    expect(store.slice(1, 2, 12)).toBe(wide.slice(2, 12));
    expect(() => createTextStore(dir, { readBufferBytes: 5 })).toThrow(RangeError);
    store.remove();
  });

  it('writes a text longer than the 1 MiB write buffer directly, between buffered ones', () => {
    const store = createTextStore(dir);
    const big = 'y'.repeat(2 ** 20 + 3) + '\u0101';
    store.append('before');
    store.append(big);
    store.append('after');
    expect(store.get(0)).toBe('before');
    expect(store.get(1)).toBe(big);
    expect(store.get(2)).toBe('after');
    expect(store.byteLength).toBe(6 + 2 * (2 ** 20 + 4) + 5);
    store.remove();
  });

  it('grows past its initial capacity (1,024 texts) and keeps every offset', () => {
    const store = createTextStore(dir);
    const texts = Array.from({ length: 3000 }, (_, i) => (i % 3 === 0 ? `\u4e00${i}` : `t${i}`));
    for (const t of texts) store.append(t);
    for (const [i, t] of texts.entries()) expect(store.get(i)).toBe(t);
    store.remove();
  });

  it('reading after close or remove throws a clear error naming the file; remove deletes it', () => {
    const store = createTextStore(dir);
    store.append('hello');
    store.close();
    expect(existsSync(store.path)).toBe(true);
    let err: unknown;
    try {
      store.get(0);
    } catch (e) {
      err = e;
    }
    expect(isHarnessError(err) && err.code === 'RESOURCE_UNAVAILABLE').toBe(true);
    expect((err as Error).message).toContain(store.path);
    expect((err as Error).message).toContain('closed');
    expect(() => store.append('more')).toThrow(/closed/);
    store.remove();
    expect(existsSync(store.path)).toBe(false);
    expect(() => store.get(0)).toThrow(/removed/);
    store.remove(); // idempotent
  });

  it('is named on the *.tmp-<pid>-<ms> scheme, and a killed run’s store is removed by the next one', () => {
    const dead = path.join(dir, 'documents-1.txt.tmp-999999999-1');
    writeFileSync(dead, 'left by a killed run');
    const store = createTextStore(dir);
    expect(path.basename(store.path)).toMatch(new RegExp(`^documents-\\d+\\.txt\\.tmp-${process.pid}-\\d+$`));
    expect(existsSync(dead)).toBe(false);
    expect(readdirSync(dir)).toEqual([path.basename(store.path)]);
    store.remove();
  });
});

describe('StoredDoc and StoredChunk', () => {
  it('read their texts from the store, give plain JSON, and lengths without reading', () => {
    const store = createTextStore(dir);
    const text = 'Title\n\nbody \ud800 end';
    const doc = new StoredDoc('d1', store, store.append(text));
    expect(doc.text).toBe(text);
    expect(textLength(doc)).toBe(text.length);
    expect(JSON.parse(JSON.stringify(doc))).toEqual({ id: 'd1', text });
    const chunk = chunkOf(doc, 2, 7, 14, 3);
    expect(chunk).toBeInstanceOf(StoredChunk);
    expect(chunk.text).toBe(text.slice(7, 14));
    expect(textLength(chunk)).toBe(7);
    expect(JSON.parse(JSON.stringify(chunk))).toEqual({ id: 'd1#2', docId: 'd1', ordinal: 2, text: text.slice(7, 14), start: 7, end: 14, tokens: 3 });
    // a resident document gives the plain chunk it always did
    expect(chunkOf({ id: 'r', text: 'abcdef' }, 0, 1, 4, 1)).toEqual({ id: 'r#0', docId: 'r', ordinal: 0, text: 'bcd', start: 1, end: 4, tokens: 1 });
    store.remove();
  });

  it('plainDocs gives copies that survive structured clone; the stored objects would not', () => {
    const store = createTextStore(dir);
    const docs = ['a', 'bb\u0100', 'ccc'].map((t, i) => new StoredDoc(`d${i}`, store, store.append(t)));
    expect(isStored(docs)).toBe(true);
    expect(textStoreOf(docs)).toBe(store);
    expect(isStored([{ id: 'x', text: 'y' }])).toBe(false);
    expect(structuredClone(plainDocs(docs, 1, 3))).toEqual([
      { id: 'd1', text: 'bb\u0100' },
      { id: 'd2', text: 'ccc' },
    ]);
    // the quirk plainDocs exists for: a class instance's prototype getter is not cloned
    expect((structuredClone(docs[0]) as { text?: string }).text).toBeUndefined();
    // batches are cut by lengths, without reading texts: 1 + 3 = 4 ≥ 4 closes the first batch
    expect(batchesByChars(docs, 4)).toEqual([
      [0, 2],
      [2, 3],
    ]);
    store.remove();
  });
});

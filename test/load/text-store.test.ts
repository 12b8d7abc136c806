/**
 * The document text store (src/load/text-store.ts, issue 25 item 1): texts read back exactly (lone surrogates,
 * latin1, UTF-8 and UTF-16 flags and the UTF-8 length bound, a UTF-8 text changed on disk, writes behind the caller
 * and their failure, empty texts, texts longer than the read buffer), byte offsets worked out by hand, slices,
 * errors after close and remove, a killed run's file removed, and stored documents and chunks behaving as plain ones
 * for JSON, lengths and the worker-thread copy.
 */
import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isHarnessError } from '../../src/errors.js';
import { chunkOf, createTextStore, isStored, plainDocs, StoredChunk, StoredDoc, textLength, textStoreOf, UTF8_MAX_UNITS } from '../../src/load/text-store.js';
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
      'pair \ud83d\ude00 \u0100', // 9 code units, well formed: UTF-8, 5 + 4 (the pair) + 1 + 2 (U+0100) bytes [77, 89)
      '\u0000nul\u0000', // 5 code units, latin1: bytes [89, 94)
    ];
    const ids = texts.map((t) => store.append(t));
    expect(ids).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(store.size).toBe(7);
    expect(texts.map((_, i) => store.isWide(i))).toEqual([false, false, false, true, true, false, false]);
    expect(texts.map((_, i) => store.encodingOf(i))).toEqual(['latin1', 'latin1', 'latin1', 'utf16le', 'utf16le', 'utf8', 'latin1']);
    expect(texts.map((_, i) => store.storedBytesOf(i))).toEqual([11, 0, 6, 2 * 11, 2 * 19, 5 + 4 + 1 + 2, 5]);
    expect(texts.map((_, i) => store.lengthOf(i))).toEqual([11, 0, 6, 11, 19, 9, 5]);
    expect(store.byteLength).toBe(11 + 0 + 6 + 2 * 11 + 2 * 19 + (5 + 4 + 1 + 2) + 5);
    for (const [i, t] of texts.entries()) expect(store.get(i)).toBe(t);
    store.flush();
    expect(statSync(store.path).size).toBe(94);
    // the lone-surrogate text sits at bytes [17, 39) as UTF-16LE
    const raw = readFileSync(store.path);
    expect(raw.subarray(17, 39).toString('utf16le')).toBe(texts[3]);
    expect(raw.subarray(11, 17).toString('latin1')).toBe(texts[2]);
    expect(raw.subarray(77, 89).toString('utf8')).toBe(texts[5]);
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

  it('stores a well-formed wide text as UTF-8 up to UTF8_MAX_UNITS code units, longer ones as UTF-16LE, and slices both', () => {
    const store = createTextStore(dir, { readBufferBytes: 6, readAheadBytes: 0 });
    const greek = '\u03b1\u03b2\u03b3 \ud83d\ude00 \u4e2d'; // α β γ (2 bytes each), space, 😀 (4), space, 中 (3): 8 code units
    const atBound = '\u0100'.repeat(UTF8_MAX_UNITS); // 2 bytes a code unit
    const past = '\u0100'.repeat(UTF8_MAX_UNITS + 1);
    for (const t of [greek, atBound, past]) store.append(t);
    expect([0, 1, 2].map((i) => store.encodingOf(i))).toEqual(['utf8', 'utf8', 'utf16le']);
    expect([0, 1, 2].map((i) => store.storedBytesOf(i))).toEqual([3 * 2 + 1 + 4 + 1 + 3, 2 * UTF8_MAX_UNITS, 2 * (UTF8_MAX_UNITS + 1)]);
    // every slice of the UTF-8 text, surrogate halves included, read with a 6-byte buffer (one read of the whole text)
    for (let a = 0; a <= greek.length; a++) for (let b = a; b <= greek.length; b++) expect(store.slice(0, a, b)).toBe(greek.slice(a, b));
    expect(store.get(1)).toBe(atBound);
    expect(store.slice(1, UTF8_MAX_UNITS - 3, UTF8_MAX_UNITS)).toBe('\u0100'.repeat(3));
    expect(store.get(2)).toBe(past);
    // a chunk's position for ordering reads: exact for UTF-16LE, the document's offset plus code units for UTF-8
    expect(store.bytePositionOf(0, 4)).toBe(0 + 4);
    expect(store.bytePositionOf(2, 5)).toBe(store.storedBytesOf(0) + store.storedBytesOf(1) + 2 * 5);
    store.remove();
  });

  it('a UTF-8 text whose bytes were changed on disk is an error naming the file, not a wrong text', () => {
    const store = createTextStore(dir, { readAheadBytes: 0 });
    store.append('ok');
    store.append('\u00e9\u4e2d'); // é 2 bytes + 中 3 bytes, at bytes [2, 7)
    store.flush();
    // overwrite 中 (E4 B8 AD, bytes [4, 7)) with three ASCII letters: é + abc, 1 + 3 code units instead of 2
    const fd = openSync(store.path, 'r+');
    writeSync(fd, Buffer.from('abc'), 0, 3, 4);
    closeSync(fd);
    expect(() => store.get(1)).toThrow(new RegExp(`decodes to ${1 + 3} code units, expected 2`));
    expect(store.get(0)).toBe('ok');
    store.remove();
  });

  it('writes full buffers behind the caller: 20 MiB of texts read back exactly, mid-way, after flush and after close', async () => {
    const store = createTextStore(dir);
    const texts: string[] = [];
    for (let i = 0; i < 2600; i++) {
      // 8,000-8,099 code units each, latin1, UTF-8 and UTF-16LE in turn: about 2.5 buffers of 1 MiB a 100 texts
      const body = String.fromCharCode(97 + (i % 26)).repeat(8000 + (i % 100));
      texts.push(i % 3 === 0 ? body : i % 3 === 1 ? `\u4e2d${body}` : `\ud800${body}`);
      store.append(texts[i]);
      // a read while buffers are in flight sees every text appended before it
      if (i % 500 === 499) expect(store.get(i - 250)).toBe(texts[i - 250]);
    }
    expect(store.byteLength).toBe(texts.reduce((n, t, i) => n + (i % 3 === 0 ? t.length : i % 3 === 1 ? t.length - 1 + 3 : 2 * t.length), 0));
    store.flush();
    expect(statSync(store.path).size).toBe(store.byteLength);
    for (let i = 0; i < texts.length; i += 37) expect(store.get(i)).toBe(texts[i]);
    // closing with writes in flight: the file is complete once they end
    store.append('last');
    store.close();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const raw = readFileSync(store.path);
    expect(raw.length).toBe(store.byteLength);
    expect(raw.subarray(raw.length - 4).toString('latin1')).toBe('last');
    expect(raw.subarray(0, 8000).toString('latin1')).toBe(texts[0]);
    store.remove();
    expect(existsSync(store.path)).toBe(false);
  });

  it('a write behind that fails is thrown by the next call, naming the file', async () => {
    const store = createTextStore(dir);
    // a descriptor open read-only: every write to it fails with EBADF
    const readOnly = openSync(store.path, 'r');
    (store as unknown as { fd: number }).fd = readOnly;
    const big = 'x'.repeat(600_000);
    store.append(big);
    store.append(big); // the buffer is full: the first text goes to the thread pool, and fails there
    await new Promise((resolve) => setTimeout(resolve, 50));
    let err: unknown;
    try {
      store.append('next');
    } catch (e) {
      err = e;
    }
    expect(isHarnessError(err) && err.code === 'RESOURCE_UNAVAILABLE').toBe(true);
    expect((err as Error).message).toContain(`cannot write document texts to ${store.path} (EBADF)`);
    expect(() => store.get(0)).toThrow(/cannot write document texts/);
    store.remove();
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

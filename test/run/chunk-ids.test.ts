import { describe, expect, it } from 'vitest';
import { chunkDocMap, isOrdinalId } from '../../src/run/chunk-ids.js';
import { seededRandom } from '../../src/score/stats.js';
import type { Chunk } from '../../src/types.js';

const chunk = (docId: string, ordinal: number, id = `${docId}#${ordinal}`): Chunk => ({ id, docId, ordinal, text: 'x', start: 0, end: 1, tokens: 1 });
const indexOf = (ids: string[]) => new Map(ids.map((d, i) => [d, i]));

/** The form chunk-ids.ts replaces: every document id to itself, then every chunk id to its document. */
function mapForm(docs: string[], chunks: Chunk[]) {
  const m = new Map<string, string>();
  for (const d of docs) m.set(d, d);
  for (const c of chunks) m.set(c.id, c.docId);
  const chunkIds = new Set(chunks.map((c) => c.id));
  return { get: (id: string) => m.get(id), isChunk: (id: string) => chunkIds.has(id) };
}

describe('chunkDocMap', () => {
  it('answers by chunk counts: ids, documents, non-canonical ordinals, ids past the count', () => {
    const docs = ['a', 'b#1', 'b', 'c'];
    // a: 3 chunks; b#1 (a document id holding '#'): 1; b: 2 (so "b#1" is both a document and a chunk of b); c: none
    const chunks = [chunk('a', 0), chunk('a', 1), chunk('a', 2), chunk('b#1', 0), chunk('b', 0), chunk('b', 1)];
    const m = chunkDocMap(indexOf(docs), chunks);
    expect(m.get('a#2')).toBe('a');
    expect(m.get('a#3')).toBeUndefined(); // past a's 3 chunks
    expect(m.get('a#02')).toBeUndefined(); // not the canonical ordinal
    expect(m.get('a#-1')).toBeUndefined();
    expect(m.get('a#')).toBeUndefined();
    expect(m.get('b#1#0')).toBe('b#1'); // the last '#' splits
    expect(m.get('b#1')).toBe('b'); // a chunk of b wins over the document "b#1", as the map form had it
    expect(m.isChunk('b#1')).toBe(true);
    expect(m.get('c')).toBe('c'); // a document id maps to itself
    expect(m.isChunk('c')).toBe(false);
    expect(m.get('c#0')).toBeUndefined(); // c has no chunk
    expect(m.get('zz#0')).toBeUndefined();
    expect(m.has('zz')).toBe(false);
    expect(m.has('a')).toBe(true);
  });

  it('keeps chunks outside the scheme in an explicit map', () => {
    const docs = ['a', 'b'];
    // a gap (a#0 then a#2), a foreign id, a chunk of an unknown document
    const chunks = [chunk('a', 0), chunk('a', 2), chunk('b', 0, 'custom-7'), chunk('q', 0)];
    const m = chunkDocMap(indexOf(docs), chunks);
    expect(m.get('a#0')).toBe('a');
    expect(m.get('a#2')).toBe('a');
    expect(m.get('a#1')).toBeUndefined();
    expect(m.get('custom-7')).toBe('b');
    expect(m.isChunk('custom-7')).toBe(true);
    expect(m.get('b#0')).toBeUndefined();
    expect(m.get('q#0')).toBe('q');
  });

  it('equals the map form on random corpora and random probes', () => {
    const r = seededRandom(25);
    const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)];
    for (let round = 0; round < 200; round++) {
      const docs: string[] = [];
      const nDocs = 1 + Math.floor(r() * 8);
      const parts = ['a', 'b', '#', '0', '1', '#1', 'x#0'];
      while (docs.length < nDocs) {
        let id = '';
        const len = 1 + Math.floor(r() * 3);
        for (let j = 0; j < len; j++) id += pick(parts);
        if (!docs.includes(id)) docs.push(id);
      }
      const chunks: Chunk[] = [];
      for (const d of docs) {
        const n = Math.floor(r() * 12);
        for (let o = 0; o < n; o++) chunks.push(r() < 0.05 ? chunk(d, o + 1) : chunk(d, o));
      }
      // drop ids that collide (the chunker never makes two chunks with one id)
      const seen = new Set<string>();
      const unique = chunks.filter((c) => (seen.has(c.id) ? false : (seen.add(c.id), true)));
      const got = chunkDocMap(indexOf(docs), unique);
      const want = mapForm(docs, unique);
      const probes = [...docs, ...unique.map((c) => c.id), ...docs.flatMap((d) => [`${d}#0`, `${d}#9`, `${d}#10`, `${d}#01`, `${d}#`]), '#', '', '#0'];
      for (const p of probes) {
        expect(got.get(p), p).toBe(want.get(p));
        expect(got.isChunk(p), p).toBe(want.isChunk(p));
        expect(got.has(p), p).toBe(want.get(p) !== undefined);
      }
      // hasChunks is the membership of the set of the chunks' documents, for documents and for any probe
      const withChunks = new Set(unique.map((c) => c.docId));
      for (const p of [...probes, 'q', ...unique.map((c) => c.docId)]) expect(got.hasChunks(p), p).toBe(withChunks.has(p));
    }
  });

  it('hasChunks: by counts, by chunks outside the scheme, false for a document without chunks', () => {
    // a: 2 chunks in the scheme; b: one chunk with a foreign id; c: none; q: a chunk of a document not in the index
    const m = chunkDocMap(indexOf(['a', 'b', 'c']), [chunk('a', 0), chunk('a', 1), chunk('b', 0, 'custom'), chunk('q', 0)]);
    expect([m.hasChunks('a'), m.hasChunks('b'), m.hasChunks('c'), m.hasChunks('q'), m.hasChunks('a#0')]).toEqual([true, true, false, true, false]);
    // with no chunk outside the scheme, only the counts answer
    const n = chunkDocMap(indexOf(['a', 'b']), [chunk('b', 0)]);
    expect([n.hasChunks('a'), n.hasChunks('b'), n.hasChunks('zz')]).toEqual([false, true, false]);
  });
});

describe('isOrdinalId', () => {
  it('accepts exactly <docId>#<canonical ordinal>', () => {
    expect(isOrdinalId('a#0', 'a', 0)).toBe(true);
    expect(isOrdinalId('a#10', 'a', 10)).toBe(true);
    expect(isOrdinalId('b#1#7', 'b#1', 7)).toBe(true); // the document id may hold '#'
    expect(isOrdinalId('a#010', 'a', 10)).toBe(false); // a leading zero
    expect(isOrdinalId('a#1', 'a', 10)).toBe(false); // too few digits
    expect(isOrdinalId('a#100', 'a', 10)).toBe(false); // too many
    expect(isOrdinalId('a#11', 'a', 10)).toBe(false); // a wrong digit
    expect(isOrdinalId('ab#0', 'a', 0)).toBe(false); // '#' not right after the document id
    expect(isOrdinalId('b#0', 'a', 0)).toBe(false); // another document
    expect(isOrdinalId('a#', 'a', 0)).toBe(false);
    expect(isOrdinalId('a', 'a', 0)).toBe(false);
    expect(isOrdinalId('a#-1', 'a', -1)).toBe(false); // not a whole number >= 0
    expect(isOrdinalId('a#1.5', 'a', 1.5)).toBe(false);
    expect(isOrdinalId('a#NaN', 'a', Number.NaN)).toBe(false);
  });

  it('equals the template comparison for whole ordinals on random ids', () => {
    const r = seededRandom(58);
    const parts = ['a', '#', '0', '1', '9', '#1', ''];
    let agreed = 0;
    for (let i = 0; i < 5000; i++) {
      let docId = '';
      for (let j = 0; j < 3; j++) docId += parts[Math.floor(r() * parts.length)];
      const ordinal = Math.floor(r() * 1200);
      // ids near the canonical one: itself, another ordinal, a digit appended or dropped, a prefix changed
      const canonical = `${docId}#${ordinal}`;
      const ids = [canonical, `${docId}#${Math.floor(r() * 1200)}`, `${canonical}0`, canonical.slice(0, -1), `x${canonical}`, `${docId}#0${ordinal}`];
      for (const id of ids) {
        expect(isOrdinalId(id, docId, ordinal), `${id} ${docId} ${ordinal}`).toBe(id === canonical);
        agreed++;
      }
    }
    expect(agreed).toBe(5000 * 6);
  });
});

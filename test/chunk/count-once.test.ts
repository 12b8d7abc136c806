/**
 * The chunker counts a document that fits one chunk once, not twice (lastTextCounter): the splitter's count of the
 * whole text answers the chunk's `tokens`. Checked by counting the characters a word tokenizer is asked to tokenize,
 * worked out by hand, and by the chunks being the same as with a counter that remembers nothing.
 */
import { describe, expect, it } from 'vitest';
import { chunkDocuments, chunksFromPieces, countTokens, defaultTokenizer, lastTextCounter, type Tokenizer } from '../../src/chunk/chunker.js';
import type { Doc } from '../../src/types.js';

/** A tokenizer of space-separated words that records the characters it was given. */
function wordTokenizer(): Tokenizer & { chars: number } {
  const t = {
    name: 'words',
    chars: 0,
    encode(text: string): string[] {
      t.chars += text.length;
      return text.split(' ').filter((w) => w !== '');
    },
  };
  return t;
}

describe('lastTextCounter', () => {
  it('counts a text once while it is the last one counted exactly; a count above its limit is not remembered', () => {
    const t = wordTokenizer();
    const count = lastTextCounter(t);
    const a = 'one two three'; // 13 characters, 3 words
    expect(count(a)).toBe(3);
    expect(count(a)).toBe(3);
    expect(count(a, 1)).toBe(3); // exact, and above the smaller limit: a valid answer
    expect(t.chars).toBe(13);
    const b = 'four five'; // 9 characters, 2 words
    expect(count(b, 1)).toBe(2); // above the limit: not remembered
    expect(count(b, 1)).toBe(2);
    expect(t.chars).toBe(13 + 9 + 9);
    expect(count(a)).toBe(3); // b was never remembered, so a still is
    expect(t.chars).toBe(13 + 9 + 9);
    expect(count(b)).toBe(2);
    expect(count(a)).toBe(3); // now b is the last exact one
    expect(t.chars).toBe(13 + 9 + 9 + 9 + 13);
  });
});

describe('chunkDocuments counts a one-chunk document once', () => {
  it('a document of 5 words at chunk size 8: the splitter counts it, the chunk reuses the count', () => {
    const text = 'alpha beta gamma delta epsilon.'; // 31 characters, 5 words
    const doc: Doc = { id: 'd', text };
    const t = wordTokenizer();
    const chunks = chunkDocuments([doc], { size: 8, overlap: 0 }, t);
    expect(chunks).toEqual([{ id: 'd#0', docId: 'd', ordinal: 0, text, start: 0, end: 31, tokens: 5 }]);
    expect(t.chars).toBe(31); // before: 31 (the splitter's count) + 31 (the chunk's)
  });

  it('every chunk keeps its own count, on documents of one chunk (trimmed or not) and of several', () => {
    const docs: Doc[] = [
      { id: 'a', text: 'One short sentence here.' },
      { id: 'b', text: '  Padded text that gets trimmed.  ' },
      { id: 'c', text: Array.from({ length: 40 }, (_, i) => `Sentence number ${i} has some words in it.`).join(' ') },
    ];
    const spec = { size: 32, overlap: 4 };
    const tokenizer = defaultTokenizer();
    const got = chunkDocuments(docs, spec, tokenizer);
    // every chunk's tokens is its text's count by a fresh call (the remembered count is never another text's)
    for (const c of got) expect(c.tokens).toBe(countTokens(tokenizer, c.text));
    const b = got.filter((c) => c.docId === 'b');
    expect(b).toHaveLength(1);
    expect(b[0].text).toBe('Padded text that gets trimmed.');
    expect(got.filter((c) => c.docId === 'c').length).toBeGreaterThan(1);
    // chunksFromPieces without a counter gives the same chunks for the one-chunk documents
    expect(chunksFromPieces(docs[0], [docs[0].text], 4, tokenizer)).toEqual(got.filter((c) => c.docId === 'a'));
  });
});

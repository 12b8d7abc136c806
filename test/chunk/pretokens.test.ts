/**
 * Differential test of the hand-written cl100k pre-token scanner (`src/chunk/pretokens.ts`) against the regex it
 * replaces (`new RegExp(cl100kBase.pat_str, 'gu')`, js-tiktoken 1.0.21): the same pre-tokens on every document of
 * SciFact and the TREC-DL slice (../shared/datasets, skipped when absent), on constructed texts for each alternative
 * of `pat_str`, and on thousands of random strings drawn from an alphabet rich in edge cases; and the tokenizer built
 * on it gives js-tiktoken's ids on those texts.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { Tiktoken } from 'js-tiktoken/lite';
import cl100kBase from 'js-tiktoken/ranks/cl100k_base';
import { describe, expect, it } from 'vitest';
import { chunkDocuments, cl100kTokenizer, defaultTokenizer } from '../../src/chunk/chunker.js';
import { nextPreTokenEnd, PreTokenMemo, regexPreTokens, scanPreTokens } from '../../src/chunk/pretokens.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const corpora = ['scifact', 'trec-dl-2019-5k'].map((name) => path.resolve(repoRoot, '../shared/datasets', name, 'corpus.jsonl'));

/** Title, text and `title\n\ntext` (as loadBeir joins them) of every line of a BEIR corpus.jsonl. */
function corpusTexts(file: string): string[] {
  const texts: string[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    const o = JSON.parse(line) as { title?: string; text: string };
    texts.push(o.text);
    if (o.title) texts.push(o.title, `${o.title}\n\n${o.text}`);
  }
  return texts;
}

/** Edge cases of `pat_str`, one string a piece; random strings are concatenations of these. */
const PIECES = [
  // apostrophes and contractions in mixed case, the typographic apostrophe (not in pat_str), and near misses
  "'", "'s", "'S", "'t", "'re", "'rE", "'Re", "'RE", "'ve", "'VE", "'m", "'M", "'ll", "'lL", "'Ll", "'d", "'D", "'r", "'l", "'v", "'x",
  '\u2019', '\u2019s', "n't", "'ll've",
  // letters: ASCII, accented (precomposed and combining), CJK, astral letters
  'a', 'Z', 'word', 'CAPS', 'é', 'e\u0301', '\u0301', 'ß', 'Ω', 'ж', '日本', 'の', '한', '\u{1D400}', '\u{20000}',
  // numbers: digit runs of 1-7, other number classes, astral digits
  '1', '12', '123', '1234', '12345', '123456', '1234567', '²', '½', 'Ⅻ', '٣', '\u{1D7CE}',
  // whitespace: space runs, tabs, CR/LF mixes, NBSP, line/paragraph separators, ideographic space, BOM, VT, FF
  ' ', '  ', '   ', '\t', '\t\t', '\n', '\r', '\r\n', '\n\n', '\n\r\n', ' \n ', '\u00a0', '\u2028', '\u2029', '\u3000',
  '\ufeff', '\v', '\f', '\u2009', '\u1680',
  // punctuation and symbols, runs of them
  '.', ',', '!?', '...', '--', '"', '(', ')', '<|endoftext|>', '_', '-', '/', '€', '©', '\u0000', '\u200b', '\u00ad',
  // emoji and astral symbols, lone surrogates
  '😀', '👍🏽', '🇫🇷', '\u{1F600}\u{1F600}', '\ud83d', '\ude00', '\udbff', '\udc00',
];

const randomText = fc.array(fc.constantFrom(...PIECES), { maxLength: 24 }).map((parts) => parts.join(''));

describe('nextPreTokenEnd: the pre-tokens of cl100k_base pat_str, without the regex', () => {
  it('pat_str is the one whose alternatives the scanner follows (js-tiktoken 1.0.21)', () => {
    expect(cl100kBase.pat_str).toBe(
      "('s|'S|'t|'T|'re|'rE|'Re|'RE|'ve|'vE|'Ve|'VE|'m|'M|'ll|'lL|'Ll|'LL|'d|'D)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    );
  });

  it('each alternative, worked out by hand', () => {
    // 1. contractions (any case), before 2 even where 2 would match more; U+2019 is not an apostrophe of pat_str
    expect(scanPreTokens("I'LL've'Sx")).toEqual(['I', "'LL", "'ve", "'S", 'x']);
    expect(scanPreTokens('it\u2019s')).toEqual(['it', '\u2019s']);
    // 2. letters with one leading non-letter, non-number, non-CR/LF code point (a space, a tab, an emoji, a mark)
    expect(scanPreTokens(' hello\tworld.end😀x')).toEqual([' hello', '\tworld', '.end', '😀x']);
    expect(scanPreTokens('\nword')).toEqual(['\n', 'word']);
    // 3. at most three numbers
    expect(scanPreTokens('1234567')).toEqual(['123', '456', '7']);
    // 4. optional space, a run of others, then CR/LF
    expect(scanPreTokens('a ...!\r\n\nb')).toEqual(['a', ' ...!\r\n\n', 'b']);
    // 5. a whitespace run up to its last CR/LF
    expect(scanPreTokens('a \n \n  b')).toEqual(['a', ' \n \n', ' ', ' b']);
    // 6. a whitespace run minus its last unit before a non-space; whole at the end of the text
    expect(scanPreTokens('a    b   ')).toEqual(['a', '   ', ' b', '   ']);
    // 7. a single whitespace before a number
    expect(scanPreTokens('a \t1')).toEqual(['a', ' ', '\t', '1']);
  });

  it('lone surrogates are code points of class "other"; pairs are one code point', () => {
    for (const s of ['\ud83d', 'a\ud83dbc', '\ude00\ud83d', ' \ud83d', '\ud83d\ud83d\ude00x', '𝐀𝐁1𝟎𝟏𝟐𝟑']) {
      expect(scanPreTokens(s)).toEqual(regexPreTokens(s));
    }
  });

  it('ends are strictly increasing and the pre-tokens tile the text', () => {
    fc.assert(
      fc.property(randomText, (text) => {
        let i = 0;
        while (i < text.length) {
          const e = nextPreTokenEnd(text, i);
          expect(e).toBeGreaterThan(i);
          expect(e).toBeLessThanOrEqual(text.length);
          i = e;
        }
        expect(scanPreTokens(text).join('')).toBe(text);
      }),
      { numRuns: 500 },
    );
  });

  it('property: equal to the regex on 5,000 random strings of edge cases', () => {
    fc.assert(
      fc.property(randomText, (text) => {
        expect(scanPreTokens(text)).toEqual(regexPreTokens(text));
      }),
      { numRuns: 5000 },
    );
  });

  it('property: equal to the regex on 2,000 random strings of any UTF-16 code units', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 20 }), (a, b) => {
        const text = a + b;
        expect(scanPreTokens(text)).toEqual(regexPreTokens(text));
      }),
      { numRuns: 2000 },
    );
  });

  it('tokenizer: the same ids as js-tiktoken and as the regex cut on random strings of edge cases', () => {
    const reference = new Tiktoken(cl100kBase);
    const regex = cl100kTokenizer({ cut: 'regex' });
    fc.assert(
      fc.property(randomText, (text) => {
        const ids = reference.encode(text, [], []);
        expect(Array.from(defaultTokenizer().encode(text))).toEqual(ids);
        expect(Array.from(regex.encode(text))).toEqual(ids);
        expect(defaultTokenizer().count!(text)).toBe(ids.length);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('PreTokenMemo: ids of a range of a text, memoised without slicing', () => {
  /** A stand-in encode: the code units, so each pre-token's ids are known; counts its calls. */
  const counting = () => {
    const calls: string[] = [];
    const encode = (pre: string): number[] => (calls.push(pre), Array.from(pre, (ch) => ch.charCodeAt(0)));
    return { calls, encode };
  };
  const fnv1a = (s: string): number => {
    let h = 0x811c9dc5 | 0;
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
    return h;
  };

  it('a pre-token is encoded once, wherever it occurs', () => {
    const { calls, encode } = counting();
    const memo = new PreTokenMemo(encode, 100);
    expect(memo.ids('say hello', 3, 9)).toEqual([32, 104, 101, 108, 108, 111]);
    expect(memo.ids(' hello world', 0, 6)).toEqual([32, 104, 101, 108, 108, 111]);
    expect(memo.ids('x hellox', 1, 7)).toEqual([32, 104, 101, 108, 108, 111]);
    expect(calls).toEqual([' hello']);
    expect(memo.held).toBe(1);
  });

  it('distinct pre-tokens with the same FNV-1a hash and length are told apart by their code units', () => {
    // Found by a birthday search over random 6-letter strings: equal 32-bit FNV-1a hashes.
    expect(fnv1a('esngjq')).toBe(fnv1a('xnsubj'));
    const { calls, encode } = counting();
    const memo = new PreTokenMemo(encode, 100);
    expect(memo.ids('esngjq', 0, 6)).toEqual(Array.from('esngjq', (c) => c.charCodeAt(0)));
    expect(memo.ids('xnsubj', 0, 6)).toEqual(Array.from('xnsubj', (c) => c.charCodeAt(0)));
    expect(memo.ids('..esngjq', 2, 8)).toEqual(Array.from('esngjq', (c) => c.charCodeAt(0)));
    expect(calls).toEqual(['esngjq', 'xnsubj']);
  });

  it('grows past its first 4,096 slots and keeps every entry', () => {
    const { calls, encode } = counting();
    const memo = new PreTokenMemo(encode, 1_000_000);
    const words = Array.from({ length: 10_000 }, (_, i) => `w${i}`);
    for (const w of words) memo.ids(w, 0, w.length);
    expect(memo.held).toBe(10_000);
    for (const w of words) expect(memo.ids(`<${w}>`, 1, w.length + 1)).toEqual(Array.from(w, (c) => c.charCodeAt(0)));
    expect(calls).toHaveLength(10_000);
  });

  it('empties itself after limit distinct pre-tokens (bounded memory), then still answers', () => {
    const { calls, encode } = counting();
    const memo = new PreTokenMemo(encode, 3);
    for (const w of ['a', 'b', 'c']) memo.ids(w, 0, 1);
    expect(memo.held).toBe(3);
    expect(memo.ids('d', 0, 1)).toEqual([100]);
    expect(memo.held).toBe(1);
    expect(memo.ids('a', 0, 1)).toEqual([97]);
    expect(calls).toEqual(['a', 'b', 'c', 'd', 'a']);
  });

  it('throws a RangeError naming a limit that is not an integer >= 1', () => {
    expect(() => new PreTokenMemo((s) => [s.length], 0)).toThrow(/limit must be an integer >= 1, got 0/);
    expect(() => new PreTokenMemo((s) => [s.length], 1.5)).toThrow(RangeError);
  });
});

describe.each(corpora)('every document of %s', (file) => {
  // Read only when the file exists: vitest still runs a skipped describe's body to collect its tests.
  const texts = existsSync(file) ? corpusTexts(file) : [];

  it.skipIf(!existsSync(file))('the scanner cuts the pre-tokens the regex cuts', () => {
    expect(texts.length).toBeGreaterThan(4000);
    let differing = 0;
    for (const t of texts) if (JSON.stringify(scanPreTokens(t)) !== JSON.stringify(regexPreTokens(t))) differing++;
    expect(differing).toBe(0);
  });

  it.skipIf(!existsSync(file))('chunks (ids, start, end, tokens) of the first 300 documents equal the regex cut\'s, none and 64/8', () => {
    const docs = texts.slice(0, 300).map((text, i) => ({ id: `d${i}`, text }));
    for (const spec of [{ size: null, overlap: 0 }, { size: 64, overlap: 8 }]) {
      const old = chunkDocuments(docs, spec, cl100kTokenizer({ cut: 'regex' }));
      const neu = chunkDocuments(docs, spec, cl100kTokenizer());
      expect(neu.length).toBeGreaterThanOrEqual(docs.length - 5);
      expect(neu).toEqual(old);
    }
  });

  it.skipIf(!existsSync(file))('token ids and counts equal js-tiktoken on every 10th text', () => {
    const reference = new Tiktoken(cl100kBase);
    const tokenizer = defaultTokenizer();
    for (let i = 0; i < texts.length; i += 10) {
      const ids = reference.encode(texts[i]!, [], []);
      expect(Array.from(tokenizer.encode(texts[i]!))).toEqual(ids);
      expect(tokenizer.count!(texts[i]!)).toBe(ids.length);
    }
  });
});

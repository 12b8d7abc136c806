import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Tiktoken } from 'js-tiktoken/lite';
import cl100kBase from 'js-tiktoken/ranks/cl100k_base';
import { describe, expect, it } from 'vitest';
import { alignChunks } from '../../src/chunk/align.js';
import { chunkDocuments, chunkingKey, cl100kTokenizer, defaultTokenizer, type Tokenizer } from '../../src/chunk/chunker.js';
import { isHarnessError } from '../../src/errors.js';
import type { Chunk, ChunkingSpec, Doc } from '../../src/types.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const fieldCasesFile = path.resolve(repoRoot, '../shared/cases/field-cases.json');
const scifactCorpus = path.resolve(repoRoot, '../shared/datasets/scifact/corpus.jsonl');

/** One token per character. */
const charTokenizer: Tokenizer = { name: 'chars', encode: (t) => t.split('') };
/** One token per whitespace-separated word; whitespace alone is 0 tokens. */
const wordTokenizer: Tokenizer = { name: 'words', encode: (t) => t.split(/\s+/).filter(Boolean) };

const texts = (chunks: Chunk[]): string[] => chunks.map((c) => c.text);
const one = (text: string, spec: ChunkingSpec, tokenizer: Tokenizer): Chunk[] =>
  chunkDocuments([{ id: 'd', text }], spec, tokenizer);

/** Invariants every chunking must satisfy, checked per document. */
function expectInvariants(docs: readonly Doc[], chunks: Chunk[], tokenizer: Tokenizer): void {
  const byId = new Map(docs.map((d) => [d.id, d]));
  const perDoc = new Map<string, Chunk[]>();
  for (const c of chunks) {
    const doc = byId.get(c.docId)!;
    expect(doc.text.slice(c.start, c.end)).toBe(c.text);
    expect(c.text.length).toBeGreaterThan(0);
    expect(c.id).toBe(`${c.docId}#${c.ordinal}`);
    expect(c.tokens).toBe(tokenizer.encode(c.text).length);
    const list = perDoc.get(c.docId) ?? [];
    list.push(c);
    perDoc.set(c.docId, list);
  }
  for (const [, list] of perDoc) {
    list.forEach((c, i) => {
      expect(c.ordinal).toBe(i);
      if (i > 0) {
        // progress, and neither neighbour inside the other
        expect(c.start).toBeGreaterThan(list[i - 1].start);
        expect(c.end).toBeGreaterThan(list[i - 1].end);
      }
    });
  }
}

describe('C01: invalid chunking settings are rejected before any work, naming size and overlap', () => {
  const invalid: [number | null, number][] = [
    [4, 4],
    [4, 5],
    [0, 0],
    [4, -1],
    [2.5, 0],
    [8, 1.5],
    [null, 3],
  ];
  it.each(invalid)('size %s, overlap %s', (size, overlap) => {
    let calls = 0;
    const spy: Tokenizer = { name: 'spy', encode: (t) => (calls++, t.split('')) };
    let caught: unknown;
    try {
      chunkDocuments([{ id: 'd', text: 'abcdefghij' }], { size, overlap }, spy);
    } catch (e) {
      caught = e;
    }
    expect(isHarnessError(caught, 'CONFIG_INVALID')).toBe(true);
    const message = (caught as Error).message;
    expect(message).toContain(`chunking.size (${size})`);
    expect(message).toContain(`chunking.overlap (${overlap})`);
    expect(calls).toBe(0); // no chunking attempted
  });

  it.skipIf(!existsSync(fieldCasesFile))('every invalid setting listed in field case C01 is rejected', () => {
    const cases = JSON.parse(readFileSync(fieldCasesFile, 'utf8')) as { id: string; input: { invalid_settings: { size: number; overlap: number }[] } }[];
    const c01 = cases.find((c) => c.id.startsWith('C01'))!;
    for (const { size, overlap } of c01.input.invalid_settings) {
      expect(() => one('abcdefghij', { size, overlap }, charTokenizer)).toThrow(/chunking\.size/);
    }
  });
});

describe('C01: SentenceSplitter on text without sentence punctuation gives the sliding window (step = size - overlap)', () => {
  // Character tokenizer on 'abcdefghij': windows start at 0, step, 2*step, ... until one reaches the end.
  it.each([
    [4, 1, ['abcd', 'defg', 'ghij']], // step 3: starts 0, 3, 6
    [4, 2, ['abcd', 'cdef', 'efgh', 'ghij']], // step 2: starts 0, 2, 4, 6
    [4, 0, ['abcd', 'efgh', 'ij']], // step 4: starts 0, 4, 8
    [5, 2, ['abcde', 'defgh', 'ghij']], // step 3; no trailing 'j' inside the previous chunk
    [10, 3, ['abcdefghij']], // fits whole
    [8, 0, ['abcdefgh', 'ij']],
    [8, 4, ['abcdefgh', 'efghij']],
  ])('characters, size %i overlap %i', (size, overlap, expected) => {
    const chunks = one('abcdefghij', { size, overlap }, charTokenizer);
    expect(texts(chunks)).toEqual(expected);
    expectInvariants([{ id: 'd', text: 'abcdefghij' }], chunks, charTokenizer);
  });

  const w10 = 'w1 w2 w3 w4 w5 w6 w7 w8 w9 w10';
  it('injected whitespace word tokenizer, size 4 overlap 1: w1-w4, w4-w7, w7-w10 (field case words_size4_overlap1)', () => {
    const chunks = one(w10, { size: 4, overlap: 1 }, wordTokenizer);
    expect(texts(chunks)).toEqual(['w1 w2 w3 w4', 'w4 w5 w6 w7', 'w7 w8 w9 w10']);
    // offsets: 'w1 w2 w3 w4' is 11 characters; 'w4' starts at 3 words * 3 characters = 9; 'w7' at 18
    expect(chunks.map((c) => [c.start, c.end])).toEqual([
      [0, 11],
      [9, 20],
      [18, 30],
    ]);
    expect(chunks.map((c) => c.tokens)).toEqual([4, 4, 4]);
  });

  it('word tokenizer, size 4 overlap 2 and overlap 0', () => {
    expect(texts(one(w10, { size: 4, overlap: 2 }, wordTokenizer))).toEqual([
      'w1 w2 w3 w4',
      'w3 w4 w5 w6',
      'w5 w6 w7 w8',
      'w7 w8 w9 w10',
    ]);
    expect(texts(one(w10, { size: 4, overlap: 0 }, wordTokenizer))).toEqual(['w1 w2 w3 w4', 'w5 w6 w7 w8', 'w9 w10']);
  });

  it('the sizes follow the tokenizer passed in, not a global one: the same text at size 4 differs by tokenizer', () => {
    // characters: the text splits at spaces into 'w1' (2) and ' w2' (3); 2 + 3 > 4 closes the first chunk at 'w1'
    expect(texts(one(w10, { size: 4, overlap: 0 }, charTokenizer))[0]).toBe('w1');
    expect(texts(one(w10, { size: 4, overlap: 0 }, wordTokenizer))[0]).toBe('w1 w2 w3 w4');
  });
});

describe('chunk offsets: forward alignment, never a global search', () => {
  it('a repeated paragraph maps to both of its places, in order', () => {
    const para = 'The repeated paragraph says the same thing twice.';
    const text = `Intro words here.\n\n\n${para}\n\n\nA different middle paragraph.\n\n\n${para}\n\n\nThe end.`;
    const chunks = one(text, { size: 8, overlap: 0 }, wordTokenizer);
    const repeated = chunks.filter((c) => c.text === para);
    expect(repeated.map((c) => c.start)).toEqual([text.indexOf(para), text.lastIndexOf(para)]);
    expect(text.lastIndexOf(para)).toBeGreaterThan(text.indexOf(para));
    expectInvariants([{ id: 'd', text }], chunks, wordTokenizer);
  });

  it('identical windows of a periodic text get successive places: overlap 0 steps by 2 words, overlap 1 by 1 word', () => {
    const text = 'a a a a a a a a'; // 8 words; word i starts at 2i
    const noOverlap = one(text, { size: 2, overlap: 0 }, wordTokenizer);
    expect(noOverlap.map((c) => c.start)).toEqual([0, 4, 8, 12]);
    const withOverlap = one(text, { size: 2, overlap: 1 }, wordTokenizer);
    expect(withOverlap.map((c) => c.start)).toEqual([0, 2, 4, 6, 8, 10, 12]);
    expectInvariants([{ id: 'd', text }], withOverlap, wordTokenizer);
  });

  it('SentenceSplitter quirk: a punctuation mark dropped by its sub-sentence regex is restored from the document', () => {
    // The sentence (5 words) exceeds size 2, so '[^,.;]+[,.;]?' splits it into 'alpha,' and 'beta gamma ...':
    // the second ',' matches neither and the splitter returns 'alpha,beta'.
    const text = 'alpha,,beta gamma delta epsilon';
    const chunks = one(text, { size: 2, overlap: 0 }, wordTokenizer);
    expect(texts(chunks)).toEqual(['alpha,,beta', 'gamma delta', 'epsilon']);
    expectInvariants([{ id: 'd', text }], chunks, wordTokenizer);
  });

  it('SentenceSplitter quirk: an {{ABBREV_n}} placeholder leaked into a URL (docking.org holds "ing.") is aligned and replaced by the document text', () => {
    const text = 'Many questions remain open for the community. ZINC is freely available at http://zinc15.docking.org.';
    const chunks = one(text, { size: 8, overlap: 0 }, wordTokenizer);
    expect(texts(chunks)).toEqual([
      'Many questions remain open for the community.',
      'ZINC is freely available at http://zinc15.docking.org.',
    ]);
    expect(chunks[1].start).toBe(text.indexOf('ZINC'));
  });

  it('SentenceSplitter quirk: punctuation it drops at a chunk boundary is added to the end of the chunk before it', () => {
    // 'alpha,, beta gamma' (3 words > 2) is split by '[^,.;]+[,.;]?' into 'alpha,' and ' beta gamma'; the second ','
    // belongs to neither piece.
    const text = 'alpha,, beta gamma';
    const chunks = one(text, { size: 2, overlap: 0 }, wordTokenizer);
    expect(chunks.map((c) => [c.text, c.start, c.end])).toEqual([
      ['alpha,,', 0, 7],
      ['beta gamma', 8, 18],
    ]);
  });

  it('a placeholder cut in two by a later split ({{ABB + REV_0}}) still aligns: the tail run and the head are skipped', () => {
    // text: 'http://x.docking.org/a' spans [3, 25); 'org/a now' starts at 20.
    const text = 'at http://x.docking.org/a now';
    const spans = alignChunks(text, ['at http://x.dock{{ABB', 'REV_0}}org/a now'], {
      overlap: 1,
      countTokens: (t) => wordTokenizer.encode(t).length,
    });
    expect(spans).toEqual([
      { start: 0, end: 25 },
      { start: 20, end: 29 },
    ]);
  });

  it('a degenerate trailing chunk (overlap tail plus whitespace) that lies inside the previous chunk is dropped', () => {
    // characters, size 4 overlap 1: 'abcd', then 'd'+'efg', then the carried 'g' + ' ' which trims to 'g'.
    const chunks = one('abcdefg ', { size: 4, overlap: 1 }, charTokenizer);
    expect(chunks.map((c) => [c.text, c.start, c.end])).toEqual([
      ['abcd', 0, 4],
      ['defg', 3, 7],
    ]);
  });

  it('a short chunk carried whole into the next chunk as its overlap is dropped; the next may exceed size by the overlap', () => {
    // words, size 6 overlap 2: 'a b c d e.' (5) closes; 'f g.' (2) closes because 'h i j k l m.' (6) does not fit;
    // 'f g.' (2 <= overlap 2) is carried into the next chunk, which holds 2 + 6 = 8 tokens.
    const text = 'a b c d e. f g. h i j k l m.';
    const chunks = one(text, { size: 6, overlap: 2 }, wordTokenizer);
    expect(chunks.map((c) => [c.text, c.tokens])).toEqual([
      ['a b c d e.', 5],
      ['f g. h i j k l m.', 8],
    ]);
    expect(chunks.map((c) => c.ordinal)).toEqual([0, 1]);
  });
});

describe('whole documents and ids', () => {
  const docs: Doc[] = [
    { id: 'faq/a.md', text: '  Hello world.  ' },
    { id: 'faq/empty.md', text: '' },
    { id: 'faq/blank.md', text: ' \n\t ' },
    { id: 'faq/b.md', text: 'One. Two. Three.' },
  ];

  it('size null: one chunk per non-blank document with the whole text, id <docId>#0', () => {
    const chunks = chunkDocuments(docs, { size: null, overlap: 0 }, wordTokenizer);
    expect(chunks).toEqual([
      { id: 'faq/a.md#0', docId: 'faq/a.md', ordinal: 0, text: '  Hello world.  ', start: 0, end: 16, tokens: 2 },
      { id: 'faq/b.md#0', docId: 'faq/b.md', ordinal: 0, text: 'One. Two. Three.', start: 0, end: 16, tokens: 3 },
    ]);
  });

  it('empty and whitespace-only documents give no chunks at any size', () => {
    const chunks = chunkDocuments(docs, { size: 2, overlap: 0 }, wordTokenizer);
    expect(new Set(chunks.map((c) => c.docId))).toEqual(new Set(['faq/a.md', 'faq/b.md']));
    // 'One. Two. Three.' at 2 words: sentences of 1 word, packed two per chunk
    expect(texts(chunks.filter((c) => c.docId === 'faq/b.md'))).toEqual(['One. Two.', 'Three.']);
    expectInvariants(docs, chunks, wordTokenizer);
  });

  it('ids are deterministic: chunking twice gives identical chunks (no random UUIDs)', () => {
    const spec = { size: 3, overlap: 1 };
    expect(chunkDocuments(docs, spec, wordTokenizer)).toEqual(chunkDocuments(docs, spec, wordTokenizer));
  });

  it('chunkingKey: none for whole documents, cs<size>-ov<overlap> otherwise', () => {
    expect(chunkingKey({ size: null, overlap: 0 })).toBe('none');
    expect(chunkingKey({ size: 256, overlap: 32 })).toBe('cs256-ov32');
    expect(chunkingKey({ size: 128, overlap: 0 })).toBe('cs128-ov0');
  });
});

describe('defaultTokenizer (cl100k_base)', () => {
  const reference = new Tiktoken(cl100kBase);

  it('gives the same token ids as js-tiktoken on varied text', () => {
    const samples = [
      'Hello world',
      "It's   spaced\n\n\n  out\r\n\twith TABS and numbers 1234567 and 3.14159",
      "DON'T shout; we'll see. They're here, I'd say.",
      '日本語のテキストと 😀 emoji, café naïve',
      '    leading and trailing    ',
      'LMP-204 x86_64 e.g. http://zinc15.docking.org/substances?q=1',
      // the pre-token scanner's edge cases (src/chunk/pretokens.ts): contractions in mixed case and U+2019, digit
      // runs, CR/LF mixes before letters and punctuation, NBSP, U+2028, ideographic space, combining marks, astral
      // letters and digits, emoji, lone surrogates
      "I'LL'Ve'rE 'x it\u2019s n't",
      '1 12 123 1234 12345 123456 1234567 ² ½ ٣ \u{1D7CE}\u{1D7CF}',
      'a\r\n\r\nb \n \n  c\t\td .\r\n\ne \r\r',
      'x\u00a0y\u2028z\u3000日本\u3000 語 e\u0301t\u0301e\u0301',
      '\u{1D400}\u{1D401} 😀x 👍🏽!! \ud83d \ude00a a\ud83d',
      '   ',
      '',
    ];
    const regexCut = cl100kTokenizer({ cut: 'regex' });
    for (const s of samples) {
      const ids = reference.encode(s, [], []);
      expect(Array.from(defaultTokenizer().encode(s))).toEqual(ids);
      expect(Array.from(regexCut.encode(s))).toEqual(ids);
      expect(defaultTokenizer().count!(s)).toBe(ids.length);
    }
  });

  it('js-tiktoken quirk: special-token text in a document throws there; ours encodes it as ordinary text', () => {
    expect(() => reference.encode('end <|endoftext|> here')).toThrow();
    const ids = Array.from(defaultTokenizer().encode('end <|endoftext|> here'));
    expect(ids).toEqual(reference.encode('end <|endoftext|> here', [], []));
    expect(ids).not.toContain(100257); // the id of the special token <|endoftext|>
  });

  it('is the default: chunk token counts are cl100k counts', () => {
    const chunks = chunkDocuments([{ id: 'd', text: 'Hello world. Another sentence here.' }], { size: 4, overlap: 0 });
    for (const c of chunks) expect(c.tokens).toBe(defaultTokenizer().encode(c.text).length);
    expect(defaultTokenizer().name).toBe('cl100k_base');
  });
});

describe.skipIf(!existsSync(scifactCorpus))('SciFact: first 200 abstracts at size 128, overlap 16', () => {
  // Read only when the folder exists: vitest still runs a skipped describe's body to collect its tests.
  const docs: Doc[] = (existsSync(scifactCorpus) ? readFileSync(scifactCorpus, 'utf8') : '')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .slice(0, 200)
    .map((l) => {
      const o = JSON.parse(l) as { _id: string; title: string; text: string };
      return { id: o._id, text: o.title ? `${o.title}\n\n${o.text}` : o.text };
    });
  const tokenizer = defaultTokenizer();
  const chunks = chunkDocuments(docs, { size: 128, overlap: 16 }, tokenizer);

  it('offsets, ids, ordinals, token counts and progress hold for every chunk', () => {
    expect(docs).toHaveLength(200);
    expect(chunks.length).toBeGreaterThan(200);
    expectInvariants(docs, chunks, tokenizer);
  });

  it('chunks are trimmed and hold at most size + overlap = 144 tokens', () => {
    for (const c of chunks) {
      expect(c.text).toBe(c.text.trim());
      expect(c.tokens).toBeLessThanOrEqual(128 + 16);
    }
  });

  it('no text is lost: every non-whitespace character lies in some chunk', () => {
    for (const doc of docs) {
      const covered = new Uint8Array(doc.text.length);
      for (const c of chunks) if (c.docId === doc.id) covered.fill(1, c.start, c.end);
      const lost: number[] = [];
      for (let i = 0; i < doc.text.length; i++) if (covered[i] === 0 && doc.text[i].trim() !== '') lost.push(i);
      expect(lost).toEqual([]);
    }
  });

  it('an abstract of at most 128 tokens is one chunk, its trimmed text', () => {
    for (const doc of docs) {
      if (tokenizer.encode(doc.text).length > 128) continue;
      expect(texts(chunks.filter((c) => c.docId === doc.id))).toEqual([doc.text.trim()]);
    }
  });
});

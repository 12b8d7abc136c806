/**
 * Differential test of the linear chunker against LlamaIndex's SentenceSplitter (the reference, still a dependency):
 * identical splitter strings and identical chunks (ids, texts, offsets, token counts) on every document of the
 * helpdesk demo, SciFact and TREC-DL (../shared/datasets, skipped when absent) at sizes 64, 128, 256, 512 with overlap
 * 0 and 16 (the configs' overlap; 32 at 256 as configs/scifact.yaml), plus constructed texts for each quirk of the
 * reference's sentence tokenizer and a property test on random texts. The reference runs on two worker threads.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { chunksFromPieces, countTokens, defaultTokenizer, llamaIndexSplitText, type Tokenizer } from '../../src/chunk/chunker.js';
import { createChunkPool, splitDocumentsParallel, type ChunkPool } from '../../src/chunk/parallel.js';
import { sentenceTokenize, splitText } from '../../src/chunk/splitter.js';
import { loadBeir } from '../../src/load/beir.js';
import { loadDocumentFolder } from '../../src/load/documents.js';
import type { Chunk, ChunkingSpec, Doc } from '../../src/types.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const helpdesk = path.join(repoRoot, 'datasets/helpdesk/docs');
const scifact = path.resolve(repoRoot, '../shared/datasets/scifact');
const trecDl = path.resolve(repoRoot, '../shared/datasets/trec-dl-2019-5k');

const SPECS: ChunkingSpec[] = [
  ...[64, 128, 256, 512].flatMap((size) => [
    { size, overlap: 0 },
    { size, overlap: 16 },
  ]),
  { size: 256, overlap: 32 },
];

/** One token per UTF-16 code unit (fast, and makes every split level reachable at small sizes). */
const charTokenizer: Tokenizer = { name: 'chars', encode: (t) => t.split('') };

function ours(text: string, size: number, overlap: number, tokenizer: Tokenizer): string[] {
  return splitText(text, { chunkSize: size, chunkOverlap: overlap, countTokens: (t, limit) => countTokens(tokenizer, t, limit) });
}

/** The reference's strings, or the error class and message it throws. */
function reference(text: string, size: number, overlap: number, tokenizer: Tokenizer): string[] | string {
  try {
    return llamaIndexSplitText(size, overlap, tokenizer)(text);
  } catch (e) {
    return `${(e as Error).constructor.name}`;
  }
}

/** Per document of `docs`: where ours and the reference differ (pieces or chunks), as short descriptions. */
async function differences(docs: Doc[], spec: ChunkingSpec): Promise<string[]> {
  const tokenizer = defaultTokenizer();
  // The reference runs on the workers while ours runs here.
  const pending = splitDocumentsParallel(docs, spec, { splitter: 'llamaindex', pool: pool() });
  pending.catch(() => {});
  const mine = docs.map((doc) => (doc.text.trim() === '' ? [] : ours(doc.text, spec.size!, spec.overlap, tokenizer)));
  const ref = await pending;
  const out: string[] = [];
  docs.forEach((doc, i) => {
    if (doc.text.trim() === '') return;
    if (JSON.stringify(mine[i]) !== JSON.stringify(ref[i])) {
      out.push(`${doc.id} pieces: ${mine[i].length} vs ${ref[i].length}`);
      return;
    }
    // chunkDocuments = splitText, then chunksFromPieces with the bounded alignment; the reference chunker used the
    // unbounded one.
    const refChunks = chunksFromPieces(doc, ref[i], spec.overlap, tokenizer, { unbounded: true });
    const myChunks: Chunk[] = chunksFromPieces(doc, mine[i], spec.overlap, tokenizer);
    if (JSON.stringify(myChunks) !== JSON.stringify(refChunks)) out.push(`${doc.id} chunks differ`);
  });
  return out;
}

let shared: ChunkPool | undefined;
/** One pool of two workers for the whole file, so the reference's tokenizer memo stays warm across settings. */
function pool(): ChunkPool {
  shared ??= createChunkPool(2);
  return shared;
}
afterAll(async () => {
  await shared?.close();
});

const loaded = new Map<string, Promise<Doc[]>>();
function corpus(root: string): Promise<Doc[]> {
  if (!loaded.has(root)) loaded.set(root, loadBeir(root, 'test', { labels: 'keep' }).then((r) => r.docs));
  return loaded.get(root)!;
}

describe('differential: the linear chunker equals SentenceSplitter on every document', () => {
  it.each(SPECS)('helpdesk demo, size $size overlap $overlap', async (spec) => {
    const docs = await loadDocumentFolder(helpdesk);
    expect(docs.length).toBeGreaterThan(20);
    expect(await differences(docs, spec)).toEqual([]);
  });

  describe.skipIf(!existsSync(scifact))('SciFact (5,183 abstracts)', () => {
    it.each(SPECS)('size $size overlap $overlap', async (spec) => {
      const docs = await corpus(scifact);
      expect(docs.length).toBe(5183);
      expect(await differences(docs, spec)).toEqual([]);
    });
  });

  describe.skipIf(!existsSync(trecDl))('TREC-DL 2019 (5,000 passages)', () => {
    it.each(SPECS)('size $size overlap $overlap', async (spec) => {
      const docs = await corpus(trecDl);
      expect(docs.length).toBe(5000);
      expect(await differences(docs, spec)).toEqual([]);
    });
  });
});

describe('differential: each quirk of the sentence tokenizer is reproduced', () => {
  const quirks: [string, string][] = [
    ['an abbreviation inside a URL leaks as {{ABBREV_n}} (docking.org holds "ing.")', 'See http://docking.org/x. Then more text follows here. And www.testing.com too!'],
    ['abbreviations are matched case-insensitively without word boundaries', 'The DR. said ok. Prof. Smith vs. the ART. of war etc. a.m. and P.M. done.'],
    ['numbers with thousands and decimals are protected (3.5 and 1,000.25 do not end sentences)', 'It rose 3.5 percent to 1,000.25 units. Next sentence here. 12 more.'],
    ['runs of delimiters with spaces and a closing quote or bracket stay with the sentence', 'Really?! Yes... "Quoted." (Bracketed.) {Braced.} End … ok. ’Tail.’ More'],
    ['literal {{ … }} text takes the exact sequential revert', 'Template {{NUMBER_0}} and {{DELIM_3}} and {{URI_1}} here. 5 items. Next {{ABBREV_0}}. Dr. Who 7.'],
    ['a $ pattern in a URL is a replacement pattern to String.replace', 'Go to http://x.io/a$&b$$c$`d$\'e now. Then 12 more. Dr. Z.'],
    ['paragraph separators are kept at the start of the next part', 'One.\n\n\nTwo two two two.\n\n\n\n\nThree three. Four four four four four.'],
    ['an e-mail address and mailto: are one placeholder', 'Write to mailto:help@example.com or help@example.co.uk. Thanks.'],
    ['a sentence without spaces falls to single code units', 'abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz. 😀😀😀😀 end.'],
    ['sub-sentence punctuation drops a mark that follows another (a,,b)', 'alpha,,beta;;gamma delta, epsilon; zeta. eta,theta,iota kappa lambda mu nu xi omicron.'],
  ];
  it.each(quirks)('%s', (_name, text) => {
    for (const size of [3, 5, 8, 13, 40]) {
      for (const overlap of [0, 2]) {
        expect(ours(text, size, overlap, charTokenizer)).toEqual(reference(text, size, overlap, charTokenizer));
      }
    }
    const tok = defaultTokenizer();
    for (const size of [4, 8, 16]) expect(ours(text, size, 1, tok)).toEqual(reference(text, size, 1, tok));
  });

  it('sentenceTokenize: literal {{NUMBER_0}} in the text is replaced by the first number, as the reference does', () => {
    // The reference reverts placeholders by global replace in numbering order, so text that looks like a
    // placeholder is replaced too: "5" gets NUMBER_0, and the literal {{NUMBER_0}} before it becomes "5".
    expect(sentenceTokenize('a {{NUMBER_0}} b 5 c')).toEqual(['a 5 b 5 c']);
  });

  it('property: equal strings on random texts of sentence-tokenizer characters at random sizes', () => {
    const alphabet = ['a', 'b', 'Dr', 'ing', ' ', ' ', '.', ',', ';', '?', '!', '…', '"', ')', '}', '{', '{{', '}}', '\n', '\n\n\n', '1', '2,000', '3.5', 'http://', 'www.', '@x.com', '$', '$&', 'NUMBER_0', 'DELIM_1', '_', '。', '😀'];
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...alphabet), { maxLength: 60 }).map((a) => a.join('')),
        fc.integer({ min: 2, max: 30 }),
        fc.integer({ min: 0, max: 1 }),
        (text, size, overlap) => {
          const ref = reference(text, size, overlap, charTokenizer);
          let mine: string[] | string;
          try {
            mine = ours(text, size, overlap, charTokenizer);
          } catch (e) {
            mine = (e as Error).constructor.name;
          }
          // The one deliberate difference: the reference overflows the stack on a single code unit above the size.
          if (ref === 'RangeError') expect(mine).toBe('Error');
          else expect(mine).toEqual(ref);
        },
      ),
      { numRuns: 400, seed: 12 },
    );
  });

  it('a single code unit of more tokens than the size: the reference overflows the stack, ours throws at once', () => {
    const twoPerUnit: Tokenizer = { name: 'two', encode: (t) => [...t.split(''), ...t.split('')] };
    expect(reference('ab cd', 1, 0, twoPerUnit)).toBe('RangeError');
    expect(() => ours('ab cd', 1, 0, twoPerUnit)).toThrow('Single token exceeded chunk size');
  });
});

/**
 * Chunking: documents → chunks with deterministic ids and exact character ranges.
 *
 * `size: null` keeps each document whole. `size: n` uses LlamaIndex's SentenceSplitter (llamaindex 0.12.1, i.e.
 * @llamaindex/core 0.6.22) with `chunkSize = n` and `chunkOverlap = overlap` tokens of an explicitly passed tokenizer,
 * never LlamaIndex's global `Settings.tokenizer` (quirk: sizes silently follow whatever tokenizer is global unless one
 * is passed). We call `splitText` on the document text, so no LlamaIndex nodes and none of their random UUIDs exist;
 * ids are ours: `<docId>#<ordinal>`.
 *
 * What SentenceSplitter does (read from its source, `@llamaindex/core/node-parser`): it splits the text into pieces
 * that fit, preferring paragraph breaks (`\n\n\n`), then sentences, then sub-sentence punctuation, then spaces, then
 * single characters; it packs consecutive pieces into chunks of at most `chunkSize` tokens (token counts are summed
 * over pieces) and starts each new chunk with the last pieces of the previous one, as many as fit in `chunkOverlap`
 * tokens; chunks are trimmed. So it is not a fixed sliding window: chunk boundaries fall on sentence (or word)
 * boundaries, chunks are often shorter than `size`, and the overlap is at most `overlap` tokens, whole pieces only.
 * On text without sentence punctuation and a word tokenizer it reproduces the word sliding window exactly
 * (`w1 … w10`, size 4, overlap 1 → `w1 w2 w3 w4`, `w4 w5 w6 w7`, `w7 w8 w9 w10`).
 *
 * Linear time: SentenceSplitter's sentence tokenizer is quadratic in a paragraph's length (a 1 MB document took
 * 520 s at 128 tokens), so by default the chunk strings come from `splitter.ts`, a linear port that gives the same
 * strings (test/chunk/differential.test.ts runs both on every document of SciFact, TREC-DL and the helpdesk demo);
 * `{ splitter: 'llamaindex' }` runs LlamaIndex's own, which stays the reference. The alignment is linear too.
 */
import { SentenceSplitter } from 'llamaindex/node-parser';
import { Tiktoken } from 'js-tiktoken/lite';
import cl100kBase from 'js-tiktoken/ranks/cl100k_base';
import { HarnessError } from '../errors.js';
import type { Chunk, ChunkingSpec, Doc } from '../types.js';
import { alignChunks } from './align.js';
import { nextPreTokenEnd, PreTokenMemo } from './pretokens.js';
import { splitText, type SplitCounter, type SplitOptions } from './splitter.js';

/** A tokenizer: chunk sizes and overlaps are counted in its tokens (the length of what `encode` returns). */
export interface Tokenizer {
  /** Stable name for manifests, e.g. `cl100k_base`. */
  readonly name: string;
  /** Tokens of `text`; only the length is used. Must be deterministic. */
  encode(text: string): ArrayLike<unknown>;
  /**
   * Optional fast count: `encode(text).length` when that is at most `limit` (default: no limit), else any number
   * greater than `limit` (it may stop counting there). The linear splitter needs exact counts only up to the chunk
   * size, so it can stop tokenizing a long text after `size` tokens.
   */
  count?(text: string, limit?: number): number;
}

/** `tokenizer.count(text, limit)` when the tokenizer has it, else `encode(text).length`. Same contract as `count`. */
export function countTokens(tokenizer: Tokenizer, text: string, limit = Infinity): number {
  return tokenizer.count !== undefined ? tokenizer.count(text, limit) : tokenizer.encode(text).length;
}

/**
 * {@link countTokens} over `tokenizer` remembering the last text it counted exactly (a count ≤ its limit is exact), so
 * counting that same string again costs a comparison. The splitter counts each whole document first, and a document
 * that fits one chunk becomes a chunk whose text is that same string (`doc.text.slice(0, length)` when nothing is
 * trimmed), whose tokens the chunker counted a second time: at 10M documents `countTokens` was 26-40 % of the chunk
 * workers' time (docs/scale.md "10M (session 13)"). Same contract as `count`: an exact count answers any later limit
 * (it is exact, and above the limit when the limit is smaller).
 */
export function lastTextCounter(tokenizer: Tokenizer): (text: string, limit?: number) => number {
  let lastText: string | undefined;
  let lastTokens = 0;
  return (text, limit = Infinity) => {
    if (text === lastText) return lastTokens;
    const n = countTokens(tokenizer, text, limit);
    if (n <= limit) {
      lastText = text;
      lastTokens = n;
    }
    return n;
  };
}

let cl100k: Tokenizer | undefined;
let cl100kEncoding: Tiktoken | undefined;

/** Distinct pre-tokens remembered by {@link defaultTokenizer} before its memo is cleared (bounds memory). */
const PRETOKEN_MEMO_LIMIT = 500_000;

/**
 * The default chunking tokenizer: OpenAI's `cl100k_base` BPE through js-tiktoken 1.0.21, the same encoding
 * @llamaindex/env's `tokenizers.tokenizer()` (LlamaIndex's default) uses, with the same token ids.
 *
 * Two differences from calling js-tiktoken directly, neither changing the tokens of ordinary text:
 * - special-token text such as `<|endoftext|>` inside a document is encoded as ordinary text instead of throwing;
 * - speed: tiktoken cuts text with the encoding's pre-token pattern (`pat_str`) and byte-pair-encodes each pre-token
 *   independently; we do the cut ourselves, with a hand-written scanner that gives the regex's pre-tokens without
 *   building match objects (`pretokens.ts`, {@link nextPreTokenEnd}), and memoise each pre-token's tokens, looked up
 *   by its range of the text without slicing it ({@link PreTokenMemo}), because SentenceSplitter re-encodes the same
 *   text many times (whole text, then each split) and corpora repeat their words. js-tiktoken alone spends ~1 s per
 *   300k tokens. Tests check the pre-tokens equal the regex's and the ids equal js-tiktoken's.
 *
 * Built once, lazily (loading the ranks takes about 0.2 s). Same as `cl100kTokenizer({ cut: 'scanner' })`, shared.
 */
export function defaultTokenizer(): Tokenizer {
  if (cl100k === undefined) cl100k = cl100kTokenizer();
  return cl100k;
}

/** Options of {@link cl100kTokenizer}. */
export interface Cl100kOptions {
  /**
   * How text is cut into pre-tokens: `scanner` (default; `pretokens.ts`) or `regex` (`text.matchAll` of
   * `cl100kBase.pat_str` with flags `gu`, the tokenizer before session 11: the reference of the tests and the bench).
   * Both give the same pre-tokens, so the same ids.
   */
  cut?: 'scanner' | 'regex';
}

/**
 * A new `cl100k_base` tokenizer with its own pre-token memo (at most 500,000 distinct pre-tokens, then emptied; a
 * `PreTokenMemo` for the scanner, a `Map` of pre-token strings for the regex, as before session 11);
 * see {@link defaultTokenizer}, which is the shared one to use. The ranks are loaded once per process.
 */
export function cl100kTokenizer(options: Cl100kOptions = {}): Tokenizer {
  const encoding = (cl100kEncoding ??= new Tiktoken(cl100kBase));
  if (options.cut === 'regex') {
    const memo = new Map<string, number[]>();
    const idsOf = (pre: string): number[] => {
      let ids = memo.get(pre);
      if (ids === undefined) {
        ids = encoding.encode(pre, [], []);
        if (memo.size >= PRETOKEN_MEMO_LIMIT) memo.clear();
        memo.set(pre, ids);
      }
      return ids;
    };
    const pattern = new RegExp(cl100kBase.pat_str, 'gu');
    return {
      name: 'cl100k_base',
      encode(text: string): number[] {
        const out: number[] = [];
        for (const m of text.matchAll(pattern)) for (const id of idsOf(m[0])) out.push(id);
        return out;
      },
      count(text: string, limit = Infinity): number {
        let n = 0;
        for (const m of text.matchAll(pattern)) {
          n += idsOf(m[0]).length;
          if (n > limit) return n;
        }
        return n;
      },
    };
  }
  const table = new PreTokenMemo((pre) => encoding.encode(pre, [], []), PRETOKEN_MEMO_LIMIT);
  return {
    name: 'cl100k_base',
    encode(text: string): number[] {
      const out: number[] = [];
      for (let i = 0; i < text.length; ) {
        const e = nextPreTokenEnd(text, i);
        for (const id of table.ids(text, i, e)) out.push(id);
        i = e;
      }
      return out;
    },
    count(text: string, limit = Infinity): number {
      // Pre-tokens are cut left to right and each adds ≥ 0 tokens, so a partial sum above `limit` settles it.
      let n = 0;
      for (let i = 0; i < text.length; ) {
        const e = nextPreTokenEnd(text, i);
        n += table.ids(text, i, e).length;
        if (n > limit) return n;
        i = e;
      }
      return n;
    },
  };
}

/**
 * The chunking key used in config ids and caches: `none` for whole documents, else `cs<size>-ov<overlap>`
 * (`{ size: 256, overlap: 32 }` → `cs256-ov32`). Does not validate; see {@link chunkDocuments}.
 */
export function chunkingKey(spec: ChunkingSpec): string {
  return spec.size === null ? 'none' : `cs${spec.size}-ov${spec.overlap}`;
}

/** Throws `HarnessError('CONFIG_INVALID')` naming size and overlap unless the spec is valid (field case C01). */
export function validateChunkingSpec(spec: ChunkingSpec): void {
  const { size, overlap } = spec;
  const both = `chunking.size (${String(size)}), chunking.overlap (${String(overlap)})`;
  const fail = (why: string, remedy: string): never => {
    throw new HarnessError('CONFIG_INVALID', `${both}: ${why}`, { location: { path: 'chunking' }, remedy });
  };
  if (size === null) {
    if (overlap !== 0) fail('overlap must be 0 when size is null (whole documents)', 'set overlap to 0 or give a size');
    return;
  }
  if (!Number.isInteger(size) || size < 1) fail('size must be an integer >= 1 (tokens)', 'use a size such as 256');
  if (!Number.isInteger(overlap) || overlap < 0) fail('overlap must be an integer >= 0 (tokens)', 'use an overlap such as 32, or 0');
  if (overlap >= size) fail('overlap must be smaller than size', `use an overlap below ${size}, e.g. ${Math.floor(size / 8)}`);
}

/** Options of {@link chunkDocuments}. */
export interface ChunkOptions {
  /**
   * Which splitter makes the chunk strings: `linear` (default, `splitter.ts`, linear time) or `llamaindex`
   * (LlamaIndex's SentenceSplitter itself with the alignment's unbounded search: the chunker as it was before the
   * linear route, quadratic in a paragraph's length; the reference of the differential test and the bench). Both
   * give the same chunks.
   */
  splitter?: 'linear' | 'llamaindex';
  /** Operation counter for the linear splitter (ignored by `llamaindex`), incremented in place. */
  counter?: SplitCounter;
}

/**
 * LlamaIndex's `SentenceSplitter.splitText` with `chunkSize`, `chunkOverlap` in tokens of `tokenizer` (never the
 * global `Settings.tokenizer`), its logger silenced. The reference for `splitter.ts`.
 */
export function llamaIndexSplitText(chunkSize: number, chunkOverlap: number, tokenizer: Tokenizer): (text: string) => string[] {
  const silent = { log: () => {}, error: () => {}, warn: () => {} };
  const splitter = new SentenceSplitter({
    chunkSize,
    chunkOverlap,
    // SentenceSplitter only calls encode(text).length.
    tokenizer: { encode: (text: string) => tokenizer.encode(text), decode: () => '' } as never,
    logger: silent as never,
  });
  return (text) => splitter.splitText(text);
}

/**
 * Cuts `docs` into chunks, in document order then position order.
 *
 * - `spec.size === null`: one chunk per document, the whole text (`<docId>#0`, `[0, text.length)`).
 * - `spec.size === n`: SentenceSplitter's chunks (by default from its linear port, see `options`) with `chunkSize = n`, `chunkOverlap = spec.overlap` (tokens of `tokenizer`,
 *   default {@link defaultTokenizer}); ids `<docId>#<ordinal>`, ordinal 0-based and contiguous. Each chunk's
 *   `[start, end)` is found by forward alignment (see `align.ts`); `text = doc.text.slice(start, end)` and `tokens`
 *   is the token count of that text. Where SentenceSplitter lost characters (a punctuation mark after another one,
 *   placeholders it failed to restore in URLs) the chunk holds the document's own characters instead. Dropped, so that no chunk lies inside a neighbour: a chunk inside the previous
 *   one (the splitter emits one when a chunk's new material is whitespace only) and a chunk inside the next one (the
 *   splitter carries a whole short chunk over as the next chunk's overlap). `tokens` is usually ≤ size but can reach
 *   size + overlap (SentenceSplitter adds the carried overlap before a sentence that alone fits in size) and can
 *   differ from the splitter's sum over pieces by a token or two (BPE across piece joins).
 * - Empty or whitespace-only documents give no chunks.
 *
 * Throws `HarnessError('CONFIG_INVALID')` naming size and overlap, before any work, when size is not an integer ≥ 1,
 * overlap is not an integer ≥ 0, overlap ≥ size, or overlap ≠ 0 with size null; and `HarnessError('CONFIG_INVALID')`
 * naming the document when SentenceSplitter fails on it (it throws "Single token exceeded chunk size" when one
 * character is more tokens than `size`, e.g. an emoji at size 1). Does not change its inputs.
 */
export function chunkDocuments(
  docs: readonly Doc[],
  spec: ChunkingSpec,
  tokenizer: Tokenizer = defaultTokenizer(),
  options: ChunkOptions = {},
): Chunk[] {
  const chunks: Chunk[] = [];
  forEachChunk(docs, spec, tokenizer, options, (c) => chunks.push(c));
  return chunks;
}

/**
 * {@link chunkDocuments}' chunks one by one, in the same order, each with the index of its document in `docs`
 * (0-based). Same validation and errors as chunkDocuments. For the chunking worker, which returns the chunks' ranges
 * rather than their texts (src/chunk/worker.ts, output `spans`).
 */
export function forEachChunk(
  docs: readonly Doc[],
  spec: ChunkingSpec,
  tokenizer: Tokenizer,
  options: ChunkOptions,
  onChunk: (chunk: Chunk, docIndex: number) => void,
): void {
  validateChunkingSpec(spec);
  const count = (text: string): number => countTokens(tokenizer, text);
  const size = spec.size;
  if (size === null) {
    docs.forEach((doc, i) => {
      if (doc.text.trim() === '') return;
      onChunk({ id: `${doc.id}#0`, docId: doc.id, ordinal: 0, text: doc.text, start: 0, end: doc.text.length, tokens: count(doc.text) }, i);
    });
    return;
  }
  const split = options.splitter === 'llamaindex' ? llamaIndexSplitText(size, spec.overlap, tokenizer) : undefined;
  // one counter for the splitter and the chunks: a document that fits one chunk is counted once, not twice
  const counted = lastTextCounter(tokenizer);
  const splitOptions: SplitOptions = {
    chunkSize: size,
    chunkOverlap: spec.overlap,
    countTokens: counted,
    counter: options.counter,
  };
  docs.forEach((doc, i) => {
    if (doc.text.trim() === '') return;
    let pieces: string[];
    try {
      pieces = split === undefined ? splitText(doc.text, splitOptions) : split(doc.text);
    } catch (e) {
      throw new HarnessError(
        'CONFIG_INVALID',
        `chunking ${chunkingKey(spec)}: SentenceSplitter failed on document ${JSON.stringify(doc.id)}: ${(e as Error).message}`,
        { location: { path: 'chunking.size' }, remedy: 'use a larger chunking.size', cause: e },
      );
    }
    for (const c of chunksFromPieces(doc, pieces, spec.overlap, tokenizer, { unbounded: split !== undefined, counter: options.counter, count: counted })) {
      onChunk(c, i);
    }
  });
}

/**
 * The chunks of one document from the splitter's strings `pieces` (in order): aligned to character ranges (see
 * `align.ts`; `overlap` in tokens of `tokenizer`), dropped where the alignment returns null, ids `<docId>#<ordinal>`,
 * `text` the document's slice, `tokens` its count. What {@link chunkDocuments} does after splitting; exported so
 * that the differential test can turn LlamaIndex's strings into chunks the same way. `unbounded`: the alignment's
 * unbounded search (the chunker before the linear route). `count`: the token counter to use (default
 * `countTokens(tokenizer, ·)`; the chunker passes its {@link lastTextCounter}). Throws a plain `Error` when a piece is not in the text.
 */
export function chunksFromPieces(
  doc: Doc,
  pieces: readonly string[],
  overlap: number,
  tokenizer: Tokenizer,
  options: { unbounded?: boolean; counter?: SplitCounter; count?: (text: string) => number } = {},
): Chunk[] {
  const count = options.count ?? ((text: string): number => countTokens(tokenizer, text));
  const spans = alignChunks(doc.text, pieces, { overlap, countTokens: count, unbounded: options.unbounded, counter: options.counter });
  const out: Chunk[] = [];
  let ordinal = 0;
  for (const span of spans) {
    if (span === null) continue;
    const text = doc.text.slice(span.start, span.end);
    if (options.counter) options.counter.tokenizedChars += text.length;
    out.push({ id: `${doc.id}#${ordinal}`, docId: doc.id, ordinal, text, start: span.start, end: span.end, tokens: count(text) });
    ordinal++;
  }
  return out;
}

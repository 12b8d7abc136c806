/**
 * The analysis half of the BM25 build: chunk texts → per-chunk forward lists (distinct terms with their term
 * frequencies), over a term table private to one thread. It runs in-process ({@link buildCompactBm25Index}) or on
 * worker threads (`bm25-worker.ts`, {@link buildKeywordIndexParallel}); the merge into one index is in `bm25.ts`.
 *
 * Why a private table: a worker cannot see the index's dictionary, so it numbers the terms it meets itself (local ids
 * 0, 1, 2, … in order of first sight) and sends each new term's string once. The merge maps local ids to global ones
 * lazily, at a term's first occurrence in chunk order, which is exactly the order a one-thread build numbers terms in:
 * the index is the same whichever thread analysed which batch.
 *
 * Terms are those of {@link keywordTokens} (tokenize.ts), the one analyser for documents and queries. Text that is all
 * ASCII (most corpora) is read by a scanner of our own ({@link analyseBatch}) that finds the same words over character
 * codes and maps each word straight to its term id through a cache keyed by the word's characters, so a known word
 * costs one hash probe and no string; other text, and every compound (`LMP-204`), goes through keywordTokens itself.
 * That both give the same terms is tested on every document of the shared corpora and on random text
 * (test/retrieve/bm25-analyse.test.ts).
 */
import { analyse, keywordTokens, wordTerm } from './tokenize.js';

/** One thread's term table: term → local id (0-based, in order of first sight), plus scratch sized to it. */
export interface TermTable {
  readonly dict: Map<string, number>;
  /** Per local id: the running number of the last chunk it occurred in (-1: none yet), and its slot in that chunk's list. */
  lastChunk: Int32Array;
  slot: Int32Array;
  /** Chunks analysed so far over all batches: the running chunk numbers of `lastChunk`, so it never needs clearing. */
  chunks: number;
  /** The scanner's cache: lower-case ASCII word (no connector) → local term id, or -1 when the word gives no term. */
  words: WordCache;
}

/**
 * Open-addressing hash table (linear probing, FNV-1a over the word's lower-cased character codes) from a word to a
 * local term id; looked up with the word's position in the text, so a hit makes no string. Cleared when it holds
 * {@link WORD_CACHE_LIMIT} words (a cache: the terms do not depend on it).
 */
interface WordCache {
  keys: (string | undefined)[];
  hashes: Int32Array;
  vals: Int32Array;
  mask: number;
  size: number;
}

/** Words the scanner's cache holds before it is cleared (bounds its memory: ~40 bytes a word plus the strings). */
const WORD_CACHE_LIMIT = 1 << 20;

function createWordCache(capacity = 1 << 12): WordCache {
  return { keys: new Array<string | undefined>(capacity), hashes: new Int32Array(capacity), vals: new Int32Array(capacity), mask: capacity - 1, size: 0 };
}

/** An empty {@link TermTable}. */
export function createTermTable(): TermTable {
  return { dict: new Map(), lastChunk: new Int32Array(1024).fill(-1), slot: new Int32Array(1024), chunks: 0, words: createWordCache() };
}

/** Inserts `word` (hash `h`, not present) with value `v`; grows the table at half load. */
function cachePut(table: TermTable, word: string, h: number, v: number): void {
  let cache = table.words;
  if (cache.size >= WORD_CACHE_LIMIT) cache = table.words = createWordCache();
  else if (2 * (cache.size + 1) > cache.keys.length) {
    const bigger = createWordCache(cache.keys.length * 2);
    for (let j = 0; j < cache.keys.length; j++) {
      const key = cache.keys[j];
      if (key !== undefined) insert(bigger, key, cache.hashes[j], cache.vals[j]);
    }
    cache = table.words = bigger;
  }
  insert(cache, word, h, v);
}

function insert(cache: WordCache, word: string, h: number, v: number): void {
  let j = h & cache.mask;
  while (cache.keys[j] !== undefined) j = (j + 1) & cache.mask;
  cache.keys[j] = word;
  cache.hashes[j] = h;
  cache.vals[j] = v;
  cache.size++;
}

const FNV_OFFSET = 0x811c9dc5 | 0;
const FNV_PRIME = 16777619;
const NON_ASCII = /[^\x00-\x7f]/;
/** ASCII upper case to lower case; every other code unchanged. */
const lower = (c: number): number => (c >= 65 && c <= 90 ? c + 32 : c);
/** A lower-case ASCII letter or digit: the ASCII members of `[\p{L}\p{N}]` after lower-casing. */
const isAlnum = (c: number): boolean => (c >= 97 && c <= 122) || (c >= 48 && c <= 57);
/** ASCII whitespace: tab, line feed, vertical tab, form feed, carriage return, space. */
const isSpace = (c: number): boolean => c === 32 || (c >= 9 && c <= 13);
/** `-`, `.`, `/` or `_`: the connectors of a compound. */
const isConnector = (c: number): boolean => c === 45 || c === 46 || c === 47 || c === 95;

/**
 * The forward lists of one batch of consecutive chunks. Local ids refer to the analysing thread's {@link TermTable}.
 * All arrays are plain typed arrays with their own buffers (transferable between threads).
 */
export interface AnalysedBatch {
  /** Terms this table met for the first time in this batch, in local-id order (they continue the earlier batches'). */
  newTerms: string[];
  /** Per chunk: |d|, its number of terms (tokens after analysis, repeats counted). Length = chunks in the batch. */
  lengths: Int32Array;
  /** Per chunk: how many distinct terms it has (its forward list's length). Length = chunks in the batch. */
  distinct: Int32Array;
  /** The chunks' forward lists concatenated: each chunk's distinct terms as local ids, in order of first occurrence. */
  terms: Int32Array;
  /** Term frequency (≥ 1) of each entry of `terms`. */
  tfs: Int32Array;
}

function grown(a: Int32Array, need: number, fill: number): Int32Array {
  if (need <= a.length) return a;
  const b = new Int32Array(Math.max(need, a.length * 2));
  b.set(a);
  if (fill !== 0) b.fill(fill, a.length);
  return b;
}

/**
 * Analyses `texts` (consecutive chunks) into forward lists over `table`, which it extends (new terms get the next
 * local ids): the terms of {@link keywordTokens}, all-ASCII texts read by the scanner of this module's header unless
 * `scanner` is false (then keywordTokens for every text: the reference the tests compare the scanner with; same
 * result). Pure apart from `table`; never throws for any string input.
 */
export function analyseBatch(texts: readonly string[], table: TermTable, scanner = true): AnalysedBatch {
  const { dict } = table;
  const newTerms: string[] = [];
  const lengths = new Int32Array(texts.length);
  const distinct = new Int32Array(texts.length);
  let terms: Int32Array = new Int32Array(Math.max(16, texts.length * 32));
  let tfs: Int32Array = new Int32Array(terms.length);
  let m = 0;
  let chunk = 0;
  let count = 0;
  /** The local id of `token`, numbered at first sight. */
  const termId = (token: string): number => {
    let t = dict.get(token);
    if (t === undefined) {
      t = dict.size;
      dict.set(token, t);
      newTerms.push(token);
      table.lastChunk = grown(table.lastChunk, t + 1, -1);
      table.slot = grown(table.slot, t + 1, 0);
    }
    return t;
  };
  /** One occurrence of local term `t` in the current chunk. */
  const add = (t: number): void => {
    count++;
    if (table.lastChunk[t] !== chunk) {
      table.lastChunk[t] = chunk;
      table.slot[t] = m;
      if (m === terms.length) {
        terms = grown(terms, m + 1, 0);
        tfs = grown(tfs, m + 1, 0);
      }
      terms[m] = t;
      tfs[m] = 1;
      m++;
    } else {
      tfs[table.slot[t]]++;
    }
  };
  for (let c = 0; c < texts.length; c++) {
    const text = texts[c];
    chunk = table.chunks++;
    count = 0;
    const start = m;
    if (!scanner) {
      for (const token of keywordTokens(text)) add(termId(token));
      lengths[c] = count;
      distinct[c] = m - start;
      continue;
    }
    const ascii = !NON_ASCII.test(text);
    const textEnd = text.length;
    // Text with non-ASCII characters is cut at ASCII whitespace into segments; a segment with a non-ASCII character
    // goes through keywordTokens, the others through the scanner. The terms are the whole text's: no term spans
    // whitespace, and each normalisation step of keywordTokens leaves ASCII whitespace as it is and never joins
    // characters across it (no composition starts or ends with it; it is neither cased nor case-ignorable, so it
    // ends the context of lower-casing Σ).
    for (let a = 0; a < textEnd; ) {
      let n = textEnd;
      if (!ascii) {
        while (a < textEnd && isSpace(text.charCodeAt(a))) a++;
        if (a === textEnd) break;
        n = a;
        let plain = true;
        for (let code = 0; n < textEnd && !isSpace((code = text.charCodeAt(n))); n++) if (code >= 0x80) plain = false;
        if (!plain) {
          for (const token of keywordTokens(text.slice(a, n))) add(termId(token));
          a = n;
          continue;
        }
      }
      // keywordTokens' ASCII path over character codes: a match of ASCII_COMPOUND (tokenize.ts) is a run of letters
      // and digits, continued by `'` or a connector that is followed by a letter or digit.
      let i = a;
      a = n;
      while (i < n) {
        if (!isAlnum(lower(text.charCodeAt(i)))) {
          i++;
          continue;
        }
        const from = i;
        let h = FNV_OFFSET;
        let compound = false;
        for (;;) {
          let code = 0;
          while (i < n && isAlnum((code = lower(text.charCodeAt(i))))) {
            h = Math.imul(h ^ code, FNV_PRIME);
            i++;
          }
          if (i + 1 < n && isAlnum(lower(text.charCodeAt(i + 1)))) {
            if (code === 39) {
              h = Math.imul(h ^ 39, FNV_PRIME);
              i++;
              continue;
            }
            if (isConnector(code)) {
              compound = true;
              i++;
              continue;
            }
          }
          break;
        }
        if (compound) {
          for (const token of analyse(text.slice(from, i).toLowerCase(), 'ascii')) add(termId(token));
          continue;
        }
        const len = i - from;
        const cache = table.words;
        let j = h & cache.mask;
        let v = -2;
        for (let key = cache.keys[j]; key !== undefined; key = cache.keys[(j = (j + 1) & cache.mask)]) {
          if (cache.hashes[j] !== h || key.length !== len) continue;
          let x = 0;
          while (x < len && key.charCodeAt(x) === lower(text.charCodeAt(from + x))) x++;
          if (x === len) {
            v = cache.vals[j];
            break;
          }
        }
        if (v === -2) {
          const term = wordTerm(text.slice(from, i).toLowerCase());
          v = term === '' ? -1 : termId(term);
          cachePut(table, (' ' + text.slice(from, i).toLowerCase()).slice(1), h, v);
        }
        if (v >= 0) add(v);
      }
    }
    lengths[c] = count;
    distinct[c] = m - start;
  }
  // Own buffers of the exact size, so the arrays can be transferred without sending the slack.
  return { newTerms, lengths, distinct, terms: terms.slice(0, m), tfs: tfs.slice(0, m) };
}

/**
 * A linear-time port of LlamaIndex's `SentenceSplitter.splitText` (@llamaindex/core 0.6.22, `node-parser`), giving
 * the same chunk strings for the same text, chunk size, overlap and tokenizer.
 *
 * Why a port: the reference's sentence tokenizer (natural's `SentenceTokenizer`, bundled in the node parser) replaces
 * abbreviations, URIs, numbers and sentence delimiters by `{{NAME_n}}` placeholders, then splits on a regex that is
 * the alternation of every delimiter placeholder and, for every sentence, runs one global `replace` per placeholder
 * of the whole text. Both are O(sentences × placeholders): quadratic in the length of a paragraph (a 1 MB document
 * took 520 s at 128 tokens, 77% of it there). Everything else in SentenceSplitter is linear, and is ported line for
 * line: the recursive split (paragraphs `\n\n\n`, sentences, the sub-sentence regex `[^,.;。？！]+[,.;。？！]?`,
 * spaces, single UTF-16 code units), the token counts it computes, the merge with overlap, the final trim.
 *
 * The sentence tokenizer is rebuilt with the same four replacement passes and the same placeholder numbering, then
 * cut after each delimiter placeholder in one scan, and each sentence's placeholders are put back in one scan. That
 * one-scan revert equals the reference's placeholder-by-placeholder global replaces in insertion order whenever the
 * text holds no literal `{{` or `}}` and no URI holds `$` (a `$` in a replacement string is a pattern to
 * `String.prototype.replace`): then each placeholder occurs once, in its own sentence, and a put-back value can hold
 * only placeholders numbered before it (an abbreviation inside a URI), which the reference has already passed and so
 * leaves in the text (its `{{ABBREV_n}}` leak, reproduced). Otherwise the exact sequence of replaces is replayed per
 * sentence, restricted to the placeholders present (still exact; quadratic only in one sentence's placeholders).
 * test/chunk/differential.test.ts checks equality with SentenceSplitter on every document of SciFact, TREC-DL and
 * the helpdesk demo, and on constructed texts for each quirk.
 *
 * One deliberate difference: a single UTF-16 code unit of more than `chunkSize` tokens makes the reference recurse
 * without end (RangeError: maximum call stack size exceeded); the port throws `Error('Single token exceeded chunk
 * size')` at once. Both are errors for that document.
 */

/** Operation counts of one or more {@link splitText} calls (to test the cost is linear; see the complexity test). */
export interface SplitCounter {
  /** Characters passed to the tokenizer. */
  tokenizedChars: number;
  /** Characters scanned by the splitting passes (regex passes, splits, scans of the sentence tokenizer). */
  scannedChars: number;
}

/** Options of {@link splitText}; the same meaning as SentenceSplitter's `chunkSize`, `chunkOverlap`, `tokenizer`. */
export interface SplitOptions {
  /** Maximum tokens of a chunk, as summed over its pieces (integer ≥ 1). */
  chunkSize: number;
  /** Maximum tokens carried over from the previous chunk, whole pieces only (integer ≥ 0, < chunkSize). */
  chunkOverlap: number;
  /**
   * Token count of a text (SentenceSplitter only uses `tokenizer.encode(text).length`): exact when at most `limit`,
   * else any number greater than `limit` (the splitter passes `chunkSize`; beyond it only "too big" matters).
   */
  countTokens: (text: string, limit: number) => number;
  /** Optional operation counter, incremented in place. */
  counter?: SplitCounter;
}

/** SentenceSplitter's defaults, which chunker.ts does not change. */
const PARAGRAPH_SEPARATOR = '\n\n\n';
const SEPARATOR = ' ';
const SECONDARY_CHUNKING_REGEX = /[^,.;。？！]+[,.;。？！]?/g;

/** `abbreviations.english` then `abbreviations.spanish` of @llamaindex/core's node parser, in its order. */
const ABBREVIATIONS = [
  'i.e.', 'etc.', 'vs.', 'Inc.', 'A.S.A.P.', 'Mr.', 'Mrs.', 'Ms.', 'Dr.', 'Prof.', 'Sr.', 'Jr.', 'Tel.', 'a.m.',
  'p.m.', 'Art.',
  'Sr.', 'Sres.', 'Srs.', 'Sra.', 'Sras.', 'Srta.', 'Srtas.', 'Dr.', 'Drs.', 'Dra.', 'Dras.', 'Prof.', 'Profs.',
  'Profa.', 'Profas.', 'Ing.', 'Lic.', 'Arq.', 'Ab.', 'Abs.',
];

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// The sentence tokenizer's four patterns, verbatim.
const ABBREVIATION_PATTERN = new RegExp(`(${ABBREVIATIONS.map(escapeRegExp).join('|')})`, 'gi');
const URL_PATTERN =
  /(https?:\/\/\S+|www\.\S+|ftp:\/\/\S+|(mailto:)?[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}|file:\/\/\S+)/gi;
const NUMBER_PATTERN = /\b\d{1,3}(?:,\d{3})*(?:\.\d+)?\b/g;
const DELIMITER_PATTERN = /([.?!… ]*)([.?!…])(["'”’)}\]]?)/g;

/** Any replacement placeholder (`{{ABBREV_n}}`, `{{URI_n}}`, `{{NUMBER_n}}`), valid or not. */
const REPLACEMENT_PLACEHOLDER = /\{\{(?:ABBREV|URI|NUMBER)_(\d+)\}\}/g;
/** Any delimiter placeholder `{{DELIM_n}}`, valid or not. */
const DELIMITER_PLACEHOLDER = /\{\{DELIM_(\d+)\}\}/g;

interface Placeholders {
  /** Placeholder text → the text it stands for, in insertion (= numbering) order. */
  readonly values: Map<string, string>;
}

/**
 * Replaces placeholders present in `s` by their values. `fast`: one left-to-right scan (see the module comment for
 * when this is exact). Else the reference's sequence: for each placeholder in numbering order, a global replace with
 * `String.prototype.replace` semantics, skipping the placeholders not present in the current text.
 */
function revert(s: string, pattern: RegExp, map: Placeholders, fast: boolean, counter: SplitCounter | undefined): string {
  if (!s.includes('{{')) return s;
  if (fast) {
    if (counter) counter.scannedChars += s.length;
    return s.replace(pattern, (m) => map.values.get(m) ?? m);
  }
  let cur = s;
  let last = -1;
  for (;;) {
    if (counter) counter.scannedChars += cur.length;
    let next = -1;
    let nextKey = '';
    for (const m of cur.matchAll(pattern)) {
      const n = Number(m[1]);
      if (n > last && (next < 0 || n < next) && map.values.has(m[0])) {
        next = n;
        nextKey = m[0];
      }
    }
    if (next < 0) return cur;
    cur = cur.replace(new RegExp(escapeRegExp(nextKey), 'g'), map.values.get(nextKey)!);
    last = next;
  }
}

/**
 * natural's `SentenceTokenizer.tokenize(text)` as SentenceSplitter configures it (default abbreviations, sentences
 * not trimmed), in linear time for text without literal `{{`/`}}`. Same output, including its quirks: a URI holding
 * an abbreviation keeps the `{{ABBREV_n}}` placeholder; leading and trailing empty sentences are removed.
 */
export function sentenceTokenize(text: string, counter?: SplitCounter): string[] {
  let n = 0;
  const replacements: Placeholders = { values: new Map() };
  const delimiters: Placeholders = { values: new Map() };
  const replaceWith = (t: string, pattern: RegExp, base: string): string => {
    if (counter) counter.scannedChars += t.length;
    return t.replace(pattern, (match: string) => {
      const code = `{{${base}_${n++}}}`;
      replacements.values.set(code, match);
      return code;
    });
  };
  const r1 = replaceWith(text, ABBREVIATION_PATTERN, 'ABBREV');
  const r2 = replaceWith(r1, URL_PATTERN, 'URI');
  const r3 = replaceWith(r2, NUMBER_PATTERN, 'NUMBER');
  if (counter) counter.scannedChars += r3.length;
  const r4 = r3.replace(DELIMITER_PATTERN, (_match: string, p1: string, p2: string, p3: string) => {
    const code = `{{DELIM_${n++}}}`;
    delimiters.values.set(code, p1 + p2 + p3);
    return code;
  });
  // splitOnPlaceholders: `r4.split(/(key0|key1|…)/)`, then each piece joined with the placeholder after it.
  let sentences: string[];
  if (delimiters.values.size === 0) {
    sentences = [r4];
  } else {
    sentences = [];
    let from = 0;
    if (counter) counter.scannedChars += r4.length;
    for (const m of r4.matchAll(DELIMITER_PLACEHOLDER)) {
      if (!delimiters.values.has(m[0])) continue;
      const end = m.index + m[0].length;
      sentences.push(r4.slice(from, end));
      from = end;
    }
    sentences.push(r4.slice(from));
  }
  let fast = !text.includes('{{') && !text.includes('}}');
  if (fast) {
    for (const [code, value] of replacements.values) {
      if (code.startsWith('{{URI_') && value.includes('$')) {
        fast = false;
        break;
      }
    }
  }
  const out = sentences.map((s) =>
    revert(revert(s, REPLACEMENT_PLACEHOLDER, replacements, fast, counter), DELIMITER_PLACEHOLDER, delimiters, fast, counter),
  );
  // Tokenizer.trim: drop empty strings at both ends.
  let lo = 0;
  let hi = out.length;
  while (hi > lo && out[hi - 1] === '') hi--;
  while (lo < hi && out[lo] === '') lo++;
  return lo === 0 && hi === out.length ? out : out.slice(lo, hi);
}

/** `splitTextKeepSeparator`: split on `sep`, prefix every part but the first with it, drop empty parts. */
function splitKeepSeparator(text: string, sep: string): string[] {
  const parts = text.split(sep);
  const out: string[] = [];
  parts.forEach((part, i) => {
    const s = i > 0 ? sep + part : part;
    if (s) out.push(s);
  });
  return out;
}

/** A piece ready for the merge: its text, whether it is a whole sentence (or more), its token count. */
type Split = [text: string, isSentence: boolean, tokens: number];

/**
 * `SentenceSplitter#getSplitsByFns`: paragraphs, then sentences (`isSentence` true), then the sub-sentence regex,
 * words, code units (false), the first giving more than one part; else `[text]` (true).
 */
function splitsByFns(text: string, counter: SplitCounter | undefined): [string[], boolean] {
  if (counter) counter.scannedChars += text.length;
  const paragraphs = splitKeepSeparator(text, PARAGRAPH_SEPARATOR);
  if (paragraphs.length > 1) return [paragraphs, true];
  let sentences: string[];
  try {
    sentences = sentenceTokenize(text, counter);
  } catch {
    sentences = [text]; // the reference's splitBySentenceTokenizer catches any error the same way
  }
  if (sentences.length > 1) return [sentences, true];
  if (counter) counter.scannedChars += text.length;
  const phrases = text.match(SECONDARY_CHUNKING_REGEX) ?? [];
  if (phrases.length > 1) return [phrases, false];
  if (counter) counter.scannedChars += text.length;
  const words = splitKeepSeparator(text, SEPARATOR);
  if (words.length > 1) return [words, false];
  if (counter) counter.scannedChars += text.length;
  const units = text.split('');
  if (units.length > 1) return [units, false];
  return [[text], true];
}

/**
 * Same strings as `new SentenceSplitter({ chunkSize, chunkOverlap, tokenizer }).splitText(text)` for the default
 * separators and regexes (see the module comment), in time linear in `text.length` (times the recursion depth,
 * at most six levels). Chunk strings are trimmed and non-empty; `''` gives `['']` as the reference does.
 *
 * Throws `Error('Single token exceeded chunk size')` when a single UTF-16 code unit is more than `chunkSize` tokens
 * (the reference overflows the stack there).
 */
export function splitText(text: string, options: SplitOptions): string[] {
  if (text === '') return [text];
  const { chunkSize, countTokens, counter } = options;
  const tokens = (t: string): number => {
    if (counter) counter.tokenizedChars += t.length;
    return countTokens(t, chunkSize);
  };
  const splits: Split[] = [];
  // `SentenceSplitter#split`, depth-first in order (the reference is a recursive generator).
  const split = (t: string, size: number): void => {
    if (size <= chunkSize) {
      splits.push([t, true, size]);
      return;
    }
    const [parts, isSentence] = splitsByFns(t, counter);
    // Only a single code unit gets no split; the reference recurses on it forever.
    if (parts.length === 1) throw new Error('Single token exceeded chunk size');
    for (const part of parts) {
      const partSize = tokens(part);
      if (partSize <= chunkSize) splits.push([part, isSentence, partSize]);
      else split(part, partSize);
    }
  };
  split(text, tokens(text));
  return merge(splits, chunkSize, options.chunkOverlap);
}

/** `SentenceSplitter#merge` then `#postprocessChunks` (trim, drop empty), line for line. */
function merge(splits: readonly Split[], chunkSize: number, chunkOverlap: number): string[] {
  const chunks: string[] = [];
  let currentChunk: [string, number][] = [];
  let lastChunk: [string, number][] = [];
  let currentChunkLength = 0;
  let newChunk = true;
  const closeChunk = (): void => {
    chunks.push(currentChunk.map(([t]) => t).join(''));
    lastChunk = currentChunk;
    currentChunk = [];
    currentChunkLength = 0;
    newChunk = true;
    let lastIndex = lastChunk.length - 1;
    while (lastIndex >= 0 && currentChunkLength + lastChunk[lastIndex][1] <= chunkOverlap) {
      const [t, length] = lastChunk[lastIndex];
      currentChunkLength += length;
      currentChunk.unshift([t, length]);
      lastIndex -= 1;
    }
  };
  let i = 0;
  while (i < splits.length) {
    const [t, isSentence, tokenSize] = splits[i];
    if (tokenSize > chunkSize) throw new Error('Single token exceeded chunk size');
    if (currentChunkLength + tokenSize > chunkSize && !newChunk) {
      closeChunk();
    } else if (isSentence || currentChunkLength + tokenSize <= chunkSize || newChunk) {
      currentChunkLength += tokenSize;
      currentChunk.push([t, tokenSize]);
      newChunk = false;
      i++;
    } else {
      closeChunk();
    }
  }
  if (!newChunk) chunks.push(currentChunk.map(([t]) => t).join(''));
  const out: string[] = [];
  for (const chunk of chunks) {
    const trimmed = chunk.trim();
    if (trimmed !== '') out.push(trimmed);
  }
  return out;
}

/**
 * cl100k_base's pre-token cut without a regular expression.
 *
 * tiktoken cuts text into pre-tokens with the encoding's `pat_str` and byte-pair-encodes each pre-token on its own.
 * js-tiktoken 1.0.21's `cl100kBase.pat_str`, compiled with the flags `gu`, is the alternation (tried left to right at
 * each position; the first alternative that matches wins, even when a later one would match more):
 *
 * 1. `'s|'S|'t|'T|'re|'rE|'Re|'RE|'ve|'vE|'Ve|'VE|'m|'M|'ll|'lL|'Ll|'LL|'d|'D`: an ASCII apostrophe (U+0027 only,
 *    not U+2019) and a contraction in any letter case;
 * 2. `[^\r\n\p{L}\p{N}]?\p{L}+`: a run of letters, with at most one code point before it that is neither CR, LF,
 *    a letter nor a number (a space, a tab, U+00A0, punctuation, an emoji, a combining mark, a lone surrogate…);
 * 3. `\p{N}{1,3}`: one to three numbers (code points);
 * 4. ` ?[^\s\p{L}\p{N}]+[\r\n]*`: an optional U+0020, a run of code points that are neither whitespace, letters nor
 *    numbers, then any CR and LF;
 * 5. `\s*[\r\n]+`: a whitespace run up to and including its last CR or LF (greedy `\s*` backtracks to it);
 * 6. `\s+(?!\S)`: a whitespace run, minus its last code unit when a non-space follows (so that one whitespace can
 *    start the next pre-token, via 2 or 4); fails on a run of one followed by a non-space;
 * 7. `\s+`: a whitespace run (only reached for a run of one followed by a non-space).
 *
 * `\s` is JavaScript's whitespace (`[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]`, all
 * in the BMP); `\p{L}`, `\p{N}` are Unicode general categories, over code points (surrogate pairs are one code
 * point; a lone surrogate is a code point of class "other"). Every position starts a match (a letter by 2, a number
 * by 3, whitespace by 7, anything else by 4), so the matches tile the text with no gaps.
 *
 * {@link nextPreTokenEnd} follows those rules by hand: code points are classified through a table filled lazily by
 * testing `/\p{L}/u`, `/\p{N}/u`, `/\s/u` once per code point (ASCII filled up front). The regex
 * ({@link regexPreTokens}) stays the reference; test/chunk/pretokens.test.ts compares the two on SciFact, the
 * TREC-DL slice and random strings rich in edge cases.
 */
import cl100kBase from 'js-tiktoken/ranks/cl100k_base';

/** Class of a code point: not yet classified. */
const UNKNOWN = 0;
/** `\p{L}`. */
const LETTER = 1;
/** `\p{N}`. */
const NUMBER = 2;
/** `\s` other than CR and LF. */
const SPACE = 3;
/** CR (U+000D) or LF (U+000A). */
const NEWLINE = 4;
/** Anything else: punctuation, symbols, marks, controls, lone surrogates. */
const OTHER = 5;

/** One class per code point U+0000..U+10FFFF (1.1 MB), filled on first sight. */
let classes: Uint8Array | undefined;

const IS_LETTER = /^\p{L}$/u;
const IS_NUMBER = /^\p{N}$/u;
const IS_SPACE = /^\s$/u;

function classify(cp: number): number {
  if (cp === 0x0a || cp === 0x0d) return NEWLINE;
  const s = String.fromCodePoint(cp);
  if (IS_LETTER.test(s)) return LETTER;
  if (IS_NUMBER.test(s)) return NUMBER;
  if (IS_SPACE.test(s)) return SPACE;
  return OTHER;
}

function table(): Uint8Array {
  if (classes === undefined) {
    classes = new Uint8Array(0x110000);
    for (let cp = 0; cp < 0x80; cp++) classes[cp] = classify(cp);
  }
  return classes;
}

/**
 * Class of the code point at `i` (`i < text.length`) in the low 3 bits and its width in code units (1 or 2) from
 * bit 3: `(width << 3) | class`. Kept as one number so the scanner allocates nothing.
 */
function at(cls: Uint8Array, text: string, i: number): number {
  let cp = text.charCodeAt(i);
  let width = 1;
  if (cp >= 0xd800 && cp <= 0xdbff && i + 1 < text.length) {
    const lo = text.charCodeAt(i + 1);
    if (lo >= 0xdc00 && lo <= 0xdfff) {
      cp = ((cp - 0xd800) << 10) + (lo - 0xdc00) + 0x10000;
      width = 2;
    }
  }
  let c = cls[cp]!;
  if (c === UNKNOWN) cls[cp] = c = classify(cp);
  return (width << 3) | c;
}

/** End (exclusive, UTF-16 code units) of the run of letters starting at `i`. */
function lettersEnd(cls: Uint8Array, text: string, i: number): number {
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c < 0x80) {
      // ASCII fast path: letters are exactly A-Z, a-z.
      if ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a) {
        i++;
        continue;
      }
      return i;
    }
    const k = at(cls, text, i);
    if ((k & 7) !== LETTER) return i;
    i += k >> 3;
  }
  return i;
}

/** Lower-cases an ASCII letter's code (other codes may change too, but are only compared with lower-case letters). */
function lower(c: number): number {
  return c | 0x20;
}

/**
 * End (exclusive, UTF-16 code units) of the cl100k_base pre-token that starts at `start` (`0 <= start <
 * text.length`): the end of the match of `pat_str` that `text.matchAll(new RegExp(pat_str, 'gu'))` reports at
 * `start`. So `for (let i = 0; i < text.length; i = nextPreTokenEnd(text, i))` visits the same pre-tokens as the
 * regex, in order. The result is always greater than `start`. Pure; allocates nothing but the lazily filled class
 * table (module-wide, 1.1 MB).
 */
export function nextPreTokenEnd(text: string, start: number): number {
  const cls = classes ?? table();
  const n = text.length;
  const c0 = text.charCodeAt(start);
  // 1. Contractions.
  if (c0 === 0x27 && start + 1 < n) {
    const d = lower(text.charCodeAt(start + 1));
    if (d === 0x73 || d === 0x74 || d === 0x6d || d === 0x64) return start + 2; // 's 't 'm 'd
    if (start + 2 < n) {
      const e = lower(text.charCodeAt(start + 2));
      if ((d === 0x72 || d === 0x76) && e === 0x65) return start + 3; // 're 've
      if (d === 0x6c && e === 0x6c) return start + 3; // 'll
    }
  }
  const k0 = at(cls, text, start);
  const class0 = k0 & 7;
  const next = start + (k0 >> 3);
  // 2. Letters, with or without one leading code point.
  if (class0 === LETTER) return lettersEnd(cls, text, next);
  // 3. Up to three numbers.
  if (class0 === NUMBER) {
    let i = next;
    for (let m = 1; m < 3 && i < n; m++) {
      const k = at(cls, text, i);
      if ((k & 7) !== NUMBER) break;
      i += k >> 3;
    }
    return i;
  }
  const class1 = next < n ? at(cls, text, next) & 7 : UNKNOWN;
  if (class0 !== NEWLINE && class1 === LETTER) return lettersEnd(cls, text, next);
  // 4. An optional space, others, then CR and LF.
  if (class0 === OTHER || (c0 === 0x20 && class1 === OTHER)) {
    let i = next; // after the first other, or after the space (then at least one other follows)
    while (i < n) {
      const k = at(cls, text, i);
      if ((k & 7) !== OTHER) break;
      i += k >> 3;
    }
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c !== 0x0a && c !== 0x0d) break;
      i++;
    }
    return i;
  }
  // Whitespace (SPACE or NEWLINE; all BMP, one code unit each): find the run and its last CR or LF.
  let end = next;
  let lastNewline = class0 === NEWLINE ? start : -1;
  while (end < n) {
    const c = text.charCodeAt(end);
    const k = c < 0x80 ? cls[c]! : at(cls, text, end) & 7;
    if (k === NEWLINE) lastNewline = end;
    else if (k !== SPACE) break;
    end++;
  }
  // 5. Up to and including the last CR or LF.
  if (lastNewline >= 0) return lastNewline + 1;
  // 6. The run, minus its last code unit unless it ends the text; 7. a run of one.
  if (end === n || end - start === 1) return end;
  return end - 1;
}

/**
 * The pre-tokens of `text` as `regexPreTokens` would give them, cut by {@link nextPreTokenEnd}. For tests and
 * benches; the tokenizer walks the ends without building the list.
 */
export function scanPreTokens(text: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; ) {
    const e = nextPreTokenEnd(text, i);
    out.push(text.slice(i, e));
    i = e;
  }
  return out;
}

/** The reference cut: the matches of `new RegExp(cl100kBase.pat_str, 'gu')` (js-tiktoken 1.0.21), in order. */
export function regexPreTokens(text: string): string[] {
  return Array.from(text.matchAll(new RegExp(cl100kBase.pat_str, 'gu')), (m) => m[0]);
}

/**
 * A memo of each pre-token's token ids, looked up by a range of a text (`text`, `start`, `end` in UTF-16 code units)
 * without cutting the pre-token out of it: an open-addressing table (linear probing, at most half full, doubling
 * from 4,096 slots) keyed by an FNV-1a hash of the range's code units, a hit confirmed by comparing code units with
 * the stored pre-token. A miss slices the pre-token once and calls `encode` on it. After `limit` distinct pre-tokens
 * the table is emptied (bounds memory: about 40 bytes a slot plus the pre-token strings and id arrays).
 *
 * `encode` must be deterministic; the ids returned are the memo's own arrays (callers must not change them).
 */
export class PreTokenMemo {
  private keys: (string | undefined)[] = [];
  private hashes = new Int32Array(0);
  private values: number[][] = [];
  private mask = 0;
  private size = 0;

  /**
   * @param encode token ids of one pre-token (for cl100k: js-tiktoken's `encode(pre, [], [])`).
   * @param limit distinct pre-tokens kept before the table is emptied; an integer ≥ 1.
   */
  constructor(
    private readonly encode: (pre: string) => number[],
    private readonly limit: number,
  ) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`PreTokenMemo limit must be an integer >= 1, got ${String(limit)}`);
    this.reset(4096);
  }

  private reset(slots: number): void {
    this.keys = new Array<string | undefined>(slots).fill(undefined);
    this.hashes = new Int32Array(slots);
    this.values = new Array<number[]>(slots);
    this.mask = slots - 1;
    this.size = 0;
  }

  /** Token ids of `text.slice(start, end)` (`0 <= start < end <= text.length`). */
  ids(text: string, start: number, end: number): number[] {
    let h = 0x811c9dc5 | 0;
    for (let i = start; i < end; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
    const len = end - start;
    const keys = this.keys;
    let slot = h & this.mask;
    for (let key = keys[slot]; key !== undefined; key = keys[slot]) {
      if (this.hashes[slot] === h && key.length === len) {
        let i = 0;
        while (i < len && key.charCodeAt(i) === text.charCodeAt(start + i)) i++;
        if (i === len) return this.values[slot]!;
      }
      slot = (slot + 1) & this.mask;
    }
    const pre = text.slice(start, end);
    const ids = this.encode(pre);
    if (this.size >= this.limit) {
      this.reset(this.keys.length);
      slot = h & this.mask;
    } else if (2 * (this.size + 1) > keys.length) {
      this.grow();
      slot = h & this.mask;
      while (this.keys[slot] !== undefined) slot = (slot + 1) & this.mask;
    }
    this.keys[slot] = pre;
    this.hashes[slot] = h;
    this.values[slot] = ids;
    this.size++;
    return ids;
  }

  private grow(): void {
    const { keys, hashes, values, size } = this;
    this.reset(keys.length * 2);
    for (let s = 0; s < keys.length; s++) {
      const key = keys[s];
      if (key === undefined) continue;
      let slot = hashes[s]! & this.mask;
      while (this.keys[slot] !== undefined) slot = (slot + 1) & this.mask;
      this.keys[slot] = key;
      this.hashes[slot] = hashes[s]!;
      this.values[slot] = values[s]!;
    }
    this.size = size;
  }

  /** Distinct pre-tokens held now (for tests). */
  get held(): number {
    return this.size;
  }
}

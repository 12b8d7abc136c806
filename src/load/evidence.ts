/**
 * Locating evidence quotes in document text.
 *
 * A quote in questions.jsonl is matched after whitespace normalisation on both sides (every run of whitespace becomes
 * one space), so a quote copied from a rendered page still matches the raw Markdown with its line breaks and
 * indentation. The match is then mapped back to a range of the RAW text, which is what chunk offsets refer to.
 * Matching is otherwise exact: case, punctuation and Markdown markup (`**bold**`) must agree.
 *
 * Offsets are UTF-16 code-unit offsets into the string (JavaScript indices), half-open `[start, end)`.
 */

/**
 * Whitespace as JavaScript's `\s` defines it (ASCII space, tab, CR, LF, VT, FF, NBSP, U+1680, U+2000-U+200A, U+2028,
 * U+2029, U+202F, U+205F, U+3000, U+FEFF). Every one of them is a single UTF-16 code unit.
 */
function isWhitespace(code: number): boolean {
  if (code <= 0x20) return code === 0x20 || (code >= 0x09 && code <= 0x0d);
  if (code < 0xa0) return false;
  return (
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}

/**
 * Collapses every run of whitespace (JavaScript `\s`) into one ASCII space and trims both ends.
 * `normaliseWhitespace("  a \n\t b ")` is `"a b"`. Pure; linear in the length of `s`.
 */
export function normaliseWhitespace(s: string): string {
  return normaliseWithMap(s).text.trim();
}

/**
 * A whitespace-normalised text with, for every code unit of it, the offset of the raw code unit it came from.
 * A collapsed run maps to the offset of the run's first code unit. Not trimmed.
 */
export interface NormalisedText {
  text: string;
  /** `map[i]` = raw offset of normalised code unit `i`; `map.length === text.length`. */
  map: Uint32Array;
}

/**
 * Normalises `raw` like {@link normaliseWhitespace} (without the trim) and keeps the index map back to `raw`.
 * Build it once per document and pass it to {@link locateQuote} when locating many quotes in one document.
 */
export function normaliseWithMap(raw: string): NormalisedText {
  const map = new Uint32Array(raw.length);
  const parts: string[] = [];
  let n = 0;
  let runStart = 0; // start of the current run of non-whitespace code units in raw
  let i = 0;
  while (i < raw.length) {
    if (!isWhitespace(raw.charCodeAt(i))) {
      i++;
      continue;
    }
    // flush the non-whitespace run [runStart, i)
    if (i > runStart) {
      parts.push(raw.slice(runStart, i));
      for (let j = runStart; j < i; j++) map[n++] = j;
    }
    parts.push(' ');
    map[n++] = i;
    while (i < raw.length && isWhitespace(raw.charCodeAt(i))) i++;
    runStart = i;
  }
  if (raw.length > runStart) {
    parts.push(raw.slice(runStart));
    for (let j = runStart; j < raw.length; j++) map[n++] = j;
  }
  return { text: parts.join(''), map: map.subarray(0, n) };
}

/** Result of {@link locateQuote}: a raw range, or why there is none. */
export type QuoteLocation = { start: number; end: number } | { error: 'absent' | 'ambiguous'; count: number };

/**
 * Finds `quote` in `docText` after whitespace normalisation of both (see {@link normaliseWhitespace}) and returns the
 * range of the RAW `docText` it covers: `[start, end)` in UTF-16 code units, from the quote's first non-whitespace
 * character to just after its last, so `docText.slice(start, end)` normalises to the normalised quote.
 *
 * Occurrences are counted at every start position in the normalised text (overlapping matches count separately).
 * - `occurrence` omitted: exactly one occurrence → its range; none → `{ error: 'absent', count: 0 }`;
 *   several → `{ error: 'ambiguous', count }`.
 * - `occurrence` = n (1-based integer ≥ 1): the n-th occurrence in text order; fewer than n →
 *   `{ error: 'absent', count }` with the number actually found.
 * A quote that is empty after normalisation is `{ error: 'absent', count: 0 }`.
 *
 * `docText` may instead be a prebuilt {@link NormalisedText} of the document (same result, no rebuild).
 * Throws `RangeError` when `occurrence` is given and is not an integer ≥ 1 (callers validate user input first).
 */
export function locateQuote(
  docText: string | NormalisedText,
  quote: string,
  occurrence?: number,
): QuoteLocation {
  if (occurrence !== undefined && !(Number.isInteger(occurrence) && occurrence >= 1)) {
    throw new RangeError(`occurrence must be an integer >= 1, got ${occurrence}`);
  }
  const norm = typeof docText === 'string' ? normaliseWithMap(docText) : docText;
  const q = normaliseWhitespace(quote);
  if (q.length === 0) return { error: 'absent', count: 0 };
  const starts: number[] = [];
  for (let at = norm.text.indexOf(q); at !== -1; at = norm.text.indexOf(q, at + 1)) starts.push(at);
  const count = starts.length;
  let chosen: number;
  if (occurrence === undefined) {
    if (count === 0) return { error: 'absent', count: 0 };
    if (count > 1) return { error: 'ambiguous', count };
    chosen = starts[0];
  } else {
    if (count < occurrence) return { error: 'absent', count };
    chosen = starts[occurrence - 1];
  }
  // The normalised quote starts and ends with a non-whitespace code unit, each of which maps to exactly one raw one.
  const start = norm.map[chosen];
  const end = norm.map[chosen + q.length - 1] + 1;
  return { start, end };
}

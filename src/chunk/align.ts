/**
 * Maps the chunk strings a splitter returns back to character ranges of the document they came from.
 *
 * LlamaIndex's SentenceSplitter returns strings only. Each is a run of consecutive pieces of the document, joined and
 * trimmed; in rare cases its sub-sentence regex (`[^,.;。？！]+[,.;。？！]?`) drops a punctuation mark that follows
 * another one (`a,,b` → `a,` + `b`), and its sentence tokenizer leaks `{{ABBREV_n}}` placeholders into URLs (see
 * {@link LEAK}); the alignment tolerates both and the chunk text is always taken from the document. Chunk i starts
 * inside chunk i−1 (the overlap, at most `overlap` tokens) or right after it. The alignment is a forward cursor over
 * the document, never a global search, so a passage repeated in a document maps to the right place.
 */

/** A half-open character range `[start, end)` (UTF-16 code units) of the document text. */
export interface Span {
  start: number;
  end: number;
}

/** Options of {@link alignChunks}. */
export interface AlignOptions {
  /** Overlap in tokens the splitter was given (≥ 0). */
  overlap: number;
  /** Token count of a piece of text under the splitter's tokenizer. */
  countTokens: (text: string) => number;
  /**
   * Search the whole rest of the document for every chunk, as before the searches were bounded (default false).
   * The same spans, in time quadratic in the number of chunks; kept so that a test can show the bound changes
   * nothing.
   */
  unbounded?: boolean;
  /** Optional operation counter: characters the candidate searches read go to `scannedChars`. */
  counter?: { scannedChars: number };
}

const WHITESPACE = /\s/u;
const NOT_WORD = /[^\p{L}\p{N}]/u;

/**
 * Placeholder text SentenceSplitter's sentence tokenizer failed to put back, whole or cut by a later split. It
 * replaces abbreviations (`Ing.`, `Dr.`, `Art.`, … matched case-insensitively and without word boundaries, so the
 * `ing.` of `docking.org` too) by `{{ABBREV_n}}` before it protects URLs as `{{URI_m}}`, then restores in insertion
 * order, so an abbreviation inside a URL comes back as `{{ABBREV_n}}`; at small sizes the character-level split can
 * then cut it (`…{{ABB` + `REV_0}}…`). Matches a whole placeholder or a piece of one: braces with the upper-case
 * name, `_` and digits between them.
 */
const LEAK = /\{+[A-Z]*_?\d*\}*|[A-Z]*_?\d*\}+/y;
/** Longest stretch of document text leaked placeholder text may stand for. */
const MAX_LEAK_TEXT = 64;
/** Work limit of one tolerant match attempt (character steps), so that brace-heavy text cannot blow up. */
const MATCH_BUDGET = 20_000;

/** Length of leaked placeholder text at `j` in `piece`, or 0. */
function leakAt(piece: string, j: number): number {
  const c = piece[j];
  if (c !== '{' && c !== '}' && c !== '_' && !(c >= 'A' && c <= 'Z')) return 0;
  LEAK.lastIndex = j;
  const m = LEAK.exec(piece);
  return m === null ? 0 : m[0].length;
}

/**
 * Tolerant match of `piece` from `j` against `text` from `i`: equal characters advance both; leaked placeholder text
 * in `piece` (see {@link LEAK}) matches the shortest stretch of 0–64 characters after which the rest matches (at the
 * end of the piece: the run of non-whitespace characters); whitespace in `piece` may be skipped; whitespace or
 * punctuation (anything but a letter or digit) in `text` may be skipped (characters the splitter dropped).
 * Returns the end offset (exclusive) in `text`, or -1 (also when `budget.steps` runs out).
 */
function matchTolerant(text: string, i: number, piece: string, j: number, budget: { steps: number }): number {
  while (j < piece.length) {
    if (--budget.steps < 0) return -1;
    if (i < text.length && text[i] === piece[j]) {
      i++;
      j++;
      continue;
    }
    const leak = leakAt(piece, j);
    if (leak > 0) {
      const rest = j + leak;
      if (rest === piece.length) {
        while (i < text.length && !WHITESPACE.test(text[i])) i++;
        return i;
      }
      for (let skip = 0; skip <= MAX_LEAK_TEXT && i + skip <= text.length; skip++) {
        const end = matchTolerant(text, i + skip, piece, rest, budget);
        if (end >= 0) return end;
        if (budget.steps < 0) return -1;
      }
      return -1;
    }
    if (WHITESPACE.test(piece[j])) {
      j++;
    } else if (i < text.length && NOT_WORD.test(text[i])) {
      i++;
    } else {
      return -1;
    }
  }
  return i;
}

/**
 * Exact occurrences of `piece` in `text` starting in `[from, maxStart]`, in increasing order. The search reads only
 * `text[from, maxStart + piece.length)`, so a bounded `maxStart` keeps the cost per chunk independent of the
 * document's length.
 */
function* exactCandidates(
  text: string,
  piece: string,
  from: number,
  maxStart = Infinity,
  counter?: { scannedChars: number },
): Generator<Span> {
  if (maxStart === Infinity) {
    for (let p = text.indexOf(piece, from); ; p = text.indexOf(piece, p + 1)) {
      if (counter) counter.scannedChars += (p < 0 ? text.length : p + piece.length) - from;
      if (p < 0) return;
      from = p + 1;
      yield { start: p, end: p + piece.length };
    }
  }
  const window = text.slice(from, maxStart + piece.length);
  if (counter) counter.scannedChars += window.length;
  for (let p = window.indexOf(piece); p >= 0; p = window.indexOf(piece, p + 1)) {
    yield { start: from + p, end: from + p + piece.length };
  }
}

/**
 * Tolerant occurrences (see {@link matchTolerant}) starting in `[from, maxStart]`, in increasing order of start.
 * `piece` must not start with leaked placeholder text (see {@link alignChunks}).
 */
function* tolerantCandidates(
  text: string,
  piece: string,
  from: number,
  maxStart = Infinity,
  counter?: { scannedChars: number },
): Generator<Span> {
  const first = piece[0];
  for (let p = text.indexOf(first, from); p >= 0 && p <= maxStart; p = text.indexOf(first, p + 1)) {
    const budget = { steps: MATCH_BUDGET };
    const end = matchTolerant(text, p, piece, 0, budget);
    if (counter) counter.scannedChars += p - from + MATCH_BUDGET - budget.steps;
    from = p;
    if (end > p) yield { start: p, end };
  }
}

/** Last start chunk i may have without `loose`: the end of chunk i−1 plus the non-word characters after it. */
function startLimit(text: string, prev: Span): number {
  let limit = prev.end;
  while (limit < text.length && NOT_WORD.test(text[limit])) limit++;
  return limit;
}

/**
 * Picks the place of chunk i among candidate spans (increasing start, all at or after chunk i−1's start).
 *
 * Chunk i starts inside chunk i−1 (the carried overlap) or right after it: the splitter's pieces are contiguous, so
 * only whitespace or dropped punctuation can lie between them. So candidates starting beyond that gap are not
 * considered (unless `loose`). Among the rest, the first that makes progress (ends after chunk i−1) and whose part
 * shared with chunk i−1 (counted with its leading whitespace, as the splitter counted its pieces) is at most
 * `overlap` tokens wins; else the first that makes progress. With `loose`, else the first candidate that makes
 * progress anywhere, else the first candidate. `undefined` when none qualifies.
 */
function choose(
  text: string,
  candidates: Iterable<Span>,
  prev: Span | undefined,
  options: AlignOptions,
  loose: boolean,
): Span | undefined {
  if (prev === undefined) {
    for (const c of candidates) return c;
    return undefined;
  }
  const limit = startLimit(text, prev);
  let first: Span | undefined;
  let firstProgress: Span | undefined;
  let firstProgressAnywhere: Span | undefined;
  for (const c of candidates) {
    first ??= c;
    if (c.end <= prev.end) continue;
    if (c.start > limit) {
      firstProgressAnywhere ??= c;
      break;
    }
    firstProgress ??= c;
    if (c.start >= prev.end) return c;
    let s = c.start;
    while (s > prev.start && WHITESPACE.test(text[s - 1])) s--;
    if (options.countTokens(text.slice(s, prev.end)) <= options.overlap) return c;
  }
  if (firstProgress !== undefined) return firstProgress;
  return loose ? (firstProgressAnywhere ?? first) : undefined;
}

/**
 * Aligns splitter output `pieces` (in order) to `text`. Returns one entry per piece: its span, or `null` for a
 * degenerate piece that is only the overlap tail of the previous chunk (the previous chunk's text ends with it and it
 * has at most `overlap` tokens; the splitter emits these when the new material of a chunk was whitespace only) —
 * such a chunk would lie entirely inside the previous one, so callers drop it. A piece that can only be placed inside
 * the previous chunk's range is `null` for the same reason, and so is a chunk whose range lies inside the next
 * chunk's (the splitter carries a whole short chunk over as the next one's overlap).
 *
 * Each span starts at or after the previous kept span's start. `text.slice(start, end)` equals the piece except where
 * the splitter dropped characters (then the slice contains them, also punctuation it dropped right after the piece). Throws a plain `Error` (a bug: the splitter returned
 * text that is not in the document) when a piece cannot be found.
 */
export function alignChunks(text: string, pieces: readonly string[], options: AlignOptions): (Span | null)[] {
  const out: (Span | null)[] = [];
  let prev: Span | undefined;
  pieces.forEach((raw, index) => {
    // Leaked placeholder text at the start of a piece stands for text that ends the previous chunk: drop it.
    const lead = leakAt(raw, 0);
    const piece = lead > 0 ? raw.slice(lead).trimStart() : raw;
    if (piece === '') {
      out.push(null);
      return;
    }
    if (prev !== undefined) {
      const prevText = text.slice(prev.start, prev.end);
      if (prevText.endsWith(piece) && options.countTokens(piece) <= options.overlap) {
        out.push(null);
        return;
      }
    }
    const from = prev?.start ?? 0;
    // Without `loose`, `choose` decides on candidates starting at or before the limit only (it stops at the first
    // one beyond), so the searches stop there: the same spans, at a cost bounded per chunk (linear in the document).
    const maxStart = prev === undefined || options.unbounded === true ? Infinity : startLimit(text, prev);
    const span =
      choose(text, exactCandidates(text, piece, from, maxStart, options.counter), prev, options, false) ??
      choose(text, tolerantCandidates(text, piece, from, maxStart, options.counter), prev, options, false) ??
      choose(text, exactCandidates(text, piece, from, Infinity, options.counter), prev, options, true) ??
      choose(text, tolerantCandidates(text, piece, from, Infinity, options.counter), prev, options, true);
    if (span === undefined) {
      throw new Error(
        `alignChunks: chunk ${index} (${JSON.stringify(piece.slice(0, 60))}…) not found at or after offset ${from}`,
      );
    }
    if (prev !== undefined && span.end <= prev.end) {
      out.push(null); // found only inside the previous chunk: nothing new, dropped like a degenerate tail
      return;
    }
    out.push(span);
    prev = span;
  });
  // A chunk whose range lies inside the next chunk's: SentenceSplitter closes a short chunk when the next sentence does
  // not fit, then carries all of it over as the overlap of the next chunk (which may then exceed chunkSize by up to
  // chunkOverlap tokens). The short chunk adds nothing the next one lacks.
  // Punctuation right after a chunk that the next chunk does not cover was dropped by the splitter's sub-sentence
  // regex at the boundary (`et al.,` → `et al.` + ` Appl…`): it is added to the end of the chunk before it, so no
  // character of the document is lost.
  let next: Span | null = null;
  for (let i = out.length - 1; i >= 0; i--) {
    const span = out[i];
    if (span === null) continue;
    if (next !== null && next.start <= span.start && span.end <= next.end) {
      out[i] = null;
      continue;
    }
    const stop = next === null ? text.length : next.start;
    let end = span.end;
    while (end < stop && !WHITESPACE.test(text[end]) && NOT_WORD.test(text[end])) end++;
    if (end > span.end) out[i] = { start: span.start, end };
    next = out[i];
  }
  return out;
}

/**
 * Maps the chunk strings a splitter returns back to character ranges of the document they came from.
 *
 * LlamaIndex's SentenceSplitter returns strings only. Each is a run of consecutive pieces of the document, joined and
 * trimmed; in rare cases its sub-sentence regex (`[^,.;。？！]+[,.;。？！]?`) drops a punctuation mark that follows
 * another one (`a,,b` → `a,` + `b`), and its sentence tokenizer leaks `{{ABBREV_n}}` placeholders into URLs (see
 * {@link PLACEHOLDER}); the alignment tolerates both and the chunk text is always taken from the document. Chunk i starts inside chunk i−1 (the overlap, at most `overlap` tokens) or right
 * after it. The alignment is a forward cursor over the document, never a global search, so a passage repeated in a
 * document maps to the right place.
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
}

const WHITESPACE = /\s/u;
const NOT_WORD = /[^\p{L}\p{N}]/u;

/**
 * A placeholder SentenceSplitter's sentence tokenizer failed to put back. It replaces abbreviations (`Ing.`, `Dr.`,
 * `Art.`, … matched case-insensitively, so the `ing.` of `docking.org` too) by `{{ABBREV_n}}` before it protects
 * URLs as `{{URI_m}}`, then restores in insertion order, so an abbreviation inside a URL comes back as `{{ABBREV_n}}`.
 */
const PLACEHOLDER = /\{\{(?:ABBREV|URI|NUMBER|DELIM)_\d+\}\}/y;
/** Longest stretch of document text a leaked placeholder may stand for. */
const MAX_PLACEHOLDER_TEXT = 64;

/**
 * Tolerant match of `piece` from `j` against `text` from `i`: equal characters advance both; whitespace in `piece`
 * may be skipped; whitespace or punctuation (anything but a letter or digit) in `text` may be skipped (characters
 * the splitter dropped); a leaked placeholder in `piece` (see {@link PLACEHOLDER}) matches the shortest stretch of
 * 1–64 characters after which the rest matches (at the end of the piece: the run of non-whitespace characters).
 * Returns the end offset (exclusive) in `text`, or -1.
 */
function matchTolerant(text: string, i: number, piece: string, j = 0): number {
  while (j < piece.length) {
    if (i < text.length && text[i] === piece[j]) {
      i++;
      j++;
      continue;
    }
    if (piece[j] === '{') {
      PLACEHOLDER.lastIndex = j;
      const m = PLACEHOLDER.exec(piece);
      if (m !== null) {
        const rest = j + m[0].length;
        if (rest === piece.length) {
          let e = i;
          while (e < text.length && !WHITESPACE.test(text[e])) e++;
          return e > i ? e : -1;
        }
        for (let skip = 1; skip <= MAX_PLACEHOLDER_TEXT && i + skip <= text.length; skip++) {
          const end = matchTolerant(text, i + skip, piece, rest);
          if (end >= 0) return end;
        }
        return -1;
      }
    }
    if (WHITESPACE.test(piece[j])) {
      j++;
    } else if (i < text.length && (WHITESPACE.test(text[i]) || NOT_WORD.test(text[i]))) {
      i++;
    } else {
      return -1;
    }
  }
  return i;
}

/** Exact occurrences of `piece` in `text` at or after `from`, in increasing order. */
function* exactCandidates(text: string, piece: string, from: number): Generator<Span> {
  for (let p = text.indexOf(piece, from); p >= 0; p = text.indexOf(piece, p + 1)) {
    yield { start: p, end: p + piece.length };
  }
}

/** Tolerant occurrences (see {@link matchTolerant}) at or after `from`, in increasing order of start. */
function* tolerantCandidates(text: string, piece: string, from: number): Generator<Span> {
  PLACEHOLDER.lastIndex = 0;
  if (PLACEHOLDER.test(piece)) {
    // The piece starts with a leaked placeholder: any position may start it.
    for (let p = from; p < text.length; p++) {
      const end = matchTolerant(text, p, piece);
      if (end > p) yield { start: p, end };
    }
    return;
  }
  const first = piece[0];
  for (let p = text.indexOf(first, from); p >= 0; p = text.indexOf(first, p + 1)) {
    const end = matchTolerant(text, p, piece);
    if (end > p) yield { start: p, end };
  }
}

/**
 * Picks the place of chunk i among candidate spans (increasing start, all at or after chunk i−1's start):
 * the first one that makes progress (ends after chunk i−1) and whose part shared with chunk i−1 is at most
 * `overlap` tokens (or that starts at or after chunk i−1's end); else the first one that makes progress; with
 * `loose`, else the first one. `undefined` when none qualifies.
 */
function choose(
  text: string,
  candidates: Iterable<Span>,
  prev: Span | undefined,
  options: AlignOptions,
  loose: boolean,
): Span | undefined {
  let first: Span | undefined;
  let firstProgress: Span | undefined;
  for (const c of candidates) {
    if (prev === undefined) return c;
    first ??= c;
    if (c.end > prev.end) {
      firstProgress ??= c;
      if (c.start >= prev.end || options.countTokens(text.slice(c.start, prev.end)) <= options.overlap) return c;
    }
  }
  return firstProgress ?? (loose ? first : undefined);
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
 * the splitter dropped characters (then the slice contains them). Throws a plain `Error` (a bug: the splitter returned
 * text that is not in the document) when a piece cannot be found.
 */
export function alignChunks(text: string, pieces: readonly string[], options: AlignOptions): (Span | null)[] {
  const out: (Span | null)[] = [];
  let prev: Span | undefined;
  pieces.forEach((piece, index) => {
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
    const span =
      choose(text, exactCandidates(text, piece, from), prev, options, false) ??
      choose(text, tolerantCandidates(text, piece, from), prev, options, false) ??
      choose(text, exactCandidates(text, piece, from), prev, options, true) ??
      choose(text, tolerantCandidates(text, piece, from), prev, options, true);
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
  let next: Span | null = null;
  for (let i = out.length - 1; i >= 0; i--) {
    const span = out[i];
    if (span === null) continue;
    if (next !== null && next.start <= span.start && span.end <= next.end) {
      out[i] = null;
      continue;
    }
    next = span;
  }
  return out;
}

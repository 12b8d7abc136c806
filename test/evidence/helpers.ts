/** Hand-built chunks and spans for the evidence tests. */
import type { Chunk, EvidenceSpan } from '../../src/types.js';

/** A chunk of `doc` covering `[start, end)`, with `tokens` tokens (default: one token per 4 characters, rounded up). */
export function chunk(doc: string, ordinal: number, start: number, end: number, tokens?: number): Chunk {
  return {
    id: `${doc}#${ordinal}`,
    docId: doc,
    ordinal,
    text: 'x'.repeat(end - start),
    start,
    end,
    tokens: tokens ?? Math.ceil((end - start) / 4),
  };
}

/** Contiguous chunks of `size` characters over a document of `length` characters (the last one may be shorter). */
export function contiguous(doc: string, size: number, length: number): Chunk[] {
  const out: Chunk[] = [];
  for (let s = 0, i = 0; s < length; s += size, i++) out.push(chunk(doc, i, s, Math.min(s + size, length)));
  return out;
}

/** An evidence span. */
export function span(doc: string, start: number, end: number, grade = 1): EvidenceSpan {
  return { doc, start, end, grade };
}

/** Chunks grouped by document, as `projectEvidence` takes them. */
export function byDoc(...lists: Chunk[][]): Map<string, Chunk[]> {
  const m = new Map<string, Chunk[]>();
  for (const list of lists) for (const c of list) m.set(c.docId, [...(m.get(c.docId) ?? []), c]);
  return m;
}

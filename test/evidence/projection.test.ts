import { describe, expect, it } from 'vitest';
import { isHarnessError } from '../../src/errors.js';
import { projectEvidence, projectionStats, isRelevantOverlap } from '../../src/score/evidence.js';
import { byDoc, chunk, contiguous, span } from './helpers.js';

/** The brief's example: a 300-character span [100, 400) of a 1,200-character document. */
const S = span('doc.md', 100, 400);

function errorCode(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    return isHarnessError(e) ? e.code : `not a HarnessError: ${String(e)}`;
  }
  return undefined;
}

describe('projection of a 300-character span [100, 400) onto chunkings of 100, 200 and 1,000 characters', () => {
  it('size 100: the three chunks inside the span are relevant (each overlap = 100% of the chunk); neighbours touching the span edge are not (overlap 0)', () => {
    const chunks = contiguous('doc.md', 100, 1200); // [0,100), [100,200), ..., [1100,1200)
    expect(chunks).toHaveLength(12);
    const p = projectEvidence([S], byDoc(chunks));
    // [100,200): overlap 100 = 100/100 of the chunk (and 100/300 = 1/3 of the span) -> relevant; same for #2, #3.
    // [0,100) and [400,500) share only the boundary point: overlap = min(end) - max(start) = 0 -> not relevant.
    expect(p.spanChunks).toEqual([['doc.md#1', 'doc.md#2', 'doc.md#3']]);
    expect(p.chunkGrades).toEqual({ 'doc.md#1': 1, 'doc.md#2': 1, 'doc.md#3': 1 });
  });

  it('size 200: [0,200) overlaps 100 = 1/3 of the span but 1/2 of the chunk -> relevant at 0.5; [200,400) holds 200/300 of the span -> relevant', () => {
    const chunks = contiguous('doc.md', 200, 1200);
    expect(100 / 300).toBeLessThan(0.5);
    expect(100 / 200).toBeGreaterThanOrEqual(0.5);
    expect(200 / 300).toBeGreaterThanOrEqual(0.5);
    const p = projectEvidence([S], byDoc(chunks));
    expect(p.spanChunks).toEqual([['doc.md#0', 'doc.md#1']]);
  });

  it('size 200 at minOverlap 0.6: [0,200) (1/3 of span, 1/2 of chunk) drops out, [200,400) (2/3 of span, all of chunk) stays', () => {
    const p = projectEvidence([S], byDoc(contiguous('doc.md', 200, 1200)), { minOverlap: 0.6 });
    expect(p.spanChunks).toEqual([['doc.md#1']]);
  });

  it('size 1,000: [0,1000) holds the whole span (overlap 300 = 100% of the span, 30% of the chunk) -> relevant; [1000,1200) -> overlap 0', () => {
    const p = projectEvidence([S], byDoc(contiguous('doc.md', 1000, 1200)));
    expect(300 / 1000).toBeLessThan(0.5);
    expect(p.spanChunks).toEqual([['doc.md#0']]);
  });

  it('a small chunk strictly inside the span is relevant although it holds only 1/3 of the span', () => {
    const inside = chunk('doc.md', 0, 150, 250); // overlap 100 = 100% of the chunk, 100/300 of the span
    const p = projectEvidence([S], byDoc([inside]));
    expect(p.spanChunks).toEqual([['doc.md#0']]);
  });

  it('a large chunk that touches the span by 5 characters is not relevant (5/300 of the span, 5/805 of the chunk)', () => {
    const big = chunk('doc.md', 1, 395, 1200);
    const p = projectEvidence([S], byDoc([big]));
    expect(5 / 300).toBeLessThan(0.5);
    expect(5 / 805).toBeLessThan(0.5);
    expect(p.spanChunks).toEqual([[]]);
    expect(p.chunkGrades).toEqual({});
  });

  it('a chunk of another document with the same offsets is never relevant', () => {
    const p = projectEvidence([S], byDoc([chunk('other.md', 0, 100, 400)]));
    expect(p.spanChunks).toEqual([[]]);
  });

  it('trimmed chunks leave gaps: a 100-char span split 49 | 2 (gap) | 49 across two large chunks is lost at 0.5', () => {
    // chunk A [0,249) and chunk B [251,600): the whitespace [249,251) belongs to neither (the splitter trims chunks)
    const p = projectEvidence([span('doc.md', 200, 300)], byDoc([chunk('doc.md', 0, 0, 249), chunk('doc.md', 1, 251, 600)]));
    // A: overlap 49 = 49/100 of the span, 49/249 of the chunk; B: overlap 49 = 49/100 of the span, 49/349 of the chunk
    expect(49 / 100).toBeLessThan(0.5);
    expect(p.spanChunks).toEqual([[]]);
    // without the gap (A ends at 251) A holds 51/100 of the span -> relevant
    const q = projectEvidence([span('doc.md', 200, 300)], byDoc([chunk('doc.md', 0, 0, 251), chunk('doc.md', 1, 251, 600)]));
    expect(q.spanChunks).toEqual([['doc.md#0']]);
  });

  it('a span whose document has no chunks gets no relevant chunk', () => {
    const p = projectEvidence([span('missing.md', 0, 10)], byDoc(contiguous('doc.md', 100, 1200)));
    expect(p.spanChunks).toEqual([[]]);
  });
});

describe('projection: grades and order', () => {
  it('a chunk relevant to two spans takes the higher grade (max, not sum)', () => {
    const chunks = contiguous('doc.md', 100, 1200);
    // span A [100,400) grade 1 -> #1, #2, #3; span B [250,350) grade 3 -> #2 (50/100 of span, 50/100 of chunk) and
    // #3 (50/100 of span) -> both relevant at 0.5.
    const p = projectEvidence([span('doc.md', 100, 400, 1), span('doc.md', 250, 350, 3)], byDoc(chunks));
    expect(p.spanChunks).toEqual([['doc.md#1', 'doc.md#2', 'doc.md#3'], ['doc.md#2', 'doc.md#3']]);
    expect(p.chunkGrades).toEqual({ 'doc.md#1': 1, 'doc.md#2': 3, 'doc.md#3': 3 });
    expect(p.spanGrades).toEqual([1, 3]);
  });

  it('the higher grade wins whichever span comes first', () => {
    const chunks = contiguous('doc.md', 100, 1200);
    const p = projectEvidence([span('doc.md', 250, 350, 3), span('doc.md', 100, 400, 1)], byDoc(chunks));
    expect(p.chunkGrades).toEqual({ 'doc.md#1': 1, 'doc.md#2': 3, 'doc.md#3': 3 });
  });

  it('relevant chunk ids come in document order (ordinal) even when the chunk list is given reversed', () => {
    const chunks = contiguous('doc.md', 100, 1200).reverse();
    const p = projectEvidence([S], new Map([['doc.md', chunks]]));
    expect(p.spanChunks).toEqual([['doc.md#1', 'doc.md#2', 'doc.md#3']]);
  });

  it('does not change its inputs', () => {
    const chunks = contiguous('doc.md', 200, 1200);
    const spans = [span('doc.md', 100, 400, 2)];
    const before = JSON.stringify([chunks, spans]);
    projectEvidence(spans, byDoc(chunks));
    expect(JSON.stringify([chunks, spans])).toBe(before);
  });

  it('no evidence: an empty projection', () => {
    expect(projectEvidence([], byDoc(contiguous('doc.md', 100, 1200)))).toEqual({
      chunkGrades: {},
      spanChunks: [],
      spanGrades: [],
    });
  });
});

describe('projection: the threshold is compared as a quotient, so 55 of 100 characters meets 0.55', () => {
  it('0.55 * 100 is not 55 in floating point, but 55 / 100 is 0.55', () => {
    expect(0.55 * 100).toBeGreaterThan(55); // 55.00000000000001: `overlap >= minOverlap * length` would refuse
    expect(55 / 100).toBe(0.55);
    // span [0,100), chunk [45,300): overlap 55 = 55/100 of the span, 55/255 of the chunk
    const p = projectEvidence([span('d', 0, 100)], byDoc([chunk('d', 0, 45, 300)]), { minOverlap: 0.55 });
    expect(p.spanChunks).toEqual([['d#0']]);
  });

  it('minOverlap 1: only chunks holding the whole span or lying wholly inside it', () => {
    expect(isRelevantOverlap(0, 1000, 100, 400, 1)).toBe(true); // 300/300 of the span
    expect(isRelevantOverlap(150, 250, 100, 400, 1)).toBe(true); // 100/100 of the chunk
    expect(isRelevantOverlap(0, 399, 100, 400, 1)).toBe(false); // 299/300 of span, 299/399 of chunk
  });

  it('a chunk of length 0 is never relevant, even inside the span', () => {
    expect(isRelevantOverlap(200, 200, 100, 400, 0.5)).toBe(false);
  });
});

describe('projection: bad input is refused with a HarnessError code', () => {
  const chunks = byDoc(contiguous('doc.md', 100, 1200));
  it.each([0, -0.1, 1.5, Number.NaN])('minOverlap %s -> CONFIG_INVALID', (m) => {
    expect(errorCode(() => projectEvidence([S], chunks, { minOverlap: m }))).toBe('CONFIG_INVALID');
  });
  it('end <= start -> LABEL_INVALID', () => {
    expect(errorCode(() => projectEvidence([span('doc.md', 400, 400)], chunks))).toBe('LABEL_INVALID');
    expect(errorCode(() => projectEvidence([span('doc.md', 400, 100)], chunks))).toBe('LABEL_INVALID');
  });
  it('negative or fractional offsets -> LABEL_INVALID', () => {
    expect(errorCode(() => projectEvidence([span('doc.md', -1, 10)], chunks))).toBe('LABEL_INVALID');
    expect(errorCode(() => projectEvidence([span('doc.md', 1.5, 10)], chunks))).toBe('LABEL_INVALID');
  });
  it('grade 0 -> LABEL_INVALID (a passage that is not evidence is left out, not labelled 0)', () => {
    expect(errorCode(() => projectEvidence([span('doc.md', 100, 400, 0)], chunks))).toBe('LABEL_INVALID');
  });
  it('the message names the span index and document', () => {
    try {
      projectEvidence([S, span('faq.md', 9, 3)], chunks);
      expect.unreachable();
    } catch (e) {
      expect(String((e as Error).message)).toContain('evidence[1]');
      expect(String((e as Error).message)).toContain('faq.md');
    }
  });
});

describe('projectionStats', () => {
  it('counts spans, lost spans and chunks per span over all questions', () => {
    const c100 = byDoc(contiguous('doc.md', 100, 1200));
    // q1: [100,400) -> 3 chunks; [150,160) -> #1 (10/10 of the span) -> 1 chunk
    const q1 = projectEvidence([S, span('doc.md', 150, 160)], c100);
    // q2: a span of a document with no chunks -> 0 chunks
    const q2 = projectEvidence([span('gone.md', 0, 5)], c100);
    const st = projectionStats([q1, q2]);
    expect(st.spans).toBe(3);
    expect(st.spansWithNoRelevantChunk).toBe(1);
    expect(st.meanChunksPerSpan).toBeCloseTo((3 + 1 + 0) / 3, 10);
    expect(st.maxChunksPerSpan).toBe(3);
    // q1's relevant chunks: #1, #2, #3 (the second span's #1 is already counted); q2: none
    expect(st.relevantChunks).toBe(3);
  });

  it('no projections: zeros, not NaN', () => {
    expect(projectionStats([])).toEqual({
      spans: 0,
      spansWithNoRelevantChunk: 0,
      meanChunksPerSpan: 0,
      maxChunksPerSpan: 0,
      relevantChunks: 0,
    });
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { evidenceCoverage } from '../../src/score/budget.js';
import { projectEvidence, scoreChunkLevel } from '../../src/score/evidence.js';
import type { Chunk, EvidenceSpan } from '../../src/types.js';
import { byDoc, chunk } from './helpers.js';

const DOCS = ['a.md', 'b.md'];
const LEN = 120;

const arbSpan: fc.Arbitrary<EvidenceSpan> = fc
  .record({
    doc: fc.constantFrom(...DOCS),
    start: fc.integer({ min: 0, max: LEN - 1 }),
    len: fc.integer({ min: 1, max: 60 }),
    grade: fc.integer({ min: 1, max: 3 }),
  })
  .map(({ doc, start, len, grade }) => ({ doc, start, end: Math.min(LEN, start + len), grade }));

/** Arbitrary (possibly overlapping, possibly empty-length) chunk ranges; ordinal = position in the list per doc. */
const arbChunks: fc.Arbitrary<Chunk[]> = fc
  .array(
    fc.record({
      doc: fc.constantFrom(...DOCS),
      start: fc.integer({ min: 0, max: LEN }),
      len: fc.integer({ min: 0, max: 50 }),
      tokens: fc.integer({ min: 0, max: 20 }),
    }),
    { maxLength: 12 },
  )
  .map((rs) => rs.map((r, i) => chunk(r.doc, i, r.start, Math.min(LEN, r.start + r.len), r.tokens)));

/** A sliding-window chunking of one document: window `size` chars, step `size - overlap`, as chunkers cut text. */
function sliding(doc: string, length: number, size: number, overlap: number): Chunk[] {
  const out: Chunk[] = [];
  const step = size - overlap;
  for (let s = 0, i = 0; ; s += step, i++) {
    const e = Math.min(s + size, length);
    out.push(chunk(doc, i, s, e));
    if (e >= length) break;
  }
  return out;
}

/** Brute force: per-character sets keyed `doc:offset`. */
function oracle(retrieved: readonly Chunk[], spans: readonly EvidenceSpan[]) {
  const E = new Set<string>();
  const R = new Set<string>();
  for (const s of spans) for (let i = s.start; i < s.end; i++) E.add(`${s.doc}:${i}`);
  for (const c of retrieved) for (let i = c.start; i < c.end; i++) R.add(`${c.docId}:${i}`);
  let both = 0;
  for (const x of E) if (R.has(x)) both++;
  const union = E.size + R.size - both;
  return {
    evidenceRecall: E.size > 0 ? both / E.size : 0,
    evidencePrecision: R.size > 0 ? both / R.size : 0,
    iou: union > 0 ? both / union : 0,
  };
}

describe('budget measures against a per-character brute force', () => {
  it('interval arithmetic equals per-character sets', () => {
    fc.assert(
      fc.property(arbChunks, fc.array(arbSpan, { maxLength: 5 }), (chunks, spans) => {
        const m = evidenceCoverage(chunks, spans);
        const o = oracle(chunks, spans);
        expect(m.evidenceRecall).toBeCloseTo(o.evidenceRecall, 10);
        expect(m.evidencePrecision).toBeCloseTo(o.evidencePrecision, 10);
        expect(m.iou).toBeCloseTo(o.iou, 10);
      }),
      { numRuns: 300 },
    );
  });

  it('recall, precision and IoU stay in [0, 1]', () => {
    fc.assert(
      fc.property(arbChunks, fc.array(arbSpan, { maxLength: 5 }), (chunks, spans) => {
        const m = evidenceCoverage(chunks, spans);
        for (const v of [m.evidenceRecall, m.evidencePrecision, m.iou]) {
          expect(v).toBeGreaterThanOrEqual(0);
          expect(v).toBeLessThanOrEqual(1);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('evidence recall never falls as k grows (prefixes of a ranking)', () => {
    fc.assert(
      fc.property(arbChunks, fc.array(arbSpan, { minLength: 1, maxLength: 5 }), (ranked, spans) => {
        let prev = 0;
        for (let k = 0; k <= ranked.length; k++) {
          const r = evidenceCoverage(ranked.slice(0, k), spans).evidenceRecall;
          expect(r).toBeGreaterThanOrEqual(prev);
          prev = r;
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('chunk-level measures: properties', () => {
  const arbCase = fc.record({
    chunks: arbChunks,
    spans: fc.array(arbSpan, { minLength: 1, maxLength: 4 }),
    minOverlap: fc.constantFrom(0.25, 0.5, 0.7, 1),
    order: fc.array(fc.nat(), { maxLength: 12 }),
  });

  it('every measure is in [0, 1] at every k, and recall@k never falls as k grows', () => {
    fc.assert(
      fc.property(arbCase, ({ chunks, spans, minOverlap, order }) => {
        const p = projectEvidence(spans, byDoc(chunks), { minOverlap });
        const ids = chunks.map((c) => c.id);
        // a ranking drawn from the chunk ids (repeats allowed) plus an unknown id
        const ranking = [...order.map((i) => (ids.length > 0 ? ids[i % ids.length] : 'x#0')), 'zz#9'];
        let prevRecall = 0;
        for (let k = 1; k <= ranking.length + 1; k++) {
          const v = scoreChunkLevel(ranking, p, k);
          if (v === null) {
            expect(Object.keys(p.chunkGrades)).toHaveLength(0);
            return;
          }
          for (const x of Object.values(v)) {
            expect(x).toBeGreaterThanOrEqual(0);
            expect(x).toBeLessThanOrEqual(1 + 1e-12);
          }
          expect(v[`recall@${k}`]).toBeGreaterThanOrEqual(prevRecall);
          prevRecall = v[`recall@${k}`];
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a perfect ranking (relevant chunks by grade, descending) scores nDCG 1; recall 1 when every span has a chunk', () => {
    fc.assert(
      fc.property(arbCase, ({ chunks, spans, minOverlap }) => {
        const p = projectEvidence(spans, byDoc(chunks), { minOverlap });
        const ideal = Object.entries(p.chunkGrades)
          .sort((x, y) => y[1] - x[1])
          .map(([id]) => id);
        if (ideal.length === 0) return;
        const k = ideal.length;
        const v = scoreChunkLevel(ideal, p, k);
        expect(v?.[`ndcg@${k}`]).toBeCloseTo(1, 10);
        expect(v?.[`ndcg_exp@${k}`]).toBeCloseTo(1, 10);
        const found = p.spanChunks.filter((c) => c.length > 0).length;
        expect(v?.[`recall@${k}`]).toBeCloseTo(found / spans.length, 10);
      }),
      { numRuns: 300 },
    );
  });
});

describe('projection: with minOverlap 0.5 and a chunking without gaps, no span is lost', () => {
  it('sliding windows of any size and overlap give every span at least one relevant chunk', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 80 }),
        fc.integer({ min: 0, max: 79 }),
        fc.array(arbSpan, { minLength: 1, maxLength: 4 }),
        (size, ov, spans) => {
          const overlap = ov % size; // 0 <= overlap < size
          const chunks = DOCS.flatMap((d) => sliding(d, LEN, size, overlap));
          const p = projectEvidence(spans, byDoc(chunks), { minOverlap: 0.5 });
          for (const ids of p.spanChunks) expect(ids.length).toBeGreaterThan(0);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('the relevance rule agrees with a per-character count of the overlap', () => {
    fc.assert(
      fc.property(arbChunks, arbSpan, fc.constantFrom(0.25, 0.5, 0.7, 1), (chunks, s, minOverlap) => {
        const p = projectEvidence([s], byDoc(chunks), { minOverlap });
        const expected = chunks
          .filter((c) => {
            if (c.docId !== s.doc) return false;
            let n = 0;
            for (let i = c.start; i < c.end; i++) if (i >= s.start && i < s.end) n++;
            return n > 0 && (n / (s.end - s.start) >= minOverlap || n / (c.end - c.start) >= minOverlap);
          })
          .sort((x, y) => x.ordinal - y.ordinal)
          .map((c) => c.id);
        expect(p.spanChunks[0]).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });
});

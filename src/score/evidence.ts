/**
 * Labels that survive re-chunking: evidence spans projected onto a chunking, and chunk-level scoring.
 *
 * A question's evidence is a list of character ranges of documents ({@link EvidenceSpan}, `[start, end)`, UTF-16
 * code-unit offsets into `Doc.text`). A chunking cuts each document into chunks with their own `[start, end)` ranges
 * ({@link Chunk}). The projection decides which chunks of this chunking are relevant, so the same labels score every
 * chunk size. Pure: no disk, no clock, inputs never changed. See docs/evidence.md for a worked example.
 *
 * Projection rule (overlap in characters, `minOverlap` default 0.5, in (0, 1]):
 *
 *   overlap(c, s) = |[c.start, c.end) ∩ [s.start, s.end)|   (same document only)
 *   c is relevant to s  ⇔  overlap > 0  and  ( overlap / |s| ≥ minOverlap  or  overlap / |c| ≥ minOverlap )
 *
 * So a small chunk lying inside the span counts (100% of the chunk), a chunk holding the whole span counts (100% of
 * the span), and a large chunk that merely touches the span by a few characters does not. The ratios are compared as
 * quotients (`overlap / length ≥ minOverlap`), not as products, so 55 of 100 characters meets 0.55 exactly
 * (`0.55 * 100` is 55.00000000000001 in floating point). A chunk's grade is the highest grade of the spans it is
 * relevant to.
 *
 * With `minOverlap ≤ 0.5` and chunks that cover the whole span (no gaps), every span has at least one relevant chunk:
 * either some chunk lies inside the span, or the (at most two) chunks that hold its first and last character cover
 * it, so one of them holds at least half of it. Gaps between chunks or `minOverlap > 0.5` can leave a span with no
 * relevant chunk; {@link projectionStats} counts such spans.
 */
import { HarnessError } from '../errors.js';
import type { Chunk, EvidenceSpan } from '../types.js';
import { prepareJudgements, planMeasures, scorePrepared, type ScoreOptions } from './evaluate.js';
import { formatMeasure, measuresAtK } from './measures.js';

/** Projection options. */
export interface ProjectionOptions {
  /**
   * Share of the span's length OR of the chunk's length that the overlap must reach for the chunk to be relevant;
   * a number in (0, 1], default {@link DEFAULT_MIN_OVERLAP} (config key `evidenceOverlap`).
   */
  minOverlap?: number;
}

/** Default `minOverlap`: half of the span or half of the chunk. */
export const DEFAULT_MIN_OVERLAP = 0.5;

/** One question's evidence projected onto one chunking. Plain data, safe to serialise. */
export interface Projection {
  /** Chunk id → grade: the highest grade of the spans the chunk is relevant to. Only relevant chunks appear. */
  chunkGrades: Record<string, number>;
  /** Per span (same index as the question's `evidence`): the relevant chunk ids, in document order (`ordinal`). */
  spanChunks: string[][];
  /** Per span (same index): the span's grade, copied so that recall can apply a relevance threshold. */
  spanGrades: number[];
}

/**
 * Checks one evidence span: `start` and `end` integers with 0 ≤ start < end, `grade` a finite number > 0.
 * @param index 0-based position of the span in the question's evidence, for the message
 * @throws HarnessError `LABEL_INVALID` naming the document, the range and the grade.
 */
export function validateSpan(span: EvidenceSpan, index: number): void {
  const where = `evidence[${index}] (doc ${JSON.stringify(span.doc)}, [${String(span.start)}, ${String(span.end)}))`;
  if (!Number.isSafeInteger(span.start) || !Number.isSafeInteger(span.end) || span.start < 0 || span.end <= span.start) {
    throw new HarnessError('LABEL_INVALID', `${where}: start and end must be integers with 0 <= start < end`, {
      remedy: 'give character offsets into the document text, end exclusive, or give a "quote" instead',
    });
  }
  if (typeof span.grade !== 'number' || !Number.isFinite(span.grade) || span.grade <= 0) {
    throw new HarnessError('LABEL_INVALID', `${where}: grade ${String(span.grade)} must be a number > 0`, {
      remedy: 'use grade 1 (relevant) or a higher grade such as 2; leave out passages that are not evidence',
    });
  }
}

/**
 * Checks `minOverlap` and returns it (the default when undefined).
 * @throws HarnessError `CONFIG_INVALID` (key `evidenceOverlap`) when it is not a number in (0, 1].
 */
export function resolveMinOverlap(options?: ProjectionOptions): number {
  const m = options?.minOverlap ?? DEFAULT_MIN_OVERLAP;
  if (typeof m !== 'number' || !(m > 0 && m <= 1)) {
    throw new HarnessError('CONFIG_INVALID', `evidenceOverlap (${String(m)}) must be in (0, 1]`, {
      location: { path: 'evidenceOverlap' },
      remedy: 'use 0.5 (half of the span or half of the chunk), the default',
    });
  }
  return m;
}

/**
 * True when chunk range `[cStart, cEnd)` is relevant to span range `[sStart, sEnd)` of the same document under the
 * rule in this module's header. Ranges are in characters; `sEnd > sStart`. A chunk of length 0 is never relevant.
 */
export function isRelevantOverlap(cStart: number, cEnd: number, sStart: number, sEnd: number, minOverlap: number): boolean {
  const overlap = Math.min(cEnd, sEnd) - Math.max(cStart, sStart);
  if (overlap <= 0) return false;
  return overlap / (sEnd - sStart) >= minOverlap || overlap / (cEnd - cStart) >= minOverlap;
}

/**
 * Projects a question's evidence spans onto a chunking.
 * @param spans the question's evidence, each checked by {@link validateSpan}; may be empty
 * @param chunksByDoc document id → that document's chunks (any order; document order is `ordinal`). A span whose
 *   document has no entry gets no relevant chunk.
 * @param options `minOverlap` in (0, 1], default 0.5
 * @returns chunk grades and, per span, its relevant chunk ids in document order
 * @throws HarnessError `LABEL_INVALID` for a malformed span, `CONFIG_INVALID` for a bad `minOverlap`.
 */
export function projectEvidence(
  spans: readonly EvidenceSpan[],
  chunksByDoc: ReadonlyMap<string, readonly Chunk[]>,
  options?: ProjectionOptions,
): Projection {
  const minOverlap = resolveMinOverlap(options);
  const chunkGrades = Object.create(null) as Record<string, number>; // keyed by chunk ids: no prototype
  const spanChunks: string[][] = [];
  const spanGrades: number[] = [];
  spans.forEach((span, i) => {
    validateSpan(span, i);
    const hits: Chunk[] = [];
    for (const c of chunksByDoc.get(span.doc) ?? []) {
      if (isRelevantOverlap(c.start, c.end, span.start, span.end, minOverlap)) hits.push(c);
    }
    hits.sort((a, b) => a.ordinal - b.ordinal || a.start - b.start);
    for (const c of hits) {
      const g = chunkGrades[c.id];
      if (g === undefined || span.grade > g) chunkGrades[c.id] = span.grade;
    }
    spanChunks.push(hits.map((c) => c.id));
    spanGrades.push(span.grade);
  });
  return { chunkGrades, spanChunks, spanGrades };
}

/** Summary of projections over many questions (one chunking), for reports. */
export interface ProjectionStats {
  /** Number of evidence spans over all projections. */
  spans: number;
  /** Spans with no relevant chunk in this chunking (they always count as not found by chunk-level recall). */
  spansWithNoRelevantChunk: number;
  /** Mean number of relevant chunks per span over ALL spans (spans with none count as 0); 0 when there are no spans. */
  meanChunksPerSpan: number;
  /** Largest number of relevant chunks of one span; 0 when there are no spans. */
  maxChunksPerSpan: number;
  /** Relevant chunks summed over the projections (a chunk relevant to two questions counts twice). */
  relevantChunks: number;
}

/** Sums up projections (typically every question's projection onto one chunking). Pure. */
export function projectionStats(projections: readonly Projection[]): ProjectionStats {
  let spans = 0;
  let none = 0;
  let total = 0;
  let max = 0;
  let relevantChunks = 0;
  for (const p of projections) {
    for (const ids of p.spanChunks) {
      spans++;
      if (ids.length === 0) none++;
      total += ids.length;
      if (ids.length > max) max = ids.length;
    }
    relevantChunks += Object.keys(p.chunkGrades).length;
  }
  return {
    spans,
    spansWithNoRelevantChunk: none,
    meanChunksPerSpan: spans > 0 ? total / spans : 0,
    maxChunksPerSpan: max,
    relevantChunks,
  };
}

/** One question's chunk-level scores. */
export interface ChunkLevelScore {
  /** `hit_rate@k`, `recall@k`, `precision@k`, `mrr@k`, `ndcg@k`, `ndcg_exp@k`, `map@k`, each in [0, 1]. */
  values: Record<string, number>;
  /** 1-based rank of the first relevant chunk within k, or null when none is in the top k. */
  firstRelevantRank: number | null;
  /** Spans with grade ≥ threshold that have a relevant chunk in the top k (the numerator of recall@k). */
  spansFound: number;
  /** Spans with grade ≥ threshold (the denominator of recall@k), ≥ 1 whenever the question is scored. */
  spansJudged: number;
}

/**
 * Scores a chunk ranking against a projection, with {@link scoreChunkLevel}'s rules, and returns the detail.
 * @returns null when the projection has no chunk with grade ≥ threshold (the question is excluded)
 * @throws HarnessError `MEASURE_UNKNOWN` when k is not an integer ≥ 1, `USAGE` for a bad threshold.
 */
export function evaluateChunkLevel(
  rankedChunkIds: readonly string[],
  projection: Projection,
  k: number,
  options?: ScoreOptions,
): ChunkLevelScore | null {
  const measures = measuresAtK(k);
  const prepared = prepareJudgements(projection.chunkGrades, options);
  if (prepared.relevant === 0) return null;
  const s = scorePrepared(rankedChunkIds, prepared, planMeasures(measures));
  const topK = new Set(rankedChunkIds.slice(0, k));
  let spansJudged = 0;
  let spansFound = 0;
  projection.spanChunks.forEach((ids, i) => {
    if (!(projection.spanGrades[i] >= prepared.threshold)) return;
    spansJudged++;
    if (ids.some((id) => topK.has(id))) spansFound++;
  });
  const values = s.values;
  values[formatMeasure({ family: 'recall', k })] = spansJudged > 0 ? spansFound / spansJudged : 0;
  return { values, firstRelevantRank: s.firstRelevantRank, spansFound, spansJudged };
}

/**
 * Chunk-level measures of one question at cutoff k: `hit_rate@k`, `recall@k`, `precision@k`, `mrr@k`, `ndcg@k`,
 * `ndcg_exp@k`, `map@k`, each in [0, 1].
 *
 * Every measure but recall is the document-level measure (`scoreRanking`, src/score/evaluate.ts, trec_eval
 * semantics) with judgements = `projection.chunkGrades`: a slot is relevant when its chunk's grade ≥ threshold;
 * nDCG's ideal is built from this chunking's relevant chunks (all of them, retrieved or not); precision divides by k;
 * a repeated id is credited once.
 *
 * recall@k is the share of the question's evidence spans (grade ≥ threshold) with at least one of their relevant
 * chunks in the first k slots. A span with no relevant chunk in this chunking counts as not found.
 *
 * @param rankedChunkIds chunk ids in rank order (index 0 = rank 1); may be shorter or longer than k
 * @param k cutoff in ranks, integer ≥ 1
 * @param options `relevanceThreshold`, integer ≥ 1, default 1
 * @returns the values, or null when the projection has no chunk with grade ≥ threshold: such a question is excluded
 *   from the means, as questions with no label are
 * @throws HarnessError `MEASURE_UNKNOWN` when k is not an integer ≥ 1, `USAGE` for a bad threshold.
 */
export function scoreChunkLevel(
  rankedChunkIds: readonly string[],
  projection: Projection,
  k: number,
  options?: ScoreOptions,
): Record<string, number> | null {
  return evaluateChunkLevel(rankedChunkIds, projection, k, options)?.values ?? null;
}

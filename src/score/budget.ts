/**
 * The token-budget view: how much of the evidence the retrieved text covers, and how much of the retrieved text is
 * evidence, in characters, so that chunkings of different sizes compare fairly (ten 100-token chunks and one
 * 1,000-token chunk hand a model the same amount of text). Pure: no disk, no clock, inputs never changed.
 *
 * Over character sets per document (E = union of the evidence spans, R = union of the retrieved chunks' ranges;
 * overlapping ranges count once), summed over documents:
 *
 *   evidenceRecall    = |E ∩ R| / |E|          (0 when E is empty)
 *   evidencePrecision = |E ∩ R| / |R|          (0 when R is empty)
 *   iou               = |E ∩ R| / |E ∪ R|      (0 when both are empty; |E ∪ R| = |E| + |R| − |E ∩ R|)
 *
 * After the token-level recall, precision and IoU of Smith and Troynikov, "Evaluating Chunking Strategies for
 * Retrieval", Chroma technical report, 2024 (there over tokens; here over characters, with overlapping retrieved
 * ranges counted once), computed with sorted merged intervals (O(n log n) in the number of ranges), never with
 * per-character sets.
 */
import { HarnessError } from '../errors.js';
import type { Chunk, EvidenceSpan } from '../types.js';
import { validateSpan } from './evidence.js';

/** A half-open character range `[start, end)` of one document. */
export type Interval = readonly [start: number, end: number];

/** The token-budget measures of one question's retrieved chunks. */
export interface BudgetMeasures {
  /** |E ∩ R| / |E|, in [0, 1]. */
  evidenceRecall: number;
  /** |E ∩ R| / |R|, in [0, 1]. */
  evidencePrecision: number;
  /** |E ∩ R| / |E ∪ R|, in [0, 1]. */
  iou: number;
  /** Σ chunk.tokens over the retrieved chunks, each counted as handed to a model (overlaps counted again). */
  tokens: number;
  /** Σ (chunk.end − chunk.start) over the retrieved chunks, characters, counted like `tokens`. */
  chars: number;
}

/**
 * Sorts and merges intervals: returns a new list of disjoint, non-touching intervals in ascending order covering the
 * same characters. Empty intervals (end ≤ start) are dropped; touching ones (`[0,5)` and `[5,9)`) are joined.
 * Does not change its input.
 */
export function mergeIntervals(intervals: readonly Interval[]): [number, number][] {
  const sorted = intervals.filter(([s, e]) => e > s).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const out: [number, number][] = [];
  for (const [s, e] of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && s <= last[1]) {
      if (e > last[1]) last[1] = e;
    } else {
      out.push([s, e]);
    }
  }
  return out;
}

/** Total length in characters of merged (disjoint) intervals. */
export function totalLength(merged: readonly Interval[]): number {
  let n = 0;
  for (const [s, e] of merged) n += e - s;
  return n;
}

/**
 * Length in characters of the intersection of two merged interval lists (each sorted, disjoint, as
 * {@link mergeIntervals} returns), by a linear two-pointer sweep.
 */
export function intersectionLength(a: readonly Interval[], b: readonly Interval[]): number {
  let i = 0;
  let j = 0;
  let n = 0;
  while (i < a.length && j < b.length) {
    const lo = Math.max(a[i][0], b[j][0]);
    const hi = Math.min(a[i][1], b[j][1]);
    if (hi > lo) n += hi - lo;
    if (a[i][1] < b[j][1]) i++;
    else j++;
  }
  return n;
}

function groupByDoc<T>(items: readonly T[], doc: (t: T) => string, range: (t: T) => Interval): Map<string, Interval[]> {
  const m = new Map<string, Interval[]>();
  for (const t of items) {
    const d = doc(t);
    let list = m.get(d);
    if (list === undefined) m.set(d, (list = []));
    list.push(range(t));
  }
  return m;
}

function checkChunk(c: Chunk): void {
  if (!(Number.isFinite(c.start) && Number.isFinite(c.end) && c.end >= c.start)) {
    throw new RangeError(`chunk ${c.id}: range [${c.start}, ${c.end}) is not a valid [start, end)`);
  }
  if (!(Number.isFinite(c.tokens) && c.tokens >= 0)) {
    throw new RangeError(`chunk ${c.id}: tokens ${c.tokens} is not a finite number >= 0`);
  }
}

/**
 * Character-level coverage of the evidence by the retrieved chunks (formulas in this module's header).
 * @param retrieved the chunks handed to a model (e.g. the top k, or {@link atTokenBudget}'s prefix); any order,
 *   may overlap; ranges are matched to spans by `docId`
 * @param spans the question's evidence; may overlap each other; each checked by `validateSpan`
 * @returns the measures; with no spans, recall and IoU are 0 (such a question has no evidence and is excluded by
 *   the caller)
 * @throws HarnessError `LABEL_INVALID` for a malformed span; RangeError for a malformed chunk (a bug upstream).
 */
export function evidenceCoverage(retrieved: readonly Chunk[], spans: readonly EvidenceSpan[]): BudgetMeasures {
  spans.forEach((s, i) => validateSpan(s, i));
  let tokens = 0;
  let chars = 0;
  for (const c of retrieved) {
    checkChunk(c);
    tokens += c.tokens;
    chars += c.end - c.start;
  }
  const evidence = groupByDoc(spans, (s) => s.doc, (s) => [s.start, s.end]);
  const got = groupByDoc(retrieved, (c) => c.docId, (c) => [c.start, c.end]);
  let e = 0;
  let r = 0;
  let both = 0;
  const mergedR = new Map<string, [number, number][]>();
  for (const [doc, list] of got) {
    const merged = mergeIntervals(list);
    mergedR.set(doc, merged);
    r += totalLength(merged);
  }
  for (const [doc, list] of evidence) {
    const merged = mergeIntervals(list);
    e += totalLength(merged);
    const rm = mergedR.get(doc);
    if (rm !== undefined) both += intersectionLength(merged, rm);
  }
  const union = e + r - both;
  return {
    evidenceRecall: e > 0 ? both / e : 0,
    evidencePrecision: r > 0 ? both / r : 0,
    iou: union > 0 ? both / union : 0,
    tokens,
    chars,
  };
}

/**
 * The longest prefix of a ranking whose token sum is ≤ `budget`: what fits a model's context of `budget` tokens when
 * chunks are passed in rank order. Stops at the first chunk that does not fit (later, smaller chunks are not
 * squeezed in), so a first chunk larger than the budget gives an empty list.
 * @param rankedChunks chunks in rank order (index 0 = rank 1); not changed
 * @param budget tokens of the chunking tokenizer, a number ≥ 0 (`Infinity` keeps everything)
 * @returns a new array, a prefix of `rankedChunks`
 * @throws HarnessError `USAGE` when `budget` is negative or NaN; RangeError for a chunk whose `tokens` is not a
 *   finite number ≥ 0.
 */
export function atTokenBudget(rankedChunks: readonly Chunk[], budget: number): Chunk[] {
  if (typeof budget !== 'number' || !(budget >= 0)) {
    throw new HarnessError('USAGE', `token budget must be a number >= 0, got ${String(budget)}`, {
      remedy: 'give the model context size in tokens, e.g. 512',
    });
  }
  let sum = 0;
  let n = 0;
  for (const c of rankedChunks) {
    checkChunk(c);
    if (sum + c.tokens > budget) break;
    sum += c.tokens;
    n++;
  }
  return rankedChunks.slice(0, n);
}

/**
 * The budget measures keyed for a metrics record at cutoff label `k`: `evidence_recall@k`, `evidence_precision@k`,
 * `evidence_iou@k`, `tokens@k`, `chars@k`. The first three are in [0, 1]; `tokens` and `chars` are counts. These
 * names are not measure families of src/score/measures.ts (`parseMeasure` refuses them).
 * @param k the cutoff in ranks (integer ≥ 1) the retrieved chunks were cut at
 */
export function budgetValues(m: BudgetMeasures, k: number): Record<string, number> {
  return {
    [`evidence_recall@${k}`]: m.evidenceRecall,
    [`evidence_precision@${k}`]: m.evidencePrecision,
    [`evidence_iou@${k}`]: m.iou,
    [`tokens@${k}`]: m.tokens,
    [`chars@${k}`]: m.chars,
  };
}

/**
 * Keyword retrieval: Okapi BM25 over chunks. Served by a compact index of ours (typed-array postings, a score
 * accumulator and a bounded top-k heap); wink-bm25-text-search 3.1.2 is the reference it is proven equal to
 * (test/retrieve/bm25-parity.test.ts: SciFact and TREC-DL, every ranking identical, scores equal) and stays available
 * as {@link buildWinkKeywordIndex}, with its quirks absorbed here.
 *
 * Formula (wink's `consolidate()`; the same as Lucene's BM25Similarity before Lucene 8 dropped the `(k1 + 1)` factor):
 *
 *   score(q, d) = Σ_{t ∈ q, t in the vocabulary} round9( idf(t) · tf(t,d)·(k1 + 1) / (tf(t,d) + k1·(1 − b + b·|d|/avgdl)) )
 *   idf(t)      = ln( 1 + (N − n(t) + 0.5) / (n(t) + 0.5) )
 *
 * N = number of chunks, n(t) = chunks containing term t, tf = occurrences of t in the chunk, |d| = the chunk's number
 * of terms (after {@link keywordTokens}: stop words removed, compounds count their joined form), avgdl = mean |d|.
 * A query term that occurs twice in the query counts twice. idf is always > 0, so every chunk sharing a term with the
 * query gets a positive score. `round9` rounds each term's contribution to 9 decimals (see quirk 5).
 *
 * Engines (all three compute the formula above with the same floating-point operations in the same order, so their
 * scores are equal to the last bit, not merely close):
 * - {@link buildKeywordIndex} = {@link buildCompactBm25Index}: the serving index, any number of chunks.
 * - {@link buildWinkKeywordIndex}: wink-bm25-text-search itself behind the adapter below (the reference; ≥ 3 chunks,
 *   fewer go to the exact engine, quirk 2).
 * - {@link buildExactBm25Index}: a plain Map-based evaluation of the formula (the brute-force oracle of the property
 *   tests and wink's stand-in for 0–2 chunks).
 *
 * wink quirks and what the wink adapter does about each (each has a test named after it in
 * test/retrieve/bm25.test.ts, run against the wink adapter and the compact index alike):
 * 1. Without prep tasks wink indexes the characters of the text, not words → we define one prep task,
 *    {@link keywordTokens}, used for documents and queries.
 * 2. `consolidate()` throws for fewer than 3 documents → collections of 0, 1 or 2 chunks are scored by
 *    {@link buildExactBm25Index}, which evaluates exactly the formula above in our code (no padding documents, which
 *    would change N and avgdl). A test checks that both engines agree on a 3-chunk collection. The compact index has
 *    no such limit.
 * 3. `search(q, 0)` silently means 10 → we never pass the caller's k: we ask wink for every match (limit = N), re-rank,
 *    then cut to k. k = 0 returns `[]`; k larger than the collection returns all matches.
 * 4. Tied scores come out in object-key order (insertion order of wink's internal ids), and wink cuts to `limit`
 *    before we could re-rank → we take all matches and order them with `rankByRule` (score desc, then id desc), so
 *    ties are broken by the project rule even at the k boundary.
 * 5. Term contributions are rounded with `toFixed(precision)`, precision 4 by default (`consolidate()` accepts 4..9)
 *    → we pass 9, the most wink allows; scores carry 9 decimals, so rounding makes ties only below 5e-10.
 * 6. `defineConfig` silently replaces an out-of-range `b` (outside [0, 1]) or `k1` (< 0) by its defaults → we
 *    validate first and throw `HarnessError('CONFIG_INVALID')`; k1/b are always passed explicitly in `bm25Params`.
 */
import { createRequire } from 'node:module';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { HarnessError } from '../errors.js';
import { startWorker } from '../worker-start.js';
import { removeDeadTemporaries } from '../store/temp.js';
import { batchesByChars } from '../batches.js';
import { analyseBatch, createTermTable, type AnalysedBatch } from './bm25-analyse.js';
import { DEFAULT_SPILL_BYTES, MERGE_YIELD_POSTINGS, mergeRuns, mergeRunsAsync, openSpillFolder, SPILL_BYTES_PER_POSTING, SpillRuns, TF_ESCAPE } from './bm25-spill.js';
import type { MergedPostings } from './bm25-spill.js';
import { POSTING_BYTES, PostingsFile } from './bm25-postings-file.js';
import type { AnalyseReply, AnalyseRequest, SlotBuffers } from './bm25-worker.js';
import type { Chunk, Hit } from '../types.js';
import { compareByRule, compareCodePoints, rankByRule, TIE_RULE } from './rank.js';
import { KEYWORD_ANALYSER, keywordTokens } from './tokenize.js';
import { textLength as textLengthOf } from '../load/text-store.js';
import { IdIndex } from '../id-index.js';

const require = createRequire(import.meta.url);

/** The subset of wink-bm25-text-search's API used here. */
interface WinkBm25 {
  defineConfig(cfg: { fldWeights: Record<string, number>; bm25Params: { k1: number; b: number; k: number } }): boolean;
  definePrepTasks(tasks: ((input: string) => string[])[], field?: string): number;
  addDoc(doc: Record<string, string>, id: string): number;
  consolidate(precision?: number): boolean;
  search(text: string, limit?: number): [string, number][];
}
const winkBm25 = require('wink-bm25-text-search') as () => WinkBm25;
const WINK_VERSION = (require('wink-bm25-text-search/package.json') as { version: string }).version;

/** BM25 parameters. */
export interface Bm25Params {
  /** Term-frequency saturation, ≥ 0. Default 1.2 (wink's default, also Lucene's and Robertson et al.'s usual value). */
  k1: number;
  /** Length normalisation, in [0, 1]. Default 0.75 (wink's and Lucene's default). */
  b: number;
}

/** Defaults: wink-bm25-text-search's own `k1 = 1.2`, `b = 0.75` (the values Lucene also uses). */
export const DEFAULT_BM25_PARAMS: Readonly<Bm25Params> = Object.freeze({ k1: 1.2, b: 0.75 });

/** Decimals each term contribution is rounded to (the maximum wink's `consolidate()` accepts). */
export const BM25_PRECISION = 9;

/** The idf formula, for manifests. */
export const BM25_IDF = 'ln(1 + (N - n + 0.5) / (n + 0.5))';

/** A built keyword index over chunks. */
export interface KeywordIndex {
  /** Number of indexed chunks. */
  readonly size: number;
  /**
   * The effective parameters, for manifests: `k1`, `b`, plus `idf` (formula), `precision` (decimals per term),
   * `engine` ({@link COMPACT_ENGINE} for {@link buildKeywordIndex}; `wink-bm25-text-search <version>` or
   * `exact (fewer than 3 chunks)` for the reference engines), `analyser`, `tieRule`.
   */
  readonly params: Bm25Params & Record<string, unknown>;
  /**
   * The top `k` chunks for `query` (k an integer ≥ 0), ordered by `rankByRule`; only chunks that share at least one
   * term with the query (scores > 0). Returns `[]` when no query term is in the index (including empty and stop-word
   * queries). Throws `HarnessError('CONFIG_INVALID')` when k is not an integer ≥ 0.
   */
  search(query: string, k: number): Hit[];
  /** `queries.map((q) => search(q, k))`: one list per query, in order; same errors as {@link search}. */
  searchBatch(queries: readonly string[], k: number): Hit[][];
  /** Releases what the index holds outside the heap (a postings file); later searches may throw. Idempotent. */
  close?(): void;
  /** Bytes of the index's postings on disk (0 or absent: all in memory). */
  readonly postingsFileBytes?: number;
}

/** Validates and fills in BM25 parameters; throws `HarnessError('CONFIG_INVALID')` naming the bad value. */
function resolveParams(params: Partial<Bm25Params> | undefined): Bm25Params {
  const k1 = params?.k1 ?? DEFAULT_BM25_PARAMS.k1;
  const b = params?.b ?? DEFAULT_BM25_PARAMS.b;
  if (typeof k1 !== 'number' || !Number.isFinite(k1) || k1 < 0) {
    throw new HarnessError('CONFIG_INVALID', `bm25.k1 (${String(k1)}) must be a finite number >= 0`, {
      location: { path: 'bm25.k1' },
      remedy: 'use a value such as 1.2 (the default) or 0.9',
    });
  }
  if (typeof b !== 'number' || !Number.isFinite(b) || b < 0 || b > 1) {
    throw new HarnessError('CONFIG_INVALID', `bm25.b (${String(b)}) must be a number in [0, 1]`, {
      location: { path: 'bm25.b' },
      remedy: 'use a value such as 0.75 (the default) or 0.4',
    });
  }
  return { k1, b };
}

function checkK(k: number): void {
  if (!Number.isInteger(k) || k < 0) {
    throw new HarnessError('CONFIG_INVALID', `top-k (${String(k)}) must be an integer >= 0`, {
      location: { path: 'k' },
      remedy: 'use a whole number such as 5 or 10',
    });
  }
}

/** Chunks {@link uniqueIdSteps} checks between two pauses: 2^20. */
const UNIQUE_IDS_STEP = 1 << 20;

/**
 * Throws a plain `Error` naming the first id seen twice (a bug upstream: chunk ids are unique by construction), through
 * an {@link IdIndex} (4-8 bytes a chunk, for any number of chunks). It replaced a `Set` of the ids, which V8 caps at
 * 2^24 (16,777,216) entries ("Set maximum size exceeded": a build over more chunks could not start) and which took
 * 13.7 s and about 1 GB of heap for 14 million ids on this machine, against 4.5 s and 128 MB for the table. As steps:
 * yields every {@link UNIQUE_IDS_STEP} chunks (an asynchronous build turns the event loop there).
 */
function* uniqueIdSteps(chunks: readonly Chunk[]): Generator<void, void, void> {
  const n = chunks.length;
  if (n < 2) return;
  const seen = new IdIndex((i) => chunks[i].id, n);
  for (let i = 0; i < n; i++) {
    if (i % UNIQUE_IDS_STEP === 0 && i > 0) yield;
    const id = chunks[i].id;
    if (seen.add(id, i) !== -1) throw new Error(`buildKeywordIndex: duplicate chunk id ${JSON.stringify(id)}`);
  }
}

function checkUniqueIds(chunks: readonly Chunk[]): void {
  for (const steps = uniqueIdSteps(chunks); !steps.next().done; );
}

/** {@link checkUniqueIds} with a turn of the event loop every {@link UNIQUE_IDS_STEP} chunks. */
async function checkUniqueIdsAsync(chunks: readonly Chunk[]): Promise<void> {
  for (const steps = uniqueIdSteps(chunks); !steps.next().done; ) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Rounds a term contribution the way wink's `consolidate()` does (`+x.toFixed(precision)`). */
function roundTerm(x: number): number {
  return Math.sign(x) * Number(Math.abs(x).toFixed(BM25_PRECISION));
}

/**
 * BM25 evaluated directly in our code with exactly the formula and rounding in this module's header (the engine for
 * collections too small for wink, quirk 2). Works for any number of chunks; exported so tests can compare it with
 * the wink engine. Same contract as {@link buildKeywordIndex}.
 */
export function buildExactBm25Index(chunks: readonly Chunk[], params?: Partial<Bm25Params>): KeywordIndex {
  const { k1, b } = resolveParams(params);
  checkUniqueIds(chunks);
  const n = chunks.length;
  const tfs: Map<string, number>[] = [];
  const lengths: number[] = [];
  const postings = new Map<string, number[]>();
  let total = 0;
  chunks.forEach((chunk, i) => {
    const terms = keywordTokens(chunk.text);
    total += terms.length;
    lengths.push(terms.length);
    const tf = new Map<string, number>();
    for (const t of terms) tf.set(t, (tf.get(t) ?? 0) + 1);
    tfs.push(tf);
    for (const t of tf.keys()) {
      const list = postings.get(t);
      if (list) list.push(i);
      else postings.set(t, [i]);
    }
  });
  const avgdl = n === 0 ? 0 : total / n;
  // weight[t][doc] = the rounded contribution of term t to doc, as wink stores it after consolidate().
  const weights = new Map<string, Map<number, number>>();
  for (const [t, docs] of postings) {
    const idf = Math.log((n - docs.length + 0.5) / (docs.length + 0.5) + 1);
    const w = new Map<number, number>();
    for (const d of docs) {
      const tf = tfs[d].get(t) ?? 0;
      const norm = 1 - b + b * (lengths[d] / avgdl);
      w.set(d, roundTerm(((tf * (k1 + 1)) / (k1 * norm + tf)) * idf));
    }
    weights.set(t, w);
  }
  return {
    size: n,
    params: { k1, b, idf: BM25_IDF, precision: BM25_PRECISION, engine: 'exact (fewer than 3 chunks)', analyser: KEYWORD_ANALYSER, tieRule: TIE_RULE },
    search(query: string, k: number): Hit[] {
      checkK(k);
      if (k === 0) return [];
      const scores = new Map<number, number>();
      for (const t of keywordTokens(query)) {
        const w = weights.get(t);
        if (!w) continue;
        for (const [d, v] of w) scores.set(d, v + (scores.get(d) ?? 0));
      }
      const hits: Hit[] = [...scores].map(([d, score]) => ({ id: chunks[d].id, score }));
      return rankByRule(hits, k);
    },
    searchBatch(queries: readonly string[], k: number): Hit[][] {
      return queries.map((q) => this.search(q, k));
    },
  };
}

/**
 * The reference engine: a BM25 index over `chunks` through wink-bm25-text-search itself (the quirks of this module's
 * header absorbed), for the equality tests and the bench; the sweep serves from {@link buildKeywordIndex}. Collections
 * of ≥ 3 chunks go through wink; 0–2 chunks through {@link buildExactBm25Index} (same formula, same rounding).
 * Holds wink's whole object graph (an object per chunk with a term → weight object, about 1 KB a chunk) for as long
 * as the index lives, and sorts every match on each search.
 *
 * Same contract as {@link buildKeywordIndex}. Does not change its input. Throws `HarnessError('CONFIG_INVALID')` for
 * k1 < 0 or b outside [0, 1] (or non-finite), and a plain `Error` (a bug upstream) for duplicate chunk ids.
 */
export function buildWinkKeywordIndex(chunks: readonly Chunk[], params?: Partial<Bm25Params>): KeywordIndex {
  if (chunks.length < 3) return buildExactBm25Index(chunks, params);
  const { k1, b } = resolveParams(params);
  checkUniqueIds(chunks);
  const engine = winkBm25();
  engine.defineConfig({ fldWeights: { body: 1 }, bm25Params: { k1, b, k: 1 } });
  engine.definePrepTasks([keywordTokens]);
  // wink's ids are our array positions: plain, collision-free keys; mapped back to chunk ids on the way out.
  chunks.forEach((chunk, i) => engine.addDoc({ body: chunk.text }, String(i)));
  engine.consolidate(BM25_PRECISION);
  const n = chunks.length;
  return {
    size: n,
    params: { k1, b, idf: BM25_IDF, precision: BM25_PRECISION, engine: `wink-bm25-text-search ${WINK_VERSION}`, analyser: KEYWORD_ANALYSER, tieRule: TIE_RULE },
    search(query: string, k: number): Hit[] {
      checkK(k);
      if (k === 0) return [];
      // limit = n: every match (quirk 3), sorted by score descending. Keep the first k plus the rest of the tie
      // group at the k-th score, so that rankByRule sees whole tie groups (quirk 4).
      const raw = engine.search(query, n);
      let cut = Math.min(k, raw.length);
      if (cut > 0) while (cut < raw.length && raw[cut][1] === raw[k - 1][1]) cut++;
      const hits: Hit[] = raw.slice(0, cut).map(([i, score]) => ({ id: chunks[Number(i)].id, score }));
      return rankByRule(hits, k);
    },
    searchBatch(queries: readonly string[], k: number): Hit[][] {
      return queries.map((q) => this.search(q, k));
    },
  };
}

/** `params.engine` of the compact serving index. */
export const COMPACT_ENGINE = `compact typed-array BM25 (formula and rounding of wink-bm25-text-search ${WINK_VERSION})`;

/** 10^BM25_PRECISION. */
const SCALE = 1e9;

/**
 * `Number(x.toFixed(9))` for a finite x ≥ 0, the rounding wink's `consolidate()` applies to each term contribution,
 * without `toFixed`'s string round trip where that is provably the same:
 * `toFixed(9)` picks the integer n nearest to the exact x·10⁹ (ties up) and the string `n / 10⁹` converts back to the
 * double nearest n / 10⁹. The computed y = fl(x·10⁹) is off by at most half an ulp: ≤ 2^-18 below 2^35 (x < 34), ≤ 2^-10
 * below 2^43. When y is farther than that from a half-integer (we ask for 3·10⁻⁵, resp. 0.01), `Math.round(y)` is that
 * n, and `n / 1e9` (two exact doubles, one correctly rounded division) is that nearest double. Every other x (about
 * 6 in 100,000 of the first kind) goes through `toFixed` itself.
 */
export function roundTerm9(x: number): number {
  const y = x * SCALE;
  const n = Math.round(y);
  const d = y < 0 ? 1 : Math.abs(y - n);
  if (y < 3.4e10 ? d < 0.49997 : d < 0.49 && y < 8.796093022208e12) return n / SCALE;
  return Number(x.toFixed(BM25_PRECISION));
}

/** True when (score sa, id a) ranks before (sc, c) by the one rule: score descending, then id descending in code point order. */
function ranksBefore(sa: number, a: string, sc: number, c: string): boolean {
  if (sa !== sc) return sa > sc;
  return compareCodePoints(a, c) > 0;
}

/** A growable Int32Array indexed by term id (vocabulary-sized build scratch). */
function grow(a: Int32Array, need: number): Int32Array {
  if (need <= a.length) return a;
  const b = new Int32Array(Math.max(need, a.length * 2));
  b.set(a);
  return b;
}

/** Postings beyond this do not fit the int32 offsets (about 2.1 billion: some 20 million chunks of 100 distinct terms). */
const MAX_POSTINGS = 0x7fffffff;

/** Spilling of a build (see {@link CompactBuilder}): the budget and the folder of the run files. */
interface SpillPlan {
  bytes: number;
  dir: string;
  /** Merged postings of more than this many bytes (5 a posting) go to a postings file in `dir`; Infinity: never. */
  residentBytes: number;
}

/**
 * Merges forward lists ({@link AnalysedBatch}es, chunks in order) from one or more analysers, each with its own term
 * table, into the postings of one index. Global term ids are given at a term's first occurrence in chunk order, so
 * the index does not depend on how the chunks were split into batches or which thread analysed which batch.
 *
 * With a spill plan, the forward lists are a block of at most `plan.bytes / 10` postings (5 bytes each, and as much
 * again for the sorted copy a spill makes); when the next chunk would not fit, the block is sorted into a run file
 * (bm25-spill.ts) and its memory reused. `finish` then writes the last block as a run too and merges the runs into the
 * postings, the same arrays as the in-memory scatter's. Builds whose forward lists never pass the budget never
 * touch the disk (the in-memory path, unchanged).
 */
class CompactBuilder {
  private readonly dict = new Map<string, number>();
  /**
   * Forward lists: (term id, tf) per posting, chunk after chunk, in one pair of arrays sized up front from the text
   * length (see {@link estimatePostings}) and doubled if that was too little. One large allocation instead of many
   * blocks: V8 starts a full garbage collection for about every 64 MB of new external (ArrayBuffer) memory, each
   * walking the whole heap (the corpus); pages of the estimate that are never written are never made resident.
   */
  private fwdTerm: Int32Array;
  private fwdTf: Uint8Array;
  /** Entries in the forward arrays (the current block's, when spilling). */
  private fwdLength = 0;
  /** Postings before the current block (in earlier runs): `docStart` holds global entry numbers, `fwdTerm` local ones. */
  private fwdBase = 0;
  /** First chunk of the current block. */
  private blockDoc = 0;
  /** Entries the block may hold before it is spilled (Infinity: no spilling). */
  private readonly blockCap: number;
  private runs: SpillRuns | undefined;
  /** Keyed by the local entry index. */
  private readonly fwdBigTf = new Map<number, number>();
  private readonly docStart: Int32Array;
  private readonly lengths: Int32Array;
  private df: Int32Array = new Int32Array(1024);
  private total = 0;
  /** Chunks merged so far (the position of the next one). */
  merged = 0;
  /** Per analyser: the local terms it has sent so far, and local id → global id (-1: not mapped yet). */
  private readonly sources: { terms: string[]; map: Int32Array }[] = [];

  constructor(
    private readonly n: number,
    expectedPostings: number,
    private readonly spill?: SpillPlan,
  ) {
    this.docStart = new Int32Array(n + 1);
    this.lengths = new Int32Array(n);
    this.blockCap = spill ? Math.max(1, Math.floor(spill.bytes / SPILL_BYTES_PER_POSTING)) : Infinity;
    const cap = Math.min(MAX_POSTINGS, this.blockCap, Math.max(1024, Math.ceil(expectedPostings)));
    this.fwdTerm = new Int32Array(cap);
    this.fwdTf = new Uint8Array(cap);
  }

  /** Room for `need` forward-list entries in all (at most the block's cap, unless one chunk alone needs more). */
  private reserve(need: number): void {
    if (need <= this.fwdTerm.length) return;
    const cap = Math.min(MAX_POSTINGS, Math.max(need, Math.min(this.blockCap, this.fwdTerm.length * 2)));
    const term = new Int32Array(cap);
    term.set(this.fwdTerm.subarray(0, this.fwdLength));
    this.fwdTerm = term;
    const tf = new Uint8Array(cap);
    tf.set(this.fwdTf.subarray(0, this.fwdLength));
    this.fwdTf = tf;
  }

  /** Appends the next `batch.lengths.length` chunks, analysed by analyser number `source`. */
  add(source: number, batch: AnalysedBatch): void {
    const src = (this.sources[source] ??= { terms: [], map: new Int32Array(1024).fill(-1) });
    for (const t of batch.newTerms) src.terms.push(t);
    if (src.map.length < src.terms.length) {
      const before = src.map.length;
      src.map = grow(src.map, src.terms.length);
      src.map.fill(-1, before);
    }
    const { map, terms: localTerms } = src;
    const { dict, fwdBigTf, docStart, lengths } = this;
    const { terms, tfs, distinct } = batch;
    if (this.merged + batch.lengths.length > this.n) throw new Error('buildKeywordIndex: more analysed chunks than chunks');
    let p = 0;
    for (let c = 0; c < batch.lengths.length; c++) {
      const d = this.merged++;
      if (this.fwdLength + distinct[c] > this.blockCap && d > this.blockDoc) this.spillBlock(d);
      let e = this.fwdLength;
      docStart[d] = this.fwdBase + e;
      lengths[d] = batch.lengths[c];
      this.total += batch.lengths[c];
      if (this.fwdBase + e + distinct[c] > MAX_POSTINGS) {
        throw new Error(`buildKeywordIndex: more than ${MAX_POSTINGS} postings (${this.n} chunks); split the collection`);
      }
      this.reserve(e + distinct[c]);
      const { fwdTerm, fwdTf } = this;
      for (const end = p + distinct[c]; p < end; p++, e++) {
        const local = terms[p];
        let g = map[local];
        if (g < 0) {
          const term = localTerms[local];
          let known = dict.get(term);
          if (known === undefined) {
            known = dict.size;
            dict.set(term, known);
            if (known >= this.df.length) this.df = grow(this.df, known + 1);
          }
          g = map[local] = known;
        }
        const tf = tfs[p];
        if (tf >= TF_ESCAPE) {
          fwdBigTf.set(e, tf);
          fwdTf[e] = TF_ESCAPE;
        } else fwdTf[e] = tf;
        fwdTerm[e] = g;
        this.df[g]++;
      }
      this.fwdLength = e;
    }
  }

  /**
   * Writes the current block (chunks `blockDoc .. upTo − 1`) as a run file and empties it. The first spill opens the
   * folder (removing dead builds' runs). Throws `HarnessError('CACHE_FAILED')` when the folder or file cannot be written.
   */
  private spillBlock(upTo: number): void {
    const plan = this.spill as SpillPlan;
    if (this.runs === undefined) {
      openSpillFolder(plan.dir);
      this.runs = new SpillRuns(plan.dir);
    }
    const docs = upTo - this.blockDoc;
    const docStart = new Int32Array(docs + 1);
    for (let i = 0; i < docs; i++) docStart[i] = this.docStart[this.blockDoc + i] - this.fwdBase;
    docStart[docs] = this.fwdLength;
    this.runs.write({ firstDoc: this.blockDoc, docStart, term: this.fwdTerm, tf: this.fwdTf, bigTf: this.fwdBigTf }, this.dict.size);
    this.fwdBase += this.fwdLength;
    this.fwdLength = 0;
    this.fwdBigTf.clear();
    this.blockDoc = upTo;
  }

  /** Run files written by this build (0: the in-memory path) and their bytes (kept after the files are removed). */
  get spilled(): { runs: number; bytes: number } {
    return { runs: this.runs?.written ?? 0, bytes: this.runs?.bytes ?? 0 };
  }

  /** Removes this build's run files (after `finish`, or when the build failed); never throws. */
  dispose(): void {
    this.runs?.dispose();
  }

  /**
   * The postings in CSR form: the forward lists scattered in memory, or (after a spill) the runs merged; with `pause`
   * (after a spill only) the merge is {@link mergeRunsAsync}'s, which turns the event loop every `pause` postings.
   */
  private postings(): MergedPostings;
  private postings(pause: number): MergedPostings | Promise<MergedPostings>;
  private postings(pause?: number): MergedPostings | Promise<MergedPostings> {
    const vocab = this.dict.size;
    const { df } = this;
    if (this.runs !== undefined) {
      const runs = this.runs;
      // The forward arrays are dropped (not held by a local) before the merge allocates the final ones.
      if (this.merged > this.blockDoc) this.spillBlock(this.merged);
      this.fwdTerm = new Int32Array(0);
      this.fwdTf = new Uint8Array(0);
      runs.releaseScratch();
      // Read buffers: half the budget over the runs, 64 KiB to 1 MiB each (a larger group grows its buffer).
      const files = runs.files;
      const plan = this.spill as SpillPlan;
      const buffer = Math.max(64 * 1024, Math.min(1 << 20, Math.floor(plan.bytes / 2 / files.length)));
      // this.fwdBase + this.fwdLength: every posting (the last block was just spilled, so fwdLength is 0).
      const toFile = POSTING_BYTES * (this.fwdBase + this.fwdLength) > plan.residentBytes ? plan.dir : undefined;
      if (pause === undefined) {
        try {
          return mergeRuns(files, df.subarray(0, vocab), buffer, toFile);
        } finally {
          runs.dispose();
        }
      }
      return mergeRunsAsync(files, df.subarray(0, vocab), buffer, pause, toFile).finally(() => runs.dispose());
    }
    const { n, fwdTerm, fwdTf, fwdBigTf, docStart } = this;
    const postings = this.fwdLength;
    // Chunk positions ascending within a term (wink's order).
    const offsets = new Int32Array(vocab + 1);
    for (let t = 0; t < vocab; t++) offsets[t + 1] = offsets[t] + df[t];
    const cursor = offsets.slice(0, vocab);
    const postDoc = new Int32Array(postings);
    const postTf = new Uint8Array(postings);
    const bigTf = new Map<number, number>();
    for (let d = 0; d < n; d++) {
      for (let e = docStart[d], end = docStart[d + 1]; e < end; e++) {
        const p = cursor[fwdTerm[e]]++;
        postDoc[p] = d;
        const tf = fwdTf[e];
        postTf[p] = tf;
        if (tf === TF_ESCAPE) bigTf.set(p, fwdBigTf.get(e) as number);
      }
    }
    return { offsets, postDoc, postTf, bigTf };
  }

  /**
   * Scatters the forward lists into CSR postings (or merges the runs, removing them), drops the forward lists and
   * returns the index; all chunks must be merged.
   */
  finish(chunks: readonly Chunk[], k1: number, b: number, layout: ResolvedLayout = resolveLayout({})): CompactBm25 {
    this.checkMerged();
    return this.index(chunks, k1, b, layout, this.postings());
  }

  /**
   * {@link finish} whose merge of spilled runs turns the event loop every `pause` postings ({@link mergeRunsAsync};
   * default {@link MERGE_YIELD_POSTINGS}), so a build's last minutes do not hold the thread other units' workers wait
   * on. The same index, element for element; without a spill it is `finish` itself.
   */
  async finishAsync(chunks: readonly Chunk[], k1: number, b: number, layout: ResolvedLayout = resolveLayout({}), pause = MERGE_YIELD_POSTINGS): Promise<CompactBm25> {
    this.checkMerged();
    const index = this.index(chunks, k1, b, layout, await this.postings(pause), true);
    // The block-max pass, window by window, with a turn of the event loop between windows.
    for (const steps = index.blockSteps(); !steps.next().done; ) await new Promise<void>((resolve) => setImmediate(resolve));
    return index;
  }

  /** Checks that every chunk was merged and closes the last chunk's forward list (before the postings are made). */
  private checkMerged(): void {
    if (this.merged !== this.n) throw new Error(`buildKeywordIndex: ${this.merged} of ${this.n} chunks analysed`);
    this.docStart[this.n] = this.fwdBase + this.fwdLength;
  }

  /** The index over `chunks` from their postings; drops the forward lists. */
  private index(chunks: readonly Chunk[], k1: number, b: number, layout: ResolvedLayout, postings: MergedPostings, deferBlocks = false): CompactBm25 {
    const { n, dict, fwdBigTf, lengths, df } = this;
    const ids: string[] = new Array<string>(n);
    for (let d = 0; d < n; d++) ids[d] = chunks[d].id;
    const vocab = dict.size;
    const { offsets, postDoc, postTf, bigTf, file } = postings;
    this.fwdTerm = new Int32Array(0);
    this.fwdTf = new Uint8Array(0);
    fwdBigTf.clear();
    this.sources.length = 0;
    // As wink's consolidate(): idf per term (k = 1), normalisation per chunk.
    const idf = new Float64Array(vocab);
    for (let t = 0; t < vocab; t++) idf[t] = Math.log((n - df[t] + 0.5) / (df[t] + 0.5) + 1);
    const avgdl = this.total / n;
    const k1norm = new Float64Array(n);
    for (let d = 0; d < n; d++) k1norm[d] = k1 * (1 - b + b * (lengths[d] / avgdl));
    return new CompactBm25(ids, dict, offsets, file ?? { postDoc, postTf }, bigTf, idf, k1norm, lengths, k1 + 1, {
      k1,
      b,
      idf: BM25_IDF,
      precision: BM25_PRECISION,
      engine: COMPACT_ENGINE,
      analyser: KEYWORD_ANALYSER,
      tieRule: TIE_RULE,
    }, layout, deferBlocks);
  }
}

/**
 * Chunk positions per block of a search (see `CompactBm25.search`): 32,768 chunks' accumulator, seen mask and
 * normalisation take 544 KB, about one core's L2 cache.
 */
export const SEARCH_BLOCK_DOCS = 32_768;

/**
 * Forward-list entries (postings) to reserve for `chars` characters of chunk text: one per 8 characters. Measured on whole documents:
 * one per 10.6 characters on the bench:scale corpora, 12.5 on TREC-DL 2019 5k, 15.3 on SciFact; text in scripts
 * written without spaces has far fewer. Too little costs a doubling copy; too much costs address space only.
 */
function estimatePostings(chars: number): number {
  return chars / 8;
}

function textLength(chunks: readonly Chunk[]): number {
  let chars = 0;
  for (const c of chunks) chars += textLengthOf(c);
  return chars;
}

/** Target characters of chunk text per analysis batch. */
export const KEYWORD_BATCH_CHARS = 256 * 1024;
/** Below this many characters of chunk text in all, {@link buildKeywordIndexParallel} analyses in-process. */
export const KEYWORD_IN_PROCESS_CHARS = 4 * 1024 * 1024;
/** Result slots per worker thread: batches a worker may have analysed or be analysing ahead of the merge. */
const SLOTS_PER_THREAD = 3;

function textsOf(chunks: readonly Chunk[], from: number, to: number): string[] {
  const texts = new Array<string>(to - from);
  for (let i = from; i < to; i++) texts[i - from] = chunks[i].text;
  return texts;
}

/**
 * Builds the BM25 serving index over `chunks` (their `text`, analysed by {@link keywordTokens}) with the formula and
 * rounding in this module's header, evaluated with the same floating-point operations in the same order as wink's
 * `consolidate()` and `search()`, so scores are equal to wink's to the last bit (proven on SciFact and TREC-DL by
 * test/retrieve/bm25-parity.test.ts, and against {@link buildExactBm25Index} by property tests). Any number of chunks,
 * 0 included. `params` default to {@link DEFAULT_BM25_PARAMS}. In-process, one thread; {@link buildKeywordIndexParallel}
 * builds the same index with the analysis on worker threads.
 *
 * Layout (5 bytes a posting): a `Map` term → term id; postings in CSR form by term id (`Int32Array` offsets,
 * `Int32Array` chunk positions in ascending order, `Uint8Array` term frequencies, those ≥ 255 in a side map); per
 * term its idf (`Float64Array`), per chunk k1·(1 − b + b·|d|/avgdl) (`Float64Array`); the chunk id strings held once
 * (the caller's strings, not copies; the chunk texts are not kept). The rounded term contribution of wink's
 * `consolidate()` is recomputed from these at query time, with the same operations, so it is the same double wink
 * stores, at a third of the memory of storing it (12 bytes a posting). Search scratch: a `Float64Array`
 * accumulator, a seen mask and a touched list (13 bytes a chunk), reused by every search (searches are synchronous).
 * Build: batches of chunks are analysed into forward lists (distinct terms with their frequencies, bm25-analyse.ts)
 * and merged in chunk order into forward lists of (term id, tf) (5 bytes a posting, in one pair of arrays reserved
 * at one posting per 8 characters of text, untouched pages costing address space only); a counting pass scatters
 * them into the postings and drops them: peak ≈ 10 bytes a posting plus the dictionary (15 while a reserve that was
 * too small is doubled). wink is not
 * involved (its object graph is never built): equality with wink is the tests' business.
 *
 * `search(query, k)` analyses the query and, by default from {@link MAXSCORE_MIN_CHUNKS} chunks on (`layout.topK`), finds the exact top k with
 * block-max MaxScore (Turtle & Flood 1995 with the block-max bounds of Ding & Suel 2011, as in Mallia et al.'s
 * "BMM", ECIR 2019; see `CompactBm25.searchMaxScore` for the algorithm and why no chunk of the top k is pruned under
 * floating-point rounding and ties): chunks that cannot reach the k-th score are never fully scored, and the long
 * lists of common terms are mostly skipped. The bounds are stored with the index, built with it: per block of
 * {@link BLOCK_MAX_POSTINGS} postings of a term its largest contribution (float32, rounded up) and last chunk
 * position, 8 bytes a block (about 1/40 of the postings' memory). Its scratch, reused by every search: 8 bytes per
 * window position plus 12 per window position and query term, and 32 KB per query term of memoised contributions
 * (about 0.7 MB for 16 terms).
 * With `topK: 'exhaustive'` it adds each query term's contributions into the accumulator (query-term order, as
 * wink sums them) and keeps the best k of the touched chunks in a bounded heap: O(postings read + m log k) for m
 * matching chunks, plus O(query terms × chunks / 32,768) for the blocks ({@link SEARCH_BLOCK_DOCS}). Both return
 * the same ids with the same scores (bit for bit) in the one rule's order (score descending, then id descending in
 * code point order).
 *
 * Does not change its input. Throws `HarnessError('CONFIG_INVALID')` for k1 < 0 or b outside [0, 1] (or non-finite),
 * and a plain `Error` for duplicate chunk ids (a bug upstream) or more than 2^31 − 1 postings.
 */
export function buildCompactBm25Index(chunks: readonly Chunk[], params?: Partial<Bm25Params>, layout: CompactLayoutOptions = {}): KeywordIndex {
  const { k1, b } = resolveParams(params);
  checkUniqueIds(chunks);
  const builder = new CompactBuilder(chunks.length, estimatePostings(textLength(chunks)));
  const table = createTermTable();
  for (const [from, to] of batchesByChars(chunks, KEYWORD_BATCH_CHARS)) builder.add(0, analyseBatch(textsOf(chunks, from, to), table));
  return builder.finish(chunks, k1, b, resolveLayout(layout));
}

/** Layout options of the compact index, for tests and benches (results never depend on them). */
export interface CompactLayoutOptions {
  /** Chunk positions per block of the exhaustive search (integer ≥ 1); default {@link SEARCH_BLOCK_DOCS}. */
  searchBlockDocs?: number;
  /**
   * How `search` finds the top k: `'maxscore'` (MaxScore dynamic pruning), `'exhaustive'` (every posting of every
   * query term scored, term at a time in blocks: the reference the pruned search is proven equal to), or `'auto'`
   * (default): MaxScore for indexes of at least {@link MAXSCORE_MIN_CHUNKS} chunks, exhaustive below (where reading
   * every posting is cheaper than MaxScore's bookkeeping). Same ids, same scores to the last bit, same order in all cases.
   */
  topK?: TopKStrategy;
  /** Chunk positions per window of the MaxScore search (a power of two, 1..2^30); default {@link MAXSCORE_WINDOW_DOCS}. */
  maxScoreWindowDocs?: number;
  /** Postings per window of the block-max pass (integer ≥ 1); default {@link BLOCKS_WINDOW_POSTINGS}, 2^22. */
  blockWindowPostings?: number;
  /** Postings per block of the block-max bounds (integer in [1, 2^20]); default {@link BLOCK_MAX_POSTINGS}. */
  blockMaxPostings?: number;
}

/**
 * Postings per block of the block-max bounds stored with the index (8 bytes a block: its maximum contribution as a
 * float32 rounded up, and its last chunk position).
 */
export const BLOCK_MAX_POSTINGS = 64;

/**
 * Chunk positions per window of the MaxScore search: term bounds are taken per window (8 bytes per window and
 * searched term, kept with the index), and each window re-sorts the query's terms by their bounds there.
 */
export const MAXSCORE_WINDOW_DOCS = 1024;

/** See {@link CompactLayoutOptions.topK}. */
export type TopKStrategy = 'auto' | 'maxscore' | 'exhaustive';

/**
 * With `topK: 'auto'`, indexes of at least this many chunks search with MaxScore. Measured with bench:bm25 (depth
 * 100, one index, both searches interleaved): at SciFact's 5,183 chunks MaxScore ran at 0.66× the exhaustive
 * search's queries/s, at 50k synthetic chunks about 1.2-1.4×, at 200k 1.66×.
 */
export const MAXSCORE_MIN_CHUNKS = 32_768;

/** {@link CompactLayoutOptions} with defaults filled in. */
interface ResolvedLayout {
  blockDocs: number;
  topK: TopKStrategy;
  windowShift: number;
  blockPostings: number;
  blockWindow: number;
}

function resolveLayout(layout: CompactLayoutOptions): ResolvedLayout {
  const v = layout.searchBlockDocs ?? SEARCH_BLOCK_DOCS;
  if (!Number.isInteger(v) || v < 1) throw new Error(`searchBlockDocs (${String(v)}) must be an integer >= 1`);
  const topK = layout.topK ?? 'auto';
  if (topK !== 'auto' && topK !== 'maxscore' && topK !== 'exhaustive') throw new Error(`topK (${String(topK)}) must be 'auto', 'maxscore' or 'exhaustive'`);
  const w = layout.maxScoreWindowDocs ?? MAXSCORE_WINDOW_DOCS;
  if (!Number.isInteger(w) || w < 1 || w > 2 ** 30 || (w & (w - 1)) !== 0) throw new Error(`maxScoreWindowDocs (${String(w)}) must be a power of two in [1, 2^30]`);
  const bp = layout.blockMaxPostings ?? BLOCK_MAX_POSTINGS;
  if (!Number.isInteger(bp) || bp < 1 || bp > 2 ** 20) throw new Error(`blockMaxPostings (${String(bp)}) must be an integer in [1, 2^20]`);
  const bw = layout.blockWindowPostings ?? BLOCKS_WINDOW_POSTINGS;
  if (!Number.isInteger(bw) || bw < 1) throw new Error(`blockWindowPostings (${String(bw)}) must be an integer >= 1`);
  return { blockDocs: v, topK, windowShift: Math.log2(w), blockPostings: bp, blockWindow: bw };
}

/** Options of {@link buildKeywordIndexParallel}. */
export interface KeywordBuildOptions extends CompactLayoutOptions {
  /** Worker threads that analyse (integer ≥ 1); default `min(2, os.availableParallelism())`. */
  threads?: number;
  /** Aborts the build: the workers are stopped and the promise rejects with `signal.reason`. */
  signal?: AbortSignal;
  /** Called after each merged batch with chunks done so far and the total (0 ≤ done ≤ total). Must not throw. */
  onProgress?: (doneChunks: number, totalChunks: number) => void;
  /** Characters of chunk text per batch (default {@link KEYWORD_BATCH_CHARS}); for tests. */
  batchChars?: number;
  /** In-process below this many characters in all (default {@link KEYWORD_IN_PROCESS_CHARS}); for tests. */
  inProcessChars?: number;
  /**
   * Budget in bytes (> 0; `Infinity`: never spill) of the build's posting buffers, outside the final index: the
   * forward lists (5 bytes a posting) and the sorted copy a spill makes (5 more). When a block of forward lists would
   * pass `spillBytes / 10` postings it is sorted into a run file in `spillDir` and its memory reused; the runs are
   * merged into the final arrays at the end (bm25-spill.ts). Default {@link DEFAULT_SPILL_BYTES} (1 GiB). The index
   * is the same, array for array, whatever the budget. The sweep passes its `bm25BuildBytes` share of `limits.memory`.
   */
  spillBytes?: number;
  /**
   * Folder of the run files (created when the first run is written; run files of dead builds in it are removed when
   * the build starts). Default {@link DEFAULT_SPILL_DIR}; the sweep passes `<cacheDir>/bm25-runs`.
   */
  spillDir?: string;
  /** Called once, after the merge, when the build spilled: run files written and their bytes in all. Must not throw. */
  onSpill?: (runs: number, bytes: number) => void;
  /**
   * Postings the merge of spilled runs copies between two turns of the event loop (a whole number ≥ 1; default
   * {@link MERGE_YIELD_POSTINGS}, 2^20): at 10M documents the merge took two minutes of the main thread, during which
   * the chunkers' workers got no new batches (docs/scale.md, session 15). The index does not depend on it.
   */
  mergePause?: number;
  /**
   * Bytes (> 0; default `Infinity`) the finished index's postings may hold in memory, at 5 bytes a posting: a build
   * that spilled and has more postings than that merges them into a postings file in `spillDir` instead
   * (bm25-postings-file.ts), and each search reads its terms' postings from it (checked by CRC-32). The rankings and
   * scores are the same, bit for bit; a search then costs a read of its terms' postings. Builds that never spill
   * keep their postings in memory (they are under `spillBytes / 2`). The sweep passes its `bm25ResidentBytes` share
   * of `limits.memory` over `concurrency`.
   */
  residentPostingsBytes?: number;
}

/** Default folder of a spilling build's run files: `<os.tmpdir()>/retrieval-sweep-bm25-runs`. */
export const DEFAULT_SPILL_DIR = path.join(tmpdir(), 'retrieval-sweep-bm25-runs');

/** Folder of the sweep's BM25 run files under the cache folder. */
export const SPILL_SUBFOLDER = 'bm25-runs';

/**
 * The index of {@link buildCompactBm25Index}`(chunks, params)`, the same in every term id, posting and score, built
 * with the analysis (the analyser, {@link keywordTokens}, is most of a build's time) on `threads` worker threads:
 * batches of consecutive chunks (about {@link KEYWORD_BATCH_CHARS} characters each) go to the workers, each worker
 * numbering terms in a table of its own (bm25-analyse.ts) and writing each batch's forward lists into one of its
 * result slots in shared memory (bm25-worker.ts), and this thread merges them in chunk order into the postings. The
 * workers' heaps hold only their term tables, so the per-token garbage of the analyser is collected in small heaps,
 * not beside the corpus, and this thread allocates almost nothing per batch. Inputs under
 * {@link KEYWORD_IN_PROCESS_CHARS} characters run in-process (starting a worker costs ~0.1-0.5 s). Memory: the
 * one-thread build's (forward lists ≈ 5 bytes a posting, then the postings) plus, per worker, its term table and
 * 3 slots of about 16 bytes per chunk and per forward-list entry of a batch. With `spillBytes` (default
 * {@link DEFAULT_SPILL_BYTES}) the forward lists are held in blocks of at most `spillBytes / 10` postings, each sorted
 * into a run file in `spillDir` when full, and the runs merged into the postings at the end (bm25-spill.ts): the
 * same index, array for array; the transient memory is then about `spillBytes` during the analysis and the final
 * postings plus a read buffer per run during the merge (half the budget over the runs, 64 KiB to 1 MiB each). The
 * spill runs on this thread, so it works alike with any `threads`.
 *
 * Rejects with what {@link buildCompactBm25Index} throws, `HarnessError('CONFIG_INVALID')` when `threads` is not an
 * integer ≥ 1 or `spillBytes` is not > 0, `HarnessError('CACHE_FAILED')` when the spill folder or a run file cannot be
 * written (run files are removed however the build ends), and a plain `Error` for `searchBlockDocs` < 1,
 * `batchChars` < 1 or `inProcessChars` < 0 (all before any work); with `signal.reason` when aborted, and what `onProgress` throws; a worker's failure rejects with a plain
 * `Error` (a bug) carrying its stack. Workers are stopped and the abort listener removed however the build ends.
 */
export async function buildKeywordIndexParallel(
  chunks: readonly Chunk[],
  params?: Partial<Bm25Params>,
  options: KeywordBuildOptions = {},
): Promise<KeywordIndex> {
  const { k1, b } = resolveParams(params);
  const threads = options.threads ?? defaultKeywordThreads();
  if (!Number.isInteger(threads) || threads < 1) {
    throw new HarnessError('CONFIG_INVALID', `keyword threads (${String(threads)}) must be an integer >= 1`, {
      location: { path: 'threads' },
      remedy: 'pass threads: 1 or 2',
    });
  }
  const layout = resolveLayout(options);
  const batchChars = options.batchChars ?? KEYWORD_BATCH_CHARS;
  const inProcessChars = options.inProcessChars ?? KEYWORD_IN_PROCESS_CHARS;
  if (!(batchChars >= 1) || !(inProcessChars >= 0)) {
    throw new Error(`buildKeywordIndexParallel: batchChars (${batchChars}) must be >= 1 and inProcessChars (${inProcessChars}) >= 0`);
  }
  const spillBytes = options.spillBytes ?? DEFAULT_SPILL_BYTES;
  if (typeof spillBytes !== 'number' || !(spillBytes > 0)) {
    throw new HarnessError('CONFIG_INVALID', `BM25 build memory (spillBytes ${String(spillBytes)}) must be a number of bytes > 0`, {
      location: { path: 'spillBytes' },
      remedy: 'give a budget such as 268435456 (256 MiB), or Infinity to never spill',
    });
  }
  if (options.mergePause !== undefined && !(Number.isInteger(options.mergePause) && options.mergePause >= 1))
    throw new HarnessError('CONFIG_INVALID', `mergePause (${options.mergePause}) must be a whole number of postings >= 1`, {
      location: { path: 'mergePause' },
      remedy: `leave it out for the default ${MERGE_YIELD_POSTINGS}`,
    });
  const residentBytes = options.residentPostingsBytes ?? Infinity;
  if (typeof residentBytes !== 'number' || !(residentBytes > 0)) {
    throw new HarnessError('CONFIG_INVALID', `BM25 resident postings (residentPostingsBytes ${String(residentBytes)}) must be a number of bytes > 0`, {
      location: { path: 'residentPostingsBytes' },
      remedy: 'give a budget such as 805306368 (768 MiB), or Infinity to keep every index in memory',
    });
  }
  await checkUniqueIdsAsync(chunks);
  const { signal, onProgress } = options;
  signal?.throwIfAborted();
  const ranges = batchesByChars(chunks, batchChars);
  const n = chunks.length;
  const chars = textLength(chunks);
  const spill = spillBytes === Infinity ? undefined : { bytes: spillBytes, dir: options.spillDir ?? DEFAULT_SPILL_DIR, residentBytes };
  // A killed build's runs go now, whether or not this build spills (a missing folder is nothing to do).
  if (spill) removeDeadTemporaries(spill.dir);
  const builder = new CompactBuilder(n, estimatePostings(chars), spill);
  try {
    const index = await buildWith(builder, chunks, ranges, threads, chars < inProcessChars, k1, b, layout, options);
    const { runs, bytes } = builder.spilled;
    if (runs > 0) options.onSpill?.(runs, bytes);
    return index;
  } finally {
    builder.dispose();
  }
}

/** The analysis and merge of {@link buildKeywordIndexParallel} into `builder` (which the caller disposes). */
async function buildWith(
  builder: CompactBuilder,
  chunks: readonly Chunk[],
  ranges: [number, number][],
  threads: number,
  small: boolean,
  k1: number,
  b: number,
  layout: ResolvedLayout,
  options: KeywordBuildOptions,
): Promise<KeywordIndex> {
  const { signal, onProgress } = options;
  const n = chunks.length;
  if (small || threads === 1 || ranges.length < 2) {
    const table = createTermTable();
    for (const [from, to] of ranges) {
      signal?.throwIfAborted();
      builder.add(0, analyseBatch(textsOf(chunks, from, to), table));
      onProgress?.(builder.merged, n);
    }
    if (ranges.length === 0) onProgress?.(0, 0);
    return builder.finish(chunks, k1, b, layout);
  }
  const workers = Array.from({ length: Math.min(threads, ranges.length) }, () => startWorker('./bm25-worker', import.meta.url));
  let failBuild: (e: unknown) => void = () => {};
  const onAbort = (): void => failBuild(signal?.reason);
  try {
    await new Promise<void>((resolve, reject) => {
      // Each worker has SLOTS_PER_THREAD result slots in shared memory (bm25-worker.ts); a slot is given a new batch
      // only after its last one was merged, which also bounds the batches analysed ahead of the merge.
      const slotMemory: SlotBuffers[][] = workers.map(() => []);
      const freeSlots: number[][] = workers.map(() => Array.from({ length: SLOTS_PER_THREAD }, (_, i) => i));
      const done: (Extract<AnalyseReply, { slot: number }> | undefined)[] = new Array(ranges.length);
      const owner = new Int32Array(ranges.length);
      let next = 0;
      let merged = 0;
      let over = false;
      const fail = (e: unknown): void => {
        if (over) return;
        over = true;
        reject(e);
      };
      const pump = (): void => {
        for (let w = 0; w < workers.length; w++) {
          while (freeSlots[w].length > 0 && next < ranges.length) {
            const id = next++;
            owner[id] = w;
            const [from, to] = ranges[id];
            workers[w].postMessage({ id, slot: freeSlots[w].pop() as number, texts: textsOf(chunks, from, to) } satisfies AnalyseRequest);
          }
        }
      };
      failBuild = fail;
      signal?.addEventListener('abort', onAbort, { once: true });
      workers.forEach((worker, w) => {
        worker.on('message', (m: AnalyseReply) => {
          if (over) return;
          if ('error' in m) return fail(new Error(`keyword analysis worker: ${m.error}`));
          if (m.buffers) slotMemory[w][m.slot] = m.buffers;
          done[m.id] = m;
          try {
            while (!over && merged < ranges.length && done[merged] !== undefined) {
              const r = done[merged] as Extract<AnalyseReply, { slot: number }>;
              const src = owner[merged];
              const mem = slotMemory[src][r.slot];
              builder.add(src, {
                newTerms: r.newTerms,
                lengths: new Int32Array(mem.chunkBuf, 0, r.chunks),
                distinct: new Int32Array(mem.chunkBuf, mem.chunkCap * 4, r.chunks),
                terms: new Int32Array(mem.entryBuf, 0, r.entries),
                tfs: new Int32Array(mem.entryBuf, mem.entryCap * 4, r.entries),
              });
              freeSlots[src].push(r.slot);
              done[merged++] = undefined;
              onProgress?.(builder.merged, n);
            }
          } catch (e) {
            return fail(e);
          }
          if (over) return;
          if (merged === ranges.length) {
            over = true;
            return resolve();
          }
          pump();
        });
        worker.on('error', (e) => fail(new Error(`keyword analysis worker failed: ${e.message}`, { cause: e })));
        worker.on('exit', (code) => fail(new Error(`keyword analysis worker exited (code ${code}) during a build`)));
      });
      pump();
    });
  } finally {
    signal?.removeEventListener('abort', onAbort);
    for (const w of workers) w.removeAllListeners('exit');
    await Promise.all(workers.map((w) => w.terminate()));
  }
  return builder.finishAsync(chunks, k1, b, layout, options.mergePause ?? MERGE_YIELD_POSTINGS);
}

/** Default analysis threads of {@link buildKeywordIndexParallel}: min(2, available CPUs). */
export function defaultKeywordThreads(): number {
  return Math.max(1, Math.min(2, availableParallelism()));
}

/**
 * Relative slack of the MaxScore bounds per query term occurrence: 2^-50 = 8 unit roundoffs (see
 * `CompactBm25.searchMaxScore` for why (q + 2)·2^-50 covers every rounding between a bound and a score).
 */
const BOUND_SLACK_PER_TERM = 2 ** -50;

/**
 * The MaxScore search memoises, per query term, the contribution of a posting with tf ≤ MEMO_TFS in a chunk of fewer
 * than MEMO_LENGTHS terms by (tf, chunk length), the only things it then depends on: 32 KB of scratch per query term.
 */
const MEMO_LENGTHS = 512;
const MEMO_TFS = 8;
const MEMO_SLOTS = MEMO_LENGTHS * MEMO_TFS;

/** `x` (≥ 0) rounded up to a float32: the smallest float32 ≥ x (Infinity above the float32 range). */
function float32Up(x: number): number {
  F32[0] = x;
  if (F32[0] < x) U32[0]++;
  return F32[0];
}
const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);

/** The MaxScore search's reusable scratch (see `CompactBm25.searchScratch`); arrays by distinct term or sorted position. */
interface SearchScratch {
  /** Capacity in query term occurrences. */
  q: number;
  distinct: Int32Array; count: Int32Array; occ: Int32Array; order: Int32Array; ub: Float64Array; rank: Int32Array;
  cur: Int32Array; end: Int32Array; bcur: Int32Array; bend: Int32Array; bfirst: Int32Array; idfs: Float64Array;
  times: Float64Array; prefix: Float64Array; occRank: Int32Array;
  curOf: Int32Array; bcurOf: Int32Array; contrib: Float64Array; mark: Int32Array;
  heapDoc: Int32Array; heapScore: Float64Array; memo: Float64Array;
  partialAt: Float64Array; bits: Int32Array; cell: Float64Array; cellTag: Int32Array;
}

/**
 * Postings per window of the block-max pass (`CompactBm25.blockSteps`): 2^22, read at once from a postings file (20 MiB
 * of buffers) and followed by a pause of an asynchronous build (a few milliseconds of work each).
 */
export const BLOCKS_WINDOW_POSTINGS = 1 << 22;

/** The first index i of ascending `a` with a[i] ≥ x (a.length when none). */
function lowerBound(a: Int32Array, x: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The compact serving index (see {@link buildCompactBm25Index}). */
class CompactBm25 implements KeywordIndex {
  readonly size: number;
  private readonly acc: Float64Array;
  private readonly seen: Uint8Array;
  private readonly touched: Int32Array;
  /** Chunk positions per block of the exhaustive term-at-a-time search (a power of two is not required). */
  private readonly blockDocs: number;
  private readonly topK: TopKStrategy;
  /** log2 of the chunk positions per MaxScore window (see `searchMaxScore`). */
  private readonly windowShift: number;
  /** Postings per block of the block-max bounds (see `blockSteps`). */
  private readonly blockPostings: number;
  /** Postings per window of `blockSteps`. */
  private readonly blockWindow: number;
  /** The block-max bounds stored with the index (see `blockSteps`). */
  private blockStart = new Int32Array(0);
  private blockMax = new Float32Array(0);
  private blockLast = new Int32Array(0);
  /** See `searchScratch` and `nextTag`. */
  private scratch: SearchScratch | undefined;
  private tag = 0;
  /**
   * The postings a search reads: term t's are `postDoc` / `postTf` positions `pStart[t] .. pEnd[t] − 1`, escaped
   * frequencies in `pBig` by position. Resident: the index's own arrays (`pStart` = offsets, `pEnd` = offsets + 1).
   * With a postings file: the query's terms' postings, read by `load` before each search into arrays of their own.
   */
  private pStart: Int32Array;
  private pEnd: Int32Array;
  private postDoc: Int32Array;
  private postTf: Uint8Array;
  private pBig: ReadonlyMap<number, number>;
  /** The postings file, when the postings are not resident; its escaped positions sorted (for `load`). */
  private readonly file: PostingsFile | undefined;
  private readonly bigPos: Int32Array;

  constructor(
    private readonly ids: readonly string[],
    private readonly dict: ReadonlyMap<string, number>,
    private readonly offsets: Int32Array,
    postings: { postDoc: Int32Array; postTf: Uint8Array } | PostingsFile,
    private readonly bigTf: ReadonlyMap<number, number>,
    private readonly idf: Float64Array,
    private readonly k1norm: Float64Array,
    private readonly lengths: Int32Array,
    private readonly k1p1: number,
    readonly params: Bm25Params & Record<string, unknown>,
    layout: ResolvedLayout,
    deferBlocks = false,
  ) {
    this.size = ids.length;
    this.acc = new Float64Array(this.size);
    this.seen = new Uint8Array(this.size);
    this.touched = new Int32Array(this.size);
    this.blockDocs = layout.blockDocs;
    this.topK = layout.topK;
    this.windowShift = layout.windowShift;
    this.blockPostings = layout.blockPostings;
    this.blockWindow = layout.blockWindow;
    this.pBig = bigTf;
    if (postings instanceof PostingsFile) {
      this.file = postings;
      const vocab = offsets.length - 1;
      this.pStart = new Int32Array(vocab);
      this.pEnd = new Int32Array(vocab);
      this.postDoc = new Int32Array(0);
      this.postTf = new Uint8Array(0);
      this.bigPos = Int32Array.from(bigTf.keys()).sort();
    } else {
      this.file = undefined;
      this.pStart = offsets;
      this.pEnd = offsets.subarray(1);
      this.postDoc = postings.postDoc;
      this.postTf = postings.postTf;
      this.bigPos = new Int32Array(0);
    }
    // With deferBlocks the caller runs blockSteps() (with pauses) before the index is searched.
    if (!deferBlocks) for (const steps = this.blockSteps(); !steps.next().done; );
  }

  /** Bytes of postings on disk (0 when resident). */
  get postingsFileBytes(): number {
    return this.file?.bytes ?? 0;
  }

  /** Closes the postings file, if any (later searches throw); resident indexes have nothing to close. */
  close(): void {
    this.file?.close();
  }

  /**
   * With a postings file: reads the postings of `terms`' distinct terms into the search arrays, one after another,
   * with their escaped frequencies, and points `pStart` / `pEnd` at them. The arrays are grown to the longest query's
   * postings and kept. Throws what {@link PostingsFile.read} throws.
   */
  private load(terms: readonly number[]): void {
    const file = this.file;
    if (file === undefined) return;
    const { offsets, pStart, pEnd } = this;
    let total = 0;
    for (let j = 0; j < terms.length; j++) {
      const t = terms[j];
      if (terms.indexOf(t) === j) total += offsets[t + 1] - offsets[t];
    }
    if (this.postDoc.length < total) {
      const cap = Math.max(total, Math.min(2 * this.postDoc.length, file.total));
      this.postDoc = new Int32Array(cap);
      this.postTf = new Uint8Array(cap);
    }
    const big = new Map<number, number>();
    let at = 0;
    for (let j = 0; j < terms.length; j++) {
      const t = terms[j];
      if (terms.indexOf(t) !== j) continue;
      file.read(t, t + 1, this.postDoc, this.postTf, at);
      const g0 = offsets[t];
      const g1 = offsets[t + 1];
      pStart[t] = at;
      pEnd[t] = at + g1 - g0;
      for (let i = lowerBound(this.bigPos, g0); i < this.bigPos.length && this.bigPos[i] < g1; i++) {
        big.set(at + this.bigPos[i] - g0, this.bigTf.get(this.bigPos[i]) as number);
      }
      at += g1 - g0;
    }
    this.pBig = big;
  }

  /** Query term ids in query order, one per occurrence (a repeated term counts twice, as in wink); unknown terms dropped. */
  private queryTerms(query: string): number[] {
    const terms: number[] = [];
    for (const term of keywordTokens(query)) {
      const t = this.dict.get(term);
      if (t !== undefined) terms.push(t);
    }
    return terms;
  }

  /**
   * The rounded contribution of posting `p` to its chunk, `idf` its term's idf: wink's `consolidate()`,
   * `Math.sign(freq) * +(Math.abs(freq·(k1 + 1) / (k1·norm + freq)) * idf).toFixed(9)` with the same operations.
   * Both searches call this one function, so they add the same doubles.
   */
  private weight(p: number, idf: number): number {
    let tf = this.postTf[p];
    if (tf === TF_ESCAPE) tf = this.pBig.get(p) as number;
    return roundTerm9(Math.abs((tf * this.k1p1) / (this.k1norm[this.postDoc[p]] + tf)) * idf);
  }

  search(query: string, k: number): Hit[] {
    checkK(k);
    if (k === 0) return [];
    const terms = this.queryTerms(query);
    if (terms.length === 0) return [];
    this.load(terms);
    const maxScore = this.topK === 'maxscore' || (this.topK === 'auto' && this.size >= MAXSCORE_MIN_CHUNKS);
    return maxScore ? this.searchMaxScore(terms, k) : this.searchExhaustive(terms, k);
  }

  /**
   * The reference search: every posting of every query term is scored, term at a time within blocks of chunk
   * positions (so that the accumulator, seen mask and normalisations of a block stay in cache); within a chunk the
   * contributions are added in query-term order, as wink's `search()` adds them.
   */
  private searchExhaustive(terms: readonly number[], k: number): Hit[] {
    const { acc, seen, touched, pStart, pEnd, postDoc } = this;
    const q = terms.length;
    const cursor = new Int32Array(q);
    const end = new Int32Array(q);
    const idfs = new Float64Array(q);
    for (let j = 0; j < q; j++) {
      cursor[j] = pStart[terms[j]];
      end[j] = pEnd[terms[j]];
      idfs[j] = this.idf[terms[j]];
    }
    let m = 0;
    for (let lo = 0; lo < this.size; lo += this.blockDocs) {
      const hi = lo + this.blockDocs;
      for (let j = 0; j < q; j++) {
        const idf = idfs[j];
        let p = cursor[j];
        const stop = end[j];
        for (; p < stop; p++) {
          const d = postDoc[p];
          if (d >= hi) break;
          const w = this.weight(p, idf);
          if (seen[d] === 0) {
            seen[d] = 1;
            touched[m++] = d;
            acc[d] = w + 0; // wink's search(): freq[t] + (results[id] || 0)
          } else {
            acc[d] = w + acc[d];
          }
        }
        cursor[j] = p;
      }
    }
    const top = this.select(m, k);
    const hits: Hit[] = new Array<Hit>(top.length);
    for (let i = 0; i < top.length; i++) hits[i] = { id: this.ids[top[i]], score: acc[top[i]] };
    for (let i = 0; i < m; i++) seen[touched[i]] = 0;
    return hits;
  }

  /**
   * The block-max bounds stored with the index (Ding & Suel, "Faster top-k document retrieval using block-max
   * indexes", SIGIR 2011): each term's postings cut into blocks of {@link blockPostings} consecutive postings (the
   * last block shorter); per block the largest rounded contribution of its postings, rounded up to a float32
   * (`blockMax`, never below the double it bounds), and the chunk position of its last posting (`blockLast`); term
   * t's blocks are `blockStart[t] .. blockStart[t + 1] − 1`. 8 bytes per block plus 4 per term: 1/40 of the postings'
   * 5 bytes at 64 postings a block. Built in one pass over the postings: the largest x = tf·(k1 + 1)/(k1·norm + tf)
   * of a block (the same operations as {@link weight}) gives its largest contribution, since idf·x and the rounding
   * to 9 decimals never decrease as x grows. As steps: it yields between windows of about 2^22 postings (read from
   * the postings file, when there is one), so an asynchronous build can turn the event loop; the bounds are set
   * when the last window is done. The constructor runs it through unless told to defer it.
   */
  *blockSteps(): Generator<void, void, void> {
    const { offsets, file } = this;
    const B = this.blockPostings;
    const vocab = offsets.length - 1;
    const blockStart = new Int32Array(vocab + 1);
    for (let t = 0; t < vocab; t++) blockStart[t + 1] = blockStart[t] + Math.ceil((offsets[t + 1] - offsets[t]) / B);
    const blocks = blockStart[vocab];
    const out = { blockStart, blockMax: new Float32Array(blocks), blockLast: new Int32Array(blocks) };
    // Windows of consecutive terms of at most W postings (a longer term alone), read from the
    // file when there is one; a pause between windows.
    const W = this.blockWindow;
    let doc = file ? new Int32Array(Math.min(W, file.total)) : this.postDoc;
    let tf = file ? new Uint8Array(doc.length) : this.postTf;
    for (let t0 = 0; t0 < vocab; ) {
      let t1 = t0 + 1;
      while (t1 < vocab && offsets[t1 + 1] - offsets[t0] <= W) t1++;
      if (file) {
        const need = offsets[t1] - offsets[t0];
        if (need > doc.length) {
          doc = new Int32Array(need);
          tf = new Uint8Array(need);
        }
        file.read(t0, t1, doc, tf, 0);
      }
      this.blocksOf(t0, t1, doc, tf, file ? offsets[t0] : 0, out);
      t0 = t1;
      if (t0 < vocab) yield;
    }
    ({ blockStart: this.blockStart, blockMax: this.blockMax, blockLast: this.blockLast } = out);
  }

  /**
   * The block-max bounds of terms `t0 .. t1 − 1`, whose postings are `postDoc` / `postTf` from position
   * `offsets[t0] − base` (base: the global position of the arrays' first element; escaped frequencies in `bigTf`).
   */
  private blocksOf(
    t0: number,
    t1: number,
    postDoc: Int32Array,
    postTf: Uint8Array,
    base: number,
    out: { blockStart: Int32Array; blockMax: Float32Array; blockLast: Int32Array },
  ): void {
    const { offsets, bigTf, k1norm, k1p1, idf } = this;
    const { blockStart, blockMax, blockLast } = out;
    const B = this.blockPostings;
    let j = blockStart[t0];
    for (let t = t0; t < t1; t++) {
      const stop = offsets[t + 1] - base;
      for (let p = offsets[t] - base; p < stop; j++) {
        const blockEnd = Math.min(stop, p + B);
        let best = -1;
        for (; p < blockEnd; p++) {
          let tf = postTf[p];
          if (tf === TF_ESCAPE) tf = bigTf.get(p + base) as number;
          const x = Math.abs((tf * k1p1) / (k1norm[postDoc[p]] + tf));
          if (x > best) best = x;
        }
        blockMax[j] = float32Up(roundTerm9(best * idf[t]));
        blockLast[j] = postDoc[blockEnd - 1];
      }
    }
  }

  /**
   * Exact top k with block-max MaxScore: the max_score method of Turtle & Flood, "Query evaluation: strategies and
   * optimizations", Information Processing & Management 31(6), 1995 (terms sorted by their largest possible
   * contribution; the terms whose bounds add up to less than the k-th score so far are "non-essential" and only
   * looked up for chunks found through the others), with the block-max bounds of Ding & Suel (SIGIR 2011, stored with
   * the index: {@link blockSteps}) used as in block-max MaxScore (Chakrabarti, Chaudhuri & Ganti, "Interval-based
   * pruning for top-k processing over compressed lists", ICDE 2011; Mallia, Siedlaczek & Suel, "An experimental
   * study of index compression and DAAT query processing methods", ECIR 2019, "BMM"): per window the terms' bounds
   * are their block maxima there, and before a non-essential list is searched for a candidate, the maximum of the
   * block that could hold it tightens its bound (and a position between two blocks needs no search). Windows of chunk positions as in Lucene's `MaxScoreBulkScorer`: the essential
   * lists of a window are scored term at a time, the non-essential ones looked up chunk at a time.
   *
   * Per window of 2^windowShift chunk positions: each distinct query term gets the bound ub = the largest block
   * maximum among its blocks that overlap the window, times its number of occurrences in the query; terms sorted by
   * ub ascending, prefix sums P[i] = ub[0] + … + ub[i]; θ = the score of the k-th best chunk so far (−∞ until k were
   * found). The window is skipped when P[last]·F < θ. Terms 0..e−1 with P[e−1]·F < θ are non-essential. (1) The
   * essential terms' postings in the window are read term at a time into a bound accumulator (partial = Σ w·c, any
   * order; the touched positions in a bit set). (2) In position order, a chunk d is dropped when
   * (partial + P[e−1])·F < θ. (3) The non-essential terms are taken from the largest bound down: d is dropped when
   * (partial + P[i−1] + ub[i])·F < θ; term i's block cursor moves to its first block ending at or after d; when that
   * block starts after d (or there is none) d is not in the list and the term is passed; else d is dropped when
   * (partial + P[i−1] + b·c)·F < θ, b the block's maximum, c the term's occurrences; else the list is searched
   * (galloping from the block's start) and a contribution found is added to partial. (4) A chunk still in has its score
   * summed from its contributions in query-term order (`w + 0`, then `w + s`: wink's additions, so its score is the
   * exhaustive search's double) and enters the top k if it ranks before the k-th by the one rule (score descending,
   * then id descending).
   *
   * Why nothing that belongs in the top k is dropped (exactness): every contribution w ≥ 0 is ≤ the maximum of its
   * block (one function, {@link weight}, computes both; the float32 copy is rounded up), hence ≤ its term's ub in the
   * window. A chunk's score s is a floating-point sum of at most q contributions (q = query term occurrences; a
   * term occurring c times adds its w c times), so s ≤ (Σ w)(1 + u)^(q−1), u = 2^-53. Each bound B is computed with
   * at most 2q + 1 roundings (one product w·c or max·c and one sum per distinct term, one final sum), all of
   * nonnegative values, from exact values whose sum is ≥ Σ w (the known contributions exactly, the unknown ones by
   * a block maximum), so B ≥ (Σ w)(1 − u)^(2q+1). Hence s ≤ B·(1 + u)^(q−1)/(1 − u)^(2q+1) = B·(1 + (3q + 1)u +
   * O(q²u²)), and the computed fl(B·F) ≥ B·F·(1 − u) with F = 1 + (q + 2)·2^-50 = 1 + 8(q + 2)u (itself rounded by
   * at most u) exceeds that. So fl(B·F) < θ implies s < θ strictly: the chunk ranks after the k-th by score,
   * whatever the ids. A chunk tied with the k-th on score is never dropped by a bound (its bound is ≥ θ) and is
   * compared with the k-th by the one rule, as in the exhaustive search's heap. θ never decreases, so a bound below
   * an earlier θ stays below.
   *
   * Per search it allocates only the returned hits (its scratch is the index's, grown to the longest query and the
   * largest k seen); contributions of postings with tf ≤ {@link MEMO_TFS} in chunks of fewer than {@link MEMO_LENGTHS}
   * terms are memoised per query term, tf and chunk length (they depend on nothing else: the same double
   * {@link weight} gives).
   */
  private searchMaxScore(terms: readonly number[], k: number): Hit[] {
    const { pStart, pEnd, postDoc, postTf, ids, lengths, blockStart, blockMax, blockLast } = this;
    const B = this.blockPostings;
    const q = terms.length;
    const n = this.size;
    const span = 1 << this.windowShift;
    const sc = this.searchScratch(q, k);
    const { distinct, count, occ, order, ub, rank, cur, end, bcur, bend, bfirst, idfs, times, prefix, occRank } = sc;
    const { curOf, bcurOf, contrib, mark, heapDoc, heapScore, memo, partialAt, bits, cell, cellTag } = sc;
    // Distinct terms with their number of occurrences, each occurrence mapped to its distinct term.
    let nt = 0;
    for (let j = 0; j < q; j++) {
      let u = 0;
      while (u < nt && distinct[u] !== terms[j]) u++;
      if (u === nt) {
        distinct[nt] = terms[j];
        count[nt] = 0;
        nt++;
      }
      count[u]++;
      occ[j] = u;
    }
    for (let u = 0; u < nt; u++) {
      curOf[u] = pStart[distinct[u]];
      bcurOf[u] = blockStart[distinct[u]];
    }
    memo.fill(NaN, 0, nt * MEMO_SLOTS);
    mark.fill(-1, 0, nt);
    const F = 1 + (q + 2) * BOUND_SLACK_PER_TERM;
    let size = 0;
    let theta = -Infinity;
    for (let lo = 0; lo < n; lo += span) {
      const hi = Math.min(n, lo + span);
      // Per term: the largest block maximum among its blocks overlapping [lo, hi).
      for (let u = 0; u < nt; u++) {
        const t = distinct[u];
        const be = blockStart[t + 1];
        let bc = bcurOf[u];
        while (bc < be && blockLast[bc] < lo) bc++;
        bcurOf[u] = bc;
        let mx = 0;
        const first = pStart[t] - blockStart[t] * B;
        for (let j = bc; j < be && postDoc[first + j * B] < hi; j++) {
          if (blockMax[j] > mx) mx = blockMax[j];
          if (blockLast[j] >= hi) break;
        }
        ub[u] = mx * count[u];
        order[u] = u;
      }
      // Insertion sort by ub ascending, then term: queries have a few distinct terms.
      for (let a = 1; a < nt; a++) {
        const u = order[a];
        let c = a - 1;
        while (c >= 0 && (ub[order[c]] > ub[u] || (ub[order[c]] === ub[u] && order[c] > u))) {
          order[c + 1] = order[c];
          c--;
        }
        order[c + 1] = u;
      }
      let sum = 0;
      for (let i = 0; i < nt; i++) prefix[i] = sum += ub[order[i]];
      if (prefix[nt - 1] * F < theta) continue; // nothing here can enter; cursors are advanced when next needed
      for (let i = 0; i < nt; i++) {
        const u = order[i];
        const t = distinct[u];
        rank[u] = i;
        cur[i] = curOf[u];
        end[i] = pEnd[t];
        bcur[i] = bcurOf[u];
        bend[i] = blockStart[t + 1];
        bfirst[i] = pStart[t] - blockStart[t] * B;
        idfs[i] = this.idf[t];
        times[i] = count[u];
      }
      for (let j = 0; j < q; j++) occRank[j] = rank[occ[j]];
      let e = 0;
      while (e < nt && prefix[e] * F < theta) e++;
      const rest = e > 0 ? prefix[e - 1] : 0;
      // (1) Essential terms, term at a time: bound accumulator and the touched positions.
      const tag = this.nextTag();
      for (let i = e; i < nt; i++) {
        let p = this.advance(cur[i], end[i], lo);
        const stop = end[i];
        const idf = idfs[i];
        const c = times[i];
        const row = i * span;
        const mb = order[i] * MEMO_SLOTS;
        for (; p < stop; p++) {
          const d = postDoc[p];
          const off = d - lo;
          if (off >= span) break;
          const len = lengths[d];
          const tf = postTf[p];
          let w: number;
          if (tf <= MEMO_TFS && len < MEMO_LENGTHS) {
            const slot = mb + (tf - 1) * MEMO_LENGTHS + len;
            w = memo[slot];
            if (w !== w) w = memo[slot] = this.weight(p, idf);
          } else w = this.weight(p, idf);
          cell[row + off] = w;
          cellTag[row + off] = tag;
          const word = off >> 5;
          const bit = 1 << (off & 31);
          if ((bits[word] & bit) === 0) {
            bits[word] |= bit;
            partialAt[off] = w * c;
          } else partialAt[off] += w * c;
        }
        cur[i] = p;
      }
      // (2)-(4) The touched positions in order (the bit set is cleared as it is read).
      for (let word = 0, words = (span + 31) >> 5; word < words; word++) {
        let x = bits[word];
        if (x === 0) continue;
        bits[word] = 0;
        while (x !== 0) {
          const low = x & -x;
          x ^= low;
          const off = (word << 5) + 31 - Math.clz32(low);
          let partial = partialAt[off];
          if ((partial + rest) * F < theta) continue;
          const d = lo + off;
          if (e === 0 && partial * F < theta) continue;
          // (3) Non-essential terms, largest bound first, while the chunk can still reach θ.
          let dropped = false;
          for (let i = e - 1; i >= 0; i--) {
            const below = i > 0 ? prefix[i - 1] : 0;
            if ((partial + below + ub[order[i]]) * F < theta) {
              dropped = true;
              break;
            }
            let bc = bcur[i];
            const be = bend[i];
            while (bc < be && blockLast[bc] < d) bc++;
            bcur[i] = bc;
            // No block of term i spans d: d is not in its list.
            if (bc === be || postDoc[bfirst[i] + bc * B] > d) continue;
            if ((partial + below + blockMax[bc] * times[i]) * F < theta) {
              dropped = true;
              break;
            }
            const from = bfirst[i] + bc * B; // postings before block bc are all < d
            const p = this.advance(cur[i] > from ? cur[i] : from, end[i], d);
            cur[i] = p;
            if (p < end[i] && postDoc[p] === d) {
              const tf = postTf[p];
              const len = lengths[d];
              let w: number;
              if (tf <= MEMO_TFS && len < MEMO_LENGTHS) {
                const slot = order[i] * MEMO_SLOTS + (tf - 1) * MEMO_LENGTHS + len;
                w = memo[slot];
                if (w !== w) w = memo[slot] = this.weight(p, idfs[i]);
              } else w = this.weight(p, idfs[i]);
              contrib[i] = w;
              mark[i] = d;
              partial += w * times[i];
              cur[i] = p + 1;
            }
          }
          if (dropped) continue;
          for (let i = e; i < nt; i++) {
            if (cellTag[i * span + off] === tag) {
              contrib[i] = cell[i * span + off];
              mark[i] = d;
            }
          }
          // (4) The score as wink sums it: contributions in query-term order, the first one added to 0.
          let s = 0;
          let first = true;
          for (let jj = 0; jj < q; jj++) {
            const i = occRank[jj];
            if (mark[i] !== d) continue;
            s = first ? contrib[i] + 0 : contrib[i] + s;
            first = false;
          }
          if (size < k) {
            let h = size++;
            while (h > 0) {
              const parent = (h - 1) >> 1;
              if (!ranksBefore(heapScore[parent], ids[heapDoc[parent]], s, ids[d])) break;
              heapDoc[h] = heapDoc[parent];
              heapScore[h] = heapScore[parent];
              h = parent;
            }
            heapDoc[h] = d;
            heapScore[h] = s;
          } else if (s > heapScore[0] || (s === heapScore[0] && compareCodePoints(ids[d], ids[heapDoc[0]]) > 0)) {
            let h = 0;
            for (;;) {
              const l = 2 * h + 1;
              if (l >= k) break;
              const r = l + 1;
              const worse = r < k && ranksBefore(heapScore[l], ids[heapDoc[l]], heapScore[r], ids[heapDoc[r]]) ? r : l;
              if (!ranksBefore(s, ids[d], heapScore[worse], ids[heapDoc[worse]])) break;
              heapDoc[h] = heapDoc[worse];
              heapScore[h] = heapScore[worse];
              h = worse;
            }
            heapDoc[h] = d;
            heapScore[h] = s;
          } else continue;
          if (size === k) theta = heapScore[0];
        }
      }
      for (let i = 0; i < nt; i++) {
        curOf[order[i]] = cur[i];
        bcurOf[order[i]] = bcur[i];
      }
    }
    const out: Hit[] = new Array<Hit>(size);
    for (let i = 0; i < size; i++) out[i] = { id: ids[heapDoc[i]], score: heapScore[i] };
    return out.sort(compareByRule);
  }

  /**
   * Scratch of the MaxScore search for queries of up to `q` term occurrences and depth `k`, reused by every search
   * (searches are synchronous) and grown when a longer query or a larger k comes: per window position its bound
   * accumulator (8 bytes) and a bit; per term and window position a contribution and its tag (12 bytes); per term
   * {@link MEMO_SLOTS} memoised contributions (32 KB); the heap (12 bytes per k).
   */
  private searchScratch(q: number, k: number): SearchScratch {
    const span = 1 << this.windowShift;
    let sc = this.scratch;
    if (sc === undefined || sc.q < q) {
      const terms = Math.max(q, 16, sc === undefined ? 0 : 2 * sc.q);
      const heap = sc === undefined ? Math.max(k, 16) : sc.heapDoc.length;
      sc = this.scratch = {
        q: terms,
        distinct: new Int32Array(terms), count: new Int32Array(terms), occ: new Int32Array(terms), order: new Int32Array(terms),
        ub: new Float64Array(terms), rank: new Int32Array(terms), cur: new Int32Array(terms), end: new Int32Array(terms),
        bcur: new Int32Array(terms), bend: new Int32Array(terms), bfirst: new Int32Array(terms), idfs: new Float64Array(terms),
        times: new Float64Array(terms), prefix: new Float64Array(terms), occRank: new Int32Array(terms),
        curOf: new Int32Array(terms), bcurOf: new Int32Array(terms), contrib: new Float64Array(terms), mark: new Int32Array(terms),
        heapDoc: new Int32Array(heap), heapScore: new Float64Array(heap),
        memo: new Float64Array(terms * MEMO_SLOTS),
        partialAt: new Float64Array(span), bits: new Int32Array((span + 31) >> 5),
        cell: new Float64Array(terms * span), cellTag: new Int32Array(terms * span),
      };
      this.tag = 0;
    }
    if (sc.heapDoc.length < k) {
      sc.heapDoc = new Int32Array(Math.max(k, 2 * sc.heapDoc.length));
      sc.heapScore = new Float64Array(sc.heapDoc.length);
    }
    return sc;
  }

  /** A tag (≥ 1) no window of any earlier search used: a fresh start for the scratch's cell tags. */
  private nextTag(): number {
    if (this.tag === 0x7fffffff) {
      (this.scratch as SearchScratch).cellTag.fill(0);
      this.tag = 0;
    }
    return ++this.tag;
  }
  /** The first posting position in [p, stop) whose chunk is ≥ d (stop when none): galloping then binary search. */
  private advance(p: number, stop: number, d: number): number {
    const postDoc = this.postDoc;
    if (p >= stop || postDoc[p] >= d) return p;
    // postDoc[lo] < d; find hi with postDoc[hi] >= d or hi = stop.
    let lo = p;
    let step = 1;
    let hi = p + 1;
    while (hi < stop && postDoc[hi] < d) {
      lo = hi;
      step *= 2;
      hi = lo + step;
    }
    if (hi > stop) hi = stop;
    // Invariant: postDoc[lo] < d, and hi = stop or postDoc[hi] >= d.
    while (hi - lo > 1) {
      const mid = (lo + hi) >>> 1;
      if (postDoc[mid] < d) lo = mid;
      else hi = mid;
    }
    return hi;
  }

  searchBatch(queries: readonly string[], k: number): Hit[][] {
    checkK(k);
    return queries.map((q) => this.search(q, k));
  }

  /** True when chunk `a` ranks before chunk `c` by the one rule (score desc, then id desc in code point order). */
  private before(a: number, c: number): boolean {
    return ranksBefore(this.acc[a], this.ids[a], this.acc[c], this.ids[c]);
  }

  /** The best `min(k, m)` of the `m` touched chunks, best first. */
  private select(m: number, k: number): number[] {
    const { touched } = this;
    const cmp = (a: number, c: number): number => (a === c ? 0 : this.before(a, c) ? -1 : 1);
    if (m <= k) return Array.from(touched.subarray(0, m)).sort(cmp);
    // Bounded heap of size k, the worst kept chunk at the root.
    const heap = new Int32Array(k);
    let size = 0;
    for (let i = 0; i < m; i++) {
      const d = touched[i];
      if (size < k) {
        let j = size++;
        while (j > 0) {
          const parent = (j - 1) >> 1;
          if (!this.before(heap[parent], d)) break;
          heap[j] = heap[parent];
          j = parent;
        }
        heap[j] = d;
      } else if (this.before(d, heap[0])) {
        let j = 0;
        for (;;) {
          const l = 2 * j + 1;
          if (l >= k) break;
          const r = l + 1;
          const worse = r < k && this.before(heap[l], heap[r]) ? r : l;
          if (!this.before(d, heap[worse])) break;
          heap[j] = heap[worse];
          j = worse;
        }
        heap[j] = d;
      }
    }
    return Array.from(heap).sort(cmp);
  }
}

/**
 * Builds the BM25 index the sweep serves keyword rows from: {@link buildCompactBm25Index} (see there for the layout,
 * memory and costs). Its rankings and scores are those of wink-bm25-text-search through the same analyser
 * ({@link buildWinkKeywordIndex}, the reference). `params` default to {@link DEFAULT_BM25_PARAMS}; `index.params`
 * records them with `engine` = {@link COMPACT_ENGINE}.
 *
 * Does not change its input. Throws `HarnessError('CONFIG_INVALID')` for k1 < 0 or b outside [0, 1] (or non-finite),
 * and a plain `Error` (a bug upstream) for duplicate chunk ids.
 */
export function buildKeywordIndex(chunks: readonly Chunk[], params?: Partial<Bm25Params>): KeywordIndex {
  return buildCompactBm25Index(chunks, params);
}

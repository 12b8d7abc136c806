/**
 * Keyword retrieval: Okapi BM25 over chunks, through wink-bm25-text-search 3.1.2, with its quirks absorbed here.
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
 * wink quirks and what this adapter does about each (each has a test named after it in test/retrieve/bm25.test.ts):
 * 1. Without prep tasks wink indexes the characters of the text, not words → we define one prep task,
 *    {@link keywordTokens}, used for documents and queries.
 * 2. `consolidate()` throws for fewer than 3 documents → collections of 0, 1 or 2 chunks are scored by
 *    {@link buildExactBm25Index}, which evaluates exactly the formula above in our code (no padding documents, which
 *    would change N and avgdl). A test checks that both engines agree on a 3-chunk collection.
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
import { HarnessError } from '../errors.js';
import type { Chunk, Hit } from '../types.js';
import { rankByRule, TIE_RULE } from './rank.js';
import { KEYWORD_ANALYSER, keywordTokens } from './tokenize.js';

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
   * `engine` (`wink-bm25-text-search <version>` or `exact (fewer than 3 chunks)`), `analyser`, `tieRule`.
   */
  readonly params: Bm25Params & Record<string, unknown>;
  /**
   * The top `k` chunks for `query` (k an integer ≥ 0), ordered by `rankByRule`; only chunks that share at least one
   * term with the query (scores > 0). Returns `[]` when no query term is in the index (including empty and stop-word
   * queries). Throws `HarnessError('CONFIG_INVALID')` when k is not an integer ≥ 0.
   */
  search(query: string, k: number): Hit[];
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

function checkUniqueIds(chunks: readonly Chunk[]): void {
  const seen = new Set<string>();
  for (const c of chunks) {
    if (seen.has(c.id)) throw new Error(`buildKeywordIndex: duplicate chunk id ${JSON.stringify(c.id)}`);
    seen.add(c.id);
  }
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
  };
}

/**
 * Builds a BM25 index over `chunks` (their `text`, analysed by {@link keywordTokens}) with the formula in this
 * module's header. `params` default to {@link DEFAULT_BM25_PARAMS}. Collections of ≥ 3 chunks go through
 * wink-bm25-text-search; 0–2 chunks through {@link buildExactBm25Index} (same formula, same rounding).
 *
 * Does not change its input. Throws `HarnessError('CONFIG_INVALID')` for k1 < 0 or b outside [0, 1] (or non-finite),
 * and a plain `Error` (a bug upstream) for duplicate chunk ids.
 */
export function buildKeywordIndex(chunks: readonly Chunk[], params?: Partial<Bm25Params>): KeywordIndex {
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
  };
}

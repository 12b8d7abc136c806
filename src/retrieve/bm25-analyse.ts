/**
 * The analysis half of the BM25 build: chunk texts → per-chunk forward lists (distinct terms with their term
 * frequencies), over a term table private to one thread. It runs in-process ({@link buildCompactBm25Index}) or on
 * worker threads (`bm25-worker.ts`, {@link buildKeywordIndexParallel}); the merge into one index is in `bm25.ts`.
 *
 * Why a private table: a worker cannot see the index's dictionary, so it numbers the terms it meets itself (local ids
 * 0, 1, 2, … in order of first sight) and sends each new term's string once. The merge maps local ids to global ones
 * lazily, at a term's first occurrence in chunk order, which is exactly the order a one-thread build numbers terms in:
 * the index is the same whichever thread analysed which batch.
 *
 * Terms come from {@link keywordTokens} (tokenize.ts), the one analyser for documents and queries.
 */
import { keywordTokens } from './tokenize.js';

/** One thread's term table: term → local id (0-based, in order of first sight), plus scratch sized to it. */
export interface TermTable {
  readonly dict: Map<string, number>;
  /** Per local id: the running number of the last chunk it occurred in (-1: none yet), and its slot in that chunk's list. */
  lastChunk: Int32Array;
  slot: Int32Array;
  /** Chunks analysed so far over all batches: the running chunk numbers of `lastChunk`, so it never needs clearing. */
  chunks: number;
}

/** An empty {@link TermTable}. */
export function createTermTable(): TermTable {
  return { dict: new Map(), lastChunk: new Int32Array(1024).fill(-1), slot: new Int32Array(1024), chunks: 0 };
}

/**
 * The forward lists of one batch of consecutive chunks. Local ids refer to the analysing thread's {@link TermTable}.
 * All arrays are plain typed arrays with their own buffers (transferable between threads).
 */
export interface AnalysedBatch {
  /** Terms this table met for the first time in this batch, in local-id order (they continue the earlier batches'). */
  newTerms: string[];
  /** Per chunk: |d|, its number of terms (tokens after analysis, repeats counted). Length = chunks in the batch. */
  lengths: Int32Array;
  /** Per chunk: how many distinct terms it has (its forward list's length). Length = chunks in the batch. */
  distinct: Int32Array;
  /** The chunks' forward lists concatenated: each chunk's distinct terms as local ids, in order of first occurrence. */
  terms: Int32Array;
  /** Term frequency (≥ 1) of each entry of `terms`. */
  tfs: Int32Array;
}

function grown(a: Int32Array, need: number, fill: number): Int32Array {
  if (need <= a.length) return a;
  const b = new Int32Array(Math.max(need, a.length * 2));
  b.set(a);
  if (fill !== 0) b.fill(fill, a.length);
  return b;
}

/**
 * Analyses `texts` (consecutive chunks) with {@link keywordTokens} into forward lists over `table`, which it extends
 * (new terms get the next local ids). Pure apart from `table`; never throws for any string input.
 */
export function analyseBatch(texts: readonly string[], table: TermTable): AnalysedBatch {
  const { dict } = table;
  const newTerms: string[] = [];
  const lengths = new Int32Array(texts.length);
  const distinct = new Int32Array(texts.length);
  let terms: Int32Array = new Int32Array(Math.max(16, texts.length * 32));
  let tfs: Int32Array = new Int32Array(terms.length);
  let m = 0;
  for (let c = 0; c < texts.length; c++) {
    const tokens = keywordTokens(texts[c]);
    const chunk = table.chunks++;
    const start = m;
    lengths[c] = tokens.length;
    for (const token of tokens) {
      let t = dict.get(token);
      if (t === undefined) {
        t = dict.size;
        dict.set(token, t);
        newTerms.push(token);
        table.lastChunk = grown(table.lastChunk, t + 1, -1);
        table.slot = grown(table.slot, t + 1, 0);
      }
      if (table.lastChunk[t] !== chunk) {
        table.lastChunk[t] = chunk;
        table.slot[t] = m;
        if (m === terms.length) {
          terms = grown(terms, m + 1, 0);
          tfs = grown(tfs, m + 1, 0);
        }
        terms[m] = t;
        tfs[m] = 1;
        m++;
      } else {
        tfs[table.slot[t]]++;
      }
    }
    distinct[c] = m - start;
  }
  // Own buffers of the exact size, so the arrays can be transferred without sending the slack.
  return { newTerms, lengths, distinct, terms: terms.slice(0, m), tfs: tfs.slice(0, m) };
}

/**
 * The rerank stage over any retriever's rankings (keyword, semantic, hybrid, external, run files): take each list's
 * top `depth`, rescore those hits with a reranker, order them by the new score with the one tie rule
 * (src/retrieve/rank.ts: score descending, then id descending), and keep the rest below in their original order.
 *
 * Scores of the output (one descending score column, so that any consumer that re-sorts by the tie rule, e.g. a TREC
 * run file read by trec_eval, sees exactly this order):
 * - the rescored top part carries the reranker's scores, unchanged;
 * - the j-th kept-below hit (j = 1, 2, … in original order) gets `m − j`, where `m` is the lowest reranker score of
 *   that list, computed in float64. When `m − j` is not strictly below the previous score (only possible for
 *   |m| ≥ 2^52, where 1 is below the float64 spacing), the next float64 below the previous score is used instead.
 *   So every kept-below score is strictly below every rescored score and strictly decreasing: the order is exact, no
 *   ties can be introduced, and ids need not be compared. The retriever's own scores of those hits are dropped
 *   (they are on another scale).
 *
 * Caching and deduplication: pairs are keyed by (reranker cache key, sha256(question text), sha256(chunk text));
 * within a call, a pair that occurs in several lists (or twice) is scored once; across calls, a `cache` store
 * (SQLite {@link RerankCache} or in-process {@link MemoryPairScores}) makes a pair scored once per reranker for the
 * whole grid, and a warm rerun scores nothing. Pairs scored are written to the store after each question, so an
 * interrupted run keeps what it has.
 */
import pLimit from 'p-limit';
import { HarnessError } from '../errors.js';
import { rankByRule } from '../retrieve/rank.js';
import type { Hit } from '../types.js';
import { sha256Text } from '../embed/hash.js';
import type { PairHash, PairScoreStore } from './cache.js';
import type { Reranker } from './types.js';

/** A question as the rerank stage needs it. */
export interface RerankQuestion {
  id: string;
  text: string;
}

/** Options of {@link rerankLists}. */
export interface RerankListsOptions {
  /** Where pair scores are looked up and stored; without one, only this call's lists are deduplicated. */
  cache?: PairScoreStore;
  /** Called after each question's pairs are scored: pairs scored so far, pairs to score (cache misses) in all. */
  onProgress?: (done: number, total: number) => void;
  /**
   * Questions whose pairs are scored at once (each question is one `reranker.score` call, which batches by
   * `batchSize` itself). Default 1. For a server reranker pass its `concurrency`; for a local model keep 1.
   */
  concurrency?: number;
  /** Checked before each question's call; an aborted signal rejects with its reason. */
  signal?: AbortSignal;
}

/** What one {@link rerankLists} call did. */
export interface RerankListStats {
  /** (question, hit) slots rescored: Σ over lists of min(depth, list length). */
  pairs: number;
  /** Distinct (question text, chunk text) pairs among them. */
  distinctPairs: number;
  /** Distinct pairs found in the cache (or already scored in this call's store). */
  cacheHits: number;
  /** Distinct pairs the reranker scored now (`distinctPairs − cacheHits`). */
  cacheMisses: number;
  /** Wall-clock seconds spent in `reranker.score` calls (0 when nothing was scored). */
  scoreSeconds: number;
}

/** The largest float64 strictly below `x` (finite `x`). */
export function nextDown(x: number): number {
  if (Number.isNaN(x) || x === -Infinity) return x;
  if (x === 0) return -Number.MIN_VALUE;
  const buf = new DataView(new ArrayBuffer(8));
  buf.setFloat64(0, x);
  const bits = buf.getBigUint64(0);
  buf.setBigUint64(0, x > 0 ? bits - 1n : bits + 1n);
  return buf.getFloat64(0);
}

/**
 * Builds one reranked list from a ranking and the scores of its top `depth` hits (see the module doc for the scores
 * of the kept-below part). `list` is in rank order; `scores[i]` is the reranker score of `list[i]` for
 * i < min(depth, list.length). Pure; returns new hit objects.
 * @throws HarnessError('RERANK_FAILED') when the lowest reranked score is so close to −Number.MAX_VALUE that the hits
 *   kept below it would need −Infinity.
 */
export function mergeReranked(list: readonly Hit[], depth: number, scores: readonly number[]): Hit[] {
  const n = Math.min(depth, list.length);
  if (n === 0) return list.map((h) => ({ id: h.id, score: h.score }));
  const top = rankByRule(list.slice(0, n).map((h, i) => ({ id: h.id, score: scores[i] })));
  const m = top[top.length - 1].score;
  const out: Hit[] = top;
  let prev = m;
  for (let j = 1; j <= list.length - n; j++) {
    const cand = m - j;
    const s = cand < prev ? cand : nextDown(prev);
    if (!Number.isFinite(s))
      throw new HarnessError('RERANK_FAILED', `reranker score ${m} is too close to -${Number.MAX_VALUE} to place the ${list.length - n} hit(s) below the reranked top ${n} in one descending score column`, {
        remedy: 'rescale the reranker\'s scores (logits or probabilities are far from this limit)',
      });
    out.push({ id: list[n - 1 + j].id, score: s });
    prev = s;
  }
  return out;
}

/**
 * Reranks `lists[i]` (the ranking of `questions[i]`, in rank order) to the reranker's order over its top `depth`
 * hits, the rest kept below (see the module doc). `textOf(id)` gives a hit's chunk text, the text the reranker
 * sees. Each distinct (question text, chunk text) pair is scored at most once per call, and not at all when `cache`
 * holds it.
 *
 * @param depth integer ≥ 1; a list shorter than `depth` is rescored entirely.
 * @returns new lists (same lengths, same ids) and what was scored.
 * @throws HarnessError('RERANK_FAILED') when `lists` and `questions` differ in length, `textOf` gives no text for
 *   an id, or the reranker returns the wrong number of scores or a non-finite one (the question is named); errors of
 *   `reranker.score` and of the cache pass through.
 */
export async function rerankLists(
  reranker: Reranker,
  questions: readonly RerankQuestion[],
  lists: readonly (readonly Hit[])[],
  depth: number,
  textOf: (id: string) => string,
  options: RerankListsOptions = {},
): Promise<{ lists: Hit[][]; stats: RerankListStats }> {
  if (!Number.isInteger(depth) || depth < 1) {
    throw new HarnessError('RERANK_FAILED', `rerank depth ${depth} must be a whole number ≥ 1`, { location: { path: 'rerank.depth' } });
  }
  if (questions.length !== lists.length) {
    throw new HarnessError('RERANK_FAILED', `${reranker.name}: ${questions.length} questions but ${lists.length} rankings`, {
      remedy: 'this is a bug in the caller: pass one ranking per question',
    });
  }
  const modelKey = reranker.cacheKey();
  const qHash = new Map<string, string>();
  const tHash = new Map<string, string>();
  const hashOf = (memo: Map<string, string>, s: string): string => {
    let h = memo.get(s);
    if (h === undefined) {
      h = sha256Text(s);
      memo.set(s, h);
    }
    return h;
  };

  // Every slot to rescore, and the distinct pairs among them (first-appearance order: deterministic calls).
  const slotKeys: string[][] = [];
  const distinct = new Map<string, { hash: PairHash; query: string; text: string; qid: string }>();
  let pairs = 0;
  lists.forEach((list, i) => {
    const q = questions[i];
    const keys: string[] = [];
    for (const hit of list.slice(0, depth)) {
      const text = textOf(hit.id);
      if (typeof text !== 'string') {
        throw new HarnessError('RERANK_FAILED', `${reranker.name}: no text for hit ${JSON.stringify(hit.id)} of question ${q.id}`, {
          remedy: 'this is a bug in the caller: textOf must know every id the retriever returned',
        });
      }
      const hash = { query: hashOf(qHash, q.text), text: hashOf(tHash, text) };
      const key = `${hash.query}\u0000${hash.text}`;
      if (!distinct.has(key)) distinct.set(key, { hash, query: q.text, text, qid: q.id });
      keys.push(key);
      pairs++;
    }
    slotKeys.push(keys);
  });

  const entries = [...distinct.entries()];
  const known = new Map<string, number>();
  const cached = options.cache?.get(modelKey, entries.map(([, e]) => e.hash)) ?? [];
  entries.forEach(([key], i) => {
    const s = cached[i];
    if (s !== undefined) known.set(key, s);
  });
  const cacheHits = known.size;

  // Misses grouped by question text, one score call each.
  const groups = new Map<string, { query: string; qid: string; keys: string[]; texts: string[]; hashes: PairHash[] }>();
  for (const [key, e] of entries) {
    if (known.has(key)) continue;
    let g = groups.get(e.hash.query);
    if (!g) {
      g = { query: e.query, qid: e.qid, keys: [], texts: [], hashes: [] };
      groups.set(e.hash.query, g);
    }
    g.keys.push(key);
    g.texts.push(e.text);
    g.hashes.push(e.hash);
  }
  const total = entries.length - cacheHits;
  let done = 0;
  let scoreSeconds = 0;
  if (total > 0) {
    const limit = pLimit(Math.max(1, options.concurrency ?? 1));
    const t0 = performance.now();
    await Promise.all(
      [...groups.values()].map((g) =>
        limit(async () => {
          options.signal?.throwIfAborted();
          const scores = await reranker.score(g.query, g.texts);
          if (!Array.isArray(scores) || scores.length !== g.texts.length) {
            throw new HarnessError('RERANK_FAILED', `${reranker.name} returned ${Array.isArray(scores) ? scores.length : 'no'} scores for ${g.texts.length} chunks of question ${g.qid}`, {
              remedy: 'the reranker must return one score per text, in order',
            });
          }
          scores.forEach((s, i) => {
            if (typeof s !== 'number' || !Number.isFinite(s)) {
              throw new HarnessError('RERANK_FAILED', `${reranker.name} returned a non-finite score (${String(s)}) for chunk ${i + 1} of question ${g.qid}`, {
                remedy: 'check the reranker model or server',
              });
            }
          });
          g.keys.forEach((k, i) => known.set(k, scores[i]));
          options.cache?.put(modelKey, g.hashes.map((h, i) => [h, scores[i]] as const));
          done += g.texts.length;
          options.onProgress?.(done, total);
        }),
      ),
    );
    scoreSeconds = (performance.now() - t0) / 1000;
  }

  const out = lists.map((list, i) => mergeReranked(list, depth, slotKeys[i].map((k) => known.get(k)!)));
  return { lists: out, stats: { pairs, distinctPairs: entries.length, cacheHits, cacheMisses: total, scoreSeconds } };
}

/**
 * Query latency of reranking at `depth`, whatever the cache holds: one untimed warm-up call (a model's first call
 * is not a query's latency), then the top `depth` pairs of each of the first `sample` questions with a non-empty
 * list scored afresh, one question at a time. Returns the questions timed and the mean milliseconds per query (0
 * when none was timed). Bypasses every cache; add it to the retriever's ms per query for a reranked row.
 */
export async function measureRerankLatency(
  reranker: Reranker,
  questions: readonly RerankQuestion[],
  lists: readonly (readonly Hit[])[],
  depth: number,
  textOf: (id: string) => string,
  sample = 8,
): Promise<{ questions: number; msPerQuery: number }> {
  const work: { query: string; texts: string[] }[] = [];
  for (let i = 0; i < lists.length && work.length < sample; i++) {
    const texts = lists[i].slice(0, depth).map((h) => textOf(h.id));
    if (texts.length > 0) work.push({ query: questions[i].text, texts });
  }
  if (work.length === 0) return { questions: 0, msPerQuery: 0 };
  await reranker.score(work[0].query, work[0].texts);
  const t0 = performance.now();
  for (const w of work) await reranker.score(w.query, w.texts);
  return { questions: work.length, msPerQuery: (performance.now() - t0) / work.length };
}

/**
 * The built-in retrievers, written against the same public interface a user's module implements
 * (src/retrieve/retriever.ts): keyword BM25, semantic exact cosine, and hybrid fusion of two retrievers.
 */
import type { EmbedRole } from '../embed/provider.js';
import type { TextSource } from '../embed/embed-texts.js';
import type { Hit } from '../types.js';
import path from 'node:path';
import { buildKeywordIndexParallel, SPILL_SUBFOLDER, type Bm25Params } from './bm25.js';
import { buildVectorIndex, buildVectorIndexFromFile, buildVectorIndexFromMatrix } from './semantic.js';
import { VectorFile } from './vector-file.js';
import type { VectorMatrix } from './vector-matrix.js';
import { fuseTwo, type FusionSetting } from './fusion.js';
import type { RetrievedHit, Retriever, RetrieverContext, RetrieverFactory, RetrieverQuestion } from './retriever.js';

/**
 * BM25 over the chunks (src/retrieve/bm25.ts: our analyser, wink-bm25-text-search's formula, `k1`/`b`); hits are
 * chunk ids with BM25 scores > 0, at most `depth`. `describe()` gives the effective parameters. The index is built
 * with the analysis on worker threads for large chunkings (`buildKeywordIndexParallel`), stopping on `ctx.signal`;
 * `options.onProgress(doneChunks, totalChunks)` is called as analysed batches are merged (the sweep's stall watchdog).
 * The build's posting buffers stay under `options.spillBytes` (bytes; default `DEFAULT_SPILL_BYTES`, 1 GiB): past
 * it, sorted runs are written to `<ctx.cacheDir>/bm25-runs` and merged (bm25-spill.ts); the index is the same. A
 * spilled index with more than `options.residentPostingsBytes` of postings (default: no limit) keeps them in a file
 * there, read per query term (bm25-postings-file.ts); `close()` closes it.
 * @throws HarnessError('CONFIG_INVALID') for k1 < 0 or b outside [0, 1] or spillBytes ≤ 0 (when the factory runs),
 *   HarnessError('CACHE_FAILED') when a run file cannot be written.
 */
export function keywordRetriever(
  params: Partial<Bm25Params> = {},
  options: { onProgress?: (doneChunks: number, totalChunks: number) => void; spillBytes?: number; residentPostingsBytes?: number } = {},
): RetrieverFactory {
  return async (ctx: RetrieverContext): Promise<Retriever> => {
    const index = await buildKeywordIndexParallel(ctx.chunks, params, {
      signal: ctx.signal,
      spillDir: path.join(ctx.cacheDir, SPILL_SUBFOLDER),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      ...(options.spillBytes !== undefined ? { spillBytes: options.spillBytes } : {}),
      ...(options.residentPostingsBytes !== undefined ? { residentPostingsBytes: options.residentPostingsBytes } : {}),
    });
    return {
      search: (q, depth) => index.search(q.text, depth),
      searchBatch: async (qs, depth) => index.searchBatch(qs.map((q) => q.text), depth),
      describe: () => ({ ...index.params }),
      close: () => index.close?.(),
    };
  };
}

/** Embeds texts for a role: one vector per text, in order (e.g. `embedTexts(provider, texts, role, {cache})`). */
export type Embedder = (texts: readonly string[], role: EmbedRole) => Promise<readonly Float32Array[]>;

/**
 * Embeds the chunks of a retriever's chunking straight into the rows its index searches (one row per chunk, row i =
 * `texts.textAt(i)`): a resident matrix, or a vector file the index streams through (issue 25). The texts come as a
 * source read one at a time (issue 25 item 1: a stored chunk reads its text from disk on each `textAt`), e.g.
 * `(texts) => embedTextsToMatrix(provider, texts, 'document').then((r) => r.matrix)`.
 */
export type MatrixEmbedder = (texts: TextSource) => Promise<VectorMatrix | VectorFile>;

/**
 * Exact cosine over the chunks' embeddings (src/retrieve/semantic.ts); every chunk gets a score in [-1, 1], so each
 * question gets min(depth, chunks) hits. Chunks are embedded once when the factory runs, into one matrix (through
 * `embedMatrix` when given: no per-chunk copy, and no list of the chunk texts; else through `embed`, which gets them
 * all in one list); questions in one batch per `searchBatch` call, searched on worker threads for large matrices. When `embedMatrix` gives a {@link VectorFile}, the index reads it
 * one shard of at most `shardBytes` (default 1 GiB) at a time, every question of the batch per shard, with the
 * resident index's results bit for bit (`buildVectorIndexFromFile`). `close()` stops the threads.
 */
export function semanticRetriever(options: { embed: Embedder; embedMatrix?: MatrixEmbedder; shardBytes?: number }): RetrieverFactory {
  return async (ctx: RetrieverContext): Promise<Retriever> => {
    const ids = ctx.chunks.map((c) => c.id);
    const chunks = ctx.chunks;
    const rows = options.embedMatrix ? await options.embedMatrix({ count: chunks.length, textAt: (i) => chunks[i].text }) : undefined;
    const index =
      rows instanceof VectorFile
        ? buildVectorIndexFromFile(ids, rows, options.shardBytes !== undefined ? { shardBytes: options.shardBytes } : {})
        : rows !== undefined
          ? buildVectorIndexFromMatrix(ids, rows)
          : buildVectorIndex(ids, (await options.embed(chunks.map((c) => c.text), 'document')) as Float32Array[]);
    const searchBatch = async (qs: readonly RetrieverQuestion[], depth: number): Promise<RetrievedHit[][]> => {
      const qv = await options.embed(
        qs.map((q) => q.text),
        'query',
      );
      return index.searchBatch(qv as Float32Array[], depth);
    };
    return {
      search: async (q, depth) => (await searchBatch([q], depth))[0],
      searchBatch,
      describe: () => ({
        engine: index.engine,
        vectors: index.size,
        dimensions: index.dimensions,
        shards: index.shards,
        ...(rows instanceof VectorFile ? { storage: 'file' } : {}),
      }),
      close: () => index.close(),
    };
  };
}

/**
 * Hybrid: fuses a keyword and a semantic retriever's lists (each asked for `depth` hits) with one fusion setting
 * (plain or weighted RRF, or convex fusion of normalised scores; src/retrieve/fusion.ts). Ids of the two lists must
 * be of the same kind (both chunk ids of one chunking).
 */
export function hybridRetriever(parts: { keyword: Retriever; semantic: Retriever; fusion: FusionSetting; depth: number }): Retriever {
  const both = async (qs: readonly RetrieverQuestion[], signal: AbortSignal): Promise<[Hit[][], Hit[][]]> => {
    const get = async (r: Retriever): Promise<Hit[][]> =>
      r.searchBatch ? r.searchBatch(qs, parts.depth, signal) : Promise.all(qs.map(async (q) => r.search(q, parts.depth, signal)));
    return [await get(parts.keyword), await get(parts.semantic)];
  };
  const searchBatch = async (qs: readonly RetrieverQuestion[], depth: number, signal: AbortSignal): Promise<RetrievedHit[][]> => {
    const [kw, sem] = await both(qs, signal);
    return qs.map((_, j) => fuseTwo(kw[j], sem[j], parts.fusion, parts.depth).slice(0, depth));
  };
  return {
    search: async (q, depth, signal) => (await searchBatch([q], depth, signal))[0],
    searchBatch,
    describe: () => ({ fusion: parts.fusion, depth: parts.depth }),
  };
}

/**
 * A retriever that serves precomputed lists (question id → hits), e.g. a TREC run or lists checkpointed earlier.
 * A question it has no list for gets `[]`.
 */
export function listRetriever(lists: ReadonlyMap<string, readonly Hit[]>): Retriever {
  return { search: (q, depth) => (lists.get(q.id) ?? []).slice(0, depth) };
}

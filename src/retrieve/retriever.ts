/**
 * The one retriever interface. The built-ins (keyword BM25, semantic exact cosine, hybrid fusion) implement it exactly
 * as a user's module does; the sweep iterates over retrievers and never switches on a mode name.
 *
 * A retriever is made by a {@link RetrieverFactory} once per chunking it runs on, receives that chunking's chunks
 * (whole-document chunks `<docId>#0` for chunking `none`), and answers `search(question, depth)` with hits whose ids
 * are chunk ids of that chunking or document ids of the dataset. The harness owns everything around it: it validates
 * the hits (known ids, finite scores), orders them by the one tie rule (`rank.ts`: score descending, then id
 * descending in code point order) whatever order the retriever returned, cuts them to `depth`, times the calls, applies
 * a timeout, caches and checkpoints the lists, and wraps every error once with the retriever's name and the question id.
 */
import type { Chunk, ChunkingSpec, Doc } from '../types.js';

/** A question as a retriever sees it. */
export interface RetrieverQuestion {
  /** Question id (qid). */
  id: string;
  /** The text to search for. */
  text: string;
}

/** One retrieved item: a chunk id of the retriever's chunking or a document id of the dataset. Higher scores rank first. */
export interface RetrievedHit {
  id: string;
  /** A finite number; ties are ordered by id descending (code point order) by the harness. */
  score: number;
}

/**
 * What a retriever factory receives. Read-only: a retriever must not change these arrays. When the corpus is larger
 * than `limits.memory`'s document share, documents and chunks read their `text` from a file on each access (a getter
 * on the object, src/load/text-store.ts): read `text` (or `JSON.stringify` the object) rather than spreading or
 * structured-cloning the objects, which copies own properties only and loses the text.
 */
export interface RetrieverContext {
  /** Every document of the dataset, sorted by id. */
  documents: readonly Doc[];
  /** The chunks of the chunking this retriever runs on (for `none`: one chunk per document, id `<docId>#0`). */
  chunks: readonly Chunk[];
  /** The chunking (`size: null` for whole documents) and its key (`none`, `cs256-ov16`). */
  chunking: ChunkingSpec;
  chunkingKey: string;
  /** The entry's `options`, passed through untouched (`{}` when none were given). */
  options: Record<string, unknown>;
  /** Aborted when the sweep stops (Ctrl-C, timeout of the whole retriever); long builds should check it. */
  signal: AbortSignal;
  /** Folder for the retriever's own derived files (e.g. a LanceDB table); created on demand by the retriever. */
  cacheDir: string;
}

/** A built retriever over one chunking. */
export interface Retriever {
  /**
   * The best hits for `question`, at most `depth` of them wanted (more are cut, fewer are fine; `[]` means nothing
   * found). `depth` is an integer ≥ 1. May throw; the harness turns the error into a failed row naming the question.
   */
  search(question: RetrieverQuestion, depth: number, signal: AbortSignal): Promise<RetrievedHit[]> | RetrievedHit[];
  /**
   * Optional batch form, used instead of `search` when present: one list per question, in order. Built-ins use it to
   * embed all questions in batches through the cache.
   */
  searchBatch?(questions: readonly RetrieverQuestion[], depth: number, signal: AbortSignal): Promise<RetrievedHit[][]>;
  /** Optional details for the manifest (engine, parameters, versions). */
  describe?(): Record<string, unknown>;
  /** Optional release of resources (worker threads, connections). Called once when the sweep is done with it. */
  close?(): Promise<void> | void;
}

/** A retriever module's default export: builds a retriever over one chunking. */
export type RetrieverFactory = (context: RetrieverContext) => Promise<Retriever> | Retriever;

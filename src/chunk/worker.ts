/**
 * Piscina worker of {@link ../chunk/parallel.ts}: chunks one batch of documents with {@link chunkDocuments} and the
 * default tokenizer. Errors come back as values (a HarnessError's code, message, location and remedy), because a
 * thrown error loses its class crossing the thread boundary. Loaded from `worker.ts` (under `--import tsx`) or from
 * the compiled `dist/chunk/worker.js`.
 */
import { isHarnessError, type ErrorCode, type ErrorLocation } from '../errors.js';
import type { Chunk, ChunkingSpec, Doc } from '../types.js';
import { chunkDocuments, countTokens, defaultTokenizer, forEachChunk, llamaIndexSplitText } from './chunker.js';
import { splitText } from './splitter.js';

/** One batch: consecutive documents, the spec, the splitter, and whether to return chunks or raw splitter output. */
export interface ChunkTask {
  docs: Doc[];
  spec: ChunkingSpec;
  splitter: 'linear' | 'llamaindex';
  /**
   * `chunks`: {@link chunkDocuments}'s output; `pieces`: the splitter's strings per document (size must be set);
   * `spans`: the same chunks without their strings, {@link SPAN_FIELDS} integers each (see {@link ChunkTaskResult}),
   * so that the caller slices the texts from its own documents instead of receiving copies.
   */
  output: 'chunks' | 'pieces' | 'spans';
}

/** Integers per chunk in a `spans` result: document index in the task's `docs`, ordinal, start, end, tokens. */
export const SPAN_FIELDS = 5;

/** The answer to a {@link ChunkTask}. */
export type ChunkTaskResult =
  | {
      ok: true;
      chunks?: Chunk[];
      pieces?: string[][];
      /** `spans` output: per chunk in order, [doc index in `docs`, ordinal, start, end, tokens] (characters, tokens). */
      spans?: Int32Array;
    }
  | { ok: false; error: { harness: boolean; code?: ErrorCode; message: string; location?: ErrorLocation; remedy?: string; stack?: string } };

/** Runs one {@link ChunkTask}; never throws. */
export default function run(task: ChunkTask): ChunkTaskResult {
  try {
    if (task.output === 'pieces') {
      const size = task.spec.size;
      if (size === null) throw new Error('pieces need a chunk size');
      const tokenizer = defaultTokenizer();
      const count = (t: string, limit: number): number => countTokens(tokenizer, t, limit);
      const pieces = task.docs.map((d) =>
        task.splitter === 'llamaindex'
          ? llamaPieces(d.text, size, task.spec.overlap)
          : splitText(d.text, { chunkSize: size, chunkOverlap: task.spec.overlap, countTokens: count }),
      );
      return { ok: true, pieces };
    }
    if (task.output === 'spans') {
      let spans = new Int32Array(SPAN_FIELDS * 64);
      let n = 0;
      forEachChunk(task.docs, task.spec, defaultTokenizer(), { splitter: task.splitter }, (c, i) => {
        if ((n + 1) * SPAN_FIELDS > spans.length) {
          const grown = new Int32Array(spans.length * 2);
          grown.set(spans);
          spans = grown;
        }
        spans.set([i, c.ordinal, c.start, c.end, c.tokens], n * SPAN_FIELDS);
        n++;
      });
      return { ok: true, spans: spans.slice(0, n * SPAN_FIELDS) };
    }
    return { ok: true, chunks: chunkDocuments(task.docs, task.spec, defaultTokenizer(), { splitter: task.splitter }) };
  } catch (e) {
    if (isHarnessError(e)) {
      return { ok: false, error: { harness: true, code: e.code, message: e.message, location: e.location, remedy: e.remedy } };
    }
    const err = e as Error;
    return { ok: false, error: { harness: false, message: String(err?.message ?? e), stack: err?.stack } };
  }
}

let llama: { key: string; split: (text: string) => string[] } | undefined;

/** LlamaIndex's splitter for `size`/`overlap`, built once per setting. */
function llamaPieces(text: string, size: number, overlap: number): string[] {
  const key = `${size}/${overlap}`;
  if (llama?.key !== key) llama = { key, split: llamaIndexSplitText(size, overlap, defaultTokenizer()) };
  return llama.split(text);
}

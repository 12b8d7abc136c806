/**
 * Worker thread of {@link buildKeywordIndexParallel} (bm25.ts): analyses batches of chunk texts with
 * {@link analyseBatch} over one term table private to this thread, for the lifetime of one index build, and answers
 * each `{ id, texts }` message with `{ id, batch }` (the batch's typed arrays transferred) or `{ id, error }`. Batches
 * arrive and are answered in the order the parent sends them to this thread. Loaded from `bm25-worker.ts` (under
 * `--import tsx`) or from the compiled `dist/retrieve/bm25-worker.js`.
 */
import { parentPort } from 'node:worker_threads';
import { analyseBatch, createTermTable, type AnalysedBatch } from './bm25-analyse.js';

/** A request: analyse these consecutive chunk texts. */
export interface AnalyseRequest {
  id: number;
  texts: string[];
}

/** The answer to an {@link AnalyseRequest}. */
export type AnalyseReply = { id: number; batch: AnalysedBatch } | { id: number; error: string };

const table = createTermTable();
const port = parentPort;
if (port) {
  port.on('message', (m: AnalyseRequest) => {
    let reply: AnalyseReply;
    try {
      reply = { id: m.id, batch: analyseBatch(m.texts, table) };
    } catch (e) {
      port.postMessage({ id: m.id, error: e instanceof Error ? (e.stack ?? e.message) : String(e) } satisfies AnalyseReply);
      return;
    }
    const b = reply.batch;
    port.postMessage(reply, [b.lengths.buffer, b.distinct.buffer, b.terms.buffer, b.tfs.buffer] as ArrayBuffer[]);
  });
}

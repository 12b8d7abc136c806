/**
 * Worker thread of {@link buildKeywordIndexParallel} (bm25.ts): analyses batches of chunk texts with
 * {@link analyseBatch} over one term table private to this thread, for the lifetime of one index build.
 *
 * Results go back through shared memory, not transferred buffers: each request names one of this worker's slots, and
 * the worker writes the batch's forward lists into that slot's two `SharedArrayBuffer`s (allocated here, sent to the
 * parent only when a slot is created or must grow). The parent reads a slot and only then sends the next request
 * naming it. So a build allocates almost no memory in the parent per batch: every transferred buffer counted as new
 * external memory there, and V8 starts a full garbage collection for about every 64 MB of it, each one costing more
 * the larger the parent's heap (the corpus) is.
 *
 * Loaded from `bm25-worker.ts` (under the tsx loader, through worker-boot.cjs) or from `dist/retrieve/bm25-worker.js`.
 */
import { parentPort } from 'node:worker_threads';
import { analyseBatch, createTermTable } from './bm25-analyse.js';

/** A request: analyse these consecutive chunk texts into slot `slot`. */
export interface AnalyseRequest {
  id: number;
  slot: number;
  texts: string[];
}

/**
 * A slot's memory: `chunkBuf` holds `chunkCap` lengths then `chunkCap` distinct-term counts (Int32); `entryBuf`
 * holds `entryCap` local term ids then `entryCap` term frequencies (Int32).
 */
export interface SlotBuffers {
  chunkBuf: SharedArrayBuffer;
  chunkCap: number;
  entryBuf: SharedArrayBuffer;
  entryCap: number;
}

/**
 * The answer to an {@link AnalyseRequest}: the batch is in the slot (`chunks` chunks, `entries` forward-list
 * entries); `buffers` when the slot's memory is new; `newTerms` as in `AnalysedBatch`.
 */
export type AnalyseReply =
  | { id: number; slot: number; chunks: number; entries: number; newTerms: string[]; buffers?: SlotBuffers }
  | { id: number; error: string };

const table = createTermTable();
const slots: SlotBuffers[] = [];

function capacity(need: number, had: number): number {
  return Math.max(need, had * 2, 1024);
}

const port = parentPort;
if (port) {
  port.on('message', (m: AnalyseRequest) => {
    try {
      const b = analyseBatch(m.texts, table);
      const chunks = b.lengths.length;
      const entries = b.terms.length;
      let slot = slots[m.slot];
      let fresh = false;
      if (slot === undefined || slot.chunkCap < chunks || slot.entryCap < entries) {
        const chunkCap = slot && slot.chunkCap >= chunks ? slot.chunkCap : capacity(chunks, slot?.chunkCap ?? 0);
        const entryCap = slot && slot.entryCap >= entries ? slot.entryCap : capacity(entries, slot?.entryCap ?? 0);
        slot = { chunkBuf: new SharedArrayBuffer(chunkCap * 8), chunkCap, entryBuf: new SharedArrayBuffer(entryCap * 8), entryCap };
        slots[m.slot] = slot;
        fresh = true;
      }
      new Int32Array(slot.chunkBuf, 0, chunks).set(b.lengths);
      new Int32Array(slot.chunkBuf, slot.chunkCap * 4, chunks).set(b.distinct);
      new Int32Array(slot.entryBuf, 0, entries).set(b.terms);
      new Int32Array(slot.entryBuf, slot.entryCap * 4, entries).set(b.tfs);
      const reply: AnalyseReply = { id: m.id, slot: m.slot, chunks, entries, newTerms: b.newTerms, ...(fresh ? { buffers: slot } : {}) };
      port.postMessage(reply);
    } catch (e) {
      port.postMessage({ id: m.id, error: e instanceof Error ? (e.stack ?? e.message) : String(e) } satisfies AnalyseReply);
    }
  });
}

/**
 * Piscina worker of glove-100d ({@link GloveProvider}): computes {@link gloveMeans} for one batch of texts against
 * the table in shared memory (the word → row map and the scan's word table are built once per thread, at start, from
 * `workerData.words`). Loaded from
 * `glove-worker.ts` (under `--import tsx`) or from the compiled `dist/embed/glove-worker.js`.
 */
import { workerData } from 'node:worker_threads';
import { gloveMeans, prepareGloveRows, type GloveMeans } from './glove.js';

/** `workerData` of a glove-100d worker: the table's words in row order and its matrix (on a SharedArrayBuffer). */
export interface GloveWorkerData {
  words: string[];
  vectors: Float32Array;
  dims: number;
}

/** One batch: model inputs (prefix applied) and whether to L2-normalise. */
export interface GloveTask {
  texts: string[];
  normalize: boolean;
}

const data = workerData as GloveWorkerData;
const index = new Map<string, number>();
data.words.forEach((w, i) => index.set(w, i));
const table = { index, vectors: data.vectors, dims: data.dims };
// the scan's word table now, while the provider warms up, not in the first batch
prepareGloveRows(index);

/** Runs one {@link GloveTask} (the result is copied back: 400 bytes per text). */
export default function run(task: GloveTask): GloveMeans {
  return gloveMeans(task.texts, table, task.normalize);
}

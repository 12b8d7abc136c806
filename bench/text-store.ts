/**
 * `npx tsx --expose-gc bench/text-store.ts CORPUS_FOLDER [memory|file] [SIZE]`: what the documents' text store (issue 25
 * item 1, src/load/text-store.ts) costs and saves, in one process per mode: load the BEIR corpus with the documents
 * resident (`memory`) or in a text store (`file`, by a 1-byte resident share), then chunk on two worker threads
 * (`none`, or SIZE tokens with overlap 16), then read every chunk text once, in chunk order (what the BM25 build and
 * the embedding do). Prints one JSON line: seconds of each step, V8 heap used after two forced collections after each
 * step, RSS, peak RSS, store file bytes, and the store's positioned reads and bytes read by the reading step.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadDataset } from '../src/load/dataset.js';
import { textStoreOf } from '../src/load/text-store.js';
import { chunkDocumentsParallel } from '../src/chunk/parallel.js';

const MB = 1024 * 1024;
const [folder, mode = 'memory', sizeArg] = process.argv.slice(2);
const size = sizeArg === undefined ? null : Number(sizeArg);
if (!folder || (mode !== 'memory' && mode !== 'file') || (size !== null && !(Number.isInteger(size) && size > 16))) {
  process.stderr.write('usage: tsx --expose-gc bench/text-store.ts CORPUS_FOLDER [memory|file] [SIZE > 16]\n');
  process.exit(1);
}
const gc = (globalThis as { gc?: () => void }).gc;
const heap = (): number => {
  gc?.();
  gc?.();
  return Math.round(process.memoryUsage().heapUsed / MB);
};
const dir = mkdtempSync(path.join(tmpdir(), 'rs-textstore-bench-'));
const out: Record<string, unknown> = { mode, heap_before_mb: heap() };
let t = performance.now();
const lap = (): number => {
  const s = (performance.now() - t) / 1000;
  t = performance.now();
  return Math.round(s * 100) / 100;
};
const dataset = await loadDataset(
  { path: folder, split: 'test' },
  mode === 'file' ? { textStore: { dir: path.join(dir, 'texts'), residentBytes: 1 } } : {},
);
out.load_s = lap();
out.docs = dataset.docs.length;
out.heap_after_load_mb = heap();
out.store_bytes = textStoreOf(dataset.docs)?.byteLength ?? null;
t = performance.now();
const chunks = await chunkDocumentsParallel(dataset.docs, size === null ? { size: null, overlap: 0 } : { size, overlap: 16 }, { threads: 2 });
out[size === null ? 'chunk_none_s' : `chunk_${size}_s`] = lap();
out.chunks = chunks.length;
out.heap_after_chunk_mb = heap();
const store = textStoreOf(dataset.docs);
const [reads0, bytes0] = [store?.readCount ?? 0, store?.bytesRead ?? 0];
t = performance.now();
let chars = 0;
for (const c of chunks) chars += c.text.length;
out.read_all_chunk_texts_s = lap();
out.read_step_reads = (store?.readCount ?? 0) - reads0;
out.read_step_bytes = (store?.bytesRead ?? 0) - bytes0;
out.chars = chars;
out.heap_after_read_mb = heap();
out.rss_mb = Math.round(process.memoryUsage().rss / MB);
out.peak_rss_mb = Math.round(process.resourceUsage().maxRSS / 1024);
textStoreOf(dataset.docs)?.remove();
rmSync(dir, { recursive: true, force: true });
process.stdout.write(JSON.stringify(out) + '\n');

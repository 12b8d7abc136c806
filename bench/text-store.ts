/**
 * `npx tsx --expose-gc bench/text-store.ts CORPUS_FOLDER [memory|file]`: what the documents' text store (issue 25
 * item 1, src/load/text-store.ts) costs and saves, in one process per mode: load the BEIR corpus with the documents
 * resident (`memory`) or in a text store (`file`, by a 1-byte resident share), then chunk `none` on two worker
 * threads, then read every chunk text once (what the BM25 build and the embedding do). Prints one JSON line: seconds
 * of each step, V8 heap used after two forced collections after each step, RSS, peak RSS, store file bytes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadDataset } from '../src/load/dataset.js';
import { textStoreOf } from '../src/load/text-store.js';
import { chunkDocumentsParallel } from '../src/chunk/parallel.js';

const MB = 1024 * 1024;
const [folder, mode = 'memory'] = process.argv.slice(2);
if (!folder || (mode !== 'memory' && mode !== 'file')) {
  process.stderr.write('usage: tsx --expose-gc bench/text-store.ts CORPUS_FOLDER [memory|file]\n');
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
const chunks = await chunkDocumentsParallel(dataset.docs, { size: null, overlap: 0 }, { threads: 2 });
out.chunk_none_s = lap();
out.chunks = chunks.length;
out.heap_after_chunk_mb = heap();
t = performance.now();
let chars = 0;
for (const c of chunks) chars += c.text.length;
out.read_all_chunk_texts_s = lap();
out.chars = chars;
out.heap_after_read_mb = heap();
out.rss_mb = Math.round(process.memoryUsage().rss / MB);
out.peak_rss_mb = Math.round(process.resourceUsage().maxRSS / 1024);
textStoreOf(dataset.docs)?.remove();
rmSync(dir, { recursive: true, force: true });
process.stdout.write(JSON.stringify(out) + '\n');

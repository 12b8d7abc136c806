/**
 * `npx tsx --expose-gc bench/text-store.ts CORPUS_FOLDER [memory|file] [SIZE | none] [ORDER]`: what the documents' text store (issue 25
 * item 1, src/load/text-store.ts) costs and saves, in one process per mode: load the BEIR corpus with the documents
 * resident (`memory`) or in a text store (`file`, by a 1-byte resident share), then chunk on two worker threads
 * (`none`, or SIZE tokens with overlap 16), then read every chunk text once, in chunk order (what the BM25 build and
 * the embedding do). Prints one JSON line: seconds of each step, V8 heap used after two forced collections after each
 * step, RSS, peak RSS, store file bytes, and the store's positioned reads and bytes read by the reading step.
 * The fourth argument sets the reading step's order: `chunk` (default: chunk order, as the BM25 build reads), `position`
 * (the embedding's deduplication since session 14), `longest` (its misses before session 14: longest first over the
 * corpus) or `windows:BYTES` (its misses since: window by window of BYTES of the store, longest first within each).
 * Run it in a memory cgroup smaller than the store to see what each order costs once the page cache cannot hold it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadDataset } from '../src/load/dataset.js';
import { textLength, textPosition, textStoreOf } from '../src/load/text-store.js';
import { rowsByPosition, slotsLongestFirst } from '../src/embed/embed-texts.js';
import { chunkDocumentsParallel } from '../src/chunk/parallel.js';

const MB = 1024 * 1024;
const [folder, mode = 'memory', sizeArg, orderArg = 'chunk'] = process.argv.slice(2);
const size = sizeArg === undefined || sizeArg === 'none' ? null : Number(sizeArg);
const windowBytes = orderArg.startsWith('windows:') ? Number(orderArg.slice('windows:'.length)) : null;
if (
  !folder ||
  (mode !== 'memory' && mode !== 'file') ||
  (size !== null && !(Number.isInteger(size) && size > 16)) ||
  !(['chunk', 'position', 'longest'].includes(orderArg) || (windowBytes !== null && Number.isInteger(windowBytes) && windowBytes >= 1))
) {
  process.stderr.write('usage: tsx --expose-gc bench/text-store.ts CORPUS_FOLDER [memory|file] [SIZE > 16 | none] [chunk|position|longest|windows:BYTES]\n');
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
// The order the chunk texts are read in: chunk order (the BM25 build); the embedding's deduplication (position order);
// its misses longest first over the whole corpus (before session 14), or window by window of windowBytes (after).
t = performance.now();
const lengths = Int32Array.from(chunks, (c) => textLength(c));
const order: ArrayLike<number> =
  orderArg === 'chunk'
    ? Int32Array.from(chunks, (_, i) => i)
    : orderArg === 'position'
      ? (rowsByPosition(chunks.length, (i) => textPosition(chunks[i])) ?? Int32Array.from(chunks, (_, i) => i))
      : orderArg === 'longest'
        ? slotsLongestFirst(new Uint8Array(chunks.length), lengths)
        : slotsLongestFirst(new Uint8Array(chunks.length), lengths, Int32Array.from(chunks, (c) => Math.floor(textPosition(c) / windowBytes!)));
out.order = orderArg;
out.order_s = lap();
let chars = 0;
for (let k = 0; k < order.length; k++) chars += chunks[order[k]].text.length;
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

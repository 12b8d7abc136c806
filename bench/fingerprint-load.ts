/**
 * `npx tsx bench/fingerprint-load.ts SOURCE_ROOT CORPUS_FOLDER`: the load stage as a sweep runs it, with the documents
 * forced into a text store (a 0-byte resident share, as a small `limits.memory` does): `loadDataset` (BEIR layout,
 * split `test`), then the corpus fingerprint the plan keys rankings on (src/plan/graph.ts: the loader's
 * `Dataset.corpusFingerprint` when the source tree has it, else `fingerprintCorpus(docs)`, a second pass).
 * SOURCE_ROOT is a checkout of this repository (its `src/` is imported), so an older tree (e.g. the main checkout)
 * and this one can be measured side by side in alternation. Counts the bytes of stored text read back from the store
 * (every `TextStore.slice`). Prints one JSON line: seconds of the load and of the corpus fingerprint, the store's
 * bytes, the bytes read back, the fingerprints (to check both trees agree), peak RSS.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';

const [root, folder] = process.argv.slice(2);
if (!root || !folder) {
  process.stderr.write('usage: npx tsx bench/fingerprint-load.ts SOURCE_ROOT CORPUS_FOLDER\n');
  process.exit(1);
}
const load = (await import(pathToFileURL(path.resolve(root, 'src/load/dataset.ts')).href)) as typeof import('../src/load/dataset.js');
const store = (await import(pathToFileURL(path.resolve(root, 'src/load/text-store.ts')).href)) as typeof import('../src/load/text-store.js');

let readBack = 0;
const proto = store.TextStore.prototype;
const slice = proto.slice;
proto.slice = function (this: InstanceType<typeof store.TextStore>, i: number, start: number, end: number): string {
  // a UTF-8 text (session 20) is read whole; older trees store latin1 or UTF-16LE only
  const s = this as unknown as { encodingOf?(i: number): string; storedBytesOf?(i: number): number; isWide(i: number): boolean };
  const encoding = s.encodingOf?.(i) ?? (s.isWide(i) ? 'utf16le' : 'latin1');
  readBack += encoding === 'utf8' ? s.storedBytesOf!(i) : (end - start) * (encoding === 'utf16le' ? 2 : 1);
  return slice.call(this, i, start, end);
};

const dir = mkdtempSync(path.join(tmpdir(), 'rs-fp-load-'));
try {
  let t = performance.now();
  const dataset = await load.loadDataset({ path: folder, split: 'test' }, { textStore: { dir: path.join(dir, 'texts'), residentBytes: 0 } });
  const loadS = (performance.now() - t) / 1000;
  const loadRead = readBack;
  t = performance.now();
  const corpus = (dataset as { corpusFingerprint?: string }).corpusFingerprint ?? load.fingerprintCorpus(dataset.docs);
  const corpusS = (performance.now() - t) / 1000;
  const storeBytes = store.textStoreOf(dataset.docs)?.byteLength ?? null;
  store.textStoreOf(dataset.docs)?.remove();
  process.stdout.write(
    JSON.stringify({
      root,
      docs: dataset.docs.length,
      load_s: Math.round(loadS * 100) / 100,
      corpus_fp_s: Math.round(corpusS * 100) / 100,
      total_s: Math.round((loadS + corpusS) * 100) / 100,
      store_bytes: storeBytes,
      read_back_load_bytes: loadRead,
      read_back_total_bytes: readBack,
      fingerprint: dataset.fingerprint,
      corpus_fingerprint: corpus,
      peak_rss_mb: Math.round(process.resourceUsage().maxRSS / 1024),
    }) + '\n',
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}

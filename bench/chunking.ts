/**
 * `npx tsx bench/chunking.ts [--ref-max BYTES] [--max BYTES] [--skip-parallel | --only-parallel]` (or `npm run bench:chunk`): times the
 * linear chunker against LlamaIndex's SentenceSplitter (the chunker as it was: `{ splitter: 'llamaindex' }`) on
 * synthetic single documents built from SciFact abstracts, at 128 tokens with overlap 16, then the parallel path on
 * the whole SciFact corpus. Prints a table on stdout (seconds, growth exponent between successive sizes, equality of
 * the chunks where the reference ran) and progress on stderr.
 *
 * Documents: SciFact abstracts (`title\n\ntext`, as loadBeir builds them) in id order, joined by a space and cycled
 * until the target length (UTF-16 code units) is reached, then cut there: one long paragraph without `\n\n\n`, the
 * worst case for the reference. Sizes: 256 KB, 512 KB, 1 MB, 4 MB, 16 MB, 50 MB for ours; the reference up to
 * `--ref-max` (default 512 KB: it is quadratic, about 16 s at 256 KB and 520 s at 1 MB). `--max` caps ours.
 *
 * Growth exponent between sizes n1 < n2: log(t2 / t1) / log(n2 / n1) (1 = linear, 2 = quadratic).
 * Needs ../shared/datasets/scifact (exits 1 without it). Each timing includes aligning offsets and counting tokens
 * of every chunk; the tokenizer (cl100k, memoised per pre-token) is warmed on the corpus first.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chunkDocuments, defaultTokenizer } from '../src/chunk/chunker.js';
import { chunkDocumentsParallel, createChunkPool } from '../src/chunk/parallel.js';
import { loadBeir } from '../src/load/beir.js';
import type { Chunk, Doc } from '../src/types.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const scifact = path.resolve(here, '../../shared/datasets/scifact');
const KB = 1024;
const MB = 1024 * KB;
const SIZES = [256 * KB, 512 * KB, 1 * MB, 4 * MB, 16 * MB, 50 * MB];
const SPEC = { size: 128, overlap: 16 };

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

function label(bytes: number): string {
  return bytes >= MB ? `${bytes / MB} MB` : `${bytes / KB} KB`;
}

function build(docs: readonly Doc[], length: number): string {
  const parts: string[] = [];
  let n = 0;
  for (let i = 0; n < length; i = (i + 1) % docs.length) {
    parts.push(docs[i].text);
    n += docs[i].text.length + 1;
  }
  return parts.join(' ').slice(0, length);
}

function time<T>(f: () => T): [T, number] {
  const t0 = performance.now();
  const out = f();
  return [out, (performance.now() - t0) / 1000];
}

const same = (a: Chunk[], b: Chunk[]): boolean => a.length === b.length && a.every((c, i) => JSON.stringify(c) === JSON.stringify(b[i]));

async function main(): Promise<void> {
  if (!existsSync(scifact)) {
    process.stderr.write(`bench/chunking: ${scifact} not found\n`);
    process.exit(1);
  }
  const refMax = arg('--ref-max', 512 * KB);
  const onlyParallel = process.argv.includes('--only-parallel');
  const max = arg('--max', 50 * MB);
  const { docs } = await loadBeir(scifact, 'test', { labels: 'keep' });
  const tokenizer = defaultTokenizer();
  for (const d of docs) tokenizer.encode(d.text); // warm the pre-token memo

  if (!onlyParallel) await single(docs, refMax, max);
  if (process.argv.includes('--skip-parallel')) return;
  await parallel(docs);
}

async function single(docs: readonly Doc[], refMax: number, max: number): Promise<void> {
  const tokenizer = defaultTokenizer();
  console.log(`single SciFact-built document, chunking cs${SPEC.size}-ov${SPEC.overlap}`);
  console.log('size      chunks    ours_s  exp   llamaindex_s  exp   equal');
  let prev: { n: number; ours: number; ref?: number } | undefined;
  for (const n of SIZES.filter((s) => s <= max)) {
    const doc: Doc = { id: 'long', text: build(docs, n) };
    process.stderr.write(`ours ${label(n)}…\n`);
    const [ours, oursS] = time(() => chunkDocuments([doc], SPEC, tokenizer));
    let refS: number | undefined;
    let equal = '';
    if (n <= refMax) {
      process.stderr.write(`llamaindex ${label(n)}…\n`);
      const [ref, s] = time(() => chunkDocuments([doc], SPEC, tokenizer, { splitter: 'llamaindex' }));
      refS = s;
      equal = same(ours, ref) ? 'yes' : 'NO';
    }
    const exp = (a: number | undefined, b: number | undefined): string =>
      prev === undefined || a === undefined || b === undefined ? '  -  ' : (Math.log(b / a) / Math.log(n / prev.n)).toFixed(2).padStart(5);
    console.log(
      `${label(n).padEnd(9)} ${String(ours.length).padStart(7)}  ${oursS.toFixed(2).padStart(8)} ${exp(prev?.ours, oursS)}  ${
        refS === undefined ? '           -' : refS.toFixed(2).padStart(12)
      } ${exp(prev?.ref, refS)}   ${equal}`,
    );
    prev = { n, ours: oursS, ref: refS };
  }

}

async function parallel(docs: readonly Doc[]): Promise<void> {
  const tokenizer = defaultTokenizer();
  console.log(`\nwhole SciFact corpus (${docs.length} documents), chunking cs${SPEC.size}-ov${SPEC.overlap}`);
  const [serial, serialS] = time(() => chunkDocuments(docs, SPEC, tokenizer));
  console.log(`in-process (warm memo)  ${serialS.toFixed(2)} s  ${(serial.length / serialS).toFixed(0)} chunks/s`);
  for (const threads of [1, 2]) {
    // cold: the pool starts and its tokenizer memo is empty; warm: the same pool again (as across a sweep's chunkings).
    const pool = createChunkPool(threads);
    try {
      for (const phase of ['cold', 'warm']) {
        const t0 = performance.now();
        const par = await chunkDocumentsParallel(docs, SPEC, { pool });
        const s = (performance.now() - t0) / 1000;
        console.log(
          `parallel, ${threads} thread${threads > 1 ? 's' : ' '}, ${phase}  ${s.toFixed(2)} s  ${(par.length / s).toFixed(0)} chunks/s  equal: ${same(par, serial) ? 'yes' : 'NO'}`,
        );
      }
    } finally {
      await pool.close();
    }
  }
}

await main();

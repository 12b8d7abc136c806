/**
 * `npm run bench:bm25 -- [options]`: BM25 engines side by side, in the same run, on the same corpus and queries.
 *
 * Engines:
 *   ours        buildKeywordIndex (the compact typed-array index, built on this thread; top-k search topK: 'auto':
 *               MaxScore from MAXSCORE_MIN_CHUNKS chunks on, exhaustive below)
 *   ours-threads buildKeywordIndexParallel (the same index, the analysis on 2 worker threads: what the sweep builds)
 *   ours-exhaustive the same index with topK: 'exhaustive' (every posting scored: the search before MaxScore)
 *   ours-spill  buildKeywordIndexParallel with `spillBytes` = --spill-bytes (2 workers; sorted runs in a temporary
 *               folder, merged at the end: the same index); only when --engines names it
 *   xapian      Xapian 1.4 through Debian's python3-xapian (bench/bm25-xapian.py, spawned): an on-disk glass
 *               database of our analyser's terms (wdf = occurrences), BM25Weight(1.2, 0, 1, 0.75, 0), OP_OR queries
 *               of our query terms, XAPIAN_FLUSH_THRESHOLD 1,000,000 unless set; skipped with a message when
 *               `import xapian` fails
 *   fts5        SQLite FTS5 (better-sqlite3's SQLite) over our analyser's terms joined by spaces (unicode61, diacritics
 *               kept), `MATCH '"t1" OR "t2" …' ORDER BY rank LIMIT depth` (FTS5's bm25(), k1 = 1.2, b = 0.75)
 *   adapter     buildWinkKeywordIndex (the previous implementation: wink + sort every match + rankByRule)
 *   wink        wink-bm25-text-search's own search(q, depth) (same analyser, no re-ranking: wink's raw speed)
 *   minisearch  minisearch 7.2.0 with its default BM25 settings and tokenizer (a peer for speed only, not for equality)
 *
 * Corpora:
 *   scifact     SciFact whole documents (title + "\n\n" + text, as loadBeir builds them), its 300 test queries
 *   syn<N>      N synthetic chunks of 60–250 words (uniform, seeded) made of SciFact and TREC-DL sentences drawn with a
 *               seeded PRNG; queries: SciFact's 300 test queries + TREC-DL's judged ones
 *   dir:<path>  a BEIR folder's whole documents and its test queries (bench:scale passes its synthetic corpora so)
 *
 * Options:
 *   --datasets DIR      folder holding scifact/ and trec-dl-2019-5k/ (default ../shared/datasets)
 *   --corpora LIST      e.g. `scifact,200000,1000000,dir:/data/beir-x` (numbers = synthetic sizes; default `scifact`)
 *   --engines LIST      default all five; synthetic sizes above 300k and dir: corpora run only ours, ours-threads,
 *                       wink and minisearch (dir:) or ours, ours-threads and minisearch (syn > 300k) unless --engines names others
 *   --depth N           search depth (default 100: the sweep asks for max(top-k, hybrid.depth))
 *   --repeat N          timed passes over the queries after one untimed warm-up pass; median reported (default 3)
 *   --queries N         only the first N queries (default all; for slow peers on large corpora)
 *   --out FILE          also write the results as JSON
 *   --spill-bytes N     ours-spill: the build's posting budget in bytes (default 33554432, 32 MiB)
 *   --spill-threads N   ours-spill: analysis threads (default 2, as the sweep; 1 = in-process, no workers)
 *   --search-blocks L   ours, ours-threads: also time the queries on the same index at these search block sizes
 *                       (chunk positions per block; 0 = one block, the unblocked term-at-a-time search), interleaved
 *
 * xapian and fts5 index the same terms as ours (our analyser, analyseBatch as our build runs it, runs first, inside their
 * build time; each chunk's terms are written grouped by term, tf times each, which BM25 does not see), so all three search
 * the same postings; their scores differ from ours (Xapian's and FTS5's idf), so only speed is compared. For ours,
 * ours-threads and ours-exhaustive, `identical_to_exhaustive` counts the queries whose MaxScore list (ids and score
 * bits) equals the exhaustive search's on the same index, and `queries_per_second_interleaved` times both searches on
 * that index, interleaved.
 *
 * Each (corpus, engine) runs in its own child process (`node --expose-gc`), so memory figures belong to one engine:
 * `index_mb` = (V8 heap used + ArrayBuffers) after the build and a full GC minus the same before the build (the corpus
 * itself excluded), `rss_before_mb` / `rss_mb` = resident set before / after the build, `peak_rss_mb` = the process's maximum resident set
 * (corpus included), `build_peak_heap_mb` = the largest (V8 heap used + ArrayBuffers) sampled every 20 ms during the
 * build minus the same before it (main thread only: worker heaps are in the RSS figures; a build on this thread never
 * yields to the sampler, so it reads 0 there). ours*: `postings` of the index; ours-spill: `spill_runs`, `spill_mb`.
 * Output: one JSON line per result on stdout, a table on stderr.
 */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import MiniSearch from 'minisearch';
import { loadBeir } from '../src/load/beir.js';
import {
  buildCompactBm25Index,
  buildKeywordIndex,
  buildKeywordIndexParallel,
  buildWinkKeywordIndex,
  SEARCH_BLOCK_DOCS,
  type KeywordIndex,
  type TopKStrategy,
} from '../src/retrieve/bm25.js';
import { keywordTokens } from '../src/retrieve/tokenize.js';
import { analyseBatch, createTermTable } from '../src/retrieve/bm25-analyse.js';
import type { Chunk } from '../src/types.js';
import { seededRandom } from '../src/score/stats.js';

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '..');

/** The engines this bench knows. */
export const BM25_BENCH_ENGINES = ['ours', 'ours-threads', 'ours-exhaustive', 'adapter', 'wink', 'minisearch', 'xapian', 'fts5', 'ours-spill'] as const;
export type Bm25BenchEngine = (typeof BM25_BENCH_ENGINES)[number];

/** One measurement. Times in seconds, memory in MB (2^20 bytes). */
export interface Bm25BenchResult {
  corpus: string;
  engine: Bm25BenchEngine;
  chunks: number;
  queries: number;
  depth: number;
  build_seconds: number;
  /** Heap used + ArrayBuffers after build and GC, minus before build (the index, without the corpus). */
  index_mb: number;
  /** Resident set before the build (the process with the corpus and queries loaded), after a full GC. */
  rss_before_mb: number;
  rss_mb: number;
  peak_rss_mb: number;
  /** Largest main-thread (heap used + ArrayBuffers) sampled during the build, minus before it (see the header). */
  build_peak_heap_mb: number;
  /** ours*: postings in the index. */
  postings?: number;
  /** ours-spill: run files written and their MB. */
  spill_runs?: number;
  spill_mb?: number;
  /** Median queries per second over the timed passes. */
  queries_per_second: number;
  /** Total hits returned by one pass (a cheap check that engines did comparable work). */
  hits: number;
  /** With `--search-blocks`: queries/s of the same index at each search block size (chunk positions per block). */
  queries_per_second_by_block?: Record<string, number>;
  /** ours*: queries whose MaxScore list equals the exhaustive search's (ids and score bits), of `queries`. */
  identical_to_exhaustive?: number;
  /**
   * ours, ours-threads: queries/s of the same index with MaxScore and with the exhaustive search, timed interleaved
   * (`repeat` rounds of one pass each, median), so their ratio is not the machine's drift between two processes.
   */
  queries_per_second_interleaved?: { maxscore: number; exhaustive: number };
}

/**
 * A searchable thing as the bench sees it: build once, then `search(query) -> number of hits`; ours also lets the
 * bench change the search's block size (chunk positions per block) on the built index.
 */
type Searcher = ((query: string) => number) & {
  setBlockDocs?: (b: number) => void;
  identicalToExhaustive?: (queries: readonly string[]) => number;
  /** Sets the search strategy; returns the one it replaced. */
  setTopK?: (s: TopKStrategy) => TopKStrategy;
  postings?: number;
  spill?: { runs: number; bytes: number };
};

/**
 * Our index with a block-size setter for `--search-blocks` and a MaxScore-vs-exhaustive check on the same index
 * (private fields: a bench-only reach-in).
 */
function oursSearcher(index: KeywordIndex, depth: number): Searcher {
  const s: Searcher = (q) => index.search(q, depth).length;
  const fields = index as unknown as { blockDocs: number; topK: TopKStrategy; postDoc: Int32Array };
  s.postings = fields.postDoc.length;
  s.setBlockDocs = (b) => (fields.blockDocs = b);
  s.setTopK = (t) => {
    const was = fields.topK;
    fields.topK = t;
    return was;
  };
  s.identicalToExhaustive = (queries) => {
    const was = fields.topK;
    let same = 0;
    for (const q of queries) {
      fields.topK = 'maxscore';
      const a = index.search(q, depth);
      fields.topK = 'exhaustive';
      const b = index.search(q, depth);
      if (a.length === b.length && a.every((h, i) => h.id === b[i].id && Object.is(h.score, b[i].score))) same++;
    }
    fields.topK = was;
    return same;
  };
  return s;
}

/** Our analyser's terms of `text`, space-separated (what xapian and fts5 search). */
function terms(text: string): string {
  return keywordTokens(text).join(' ');
}

/**
 * Our analyser's terms of each chunk, space-separated, each term repeated tf times (what xapian and fts5 index),
 * through the build's own analysis (analyseBatch: the scanner, same terms as keywordTokens), a batch of 1,000 chunks at
 * a time, so the peers' build time includes our analysis at the speed of our build.
 */
function* analysedTexts(chunks: readonly Chunk[]): Generator<string> {
  const table = createTermTable();
  const byId: string[] = [];
  for (let from = 0; from < chunks.length; from += 1000) {
    const b = analyseBatch(chunks.slice(from, from + 1000).map((c) => c.text), table);
    for (const t of b.newTerms) byId.push(t);
    let p = 0;
    for (let c = 0; c < b.distinct.length; c++) {
      const out: string[] = [];
      for (const end = p + b.distinct[c]; p < end; p++) for (let r = 0; r < b.tfs[p]; r++) out.push(byId[b.terms[p]]);
      yield out.join(' ');
    }
  }
}

/** SQLite FTS5 over our analyser's terms, in a temporary database file removed when the process exits. */
function fts5Searcher(chunks: readonly Chunk[], depth: number): Searcher {
  const Database = require('better-sqlite3') as typeof import('better-sqlite3');
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-bm25-fts5-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const db = new Database(path.join(dir, 'fts5.db'));
  db.pragma('journal_mode = OFF');
  db.pragma('synchronous = OFF');
  db.exec("CREATE VIRTUAL TABLE t USING fts5(body, tokenize = 'unicode61 remove_diacritics 0')");
  const insert = db.prepare('INSERT INTO t(rowid, body) VALUES (?, ?)');
  db.transaction(() => {
    let i = 0;
    for (const text of analysedTexts(chunks)) insert.run(i++, text);
  })();
  const select = db.prepare('SELECT rowid FROM t WHERE t MATCH ? ORDER BY rank LIMIT ?');
  return (q) => {
    const ts = keywordTokens(q);
    if (ts.length === 0) return 0;
    return select.all(ts.map((t) => `"${t.replaceAll('"', '""')}"`).join(' OR '), depth).length;
  };
}

/** Builds `engine` over `chunks`; returns its search function. */
async function buildEngine(engine: Bm25BenchEngine, chunks: readonly Chunk[], depth: number, spillBytes: number, spillThreads: number): Promise<Searcher> {
  switch (engine) {
    case 'ours-spill': {
      const dir = mkdtempSync(path.join(tmpdir(), 'bench-bm25-spill-'));
      try {
        let runs = 0;
        let bytes = 0;
        const index = await buildKeywordIndexParallel(chunks, {}, { threads: spillThreads, spillBytes, spillDir: dir, onSpill: (r, b) => ((runs = r), (bytes = b)) });
        const s = oursSearcher(index, depth);
        s.spill = { runs, bytes };
        return s;
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
    case 'ours':
      return oursSearcher(buildKeywordIndex(chunks), depth);
    case 'ours-threads':
      return oursSearcher(await buildKeywordIndexParallel(chunks), depth);
    case 'ours-exhaustive':
      return oursSearcher(buildCompactBm25Index(chunks, {}, { topK: 'exhaustive' }), depth);
    case 'fts5':
      return fts5Searcher(chunks, depth);
    case 'xapian':
      throw new Error('xapian runs in its own process (measureXapian)');
    case 'adapter': {
      const index = buildWinkKeywordIndex(chunks);
      return (q) => index.search(q, depth).length;
    }
    case 'wink': {
      const wink = (require('wink-bm25-text-search') as () => WinkRaw)();
      wink.defineConfig({ fldWeights: { body: 1 }, bm25Params: { k1: 1.2, b: 0.75, k: 1 } });
      wink.definePrepTasks([keywordTokens]);
      chunks.forEach((c, i) => wink.addDoc({ body: c.text }, String(i)));
      wink.consolidate(9);
      return (q) => wink.search(q, depth).length;
    }
    case 'minisearch': {
      const ms = new MiniSearch<{ id: number; text: string }>({ fields: ['text'], storeFields: [] });
      for (let i = 0; i < chunks.length; i++) ms.add({ id: i, text: chunks[i].text });
      return (q) => ms.search(q).slice(0, depth).length;
    }
  }
}

interface WinkRaw {
  defineConfig(cfg: unknown): boolean;
  definePrepTasks(tasks: ((s: string) => string[])[]): number;
  addDoc(doc: Record<string, string>, id: string): number;
  consolidate(precision: number): boolean;
  search(text: string, limit: number): [string, number][];
}

const MB = 1024 * 1024;
/** ours-spill's default budget: 32 MiB, small enough to spill several runs at 200k chunks. */
const DEFAULT_BENCH_SPILL_BYTES = 32 * MB;
function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (g) {
    g();
    g();
  }
}
function heapBytes(): number {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

/**
 * Measures one engine on one corpus in this process: build time, memory after build, queries/s (median of `repeat`
 * timed passes after one warm-up pass). Call with `node --expose-gc` for meaningful memory figures (without it the
 * GC is not forced and `index_mb` includes garbage). For a scale bench: build the chunks, then call this.
 */
export async function measureBm25(
  corpus: string,
  engine: Bm25BenchEngine,
  chunks: readonly Chunk[],
  queries: readonly string[],
  opts: { depth?: number; repeat?: number; blocks?: number[]; spillBytes?: number; spillThreads?: number } = {},
): Promise<Bm25BenchResult> {
  const depth = opts.depth ?? 100;
  const repeat = opts.repeat ?? 3;
  gc();
  const before = heapBytes();
  const rssBefore = process.memoryUsage().rss / MB;
  let peakHeap = before;
  const sampler = setInterval(() => (peakHeap = Math.max(peakHeap, heapBytes())), 20);
  const t0 = performance.now();
  const search = await buildEngine(engine, chunks, depth, opts.spillBytes ?? DEFAULT_BENCH_SPILL_BYTES, opts.spillThreads ?? 2);
  const buildSeconds = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  gc();
  const indexMb = (heapBytes() - before) / MB;
  const rssMb = process.memoryUsage().rss / MB;
  let hits = 0;
  for (const q of queries) hits += search(q); // warm-up
  const rates: number[] = [];
  for (let r = 0; r < repeat; r++) {
    const t = performance.now();
    for (const q of queries) search(q);
    rates.push(queries.length / ((performance.now() - t) / 1000));
  }
  rates.sort((a, b) => a - b);
  let byBlock: Record<string, number> | undefined;
  if (opts.blocks && search.setBlockDocs) {
    // Interleaved: every block size once per round, `repeat` rounds, median per size.
    const per = new Map<number, number[]>(opts.blocks.map((b) => [b, []]));
    for (let r = 0; r < repeat; r++) {
      for (const b of opts.blocks) {
        search.setBlockDocs(b);
        const t = performance.now();
        for (const q of queries) search(q);
        per.get(b)!.push(queries.length / ((performance.now() - t) / 1000));
      }
    }
    search.setBlockDocs(SEARCH_BLOCK_DOCS);
    byBlock = {};
    for (const [b, xs] of per) byBlock[String(b)] = round(xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)], 1);
  }
  const identical = search.identicalToExhaustive?.(queries);
  let interleaved: { maxscore: number; exhaustive: number } | undefined;
  if (search.setTopK && engine !== 'ours-exhaustive') {
    const per: Record<'maxscore' | 'exhaustive', number[]> = { maxscore: [], exhaustive: [] };
    const was = search.setTopK('maxscore');
    for (let r = 0; r < repeat; r++) {
      for (const t of ['maxscore', 'exhaustive'] as const) {
        search.setTopK(t);
        const t0 = performance.now();
        for (const q of queries) search(q);
        per[t].push(queries.length / ((performance.now() - t0) / 1000));
      }
    }
    search.setTopK(was);
    const med = (xs: number[]): number => round(xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)], 1);
    interleaved = { maxscore: med(per.maxscore), exhaustive: med(per.exhaustive) };
  }
  return {
    corpus,
    engine,
    chunks: chunks.length,
    queries: queries.length,
    depth,
    build_seconds: round(buildSeconds, 3),
    index_mb: round(indexMb, 1),
    rss_before_mb: round(rssBefore, 1),
    rss_mb: round(rssMb, 1),
    peak_rss_mb: round(process.resourceUsage().maxRSS / 1024, 1),
    build_peak_heap_mb: round((peakHeap - before) / MB, 1),
    ...(search.postings !== undefined ? { postings: search.postings } : {}),
    ...(search.spill ? { spill_runs: search.spill.runs, spill_mb: round(search.spill.bytes / MB, 1) } : {}),
    queries_per_second: round(rates[Math.floor(rates.length / 2)], 1),
    hits,
    ...(byBlock ? { queries_per_second_by_block: byBlock } : {}),
    ...(identical !== undefined ? { identical_to_exhaustive: identical } : {}),
    ...(interleaved ? { queries_per_second_interleaved: interleaved } : {}),
  };
}

/** The Python that can `import xapian` (Debian's python3-xapian installs into /usr/bin/python3's path), or undefined. */
function xapianPython(): string | undefined {
  for (const py of ['/usr/bin/python3', 'python3']) {
    const r = spawnSync(py, ['-c', 'import xapian'], { stdio: 'ignore' });
    if (r.status === 0) return py;
  }
  return undefined;
}

/**
 * Xapian on one corpus (bench/bm25-xapian.py in a Python child): our analyser's terms are written to temporary
 * files (that time counts as build time, as the analysis is part of ours), then Python builds and searches.
 * Returns undefined when no Python can import xapian.
 */
export function measureXapian(corpus: string, chunks: readonly Chunk[], queries: readonly string[], opts: { depth?: number; repeat?: number } = {}): Bm25BenchResult | undefined {
  const depth = opts.depth ?? 100;
  const repeat = opts.repeat ?? 3;
  const py = xapianPython();
  if (py === undefined) return undefined;
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-bm25-xapian-'));
  try {
    const rssBefore = process.memoryUsage().rss / MB;
    const t0 = performance.now();
    const docs = path.join(dir, 'docs.txt');
    const fd = openSync(docs, 'w');
    let buf: string[] = [];
    for (const text of analysedTexts(chunks)) {
      buf.push(text);
      if (buf.length === 4096) {
        writeSync(fd, `${buf.join('\n')}\n`);
        buf = [];
      }
    }
    if (buf.length > 0) writeSync(fd, `${buf.join('\n')}\n`);
    closeSync(fd);
    const analyseSeconds = (performance.now() - t0) / 1000;
    const qfile = path.join(dir, 'queries.txt');
    writeFileSync(qfile, queries.map((q) => `${terms(q)}\n`).join(''));
    mkdirSync(path.join(dir, 'db'));
    const r = spawnSync(py, [path.join(here, 'bm25-xapian.py'), docs, qfile, String(depth), String(repeat), path.join(dir, 'db')], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      // One flush at commit instead of one per 10,000 documents (Xapian's default), unless the caller says otherwise.
      env: { ...process.env, XAPIAN_FLUSH_THRESHOLD: process.env.XAPIAN_FLUSH_THRESHOLD ?? '1000000' },
      maxBuffer: 1 << 20,
    });
    if (r.status !== 0) throw new Error(`bm25-xapian.py exited with ${String(r.status)}`);
    const x = JSON.parse(r.stdout.trim()) as { build_seconds: number; queries_per_second: number; hits: number; index_bytes: number; peak_rss_kb: number };
    return {
      corpus,
      engine: 'xapian',
      chunks: chunks.length,
      queries: queries.length,
      depth,
      build_seconds: round(analyseSeconds + x.build_seconds, 3),
      index_mb: round(x.index_bytes / MB, 1),
      rss_before_mb: round(rssBefore, 1),
      rss_mb: round(x.peak_rss_kb / 1024, 1),
      peak_rss_mb: round(x.peak_rss_kb / 1024, 1),
      build_peak_heap_mb: 0,
      queries_per_second: round(x.queries_per_second, 1),
      hits: x.hits,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const round = (x: number, d: number): number => Number(x.toFixed(d));

/** Whole-document chunks `<docId>#0` of a BEIR dataset and its judged test queries. */
async function beirCorpus(root: string): Promise<{ chunks: Chunk[]; queries: string[] }> {
  const { docs, questions } = await loadBeir(root, 'test');
  const chunks = docs.map((d) => ({ id: `${d.id}#0`, docId: d.id, ordinal: 0, text: d.text, start: 0, end: d.text.length, tokens: 0 }));
  return { chunks, queries: questions.map((q) => q.text) };
}

/** mulberry32 (src/score/stats.ts), so failures reproduce. */
const prng = seededRandom;

/**
 * `n` synthetic chunks `syn<i>#0`, each 60–250 words (uniform target, whole sentences, the last one may overshoot),
 * sentences drawn uniformly with a seeded PRNG (seed 12) from the given texts. Deterministic for given inputs.
 */
export function syntheticChunks(texts: readonly string[], n: number, seed = 12): Chunk[] {
  const sentences: { text: string; words: number }[] = [];
  for (const t of texts) {
    for (const s of t.split(/(?<=[.!?])\s+/u)) {
      const words = s.split(/\s+/u).filter(Boolean).length;
      if (words >= 3) sentences.push({ text: s, words });
    }
  }
  const rand = prng(seed);
  const chunks: Chunk[] = new Array<Chunk>(n);
  for (let i = 0; i < n; i++) {
    const target = 60 + Math.floor(rand() * 191);
    const parts: string[] = [];
    let words = 0;
    while (words < target) {
      const s = sentences[Math.floor(rand() * sentences.length)];
      parts.push(s.text);
      words += s.words;
    }
    const text = parts.join(' ');
    chunks[i] = { id: `syn${i}#0`, docId: `syn${i}`, ordinal: 0, text, start: 0, end: text.length, tokens: 0 };
  }
  return chunks;
}

interface ChildParams {
  datasets: string;
  corpus: string;
  engine: Bm25BenchEngine;
  depth: number;
  repeat: number;
  queries?: number;
  blocks?: number[];
  spillBytes?: number;
  spillThreads?: number;
}

/** The child: load the corpus, measure one engine, print one JSON line. */
async function child(p: ChildParams): Promise<void> {
  const sci = await beirCorpus(path.join(p.datasets, 'scifact'));
  let chunks = sci.chunks;
  let queries = sci.queries;
  if (p.corpus.startsWith('dir:')) ({ chunks, queries } = await beirCorpus(p.corpus.slice(4)));
  else if (p.corpus !== 'scifact') {
    const trec = await beirCorpus(path.join(p.datasets, 'trec-dl-2019-5k'));
    chunks = syntheticChunks([...sci.chunks, ...trec.chunks].map((c) => c.text), Number(p.corpus.slice(3)));
    queries = [...sci.queries, ...trec.queries];
  }
  if (p.queries !== undefined) queries = queries.slice(0, p.queries);
  if (p.engine === 'xapian') {
    const x = measureXapian(p.corpus, chunks, queries, { depth: p.depth, repeat: p.repeat });
    process.stdout.write(`${JSON.stringify(x ?? { skipped: 'xapian: no python3 can `import xapian` (apt-get install -y python3-xapian)' })}\n`);
    return;
  }
  const result = await measureBm25(p.corpus, p.engine, chunks, queries, { depth: p.depth, repeat: p.repeat, blocks: p.blocks?.map((b) => (b === 0 ? chunks.length : b)), spillBytes: p.spillBytes, spillThreads: p.spillThreads });
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

/** Runs one (corpus, engine) in a child process and returns its result (or why it was skipped). */
function runChild(p: ChildParams): Promise<Bm25BenchResult | { skipped: string }> {
  return new Promise((resolve, reject) => {
    const args = [...process.execArgv, '--expose-gc', '--max-old-space-size=16384', fileURLToPath(import.meta.url), '--child', JSON.stringify(p)];
    const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], cwd: repoRoot });
    let out = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.on('error', reject);
    proc.on('exit', (code) => {
      if (code !== 0) reject(new Error(`bench:bm25 child ${p.corpus}/${p.engine} exited with code ${String(code)}`));
      else resolve(JSON.parse(out.trim().split('\n').pop() ?? '') as Bm25BenchResult | { skipped: string });
    });
  });
}

async function main(): Promise<void> {
  const program = new Command()
    .name('bench:bm25')
    .option('--datasets <dir>', 'folder with scifact/ and trec-dl-2019-5k/', path.resolve(repoRoot, '../shared/datasets'))
    .option('--corpora <list>', 'scifact and/or synthetic sizes, comma-separated', 'scifact')
    .option('--engines <list>', `comma-separated, of ${BM25_BENCH_ENGINES.join(', ')}`)
    .option('--depth <n>', 'search depth', '100')
    .option('--repeat <n>', 'timed passes (median reported)', '3')
    .option('--queries <n>', 'only the first n queries')
    .option('--out <file>', 'write the results as JSON')
    .option('--spill-threads <n>', 'ours-spill: analysis threads', '2')
    .option('--spill-bytes <n>', 'ours-spill: the build\'s posting budget in bytes', String(DEFAULT_BENCH_SPILL_BYTES))
    .option('--search-blocks <list>', 'ours: also time the queries at these search block sizes (0 = one block: the unblocked search)')
    .option('--child <json>', 'internal: run one measurement');
  program.parse();
  const o = program.opts<{ datasets: string; corpora: string; engines?: string; depth: string; repeat: string; queries?: string; out?: string; child?: string; searchBlocks?: string; spillBytes: string; spillThreads: string }>();
  if (o.child) return child(JSON.parse(o.child) as ChildParams);
  const depth = Number(o.depth);
  const repeat = Number(o.repeat);
  const queries = o.queries === undefined ? undefined : Number(o.queries);
  const engines = o.engines?.split(',') as Bm25BenchEngine[] | undefined;
  for (const e of engines ?? []) if (!BM25_BENCH_ENGINES.includes(e)) throw new Error(`unknown engine ${e}; known: ${BM25_BENCH_ENGINES.join(', ')}`);
  const results: Bm25BenchResult[] = [];
  for (const c of o.corpora.split(',')) {
    const corpus = c === 'scifact' || c.startsWith('dir:') ? c : `syn${Number(c)}`;
    if (corpus.startsWith('syn') && !(Number(c) > 0)) throw new Error(`--corpora: ${c} is neither scifact, dir:<path> nor a chunk count`);
    const list =
      engines ??
      (corpus.startsWith('dir:')
        ? ['ours', 'ours-threads', 'wink', 'minisearch', 'xapian', 'fts5']
        : corpus !== 'scifact' && Number(c) > 300_000
          ? ['ours', 'xapian', 'fts5']
          : BM25_BENCH_ENGINES.filter((e) => e !== 'ours-spill'));
    for (const engine of list as Bm25BenchEngine[]) {
      process.stderr.write(`bench:bm25 ${corpus} ${engine} ...\n`);
      const r = await runChild({ datasets: o.datasets, corpus, engine, depth, repeat, queries, blocks: o.searchBlocks?.split(',').map(Number), spillBytes: Number(o.spillBytes), spillThreads: Number(o.spillThreads) });
      if ('skipped' in r) {
        process.stderr.write(`bench:bm25 ${corpus} ${engine} skipped: ${r.skipped}\n`);
        continue;
      }
      results.push(r);
      process.stdout.write(`${JSON.stringify(r)}\n`);
    }
  }
  if (o.out) writeFileSync(o.out, `${JSON.stringify(results, null, 2)}\n`);
  process.stderr.write(table(results));
}

function table(rs: Bm25BenchResult[]): string {
  const lines = ['corpus        engine           chunks    build_s  index_MB  rss0_MB  rss_MB  peak_MB  heap+MB     q/s  vs xapian  identical  runs'];
  for (const r of rs) {
    const base = rs.find((x) => x.corpus === r.corpus && x.engine === 'xapian');
    const speedup = base ? `${(r.queries_per_second / base.queries_per_second).toFixed(2)}x` : '';
    lines.push(
      [r.corpus.padEnd(13), r.engine.padEnd(15), String(r.chunks).padStart(8), r.build_seconds.toFixed(1).padStart(9),
        r.index_mb.toFixed(0).padStart(9), r.rss_before_mb.toFixed(0).padStart(8), r.rss_mb.toFixed(0).padStart(7), r.peak_rss_mb.toFixed(0).padStart(8), r.build_peak_heap_mb.toFixed(0).padStart(8),
        r.queries_per_second.toFixed(0).padStart(7), speedup.padStart(10), (r.identical_to_exhaustive === undefined ? '' : `${r.identical_to_exhaustive}/${r.queries}`).padStart(10),
        (r.spill_runs === undefined ? '' : String(r.spill_runs)).padStart(5)].join(' '),
    );
  }
  return `${lines.join('\n')}\n`;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.stack ?? e.message : String(e)}\n`);
    process.exit(2);
  });
}

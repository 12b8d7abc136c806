/**
 * Exact dense search at scale (issue 12 §3): the sharded, multi-threaded index of src/retrieve/semantic.ts against
 * the single-matrix index it replaced (test/retrieve/reference/semantic-v1.ts, frozen), side by side in one run.
 *
 *   npm run bench:dense -- [--n 100000,300000] [--d 768] [--queries 300] [--k 50] [--threads 2] [--old-queries 300]
 *
 * Each n runs in its own child process (so RSS figures do not mix). Per n it reports:
 * - fill: RSS growth while writing n random vectors row by row into a VectorMatrix, against n·dp·4 bytes (the
 *   "no second copy" check: a ratio near 1.0 means the vectors are held once);
 * - ms/query and GFLOP/s (2·n·d floating-point operations per query) for: the new index on the calling thread
 *   (`search`), on all threads (`searchBatch`, first batch including worker start-up, then warm), and the old index
 *   (its WebAssembly engine up to 2 GiB of vectors, its JavaScript fallback beyond; `--old-queries` limits how many
 *   queries the old index runs, as the fallback takes about a second each at 100k × 768);
 * - GB/s of matrix read (n·dp·4 bytes per query), as the kernel is bound by memory bandwidth;
 * - the machine's measured peak: the same wasm kernel in a tight loop over a matrix that fits in L2 (256 KiB), on
 *   one thread and on `threads` worker threads at once;
 * - whether the new index's hits equal the old one's, bit for bit, for every query the old index ran.
 * Output: a table on stdout; progress on stderr.
 */
import { spawnSync } from 'node:child_process';
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { Command } from 'commander';
import { buildVectorIndexFromMatrix, createVectorMatrix } from '../src/retrieve/semantic.js';
import { dotsModule, wasmApi } from '../src/retrieve/kernels/dots.js';
import { buildVectorIndex as buildOld } from '../test/retrieve/reference/semantic-v1.js';
import type { Hit } from '../src/types.js';

const program = new Command()
  .name('bench:dense')
  .option('--n <list>', 'comma-separated numbers of vectors', '100000,300000')
  .option('--d <n>', 'dimensions', '768')
  .option('--queries <n>', 'queries per run', '300')
  .option('--k <n>', 'top-k', '50')
  .option('--threads <n>', 'worker threads for searchBatch', String(availableParallelism()))
  .option('--old-queries <n>', 'queries the old index runs (at most --queries)', '300')
  .option('--single-queries <n>', 'queries the new index runs on the calling thread (at most --queries)', '300')
  .option('--one <n>', 'internal: run one n in this process and print one JSON line');
const opts = program.parse().opts<{
  n: string; d: string; queries: string; k: string; threads: string; oldQueries: string; singleQueries: string; one?: string;
}>();
const d = Number(opts.d), Q = Number(opts.queries), K = Number(opts.k), T = Number(opts.threads);
const oldQ = Math.min(Q, Number(opts.oldQueries)), singleQ = Math.min(Q, Number(opts.singleQueries));

/** Interleaved measurement rounds. */
const ROUNDS = 5;
const log = (s: string) => process.stderr.write(`${s}\n`);
const rss = () => process.memoryUsage().rss;

/** xorshift32 floats in [-1, 1): fast enough for 2·10^8 values. */
function generator(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 2147483648 - 1;
  };
}

/** GFLOP/s of the same wasm kernel over 256 KiB (fits in L2), on the calling thread: the machine's in-cache peak. */
const PEAK_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { module, rows, dp, ms } = workerData;
const floats = rows * dp + dp + rows;
const memory = new WebAssembly.Memory({ initial: Math.ceil(floats * 4 / 65536), maximum: 1024, shared: true });
const f = new Float32Array(memory.buffer, 0, floats);
for (let i = 0; i < rows * dp + dp; i++) f[i] = ((i * 2654435761) % 1000) / 1000 - 0.5;
const dots = new WebAssembly.Instance(module, { env: { memory } }).exports.dots;
for (let i = 0; i < 200; i++) dots(0, rows * dp * 4, (rows * dp + dp) * 4, rows, dp);
let iters = 0;
const t0 = performance.now();
let t = t0;
while (t - t0 < ms) { for (let i = 0; i < 50; i++) dots(0, rows * dp * 4, (rows * dp + dp) * 4, rows, dp); iters += 50; t = performance.now(); }
parentPort.postMessage((2 * rows * dp * iters) / ((t - t0) / 1000) / 1e9);
`;

async function peak(threads: number, dp: number): Promise<number> {
  const module = dotsModule();
  const rows = Math.floor((256 * 1024) / (dp * 4));
  const runs = Array.from({ length: threads }, () =>
    new Promise<number>((resolve, reject) => {
      const w = new Worker(PEAK_SOURCE, { eval: true, workerData: { module, rows, dp, ms: 1500 } });
      w.once('message', (g: number) => {
        resolve(g);
        void w.terminate();
      });
      w.once('error', reject);
    }),
  );
  const g = await Promise.all(runs);
  return g.reduce((a, b) => a + b, 0);
}

const same = (a: Hit[][], b: Hit[][]): boolean =>
  a.length === b.length &&
  a.every((l, i) => l.length === b[i].length && l.every((h, j) => h.id === b[i][j].id && Object.is(h.score, b[i][j].score)));

interface Result {
  n: number; d: number; dp: number; shards: number; queries: number; k: number; threads: number;
  matrixBytes: number; fillRssBytes: number; fillSeconds: number;
  singleMs: number; startupMs: number; batchWarmMs: number; oldMs: number; oldEngine: string; oldQueries: number; rounds: number;
  identical: boolean; peakOne: number; peakAll: number; rssPeakBytes: number;
}

async function one(n: number): Promise<Result> {
  const random = generator(12345);
  const scratch = new Float32Array(d);
  log(`n = ${n}: filling the matrix`);
  const rss0 = rss();
  const t0 = performance.now();
  const matrix = createVectorMatrix(n, d);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < d; j++) scratch[j] = random();
    matrix.setRow(i, scratch);
  }
  const fillSeconds = (performance.now() - t0) / 1000;
  const fillRssBytes = rss() - rss0;
  const ids = Array.from({ length: n }, (_, i) => `doc${i}`);
  const index = buildVectorIndexFromMatrix(ids, matrix);
  const queries = Array.from({ length: Q }, () => Float32Array.from({ length: d }, random));
  const vectors = Array.from({ length: n }, (_, i) => matrix.row(i).slice(0, d));
  log(`n = ${n}: building the old index`);
  const old = buildOld(ids, vectors);

  // Worker start-up, timed apart: one query per worker.
  let t = performance.now();
  await index.searchBatch(queries.slice(0, T), K, { threads: T });
  const startupMs = performance.now() - t;

  // Interleaved rounds (the machine is shared: each method sees the same load, round by round).
  const rounds = Math.min(ROUNDS, Q);
  const time = { single: 0, batch: 0, old: 0 };
  const count = { single: 0, batch: 0, old: 0 };
  const batch: Hit[][] = [];
  const single: Hit[][] = [];
  const oldHits: Hit[][] = [];
  for (let r = 0; r < rounds; r++) {
    const from = Math.floor((r * Q) / rounds), to = Math.floor(((r + 1) * Q) / rounds);
    const qs = queries.slice(from, to);
    log(`n = ${n}: round ${r + 1}/${rounds}`);
    const sq = qs.slice(0, Math.floor(((r + 1) * singleQ) / rounds) - Math.floor((r * singleQ) / rounds));
    const oq = qs.slice(0, Math.floor(((r + 1) * oldQ) / rounds) - Math.floor((r * oldQ) / rounds));
    const steps: Record<'batch' | 'single' | 'old', () => Promise<void>> = {
      batch: async () => {
        batch.push(...(await index.searchBatch(qs, K, { threads: T })));
        count.batch += qs.length;
      },
      single: async () => {
        single.push(...sq.map((q) => index.search(q, K)));
        count.single += sq.length;
      },
      old: async () => {
        oldHits.push(...oq.map((q) => old.search(q, K)));
        count.old += oq.length;
      },
    };
    // The order rotates from round to round: whatever runs first or last in a round does not always do so.
    const order = (['batch', 'single', 'old'] as const).map((_, j, all) => all[(j + r) % 3]);
    for (const m of order) {
      const t1 = performance.now();
      await steps[m]();
      time[m] += performance.now() - t1;
    }
  }
  await index.close();
  // hits of the queries each method ran, in query order
  const ran = (c: (r: number) => number) => {
    const out: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const from = Math.floor((r * Q) / rounds);
      for (let j = 0; j < c(r); j++) out.push(from + j);
    }
    return out;
  };
  const singleIdx = ran((r) => Math.floor(((r + 1) * singleQ) / rounds) - Math.floor((r * singleQ) / rounds));
  const oldIdx = ran((r) => Math.floor(((r + 1) * oldQ) / rounds) - Math.floor((r * oldQ) / rounds));
  const identical = same(single, singleIdx.map((i) => batch[i])) && same(oldHits, oldIdx.map((i) => batch[i]));
  const singleMs = time.single / count.single;
  const batchWarmMs = time.batch / count.batch;
  const oldMs = time.old / Math.max(1, count.old);

  log(`n = ${n}: peak`);
  const peakOne = await peak(1, matrix.dp);
  const peakAll = await peak(T, matrix.dp);
  return {
    n, d, dp: matrix.dp, shards: index.shards, queries: Q, k: K, threads: T,
    matrixBytes: n * matrix.dp * 4, fillRssBytes, fillSeconds,
    singleMs, startupMs, batchWarmMs, oldMs, oldEngine: old.engine, oldQueries: count.old, rounds,
    identical, peakOne, peakAll, rssPeakBytes: rss(),
  };
}

function table(results: Result[]): string {
  const gflops = (r: Result, ms: number) => ((2 * r.n * r.d) / (ms / 1000) / 1e9).toFixed(1);
  const gbs = (r: Result, ms: number) => ((r.n * r.dp * 4) / (ms / 1000) / 1e9).toFixed(1);
  const mib = (b: number) => (b / 2 ** 20).toFixed(0);
  const lines = [
    `dense exact search: d = ${results[0]?.d}, k = ${K}, ${Q} queries in ${results[0]?.rounds} interleaved rounds, ${T} threads, node ${process.version}, load average ${loadavg().map((x) => x.toFixed(1)).join(' ')}`,
    '',
    '| n | shards | engine | ms/query | GFLOP/s | GB/s read | peak GFLOP/s (in L2) |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const r of results) {
    const row = (name: string, ms: number, peakG: number) =>
      `| ${r.n} | ${r.shards} | ${name} | ${ms.toFixed(2)} | ${gflops(r, ms)} | ${gbs(r, ms)} | ${peakG.toFixed(1)} |`;
    lines.push(row(`old (${r.oldEngine}, 1 thread, ${r.oldQueries} q)`, r.oldMs, r.peakOne));
    lines.push(row('new, calling thread', r.singleMs, r.peakOne));
    lines.push(row(`new, ${r.threads} workers (searchBatch)`, r.batchWarmMs, r.peakAll));
  }
  lines.push('', '| n | matrix MiB (n·dp·4) | RSS growth while filling, MiB | ratio | fill s | worker start-up ms | RSS at end MiB | identical hits |', '|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    lines.push(
      `| ${r.n} | ${mib(r.matrixBytes)} | ${mib(r.fillRssBytes)} | ${(r.fillRssBytes / r.matrixBytes).toFixed(3)} | ${r.fillSeconds.toFixed(1)} | ${r.startupMs.toFixed(0)} | ${mib(r.rssPeakBytes)} | ${r.identical ? 'yes' : 'NO'} |`,
    );
  }
  return lines.join('\n');
}

if (opts.one !== undefined) {
  const r = await one(Number(opts.one));
  process.stdout.write(`${JSON.stringify(r)}\n`);
} else {
  if (wasmApi === undefined || dotsModule() === null) throw new Error('WebAssembly SIMD is not available');
  const results: Result[] = [];
  const self = fileURLToPath(import.meta.url);
  for (const n of opts.n.split(',').map(Number)) {
    const pass = ['--d', opts.d, '--queries', opts.queries, '--k', opts.k, '--threads', opts.threads, '--old-queries', opts.oldQueries, '--single-queries', opts.singleQueries];
    const child = spawnSync(process.execPath, [...process.execArgv, self, ...pass, '--one', String(n)], {
      stdio: ['ignore', 'pipe', 'inherit'],
      encoding: 'utf8',
      maxBuffer: 1 << 20,
    });
    if (child.status !== 0) throw new Error(`bench for n = ${n} failed (exit ${child.status})`);
    results.push(JSON.parse(child.stdout.trim().split('\n').pop() ?? '{}') as Result);
  }
  process.stdout.write(`${table(results)}\n`);
  if (results.some((r) => !r.identical)) process.exitCode = 1;
}

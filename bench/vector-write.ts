/**
 * The vector files' writers side by side (session 12, docs/scale.md "Vector files written in order"): the per-row
 * writer of sessions 8-11 (`createPerRowWriter`: one positioned write per arriving row, duplicates copied after with a
 * random read and write each) against the in-order writer (`createOrderedWriter`: per-region buffers, scratch parts,
 * each region written once in order), on a synthetic layout shaped like the 10M run's two chunkings.
 *
 *   npm run bench:vector-write -- [--rows 4000000] [--d 100] [--rounds 3] [--orders random,inorder] [--dir /tmp/vecwrite-bench]
 *
 * Layout: group 0 ("none") 40 % of the rows, all distinct; group 1 ("256") 60 %, of which 5 rows in 12 repeat a
 * group-0 text (a short document whose one 256-token chunk is the document), in increasing order: 25 % of all rows
 * are duplicates. Arrival: `random`, a seeded permutation of the distinct texts (the misses, longest first: unrelated
 * to row order), or `inorder`, first-seen order (a warm cache's hits). Each (order, writer) run is a child process of
 * its own, alternated old, new, old, new, ...; the files are fdatasync'ed at the end (timed apart) and checked equal
 * (a checksum of both files' bytes) across writers. Per run: wall seconds to `finish` and to the sync, write and read
 * syscalls (/proc/self/io syscw, syscr) and bytes (wchar, rchar) per row, peak RSS (before the check reads the
 * files). Load before and after.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, fdatasyncSync, mkdirSync, openSync, readFileSync, readSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { createVectorFile } from '../src/retrieve/vector-file.js';
import { createOrderedWriter, createPerRowWriter, type SlotLayout } from '../src/retrieve/vector-file-writer.js';
import { strideOf } from '../src/retrieve/vector-matrix.js';

const opts = new Command()
  .name('bench:vector-write')
  .option('--rows <n>', 'rows of both files together', '4000000')
  .option('--d <n>', 'dimensions (100: 448-byte rows)', '100')
  .option('--rounds <n>', 'alternated runs of each writer per order (median reported)', '3')
  .option('--orders <list>', 'arrival orders: random, inorder', 'random,inorder')
  .option('--dir <path>', 'scratch folder (removed at the end)', '/tmp/vecwrite-bench')
  .option('--child <spec>', 'internal: run one writer (writer:order) and print its figures')
  .parse()
  .opts<{ rows: string; d: string; rounds: string; orders: string; dir: string; child?: string }>();
const rows = Number(opts.rows);
const d = Number(opts.d);
if (!(Number.isInteger(rows) && rows >= 12 && Number.isInteger(d) && d >= 1)) throw new Error('--rows must be ≥ 12 and --d ≥ 1');

/** The synthetic layout (see the header): slots in first-seen order. */
function layoutOf(total: number): SlotLayout {
  const n0 = Math.round(total * 0.4);
  const n1 = total - n0;
  const w0 = Int32Array.from({ length: n0 }, (_, i) => i);
  const w1 = new Int32Array(n1);
  let next = n0;
  for (let j = 0; j < n1; j++) w1[j] = j % 12 < 5 ? Math.min(n0 - 1, Math.round((j * n0) / n1)) : next++;
  const firstGroup = new Int32Array(next);
  const firstRow = new Int32Array(next);
  for (let i = 0; i < n0; i++) firstRow[i] = i;
  for (let j = 0; j < n1; j++) {
    if (w1[j] >= n0) {
      firstGroup[w1[j]] = 1;
      firstRow[w1[j]] = j;
    }
  }
  return { slots: next, where: [w0, w1], firstGroup, firstRow };
}

function io(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of readFileSync('/proc/self/io', 'utf8').split('\n')) {
    const [k, v] = line.split(':');
    if (v !== undefined) out[k.trim()] = Number(v);
  }
  return out;
}

function child(spec: string): void {
  const [which, order] = spec.split(':');
  const layout = layoutOf(rows);
  const arrival = Int32Array.from({ length: layout.slots }, (_, s) => s);
  if (order === 'random') {
    let x = 12345;
    for (let i = arrival.length - 1; i > 0; i--) {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      const j = Math.floor((x / 2 ** 32) * (i + 1));
      const t = arrival[i];
      arrival[i] = arrival[j];
      arrival[j] = t;
    }
  }
  const dir = path.join(opts.dir, `${which}-${order}-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const files = layout.where.map((w, g) => createVectorFile(path.join(dir, `g${g}.f32`), w.length, d));
  const row = new Float32Array(strideOf(d));
  for (let j = 0; j < d; j++) row[j] = Math.fround(1 / Math.sqrt(d));
  const before = io();
  const t0 = performance.now();
  const writer = which === 'old' ? createPerRowWriter(files, layout) : createOrderedWriter(files, layout, { scratchBase: path.join(dir, 'v') });
  for (let k = 0; k < arrival.length; k++) {
    row[0] = arrival[k]; // a distinct row per text
    writer.put(arrival[k], row);
  }
  const tPut = performance.now();
  writer.finish();
  const tFinish = performance.now();
  for (const f of files) {
    const fd = openSync(f.path, 'r+');
    fdatasyncSync(fd);
    closeSync(fd);
  }
  const tSync = performance.now();
  const after = io();
  const peakRss = process.resourceUsage().maxRSS / 1024; // before the check below reads the files
  const hash = createHash('sha256');
  const chunk = new Uint8Array(16 * 2 ** 20);
  for (const f of files) {
    f.close();
    const fd = openSync(f.path, 'r');
    for (let got; (got = readSync(fd, chunk, 0, chunk.length, null)) > 0; ) hash.update(chunk.subarray(0, got));
    closeSync(fd);
  }
  const per = (k: string) => (after[k] - before[k]) / rows;
  console.log(
    JSON.stringify({
      writer: which,
      order,
      put_s: (tPut - t0) / 1000,
      finish_s: (tFinish - t0) / 1000,
      sync_s: (tSync - tFinish) / 1000,
      total_s: (tSync - t0) / 1000,
      write_calls_per_row: per('syscw'),
      read_calls_per_row: per('syscr'),
      bytes_written_per_row: per('wchar'),
      bytes_read_per_row: per('rchar'),
      disk_bytes_written_per_row: per('write_bytes'),
      peak_rss_mb: peakRss,
      sha256: hash.digest('hex').slice(0, 16),
    }),
  );
  for (const f of files) f.remove();
  rmSync(dir, { recursive: true, force: true });
}

if (opts.child) {
  child(opts.child);
} else {
  const load = (): string => loadavg().map((x) => x.toFixed(2)).join(' ');
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const self = fileURLToPath(import.meta.url);
  console.log(`# bench:vector-write rows ${rows} d ${d} (${4 * strideOf(d)}-byte rows) rounds ${opts.rounds}; load before ${load()}`);
  mkdirSync(opts.dir, { recursive: true });
  try {
    for (const order of opts.orders.split(',')) {
      const runs: Record<string, Record<string, number | string>[]> = { old: [], new: [] };
      for (let r = 0; r < Number(opts.rounds); r++) {
        for (const which of ['old', 'new']) {
          const out = execFileSync(process.execPath, [...process.execArgv, self, '--rows', String(rows), '--d', String(d), '--dir', opts.dir, '--child', `${which}:${order}`], {
            encoding: 'utf8',
            maxBuffer: 1 << 20,
          });
          const fig = JSON.parse(out.trim().split('\n').pop() as string) as Record<string, number | string>;
          runs[which].push(fig);
          console.log(JSON.stringify(fig), `load ${load()}`);
        }
      }
      const hashes = new Set([...runs.old, ...runs.new].map((f) => f.sha256));
      console.log(`## ${order}: files identical across writers and runs: ${hashes.size === 1 ? 'yes' : `NO (${[...hashes].join(', ')})`}`);
      for (const k of ['put_s', 'finish_s', 'sync_s', 'total_s', 'write_calls_per_row', 'read_calls_per_row', 'bytes_written_per_row', 'bytes_read_per_row', 'disk_bytes_written_per_row', 'peak_rss_mb']) {
        const o = median(runs.old.map((f) => f[k] as number));
        const n = median(runs.new.map((f) => f[k] as number));
        console.log(`## ${order} ${k}: old ${o.toFixed(3)} new ${n.toFixed(3)} (old/new ${(o / n).toFixed(2)})`);
      }
    }
  } finally {
    rmSync(opts.dir, { recursive: true, force: true });
  }
  console.log(`# load after ${load()}`);
}

/**
 * The spilling half of the BM25 build (issue 25 item 1): when the forward lists a build accumulates pass its budget,
 * the block of chunks they hold is sorted into postings order (term, then chunk position) and written to a run file,
 * and the block's memory is reused for the next chunks; at the end the runs are merged (k-way, by term then run) into
 * the final CSR arrays, which are the arrays the in-memory build scatters (bm25.ts, `CompactBuilder.finish`), equal
 * element for element. This is the sort-based inversion of Witten, Moffat & Bell, "Managing Gigabytes" (2nd ed.,
 * 1999), §5.2 ("sort-based inversion" with runs merged in one multiway pass), with the per-block in-memory inversion
 * of SPIMI (Heinz & Zobel, "Efficient single-pass index construction for text databases", JASIST 54(8), 2003).
 *
 * Why the merge is correct: blocks hold consecutive chunks, so run r's chunk positions are all below run r + 1's; a
 * run lists each term's postings in chunk order. Taking the groups in (term, run) order therefore writes each term's
 * postings in ascending chunk order, which is the in-memory build's order (a counting scatter over chunks in order).
 *
 * Run file layout (native byte order, every field 4-byte aligned; the file lives only for one build of one process):
 * per term present in the block, ascending: `int32 term, int32 count, int32 big`, then `int32 × count` chunk
 * positions (ascending), `uint8 × count` term frequencies (255 = look in the big list) padded with zeros to a multiple
 * of 4, then `int32 × big` the frequencies ≥ 255 of the escaped entries, in order.
 *
 * Run files are named on src/store/temp.ts's scheme (`bm25-run-<build>-<i>.tmp-<pid>-<ms>`) in a folder the caller
 * gives, so a killed build's runs are removed by the next build that opens the folder ({@link openSpillFolder}); a
 * build removes its own runs after the merge and when it fails.
 */
import { closeSync, mkdirSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { HarnessError } from '../errors.js';
import { removeDeadTemporaries, tempPathFor } from '../store/temp.js';
import { PostingsFileWriter, type PostingsFile } from './bm25-postings-file.js';

/** A term frequency of this or more is stored as this byte plus the real value in a side list (or map). */
export const TF_ESCAPE = 255;

/**
 * Default budget of a build's posting buffers, in bytes: 1 GiB (about 107 million postings a block at 10 bytes a
 * posting: the whole forward lists of roughly a million bench:scale documents, so smaller corpora never spill).
 */
export const DEFAULT_SPILL_BYTES = 1024 ** 3;

/** Bytes a posting costs in a block: the forward lists (int32 term + uint8 tf) and their sorted copy when spilled. */
export const SPILL_BYTES_PER_POSTING = 10;

/**
 * Forward lists of a block of consecutive chunks: chunk `firstDoc + i` has entries `docStart[i] .. docStart[i + 1] − 1`
 * of `term` / `tf` (its distinct terms, global term ids, any order); `tf` is escaped at {@link TF_ESCAPE} with the
 * real value in `bigTf` keyed by entry index.
 */
export interface ForwardBlock {
  firstDoc: number;
  /** Length = chunks in the block + 1; `docStart[0] = 0`, non-decreasing. */
  docStart: Int32Array;
  term: Int32Array;
  tf: Uint8Array;
  bigTf: ReadonlyMap<number, number>;
}

/** Reusable scratch of {@link writeRun}: the sorted copy and per-term counters (grown as needed). */
export interface SortScratch {
  doc: Int32Array;
  tf: Uint8Array;
  /** Per term id: postings in this block, then (during the scatter) the next write position. */
  count: Int32Array;
}

/** An empty {@link SortScratch}. */
export function createSortScratch(): SortScratch {
  return { doc: new Int32Array(0), tf: new Uint8Array(0), count: new Int32Array(0) };
}

/** Bytes of the write and read buffers of run files (a group larger than this is written or read on its own). */
const IO_BYTES = 1 << 20;

/** A file written through one reused buffer with `writeSync`. */
class RunWriter {
  private readonly buf = new Uint8Array(IO_BYTES);
  private readonly view = new Int32Array(this.buf.buffer);
  private used = 0;
  bytes = 0;
  constructor(private readonly fd: number) {}

  private flush(): void {
    let off = 0;
    while (off < this.used) off += writeSync(this.fd, this.buf, off, this.used - off);
    this.bytes += this.used;
    this.used = 0;
  }

  int32(x: number): void {
    if (this.used + 4 > this.buf.length) this.flush();
    this.view[this.used >> 2] = x;
    this.used += 4;
  }

  /**
   * Appends `a` (a typed array view). Called at a 4-byte boundary; after an array whose byte length is not a multiple
   * of 4, {@link pad4} must follow before the next int32. Arrays larger than the buffer are written directly (their
   * whole 4-byte words; the last 1-3 bytes go to the buffer, so flushed bytes stay a multiple of 4).
   */
  raw(a: Int32Array | Uint8Array): void {
    const bytes = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    if (this.used + bytes.length > this.buf.length) this.flush();
    if (bytes.length > this.buf.length) {
      const words = bytes.length & ~3;
      let off = 0;
      while (off < words) off += writeSync(this.fd, bytes, off, words - off);
      this.bytes += words;
      this.buf.set(bytes.subarray(words), 0);
      this.used = bytes.length - words;
      return;
    }
    this.buf.set(bytes, this.used);
    this.used += bytes.length;
  }

  pad4(): void {
    while ((this.used & 3) !== 0) this.buf[this.used++] = 0;
  }

  close(): void {
    this.flush();
  }
}

/**
 * Sorts `block` into postings order (term ascending, then chunk position ascending: a stable counting sort over the
 * block's entries in chunk order) and writes it to `file` in the layout of this module's header. `vocab` bounds the
 * term ids (every term < vocab). Returns the bytes written. Allocates only when `scratch` is smaller than the block
 * or the vocabulary. Throws what the file system throws (the caller names the file).
 */
export function writeRun(file: string, block: ForwardBlock, vocab: number, scratch: SortScratch): number {
  const entries = block.docStart[block.docStart.length - 1];
  if (scratch.doc.length < entries) {
    scratch.doc = new Int32Array(entries);
    scratch.tf = new Uint8Array(entries);
  }
  if (scratch.count.length < vocab) scratch.count = new Int32Array(Math.max(vocab, 2 * scratch.count.length));
  const { doc, tf, count } = scratch;
  const { term, docStart, firstDoc } = block;
  // Terms present in the block, ascending.
  const present: number[] = [];
  for (let e = 0; e < entries; e++) if (count[term[e]]++ === 0) present.push(term[e]);
  const terms = Int32Array.from(present).sort();
  const start = new Int32Array(terms.length + 1);
  for (let i = 0; i < terms.length; i++) {
    const t = terms[i];
    start[i + 1] = start[i] + count[t];
    count[t] = start[i]; // now the next write position of term t
  }
  // Entry e of the sorted copy → entry of the block, for the big frequencies.
  const bigAt = new Map<number, number>();
  for (let i = 0, last = docStart.length - 1; i < last; i++) {
    const d = firstDoc + i;
    for (let e = docStart[i], end = docStart[i + 1]; e < end; e++) {
      const p = count[term[e]]++;
      doc[p] = d;
      tf[p] = block.tf[e];
      if (block.tf[e] === TF_ESCAPE) bigAt.set(p, block.bigTf.get(e) as number);
    }
  }
  for (const t of terms) count[t] = 0;
  const fd = openSync(file, 'w');
  try {
    const w = new RunWriter(fd);
    for (let i = 0; i < terms.length; i++) {
      const from = start[i];
      const to = start[i + 1];
      let big = 0;
      for (let p = from; p < to; p++) if (tf[p] === TF_ESCAPE) big++;
      w.int32(terms[i]);
      w.int32(to - from);
      w.int32(big);
      w.raw(doc.subarray(from, to));
      w.raw(tf.subarray(from, to));
      w.pad4();
      if (big > 0) for (let p = from; p < to; p++) if (tf[p] === TF_ESCAPE) w.int32(bigAt.get(p) as number);
    }
    w.close();
    return w.bytes;
  } finally {
    closeSync(fd);
  }
}

/** Reads a run file's groups in order through one growable buffer (4-byte aligned views into it). */
class RunReader {
  private buf: Uint8Array;
  private start = 0;
  private end = 0;
  private filePos = 0;
  private eof = false;
  /** The current group: term (−1 when the run is exhausted), count, big, and where its fields start in `buf`. */
  term = -1;
  count = 0;
  big = 0;
  private at = 0;

  constructor(
    private readonly fd: number,
    readonly run: number,
    bytes: number,
  ) {
    this.buf = new Uint8Array(bytes);
    this.next();
  }

  /** Makes `bytes` bytes available from `start`; false at the end of the file. */
  private need(bytes: number): boolean {
    if (this.end - this.start >= bytes) return true;
    if (this.buf.length < bytes) {
      const bigger = new Uint8Array(Math.max(bytes, 2 * this.buf.length));
      bigger.set(this.buf.subarray(this.start, this.end));
      this.buf = bigger;
    } else this.buf.copyWithin(0, this.start, this.end);
    this.end -= this.start;
    this.start = 0;
    while (!this.eof && this.end < this.buf.length) {
      const got = readSync(this.fd, this.buf, this.end, this.buf.length - this.end, this.filePos);
      if (got === 0) this.eof = true;
      this.filePos += got;
      this.end += got;
    }
    return this.end - this.start >= bytes;
  }

  /** Moves to the next group (term = −1 at the end). Throws a plain `Error` on a truncated file (a bug). */
  next(): void {
    this.start = this.at;
    if (!this.need(12)) {
      if (this.end !== this.start) throw new Error(`bm25 run ${this.run}: ${this.end - this.start} stray bytes at its end`);
      this.term = -1;
      return;
    }
    const head = new Int32Array(this.buf.buffer, this.start, 3);
    const [term, count, big] = head;
    const size = 12 + 4 * count + ((count + 3) & ~3) + 4 * big;
    if (!this.need(size)) throw new Error(`bm25 run ${this.run}: truncated group of term ${term}`);
    this.term = term;
    this.count = count;
    this.big = big;
    this.at = this.start + size;
  }

  /** The current group's chunk positions, term frequencies (escaped) and big frequencies (views, valid until `next`). */
  docs(): Int32Array {
    return new Int32Array(this.buf.buffer, this.start + 12, this.count);
  }
  tfs(): Uint8Array {
    return new Uint8Array(this.buf.buffer, this.start + 12 + 4 * this.count, this.count);
  }
  bigs(): Int32Array {
    return new Int32Array(this.buf.buffer, this.start + 12 + 4 * this.count + ((this.count + 3) & ~3), this.big);
  }
}

/** The merged postings: CSR by term id, as `CompactBm25` holds them (see bm25.ts). */
export interface MergedPostings {
  /** Length vocab + 1: term t's postings are `offsets[t] .. offsets[t + 1] − 1`. */
  offsets: Int32Array;
  /** Chunk positions, ascending within a term (empty when the postings are in `file`). */
  postDoc: Int32Array;
  /** Term frequencies, {@link TF_ESCAPE} for those ≥ 255 (real value in `bigTf`, keyed by posting index); empty with `file`. */
  postTf: Uint8Array;
  bigTf: Map<number, number>;
  /** The postings on disk instead of `postDoc` / `postTf` (merged with `toFileIn`). */
  file?: PostingsFile;
}

/**
 * Merges run files (written by {@link writeRun} from blocks of consecutive chunks, given in chunk order) into CSR
 * postings: a k-way merge with a binary heap keyed by (term, run), so the output is written front to back and each
 * term's postings come out in ascending chunk order. `df[t]` is term t's number of postings over all runs (the
 * offsets are its prefix sums). Reads each run once, through a buffer of `bufferBytes` (grown for a larger group).
 * Throws a plain `Error` (a bug) when the runs do not hold exactly `df`'s postings, and what the file system throws.
 */
export function mergeRuns(files: readonly string[], df: Int32Array, bufferBytes = IO_BYTES, toFileIn?: string): MergedPostings {
  const steps = mergeSteps(files, df, bufferBytes, Infinity, toFileIn);
  for (;;) {
    const s = steps.next();
    if (s.done) return s.value;
  }
}

/**
 * Postings {@link mergeRunsAsync} copies between two turns of the event loop by default: 2^20 (about a million; the
 * merge copies about 40 million a second from runs in the page cache, so about 25 ms between turns). The turns cost
 * nothing measurable (bench/bm25-merge-pause.ts), and a 10M-document merge (about a billion postings) lets the
 * chunkers' and the embedding's messages through about a thousand times instead of never.
 */
export const MERGE_YIELD_POSTINGS = 1 << 20;

/**
 * {@link mergeRuns} with a turn of the event loop (`setImmediate`) after about every `yieldPostings` postings copied
 * (a whole number ≥ 1; a term's group is never split), so other work of the process (worker messages, timers,
 * heartbeats) goes on during a long merge. The same output, element for element: both run one merge, this one only
 * pauses it. Throws as {@link mergeRuns}; the run files are closed whether it completes or throws.
 */
export async function mergeRunsAsync(
  files: readonly string[],
  df: Int32Array,
  bufferBytes = IO_BYTES,
  yieldPostings = MERGE_YIELD_POSTINGS,
  toFileIn?: string,
): Promise<MergedPostings> {
  if (!(yieldPostings >= 1)) throw new RangeError(`mergeRunsAsync: yieldPostings must be >= 1, got ${yieldPostings}`);
  const steps = mergeSteps(files, df, bufferBytes, yieldPostings, toFileIn);
  for (;;) {
    const s = steps.next();
    if (s.done) return s.value;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/** The merge of {@link mergeRuns}, pausing (yielding) after each `yieldPostings` or more postings copied. */
function* mergeSteps(
  files: readonly string[],
  df: Int32Array,
  bufferBytes: number,
  yieldPostings: number,
  toFileIn: string | undefined,
): Generator<void, MergedPostings, void> {
  const vocab = df.length;
  const offsets = new Int32Array(vocab + 1);
  for (let t = 0; t < vocab; t++) offsets[t + 1] = offsets[t] + df[t];
  const total = offsets[vocab];
  const out = toFileIn === undefined ? undefined : new PostingsFileWriter(toFileIn, total, vocab);
  const postDoc = new Int32Array(out ? 0 : total);
  const postTf = new Uint8Array(out ? 0 : total);
  const bigTf = new Map<number, number>();
  const fds: number[] = [];
  let done = false;
  try {
    for (const f of files) fds.push(openSync(f, 'r'));
    const readers = fds.map((fd, r) => new RunReader(fd, r, bufferBytes));
    // Min-heap of readers by (term, run).
    const heap = readers.filter((r) => r.term >= 0);
    const less = (a: RunReader, b: RunReader): boolean => a.term < b.term || (a.term === b.term && a.run < b.run);
    const down = (i: number): void => {
      for (;;) {
        const l = 2 * i + 1;
        if (l >= heap.length) return;
        const c = l + 1 < heap.length && less(heap[l + 1], heap[l]) ? l + 1 : l;
        if (!less(heap[c], heap[i])) return;
        [heap[c], heap[i]] = [heap[i], heap[c]];
        i = c;
      }
    };
    for (let i = (heap.length >> 1) - 1; i >= 0; i--) down(i);
    let pos = 0;
    let term = -1;
    let paused = 0;
    while (heap.length > 0) {
      if (pos - paused >= yieldPostings) {
        paused = pos;
        yield;
      }
      const r = heap[0];
      if (r.term !== term) {
        if (term >= 0 && pos !== offsets[term + 1]) throw new Error(`bm25 runs: term ${term} has ${pos - offsets[term]} postings, df says ${df[term]}`);
        term = r.term;
        if (term >= vocab || pos !== offsets[term]) throw new Error(`bm25 runs: term ${term} out of place (vocabulary ${vocab})`);
      }
      const docs = r.docs();
      const tfs = r.tfs();
      if (pos + docs.length > total) throw new Error('bm25 runs: more postings than df says');
      if (out) out.put(term, docs, tfs);
      else {
        postDoc.set(docs, pos);
        postTf.set(tfs, pos);
      }
      if (r.big > 0) {
        const bigs = r.bigs();
        for (let i = 0, j = 0; i < tfs.length; i++) if (tfs[i] === TF_ESCAPE) bigTf.set(pos + i, bigs[j++]);
      }
      pos += docs.length;
      r.next();
      if (r.term < 0) {
        const last = heap.pop() as RunReader;
        if (heap.length > 0) {
          heap[0] = last;
          down(0);
        }
      } else down(0);
    }
    if (pos !== total || (term >= 0 && pos !== offsets[term + 1])) throw new Error(`bm25 runs: ${pos} postings, df says ${total}`);
    const merged: MergedPostings = out ? { offsets, postDoc, postTf, bigTf, file: out.finish(offsets) } : { offsets, postDoc, postTf, bigTf };
    done = true;
    return merged;
  } finally {
    for (const fd of fds) closeSync(fd);
    if (!done) out?.abort();
  }
}

/**
 * Creates `dir` if absent and removes the run files of builds whose process is gone (temp.ts's scheme). Throws
 * `HarnessError('CACHE_FAILED')` naming the folder when it cannot be created.
 */
export function openSpillFolder(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true });
  } catch (e) {
    throw new HarnessError('CACHE_FAILED', `cannot create the BM25 spill folder ${dir} (${(e as NodeJS.ErrnoException).code ?? 'error'})`, {
      location: { file: dir },
      remedy: 'check that the cache folder is writable, or give the build a larger spill budget',
      cause: e,
    });
  }
  removeDeadTemporaries(dir);
}

let builds = 0;

/** The run files of one build: names on temp.ts's scheme, removed by {@link SpillRuns.dispose}. */
export class SpillRuns {
  /** The run files not yet removed, in chunk order. */
  readonly files: string[] = [];
  /** Runs written so far, and their bytes. */
  written = 0;
  bytes = 0;
  private readonly build = builds++;
  private readonly scratch = createSortScratch();

  constructor(private readonly dir: string) {}

  /**
   * Sorts and writes `block` as the next run. Throws `HarnessError('CACHE_FAILED')` naming the file and the system's
   * code (ENOSPC, EACCES, ...) when it cannot be written.
   */
  write(block: ForwardBlock, vocab: number): void {
    const file = tempPathFor(path.join(this.dir, `bm25-run-${this.build}-${this.files.length}`));
    this.files.push(file);
    this.written++;
    try {
      this.bytes += writeRun(file, block, vocab, this.scratch);
    } catch (e) {
      throw new HarnessError('CACHE_FAILED', `cannot write the BM25 run file ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`, {
        location: { file },
        remedy: 'free disk space in the cache folder (a build spills about 5 bytes a posting) or raise the BM25 build memory budget',
        cause: e,
      });
    }
  }

  /** Frees the sort scratch (before the merge allocates the final arrays). */
  releaseScratch(): void {
    this.scratch.doc = new Int32Array(0);
    this.scratch.tf = new Uint8Array(0);
    this.scratch.count = new Int32Array(0);
  }

  /** Removes every run file of this build (never throws: a file that cannot be removed is left for the next build). */
  dispose(): void {
    for (const f of this.files) {
      try {
        rmSync(f, { force: true });
      } catch {
        /* removed by the next build that opens the folder */
      }
    }
    this.files.length = 0;
  }
}

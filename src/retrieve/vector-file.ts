/**
 * Normalised embedding vectors in a file instead of in memory (issue 25 item 1): the rows of a {@link VectorMatrix}
 * (same normalisation, same float32 bits, same stride dp = max(16, d rounded up to 16), zero padding) laid end to end,
 * row i at byte offset 4 · dp · i, no header. The file-backed exact search (`buildVectorIndexFromFile` in
 * src/retrieve/semantic.ts) reads it one shard at a time into one reused buffer.
 *
 * Writes go through a small coalescing buffer (consecutive rows become one `write` call); reads flush it first.
 * The file is created at the path given (callers name it on src/store/temp.ts's `*.tmp-<pid>-<ms>` scheme, so a
 * killed run's file is removed by the next run) and removed by {@link VectorFile.remove}.
 */
import { closeSync, ftruncateSync, openSync } from 'node:fs';
import { HarnessError } from '../errors.js';
import { discardFile, readFullyAt, writeFullyAt } from '../store/positioned-io.js';
import { strideOf, writeNormalised, type VectorRows } from './vector-matrix.js';

/** Bytes of the write buffer: 1 MiB (or one row, when a row is larger). */
const WRITE_BUFFER_BYTES = 2 ** 20;

/** n normalised rows of length d in a file; see the module header. Create with {@link createVectorFile}. */
export class VectorFile implements VectorRows {
  /** Rows. */
  readonly n: number;
  /** Vector length (≥ 1 when n > 0). */
  readonly d: number;
  /** Row stride in floats. */
  readonly dp: number;
  /** Absolute path of the file. */
  readonly path: string;
  private fd: number | null;
  private readonly row: Float32Array;
  private readonly pending: Float32Array;
  /** First row held in `pending`, and how many consecutive rows it holds. */
  private pendingFirst = 0;
  private pendingRows = 0;

  /** @internal use {@link createVectorFile}. */
  constructor(file: string, fd: number, n: number, d: number) {
    this.path = file;
    this.fd = fd;
    this.n = n;
    this.d = d;
    this.dp = strideOf(d);
    this.row = new Float32Array(this.dp);
    this.pending = new Float32Array(Math.max(1, Math.floor(WRITE_BUFFER_BYTES / 4 / this.dp)) * this.dp);
  }

  /** Bytes of the file: 4 · n · dp. */
  get byteLength(): number {
    return 4 * this.n * this.dp;
  }

  private handle(): number {
    if (this.fd === null) throw new Error(`vector file ${this.path} is closed`);
    return this.fd;
  }

  private checkRow(i: number): void {
    if (!Number.isInteger(i) || i < 0 || i >= this.n) throw new Error(`vector file: row ${i} outside [0, ${this.n})`);
  }

  /** Writes the buffered rows to the file. */
  flush(): void {
    if (this.pendingRows === 0) return;
    const bytes = this.pendingRows * this.dp * 4;
    writeFully(this.handle(), new Uint8Array(this.pending.buffer, 0, bytes), this.pendingFirst * this.dp * 4, this.path);
    this.pendingRows = 0;
  }

  /**
   * Writes row i normalised from `v` (length d; not changed) with the matrix's arithmetic ({@link writeNormalised}).
   * Throws `HarnessError('EMBEDDING_FAILED')` when `v.length` ≠ d or v holds NaN/Infinity.
   */
  setRow(i: number, v: ArrayLike<number>, what = `vector ${i}`): void {
    this.row.fill(0);
    writeNormalised(this.row, v, this.d, what);
    this.writeRow(i, this.row);
  }

  /** Writes row i from `row` (dp floats, already normalised). */
  writeRow(i: number, row: Float32Array): void {
    this.checkRow(i);
    const dp = this.dp;
    const cap = this.pending.length / dp;
    if (this.pendingRows > 0 && (i !== this.pendingFirst + this.pendingRows || this.pendingRows === cap)) this.flush();
    if (this.pendingRows === 0) this.pendingFirst = i;
    this.pending.set(row.subarray(0, dp), this.pendingRows * dp);
    this.pendingRows++;
  }

  /**
   * Writes rows first .. first + count − 1 from `rows` (count · dp floats, already normalised) in one positioned
   * write, after the buffered rows (so a later call wins where they overlap). Used by the in-order writer
   * (src/retrieve/vector-file-writer.ts) for a whole region at once. Throws `HarnessError('EMBEDDING_FAILED')` naming
   * the file when it cannot be written (a full disk), an Error for rows outside [0, n).
   */
  writeRows(first: number, count: number, rows: Float32Array): void {
    if (count === 0) return;
    this.checkRow(first);
    this.checkRow(first + count - 1);
    if (rows.length < count * this.dp) throw new Error(`vector file: ${rows.length} floats for ${count} rows of ${this.dp}`);
    this.flush();
    writeFully(this.handle(), new Uint8Array(rows.buffer, rows.byteOffset, count * this.dp * 4), first * this.dp * 4, this.path);
  }

  /** Copies row i (dp floats) into `into`. */
  readRow(i: number, into: Float32Array): void {
    this.checkRow(i);
    this.readRows(i, 1, into);
  }

  /**
   * Reads rows first .. first + count − 1 (count · dp floats) into `into` (a Float32Array, possibly over a shared
   * WebAssembly memory). Throws `HarnessError('RETRIEVER_FAILED')` naming the file when it is shorter than expected.
   */
  readRows(first: number, count: number, into: Float32Array): void {
    this.flush();
    const bytes = count * this.dp * 4;
    const view = new Uint8Array(into.buffer, into.byteOffset, bytes);
    readFullyAt(this.handle(), view, 0, bytes, first * this.dp * 4, (end) =>
      new HarnessError('RETRIEVER_FAILED', `vector file ${this.path} ended at byte ${end}, expected ${this.byteLength}`, {
        location: { file: this.path },
        remedy: 'the file was changed or truncated while the sweep ran; run the sweep again',
      }));
  }

  /** Flushes and closes the file (idempotent); the file stays on disk until {@link VectorFile.remove}. */
  close(): void {
    if (this.fd === null) return;
    try {
      this.flush();
    } finally {
      closeSync(this.fd);
      this.fd = null;
    }
  }

  /** Closes (dropping unwritten rows) and deletes the file. Idempotent; never throws. */
  remove(): void {
    this.pendingRows = 0;
    discardFile(this.fd, this.path);
    this.fd = null;
  }
}

function writeFully(fd: number, bytes: Uint8Array, position: number, file: string): void {
  writeFullyAt(fd, bytes, position, (e) =>
    new HarnessError('EMBEDDING_FAILED', `cannot write vectors to ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`, {
      location: { file },
      remedy: 'free disk space in the cache folder (the file takes 4 · chunks · d bytes), or raise limits.memory so the vectors stay in memory',
      cause: e,
    }));
}

/**
 * Creates (or truncates) `file` for n rows of length d (n ≥ 0; d ≥ 1 when n > 0), sized 4 · n · dp bytes of zeros
 * (a sparse file until rows are written). Throws `HarnessError('EMBEDDING_FAILED')` naming the file when it cannot be
 * created, `HarnessError('CONFIG_INVALID')` for a bad size (a bug in the caller).
 */
export function createVectorFile(file: string, n: number, d: number): VectorFile {
  if (!Number.isInteger(n) || n < 0 || !Number.isInteger(d) || d < 0 || (n > 0 && d === 0)) {
    throw new HarnessError('CONFIG_INVALID', `vector file: n (${n}) must be a whole number >= 0 and d (${d}) >= 1`, {
      remedy: 'this is a bug in the caller',
    });
  }
  let fd: number | undefined;
  try {
    fd = openSync(file, 'w+');
    ftruncateSync(fd, 4 * n * strideOf(d));
  } catch (e) {
    if (fd !== undefined) closeSync(fd);
    throw new HarnessError('EMBEDDING_FAILED', `cannot create the vector file ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`, {
      location: { file },
      remedy: 'check that the cache folder is writable and has room for 4 · chunks · d bytes, or raise limits.memory',
      cause: e,
    });
  }
  return new VectorFile(file, fd, n, d);
}

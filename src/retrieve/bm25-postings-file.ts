/**
 * The BM25 index's postings on disk (issue 25 item 1): when a spilled build's merged postings would take more than
 * their share of the memory budget, the merge (bm25-spill.ts) writes them to a file instead of two resident arrays,
 * and the index reads each query term's postings from it when a query comes (bm25.ts, `CompactBm25`). The file is
 * the CSR arrays as they are in memory: `int32 × total` chunk positions (term after term, ascending within a term)
 * from byte 0, then `uint8 × total` term frequencies (255 escaped, the real values stay resident) from byte
 * `4 · total`, native byte order. It lives for one index of one process: it is unlinked as soon as it is open (the
 * open descriptor keeps it; nothing is left after a kill), and its name follows src/store/temp.ts's scheme so that a
 * file that could not be unlinked is removed by the next build that opens the folder.
 *
 * Nothing read back is trusted: each term's two byte ranges carry a CRC-32 (zlib's, the one the embedding cache
 * uses) computed as the merge wrote them, and every read checks them; a mismatch or a short read throws.
 */
import { closeSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { HarnessError } from '../errors.js';
import { tempPathFor } from '../store/temp.js';

/** Bytes a posting takes in a postings file (and in memory): an int32 chunk position and a uint8 term frequency. */
export const POSTING_BYTES = 5;

/** Postings the writer buffers before each pair of positional writes: 2^20 (5 MiB). */
const WRITE_BUFFER_POSTINGS = 1 << 20;

let files = 0;

function bytesOf(a: Int32Array | Uint8Array): Uint8Array {
  return a instanceof Uint8Array ? a : new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

function writeFully(fd: number, bytes: Uint8Array, position: number): void {
  let off = 0;
  while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off, position + off);
}

function cacheFailed(file: string, what: string, e: unknown): HarnessError {
  return new HarnessError('CACHE_FAILED', `cannot ${what} the BM25 postings file ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`, {
    location: { file },
    remedy: 'free disk space in the cache folder (the postings take 5 bytes each) or raise limits.memory so the index stays in memory',
    cause: e,
  });
}

/**
 * Writes merged postings front to back into a new postings file in `dir` (see the module comment), with a CRC-32 per
 * term of its chunk positions' bytes and one of its frequencies' bytes. `put` must be called in posting order (term
 * ascending, chunks ascending within a term); {@link finish} checks that `total` postings came and returns the
 * readable file; {@link abort} closes and removes it. Throws `HarnessError('CACHE_FAILED')` naming the file when it
 * cannot be created or written.
 */
export class PostingsFileWriter {
  readonly file: string;
  private readonly fd: number;
  /** `crc[2t]`: term t's chunk positions; `crc[2t + 1]`: its frequencies. */
  private readonly crc: Uint32Array;
  private readonly docBuf = new Int32Array(WRITE_BUFFER_POSTINGS);
  private readonly tfBuf = new Uint8Array(WRITE_BUFFER_POSTINGS);
  /** Postings written to the file so far, and buffered after them. */
  private flushed = 0;
  private used = 0;

  /** @param total postings the file will hold (≥ 0); @param vocab terms (≥ 0). */
  constructor(dir: string, readonly total: number, vocab: number) {
    this.file = tempPathFor(path.join(dir, `bm25-postings-${files++}`));
    try {
      this.fd = openSync(this.file, 'wx+');
    } catch (e) {
      throw cacheFailed(this.file, 'create', e);
    }
    try {
      rmSync(this.file, { force: true });
    } catch {
      /* not removable while open (some systems): removed by the next build that opens the folder */
    }
    this.crc = new Uint32Array(2 * vocab);
  }

  /** Appends term `t`'s next postings (chunk positions ascending, escaped frequencies). */
  put(t: number, docs: Int32Array, tfs: Uint8Array): void {
    const { crc } = this;
    crc[2 * t] = crc32(bytesOf(docs), crc[2 * t]);
    crc[2 * t + 1] = crc32(tfs, crc[2 * t + 1]);
    if (this.used + docs.length > WRITE_BUFFER_POSTINGS) this.flush();
    if (docs.length > WRITE_BUFFER_POSTINGS) {
      this.write(docs, tfs);
      return;
    }
    this.docBuf.set(docs, this.used);
    this.tfBuf.set(tfs, this.used);
    this.used += docs.length;
  }

  private flush(): void {
    if (this.used === 0) return;
    this.write(this.docBuf.subarray(0, this.used), this.tfBuf.subarray(0, this.used));
    this.used = 0;
  }

  private write(docs: Int32Array, tfs: Uint8Array): void {
    if (this.flushed + docs.length > this.total) throw new Error(`bm25 postings file: more than ${this.total} postings`);
    try {
      writeFully(this.fd, bytesOf(docs), 4 * this.flushed);
      writeFully(this.fd, tfs, 4 * this.total + this.flushed);
    } catch (e) {
      throw cacheFailed(this.file, 'write', e);
    }
    this.flushed += docs.length;
  }

  /** The file, readable, once all `total` postings were put; `offsets` are the CSR offsets (length vocab + 1). */
  finish(offsets: Int32Array): PostingsFile {
    this.flush();
    if (this.flushed !== this.total || offsets[offsets.length - 1] !== this.total) {
      throw new Error(`bm25 postings file: ${this.flushed} postings written, ${this.total} expected`);
    }
    return new PostingsFile(this.fd, this.file, this.total, offsets, this.crc);
  }

  /** Closes and removes the file (after a failed merge); never throws. */
  abort(): void {
    try {
      closeSync(this.fd);
    } catch {
      /* already closed */
    }
    try {
      rmSync(this.file, { force: true });
    } catch {
      /* removed by the next build that opens the folder */
    }
  }
}

const open = new FinalizationRegistry<number>((fd) => {
  try {
    closeSync(fd);
  } catch {
    /* already closed */
  }
});

/**
 * A finished postings file, read term by term ({@link read}). Closed by {@link close}, or when it is garbage
 * collected. Holds per term 8 bytes of checksums, besides the offsets its index holds anyway.
 */
export class PostingsFile {
  private closed = false;
  private readonly token = {};

  constructor(
    private readonly fd: number,
    /** The file's name (unlinked while open on most systems), for errors. */
    readonly file: string,
    /** Postings in the file. */
    readonly total: number,
    private readonly offsets: Int32Array,
    private readonly crc: Uint32Array,
  ) {
    open.register(this, fd, this.token);
  }

  /** Bytes on disk: {@link POSTING_BYTES} per posting. */
  get bytes(): number {
    return POSTING_BYTES * this.total;
  }

  /**
   * Reads the postings of terms `from .. to − 1` (consecutive in the file) into `doc` / `tf` from position `at`
   * (the arrays must have room for them) and checks each term's checksums. Throws `HarnessError('CACHE_FAILED')`
   * naming the file and the term when a checksum does not match or the file ends early, and what the file system
   * throws on a failed read.
   */
  read(from: number, to: number, doc: Int32Array, tf: Uint8Array, at: number): void {
    if (this.closed) throw new Error(`bm25 postings file ${this.file} is closed`);
    const { offsets, crc } = this;
    const p0 = offsets[from];
    const count = offsets[to] - p0;
    if (count === 0) return;
    const docBytes = new Uint8Array(doc.buffer, doc.byteOffset + 4 * at, 4 * count);
    const tfBytes = tf.subarray(at, at + count);
    this.readFully(docBytes, 4 * p0);
    this.readFully(tfBytes, 4 * this.total + p0);
    for (let t = from; t < to; t++) {
      const a = offsets[t] - p0;
      const b = offsets[t + 1] - p0;
      if (crc32(docBytes.subarray(4 * a, 4 * b)) !== crc[2 * t] || crc32(tfBytes.subarray(a, b)) !== crc[2 * t + 1]) {
        throw new HarnessError('CACHE_FAILED', `the BM25 postings file ${this.file} does not hold what was written: term ${t}'s postings fail their CRC-32`, {
          location: { file: this.file },
          remedy: 'the disk or another process changed the file; run again (the index is rebuilt), and check the disk if it recurs',
        });
      }
    }
  }

  private readFully(bytes: Uint8Array, position: number): void {
    let off = 0;
    while (off < bytes.length) {
      let got: number;
      try {
        got = readSync(this.fd, bytes, off, bytes.length - off, position + off);
      } catch (e) {
        throw cacheFailed(this.file, 'read', e);
      }
      if (got === 0) {
        throw new HarnessError('CACHE_FAILED', `the BM25 postings file ${this.file} has nothing at byte ${position + off} of its ${POSTING_BYTES * this.total} bytes: it was cut short`, {
          location: { file: this.file },
          remedy: 'the file was cut short on disk; run again (the index is rebuilt)',
        });
      }
      off += got;
    }
  }

  /** Closes the file (later reads throw); idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    open.unregister(this.token);
    try {
      closeSync(this.fd);
    } catch {
      /* already closed */
    }
  }
}

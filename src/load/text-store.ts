/**
 * Document texts on disk instead of in memory (issue 25 item 1): a {@link TextStore} appends texts to one file and
 * reads them back by index with positioned reads, and {@link StoredDoc} / {@link StoredChunk} are a `Doc` and a
 * `Chunk` whose `text` is read from the store on access. Used when the corpus is larger than its share of
 * `limits.memory` (`documentResidentBytes` in src/config/memory.ts); the loaders decide before loading, from the corpus
 * file's size.
 *
 * Exactness: a JavaScript string is a sequence of UTF-16 code units and may hold lone surrogates (from `\ud800` JSON
 * escapes), which UTF-8 cannot carry. Each text is stored in one of three encodings, with a flag per text, and every
 * one round-trips its strings exactly:
 * - latin1 (one byte a code unit) when every code unit is below 256;
 * - UTF-8 when a code unit is 256 or more, the text is well formed (no lone surrogate) and at most
 *   {@link UTF8_MAX_UNITS} code units long;
 * - UTF-16LE (two bytes a code unit) otherwise.
 * UTF-8 does not map code-unit offsets to byte offsets, so a slice of a UTF-8 text decodes the whole text (the last one
 * decoded is kept, so the chunks of one document read one after the other decode it once); the length bound keeps
 * that decode to at most 3 × {@link UTF8_MAX_UNITS} bytes a slice. Until session 20 every text with a code unit ≥ 256
 * went to UTF-16LE: 22 % of the bench documents, making the store 1.25× the corpus's UTF-8 (13.6 GB at 10M documents).
 * Per text the store keeps its byte offset (a `Float64Array`: files pass 4 GB at 10M documents; a text's bytes end
 * where the next one's start), its length in code units (`Uint32Array`) and the flag (`Uint8Array`): 13 bytes, in
 * arrays that grow by doubling. A UTF-8 text read back must decode to its recorded length, else the read throws.
 *
 * Writes are coalesced in a 1 MiB buffer, and a full buffer is written behind the caller's back: handed to libuv's
 * thread pool (`fs.write` at its offset) while appends fill another, up to {@link WRITES_IN_FLIGHT} at once (a full
 * buffer beyond that is written synchronously). At 10M documents the store's 10.8 GB of writes took 15 s of the main
 * thread, the kernel's copy into its page cache (session 20); behind it, they run on the second core beside the
 * parsing. A read, {@link TextStore.flush} or {@link TextStore.close} first writes synchronously what is still in
 * flight (the same bytes at the same offsets, so the two writes agree whichever lands last), so every read sees every
 * text appended before it. A background write that fails is thrown by the store's next call.
 *
 * Reads use one bounded read buffer (default 64 KiB; a longer text is read in pieces), and reads that walk the file
 * forwards are served from a 1 MiB read-ahead window ({@link READ_AHEAD_BYTES}).
 *
 * File: `<dir>/documents-<n>.txt.tmp-<pid>-<ms>` (src/store/temp.ts's scheme): removed by {@link TextStore.remove}
 * (the sweep calls it when it ends), by a process `exit` hook for stores still open, and, when a run was killed, by the
 * next {@link createTextStore} in the same folder (`removeDeadTemporaries`).
 *
 * What reads a stored text must not keep the object instead of the text: structured clone (worker threads) and object
 * spread copy own properties only, so a `StoredDoc` or `StoredChunk` sent to a worker or spread loses its `text`.
 * Every such path in the tool sends {@link plainDocs} (materialised `{ id, text }` per batch) or the texts themselves;
 * `JSON.stringify` goes through `toJSON`. Sorting by id never reads a text.
 */
import { closeSync, mkdirSync, openSync } from 'node:fs';
import path from 'node:path';
import { HarnessError } from '../errors.js';
import { discardFile, readFullyAt, writeFullyAt, writeFullyAtAsync } from '../store/positioned-io.js';
import { removeDeadTemporaries, tempPathFor } from '../store/temp.js';
import type { Chunk, Doc } from '../types.js';

/** Bytes of the write buffer: 1 MiB (a longer text is written directly). */
const WRITE_BUFFER_BYTES = 2 ** 20;
/** Full write buffers being written behind the caller's back at most (see the module header): 2. */
export const WRITES_IN_FLIGHT = 2;

/** A full write buffer handed to the thread pool. */
interface WriteBehind {
  /** The buffer, back to the free list when the write ends. */
  readonly buffer: Buffer;
  /** Its bytes to write. */
  readonly bytes: Buffer;
  /** File offset of `bytes[0]`. */
  readonly at: number;
  /** Also written synchronously (by a read, flush or close): an error of the background write no longer matters. */
  synced: boolean;
}
/** Default bytes of the read buffer: 64 KiB. */
export const DEFAULT_READ_BUFFER_BYTES = 64 * 1024;
/**
 * Bytes of the read-ahead window: 1 MiB. Reading the chunk texts of 1M documents in order made one positioned read
 * per chunk (1.76 million `pread`s); with the window, one per MiB of text.
 */
export const READ_AHEAD_BYTES = 2 ** 20;
/** Texts the index arrays start with (they double when full). */
const INITIAL_CAPACITY = 1024;
/** Any code unit at or above 256: the text needs UTF-8 or UTF-16LE. */
const WIDE = /[^\u0000-\u00ff]/;
/**
 * Longest text, in code units, stored as UTF-8 (longer wide texts go to UTF-16LE): 16,384, so a slice decodes at most
 * 48 KiB. Documents are far shorter in the corpora this tool meets (SciFact's longest is about 10k code units).
 */
export const UTF8_MAX_UNITS = 16_384;
/** Flags of a text's encoding in the store. */
const LATIN1 = 0;
const UTF16 = 1;
const UTF8 = 2;
const ENCODINGS = ['latin1', 'utf16le', 'utf8'] as const;
/** How a text is stored (see the module header). */
export type StoredEncoding = (typeof ENCODINGS)[number];

/** Options of {@link createTextStore}. */
export interface TextStoreOptions {
  /** Bytes of the read buffer, an even integer ≥ 2; default {@link DEFAULT_READ_BUFFER_BYTES}. Tests pass tiny values. */
  readBufferBytes?: number;
  /** Bytes of the read-ahead window, an integer ≥ 0 (0: none); default {@link READ_AHEAD_BYTES}. Tests pass tiny values. */
  readAheadBytes?: number;
}

/** Stores open in this process, removed at exit if nobody removed them before. */
const live = new Set<TextStore>();
let exitHook = false;
let sequence = 0;

/** Texts appended to one file and read back by index; see the module header. Create with {@link createTextStore}. */
export class TextStore {
  /** Absolute path of the file. */
  readonly path: string;
  private fd: number | null;
  private closedBecause: 'closed' | 'removed' | null = null;
  private offsets = new Float64Array(INITIAL_CAPACITY);
  private lengths = new Uint32Array(INITIAL_CAPACITY);
  /** {@link LATIN1}, {@link UTF16} or {@link UTF8} per text. */
  private encoding = new Uint8Array(INITIAL_CAPACITY);
  private n = 0;
  /** Bytes in the file plus the write buffer. */
  private bytes = 0;
  private pending: Buffer = Buffer.allocUnsafe(WRITE_BUFFER_BYTES);
  private pendingBytes = 0;
  /** Full buffers being written on the thread pool. */
  private readonly writing = new Set<WriteBehind>();
  /** Write buffers free for reuse. */
  private readonly free: Buffer[] = [];
  /** The first background write's failure, thrown by the next call that needs the file. */
  private writeFailure: HarnessError | null = null;
  /** The descriptor to close when the last background write ends (closed or removed while writes were in flight). */
  private closeWhenWritten: number | null = null;
  /** File offset of `pending[0]`. */
  private pendingAt = 0;
  private readonly readBuffer: Buffer;
  /**
   * Read-ahead window for reads that walk the file forwards (the chunk texts of a chunking, read in order by the
   * embedding's dedupe and the BM25 build): file bytes [windowAt, windowAt + windowBytes) of one read of up to
   * {@link READ_AHEAD_BYTES}. Allocated on the first forward read; a read far from the previous one (the embedding's
   * misses, longest first) reads its own bytes as before and leaves the window alone.
   *
   * A fill reads twice the bytes of the current run (the reads so far that each started near the previous one's end,
   * this one included), at least this read and at most the window: a long walk in file order reaches the full window
   * after a few fills, while a document read chunk by chunk in an order that jumps between documents (ids sorted, file
   * in load order: the 10M bench corpus) reads a few KB for its second chunk, not a MiB. Session 12 filled the whole
   * window on every such read: 5.4 GB/s of `read` on the main thread in the 10M run's embedding set-up (session 13).
   */
  private window: Buffer | null = null;
  private windowAt = 0;
  private windowBytes = 0;
  /** File byte just past the previous read (−1 before the first). */
  private lastEnd = -1;
  /** Bytes of the current run of reads, each starting near the previous one's end (the read that started it included). */
  private runBytes = 0;
  private readonly readAheadBytes: number;
  private reads = 0;
  private readBytes = 0;
  /** The UTF-8 text decoded last (its index, −1 for none): the next slice of the same text does not read it again. */
  private decodedIndex = -1;
  private decodedText = '';

  /** @internal use {@link createTextStore}. */
  constructor(file: string, fd: number, readBufferBytes: number, readAheadBytes = READ_AHEAD_BYTES) {
    this.path = file;
    this.fd = fd;
    this.readBuffer = Buffer.allocUnsafe(readBufferBytes);
    this.readAheadBytes = readAheadBytes;
  }

  /** Texts stored. */
  get size(): number {
    return this.n;
  }

  /** Positioned reads of the file made so far (one per window filled or piece read; for tests and benches). */
  get readCount(): number {
    return this.reads;
  }

  /** Bytes those reads asked for. */
  get bytesRead(): number {
    return this.readBytes;
  }

  /** Bytes of the file (latin1 texts one byte a code unit, UTF-16LE texts two, UTF-8 texts 1-3). */
  get byteLength(): number {
    return this.bytes;
  }

  /** Bytes of memory the index arrays take now (13 bytes a text of capacity), plus the read and write buffers (1 MiB each). */
  get residentBytes(): number {
    return this.offsets.byteLength + this.lengths.byteLength + this.encoding.byteLength + this.pending.length + this.readBuffer.length + (this.window?.length ?? 0) +
      WRITE_BUFFER_BYTES * (this.writing.size + this.free.length);
  }

  private handle(): number {
    if (this.writeFailure !== null) throw this.writeFailure;
    if (this.fd === null) {
      throw new HarnessError('RESOURCE_UNAVAILABLE', `the document text store ${this.path} was ${this.closedBecause ?? 'closed'}; its texts cannot be read any more`, {
        location: { file: this.path },
        remedy: 'read documents and chunk texts before the sweep ends (the store is removed with it), or load the dataset again',
      });
    }
    return this.fd;
  }

  private grow(): void {
    const cap = this.offsets.length * 2;
    const o = new Float64Array(cap);
    o.set(this.offsets);
    this.offsets = o;
    const l = new Uint32Array(cap);
    l.set(this.lengths);
    this.lengths = l;
    const e = new Uint8Array(cap);
    e.set(this.encoding);
    this.encoding = e;
  }

  /**
   * Appends `text` (any string, lone surrogates included) and returns its index (0, 1, 2, ... in call order).
   * @throws HarnessError('RESOURCE_UNAVAILABLE') naming the file when it cannot be written (a full disk) or is closed.
   */
  append(text: string): number {
    const fd = this.handle();
    if (this.n === this.offsets.length) this.grow();
    const code = !WIDE.test(text) ? LATIN1 : text.length <= UTF8_MAX_UNITS && isWellFormed(text) ? UTF8 : UTF16;
    const i = this.n;
    this.offsets[i] = this.bytes;
    this.lengths[i] = text.length;
    this.encoding[i] = code;
    let size: number;
    if (code === UTF8) {
      // at most 3 bytes a code unit (48 KiB), so it always fits an emptied write buffer
      if (3 * text.length > this.pending.length - this.pendingBytes) this.writeBehind(fd);
      if (this.pendingBytes === 0) this.pendingAt = this.bytes;
      size = this.pending.write(text, this.pendingBytes, 'utf8');
      this.pendingBytes += size;
    } else {
      size = code === UTF16 ? 2 * text.length : text.length;
      const encoding = ENCODINGS[code];
      if (size > this.pending.length - this.pendingBytes) this.writeBehind(fd);
      if (size > this.pending.length) writeFully(fd, Buffer.from(text, encoding), this.bytes, this.path);
      else {
        if (this.pendingBytes === 0) this.pendingAt = this.bytes;
        this.pending.write(text, this.pendingBytes, size, encoding);
        this.pendingBytes += size;
      }
    }
    this.bytes += size;
    this.n++;
    return i;
  }

  /**
   * Hands the write buffer to the thread pool and takes a free one (see the module header); with
   * {@link WRITES_IN_FLIGHT} writes already running, writes it synchronously instead.
   */
  private writeBehind(fd: number): void {
    if (this.pendingBytes === 0) return;
    if (this.writing.size >= WRITES_IN_FLIGHT) {
      writeFully(fd, this.pending.subarray(0, this.pendingBytes), this.pendingAt, this.path);
      this.pendingBytes = 0;
      return;
    }
    const job: WriteBehind = { buffer: this.pending, bytes: this.pending.subarray(0, this.pendingBytes), at: this.pendingAt, synced: false };
    this.writing.add(job);
    this.pending = this.free.pop() ?? Buffer.allocUnsafe(WRITE_BUFFER_BYTES);
    this.pendingBytes = 0;
    writeFullyAtAsync(fd, job.bytes, job.at, (error) => {
      this.writing.delete(job);
      this.free.push(job.buffer);
      if (error !== null && !job.synced) this.writeFailure ??= writeError(this.path, error);
      if (this.writing.size === 0 && this.closeWhenWritten !== null) {
        closeQuietly(this.closeWhenWritten);
        this.closeWhenWritten = null;
      }
    });
  }

  /**
   * Writes the buffered texts to the file, and again synchronously those still being written behind (same bytes, same
   * offsets), so that the file holds every text appended so far when it returns.
   * @throws HarnessError('RESOURCE_UNAVAILABLE') naming the file when it cannot be written, or a background write failed.
   */
  flush(): void {
    const fd = this.handle();
    for (const job of this.writing) {
      if (job.synced) continue;
      writeFully(fd, job.bytes, job.at, this.path);
      job.synced = true;
    }
    if (this.pendingBytes === 0) return;
    writeFully(fd, this.pending.subarray(0, this.pendingBytes), this.pendingAt, this.path);
    this.pendingBytes = 0;
  }

  private check(i: number): void {
    if (!Number.isInteger(i) || i < 0 || i >= this.n) throw new RangeError(`text store ${this.path}: text ${i} outside [0, ${this.n})`);
  }

  /** Length of text i in UTF-16 code units (`text.length`), without reading it. */
  lengthOf(i: number): number {
    this.check(i);
    return this.lengths[i];
  }

  /**
   * Byte offset of text i in the file (≥ 0; a `Float64Array` entry, exact below 2^53). Texts appended one after the
   * other have increasing offsets: what the embedding orders its reads by (see {@link textPosition}).
   */
  positionOf(i: number): number {
    this.check(i);
    return this.offsets[i];
  }

  /** True when text i is stored as UTF-16LE (a code unit ≥ 256, and a lone surrogate or over {@link UTF8_MAX_UNITS} code units). */
  isWide(i: number): boolean {
    this.check(i);
    return this.encoding[i] === UTF16;
  }

  /** How text i is stored: 'latin1', 'utf16le' or 'utf8' (see the module header). */
  encodingOf(i: number): StoredEncoding {
    this.check(i);
    return ENCODINGS[this.encoding[i]];
  }

  /** Bytes text i takes in the file: where the next text starts (or the file ends) minus where it starts. */
  storedBytesOf(i: number): number {
    this.check(i);
    return (i + 1 < this.n ? this.offsets[i + 1] : this.bytes) - this.offsets[i];
  }

  /**
   * Where code unit `start` of text i is in the file, in bytes, for ordering reads: exact for latin1 and UTF-16LE
   * texts; for a UTF-8 text, `positionOf(i) + start`, a lower bound inside the text's bytes (a code unit takes 1-3
   * bytes).
   */
  bytePositionOf(i: number, start: number): number {
    this.check(i);
    return this.offsets[i] + start * (this.encoding[i] === UTF16 ? 2 : 1);
  }

  /** Text i, exactly as appended. */
  get(i: number): string {
    this.check(i);
    return this.slice(i, 0, this.lengths[i]);
  }

  /**
   * `get(i).slice(start, end)` without reading the rest of the text: code units [start, end) of text i, with
   * 0 ≤ start ≤ end ≤ `lengthOf(i)` (else RangeError).
   * @throws HarnessError('RESOURCE_UNAVAILABLE') naming the file when it is closed, or shorter than expected.
   */
  slice(i: number, start: number, end: number): string {
    this.check(i);
    if (!Number.isInteger(start) || !Number.isInteger(end) || start < 0 || end < start || end > this.lengths[i]) {
      throw new RangeError(`text store ${this.path}: range [${start}, ${end}) outside text ${i} of length ${this.lengths[i]}`);
    }
    const fd = this.handle();
    if (start === end) return '';
    if (this.pendingBytes > 0 || this.writing.size > 0) this.flush();
    const code = this.encoding[i];
    if (code === UTF8) {
      const whole = this.decodeUtf8(fd, i);
      return start === 0 && end === whole.length ? whole : whole.slice(start, end);
    }
    const unit = code === UTF16 ? 2 : 1;
    return this.readRange(fd, this.offsets[i] + start * unit, (end - start) * unit, ENCODINGS[code]);
  }

  /** The whole of UTF-8 text i, decoded (or the one decoded last, when it is i). Throws when it does not decode to its length. */
  private decodeUtf8(fd: number, i: number): string {
    if (this.decodedIndex === i) return this.decodedText;
    const text = this.readRange(fd, this.offsets[i], this.storedBytesOf(i), 'utf8');
    if (text.length !== this.lengths[i]) {
      throw new HarnessError('RESOURCE_UNAVAILABLE', `the document text store ${this.path}: text ${i} (UTF-8, ${this.storedBytesOf(i)} bytes at byte ${this.offsets[i]}) decodes to ${text.length} code units, expected ${this.lengths[i]}`, {
        location: { file: this.path },
        remedy: 'the file was changed while the sweep ran; run the sweep again',
      });
    }
    this.decodedIndex = i;
    this.decodedText = text;
    return text;
  }

  /**
   * Bytes [at, at + left) of the file decoded as `encoding`, with left > 0 and, for latin1 and UTF-16LE, whole code
   * units: from the read-ahead window when it holds them or this read continues a forward walk (see `window`), else
   * by positioned reads of the read buffer's size (UTF-8, which pieces could split inside a character, in one read of
   * at most 3 × {@link UTF8_MAX_UNITS} bytes).
   */
  private readRange(fd: number, at: number, left: number, encoding: StoredEncoding): string {
    const previousEnd = this.lastEnd;
    this.lastEnd = at + left;
    // forwards from near the previous read's end (a chunk's overlap starts a little before it)
    const near = previousEnd >= 0 && at >= previousEnd - this.readAheadBytes && at <= previousEnd + this.readAheadBytes;
    this.runBytes = near ? this.runBytes + left : left;
    if (this.readAheadBytes > 0 && left <= this.readAheadBytes) {
      if (this.window !== null && at >= this.windowAt && at + left <= this.windowAt + this.windowBytes) {
        return this.window.toString(encoding, at - this.windowAt, at - this.windowAt + left);
      }
      // fill the window here with twice the run's bytes (see `window`)
      if (near) {
        this.window ??= Buffer.allocUnsafe(this.readAheadBytes);
        const want = Math.min(this.readAheadBytes, this.bytes - at, Math.max(left, 2 * this.runBytes));
        this.windowAt = at;
        this.windowBytes = 0; // invalid until the read below succeeds
        this.reads++;
        this.readBytes += want;
        readFullyAt(fd, this.window, 0, want, at, (stop) => this.shortRead(stop));
        this.windowBytes = want;
        return this.window.toString(encoding, 0, left);
      }
    }
    if (encoding === 'utf8' && left > this.readBuffer.length) {
      const bytes = Buffer.allocUnsafe(left);
      this.reads++;
      this.readBytes += left;
      readFullyAt(fd, bytes, 0, left, at, (stop) => this.shortRead(stop));
      return bytes.toString('utf8');
    }
    // pieces of whole code units: the buffer's length rounded down to an even number of bytes
    const piece = this.readBuffer.length - (this.readBuffer.length % 2);
    const parts: string[] = [];
    while (left > 0) {
      const want = Math.min(left, piece);
      this.readExactly(fd, want, at);
      parts.push(this.readBuffer.toString(encoding, 0, want));
      at += want;
      left -= want;
    }
    return parts.length === 1 ? parts[0] : parts.join('');
  }

  private readExactly(fd: number, want: number, at: number): void {
    this.reads++;
    this.readBytes += want;
    readFullyAt(fd, this.readBuffer, 0, want, at, (end) => this.shortRead(end));
  }

  private shortRead(end: number): HarnessError {
    return new HarnessError('RESOURCE_UNAVAILABLE', `the document text store ${this.path} ended at byte ${end}, expected ${this.bytes}`, {
      location: { file: this.path },
      remedy: 'the file was changed or truncated while the sweep ran; run the sweep again',
    });
  }

  /** Flushes and closes the file (idempotent); reads then throw. The file stays until {@link TextStore.remove}. */
  close(): void {
    if (this.fd === null) return;
    try {
      this.flush();
    } finally {
      // a write still on the thread pool needs the descriptor until it ends (closing it now could let the number be
      // reused by another file before that write starts)
      if (this.writing.size > 0) this.closeWhenWritten = this.fd;
      else closeSync(this.fd);
      this.fd = null;
      this.closedBecause ??= 'closed';
    }
  }

  /** Closes (dropping unwritten texts) and deletes the file. Idempotent; never throws. */
  remove(): void {
    this.pendingBytes = 0;
    if (this.writing.size > 0 && this.fd !== null) {
      this.closeWhenWritten = this.fd;
      discardFile(null, this.path);
    } else discardFile(this.fd, this.path);
    this.fd = null;
    this.closedBecause = 'removed';
    live.delete(this);
  }
}

/** `String.prototype.isWellFormed` (ES2024, V8 in Node 20; the project's lib is ES2023): no lone surrogate. */
function isWellFormed(text: string): boolean {
  return (text as unknown as { isWellFormed(): boolean }).isWellFormed();
}

function writeFully(fd: number, bytes: Uint8Array, position: number, file: string): void {
  writeFullyAt(fd, bytes, position, (e) => writeError(file, e));
}

function writeError(file: string, e: unknown): HarnessError {
  return new HarnessError('RESOURCE_UNAVAILABLE', `cannot write document texts to ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`, {
    location: { file },
    remedy: 'free disk space in the cache folder (the store takes about the corpus file\'s size), or raise limits.memory so the documents stay in memory',
    cause: e,
  });
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    /* already closed */
  }
}

/**
 * Creates an empty store in `dir` (created when missing), first removing the text stores killed runs left there.
 * @throws HarnessError('RESOURCE_UNAVAILABLE') naming the file when it cannot be created; RangeError for a read buffer
 *   that is not an even integer ≥ 2.
 */
export function createTextStore(dir: string, options: TextStoreOptions = {}): TextStore {
  const readBufferBytes = options.readBufferBytes ?? DEFAULT_READ_BUFFER_BYTES;
  if (!Number.isInteger(readBufferBytes) || readBufferBytes < 2 || readBufferBytes % 2 !== 0) {
    throw new RangeError(`text store: readBufferBytes (${readBufferBytes}) must be an even integer >= 2`);
  }
  const readAheadBytes = options.readAheadBytes ?? READ_AHEAD_BYTES;
  if (!Number.isInteger(readAheadBytes) || readAheadBytes < 0) {
    throw new RangeError(`text store: readAheadBytes (${readAheadBytes}) must be an integer >= 0`);
  }
  removeDeadTemporaries(dir);
  const file = tempPathFor(path.join(path.resolve(dir), `documents-${++sequence}.txt`));
  let fd: number;
  try {
    mkdirSync(path.dirname(file), { recursive: true });
    fd = openSync(file, 'w+');
  } catch (e) {
    throw new HarnessError('RESOURCE_UNAVAILABLE', `cannot create the document text store ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`, {
      location: { file },
      remedy: 'check that the cache folder is writable and has room for the corpus, or raise limits.memory so the documents stay in memory',
      cause: e,
    });
  }
  const store = new TextStore(file, fd, readBufferBytes, readAheadBytes);
  live.add(store);
  if (!exitHook) {
    exitHook = true;
    process.once('exit', () => {
      for (const s of [...live]) s.remove();
    });
  }
  return store;
}

/**
 * A document whose text lives in a {@link TextStore}: `text` reads it on each access (keep the string, not the
 * object, when it is needed twice). `id` is held in memory. `JSON.stringify` gives `{ id, text }`.
 */
export class StoredDoc implements Doc {
  constructor(
    /** The document id. */
    readonly id: string,
    /** The store holding the text. */
    readonly store: TextStore,
    /** Index of the text in the store. */
    readonly index: number,
  ) {}

  /** The text, read from the store. */
  get text(): string {
    return this.store.get(this.index);
  }

  /** `text.length` (code units) without reading the text. */
  get textLength(): number {
    return this.store.lengthOf(this.index);
  }

  toJSON(): Doc {
    return { id: this.id, text: this.text };
  }
}

/**
 * A chunk of a {@link StoredDoc}: `text` is `doc.text.slice(start, end)` read from the store (only those code units)
 * on each access. The other fields are held in memory. `JSON.stringify` gives the plain chunk.
 */
export class StoredChunk implements Chunk {
  constructor(
    readonly id: string,
    readonly docId: string,
    readonly ordinal: number,
    readonly start: number,
    readonly end: number,
    readonly tokens: number,
    /** The chunk's document. */
    readonly doc: StoredDoc,
  ) {}

  /** The chunk's text, read from the store. */
  get text(): string {
    return this.doc.store.slice(this.doc.index, this.start, this.end);
  }

  /** `text.length` (code units, end − start) without reading the text. */
  get textLength(): number {
    return this.end - this.start;
  }

  toJSON(): Chunk {
    return { id: this.id, docId: this.docId, ordinal: this.ordinal, text: this.text, start: this.start, end: this.end, tokens: this.tokens };
  }
}

/**
 * Where `item`'s text starts in its text store's file, in bytes: the document's offset ({@link TextStore.positionOf})
 * plus, for a chunk, `start` code units of one byte (latin1; UTF-8, a lower bound) or two (UTF-16LE)
 * ({@link TextStore.bytePositionOf}). 0 for a text held in memory. Reads no
 * text. Texts with close positions are cheap to read one after the other (the same pages of the page cache), which
 * is how the embedding orders the texts it reads (src/embed/embed-texts.ts, `readWindowBytes`).
 */
export function textPosition(item: { readonly text: string }): number {
  if (item instanceof StoredChunk) {
    return item.doc.store.bytePositionOf(item.doc.index, item.start);
  }
  return item instanceof StoredDoc ? item.store.positionOf(item.index) : 0;
}

/** True when `item`'s text is read from a text store (a {@link StoredDoc} or {@link StoredChunk}), false when held in memory. */
export function inTextStore(item: { readonly text: string }): boolean {
  return item instanceof StoredDoc || item instanceof StoredChunk;
}

/** `item.text.length` (UTF-16 code units), without reading a stored text from disk. */
export function textLength(item: { readonly text: string }): number {
  return item instanceof StoredDoc || item instanceof StoredChunk ? item.textLength : item.text.length;
}

/**
 * Plain `{ id, text }` copies of `docs[from .. to)` (default: all), texts read once each: what may cross a thread
 * boundary (structured clone drops a {@link StoredDoc}'s `text`). Resident documents are returned as they are.
 */
export function plainDocs(docs: readonly Doc[], from = 0, to = docs.length): Doc[] {
  const out = new Array<Doc>(to - from);
  for (let i = from; i < to; i++) {
    const d = docs[i];
    out[i - from] = d instanceof StoredDoc ? { id: d.id, text: d.text } : d;
  }
  return out;
}

/**
 * The chunk `[start, end)` (code units) of `doc`, ordinal `ordinal`, `tokens` tokens: a {@link StoredChunk} for a
 * stored document, else a plain chunk whose text is `doc.text.slice(start, end)` (a V8 slice sharing the document's
 * characters, decision 37). Id `<docId>#<ordinal>`.
 */
export function chunkOf(doc: Doc, ordinal: number, start: number, end: number, tokens: number): Chunk {
  if (doc instanceof StoredDoc) return new StoredChunk(`${doc.id}#${ordinal}`, doc.id, ordinal, start, end, tokens, doc);
  return { id: `${doc.id}#${ordinal}`, docId: doc.id, ordinal, text: doc.text.slice(start, end), start, end, tokens };
}

/** True when any of `docs` lives in a text store (the loaders store all documents or none). */
export function isStored(docs: readonly Doc[]): boolean {
  return docs.length > 0 && docs[0] instanceof StoredDoc;
}

/** The store `docs` live in, or undefined when they are resident (the loaders store all documents or none). */
export function textStoreOf(docs: readonly Doc[]): TextStore | undefined {
  return isStored(docs) ? (docs[0] as StoredDoc).store : undefined;
}

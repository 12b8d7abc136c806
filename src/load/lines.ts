/**
 * Reading a text file line by line without holding it as one string (V8 strings stop at about 512 MB, and a BEIR
 * corpus.jsonl can be larger). The file is read in chunks of `highWaterMark` bytes; lines are cut at `\n` bytes
 * (0x0A never occurs inside a multi-byte UTF-8 sequence, so cutting bytes is safe) and decoded one at a time.
 *
 * Line rules (the same as splitting the whole decoded text on `\n`, which the loaders did before):
 * - lines are numbered from 1; a line ends at `\n`, a trailing `\r` is removed (CRLF), a lone `\r` elsewhere is kept;
 * - a UTF-8 byte order mark at the start of line 1 is dropped;
 * - a line is decoded as UTF-8; invalid bytes become U+FFFD (as `readFile(file, 'utf8')` does) and the line is
 *   reported as not valid UTF-8, so the caller can warn with the line number;
 * - a final line without `\n` is a line; an empty final segment after the last `\n` is not reported;
 * - with `maxLineBytes`, a line longer than that (its bytes before the `\n`, `\r` and BOM included) stops the read
 *   with {@link LineTooLongError} as soon as the limit is passed, before the line is assembled (issue 24: a 1 GB line
 *   must not be read into one string).
 *
 * With `direct`, the file is read with `O_DIRECT` (Linux): straight from the disk into two reused chunk buffers, one
 * filled while the other's lines are cut, without going through the kernel's page cache. The BEIR loader reads a corpus
 * bound for the text store this way (issue 25, session 20): a corpus read through the page cache takes pages the
 * store's writes then need, and on this machine every page-cache page the host has taken back costs the kernel about
 * 2.5 s of system time a GiB (a virtual machine reporting free pages to its host: docs/scale.md "The load at 10M: the
 * host's pages, not the code", session 21, which corrects session 20's reading of a cache dear "once full"); read with
 * `O_DIRECT`, the 10M corpus (11.3 GB) takes none. `O_DIRECT` needs the buffer's address, the file offset and the
 * length to be multiples of the device's block size: the buffers are a `WebAssembly.Memory` (page-aligned, 64 KiB
 * pages) and each read is one whole chunk of a multiple of 64 KiB at a multiple of 64 KiB. Where the file system
 * refuses `O_DIRECT` (tmpfs on older kernels, some network file systems: `EINVAL` at open or at the first read), or a
 * read returns fewer bytes than asked before the end of the file, the rest is read through the page cache as before.
 * Lines are the same either way.
 */
import { Buffer, isUtf8 } from 'node:buffer';
import { constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';

/** Options of {@link forEachLine}. */
export interface ForEachLineOptions {
  /** Bytes read at a time; default 1 MiB. Tests use tiny values to cut lines across chunk boundaries. */
  highWaterMark?: number;
  /** Longest line accepted, in bytes (integer ≥ 1). Default: unbounded. */
  maxLineBytes?: number;
  /**
   * Read around the page cache with `O_DIRECT` (see the module header), in chunks of `highWaterMark` rounded up to a
   * multiple of 64 KiB; default false. Falls back to the page cache where the file system refuses it.
   */
  direct?: boolean;
}

/** `WebAssembly` (a global of Node; the project's lib has no DOM types): only its page-aligned `Memory`. */
const Wasm = (globalThis as unknown as { WebAssembly: { Memory: new (d: { initial: number; maximum: number }) => { buffer: ArrayBuffer } } }).WebAssembly;

/** Bytes of a WebAssembly page: what `direct` chunks are a multiple of (and aligned to). */
const WASM_PAGE = 65536;

/**
 * Thrown by {@link forEachLine} when a line passes `maxLineBytes`: names the 1-based line and the limit. Callers turn it
 * into a HarnessError naming the file and the limit (the file's kind decides the code).
 */
export class LineTooLongError extends Error {
  constructor(
    /** 1-based number of the line that is too long. */
    readonly lineNo: number,
    /** The limit that was passed, in bytes. */
    readonly limit: number,
  ) {
    super(`line ${lineNo} is longer than ${limit} bytes`);
    this.name = 'LineTooLongError';
  }
}

/** `n` bytes as a short human figure: `16 MiB`, `512 KiB`, `100 bytes`. */
export function formatBytes(n: number): string {
  if (n >= 1 << 20 && n % (1 << 20) === 0) return `${n / (1 << 20)} MiB`;
  if (n >= 1 << 10 && n % (1 << 10) === 0) return `${n / (1 << 10)} KiB`;
  return `${n} bytes`;
}

/**
 * Calls `fn(line, lineNo, validUtf8)` for every line of `file`, in order, by the rules in this module's header.
 * Memory: one chunk plus the longest line, whatever the file's size.
 * @param fn receives the line without its line end, its 1-based number, and whether its bytes were valid UTF-8. It
 *   may throw; reading then stops, the file is closed, and the error propagates unchanged.
 * @returns the number of lines seen.
 * @throws the file system's error (ENOENT, EISDIR, EACCES, ...) unchanged when the file cannot be opened or read;
 *   callers turn it into a HarnessError naming the file. {@link LineTooLongError} for a line over `maxLineBytes`.
 */
export async function forEachLine(
  file: string,
  fn: (line: string, lineNo: number, validUtf8: boolean) => void,
  opts: ForEachLineOptions = {},
): Promise<number> {
  const highWaterMark = opts.highWaterMark ?? 1 << 20;
  const maxLine = opts.maxLineBytes ?? Infinity;
  const direct = opts.direct === true ? await openDirect(file) : null;
  const fh = direct ?? (await open(file, 'r'));
  let lineNo = 0;
  let carry: Buffer[] = [];
  let carryBytes = 0;
  const emit = (bytes: Buffer): void => {
    lineNo++;
    let start = 0;
    let end = bytes.length;
    if (lineNo === 1 && end >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) start = 3;
    if (end > start && bytes[end - 1] === 13) end--;
    const b = bytes.subarray(start, end);
    fn(b.toString('utf8'), lineNo, isUtf8(b));
  };
  // `reused`: the chunk's bytes are overwritten after this call (direct reads), so the carried tail is copied
  const consume = (chunk: Buffer, reused: boolean): void => {
    let pos = 0;
    for (;;) {
      const nl = chunk.indexOf(10, pos);
      if (nl === -1) break;
      if (carryBytes + (nl - pos) > maxLine) throw new LineTooLongError(lineNo + 1, maxLine);
      if (carry.length > 0) {
        carry.push(chunk.subarray(pos, nl));
        const line = Buffer.concat(carry);
        carry = [];
        carryBytes = 0;
        emit(line);
      } else emit(chunk.subarray(pos, nl));
      pos = nl + 1;
    }
    if (pos < chunk.length) {
      carryBytes += chunk.length - pos;
      if (carryBytes > maxLine) throw new LineTooLongError(lineNo + 1, maxLine);
      carry.push(reused ? Buffer.from(chunk.subarray(pos)) : chunk.subarray(pos));
    }
  };
  try {
    let from = 0;
    if (direct !== null) {
      const chunkBytes = Math.max(WASM_PAGE, Math.ceil(highWaterMark / WASM_PAGE) * WASM_PAGE);
      from = await readDirect(direct, chunkBytes, (chunk) => consume(chunk, true));
      await direct.close();
    }
    if (from >= 0) {
      // through the page cache: the whole file, or what a direct read left (usually nothing: it stopped at the end)
      const handle = direct === null ? fh : await open(file, 'r');
      const stream = handle.createReadStream({ highWaterMark, start: from });
      try {
        for await (const chunk of stream as AsyncIterable<Buffer>) consume(chunk, false);
      } finally {
        stream.destroy();
        if (handle !== fh) await handle.close().catch(() => undefined);
      }
    }
    if (carry.length > 0) emit(Buffer.concat(carry));
  } finally {
    await fh.close().catch(() => undefined);
  }
  return lineNo;
}

/** `file` opened read-only with `O_DIRECT`, or null where the platform or file system refuses it. */
async function openDirect(file: string): Promise<FileHandle | null> {
  const flag = (constants as { O_DIRECT?: number }).O_DIRECT;
  if (flag === undefined) return null;
  try {
    return await open(file, constants.O_RDONLY | flag);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EINVAL') return null;
    throw e;
  }
}

/**
 * Reads `fh` (opened with `O_DIRECT`) from its start in whole chunks of `chunkBytes` (a multiple of 64 KiB) into the
 * two halves of one page-aligned buffer, the next read running while `consume` cuts the lines of the previous chunk;
 * a chunk is overwritten after `consume` returns. Returns −1 when a read returned 0 bytes (the end of a file whose
 * size is a multiple of the chunk), else the offset the page cache must read on from: after a read refused with
 * `EINVAL` (0 when it was the first), or after any short read, which is usually the end of the file (the page cache
 * then reads nothing; `O_DIRECT` could only go on from an aligned offset).
 */
async function readDirect(fh: FileHandle, chunkBytes: number, consume: (chunk: Buffer) => void): Promise<number> {
  const memory = new Wasm.Memory({ initial: (2 * chunkBytes) / WASM_PAGE, maximum: (2 * chunkBytes) / WASM_PAGE });
  const buffer = Buffer.from(memory.buffer);
  const read = (half: number, at: number) => fh.read(buffer, half * chunkBytes, chunkBytes, at);
  let at = 0;
  let half = 0;
  let pending: ReturnType<typeof read> | null = read(0, 0);
  try {
    while (pending !== null) {
      let bytes: number;
      try {
        bytes = (await pending).bytesRead;
      } catch (e) {
        pending = null;
        if ((e as NodeJS.ErrnoException).code === 'EINVAL') return at;
        throw e;
      }
      pending = null;
      if (bytes === 0) return -1;
      const chunk = buffer.subarray(half * chunkBytes, half * chunkBytes + bytes);
      at += bytes;
      // a full chunk: read the next into the other half while this one is cut; a short one: the end, or the page cache
      if (bytes === chunkBytes) {
        half ^= 1;
        pending = read(half, at);
      }
      consume(chunk);
      if (bytes < chunkBytes) return at;
    }
    return -1;
  } finally {
    // a read still running when `consume` threw must end before the file is closed
    if (pending !== null) await pending.then(() => undefined, () => undefined);
  }
}

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
 */
import { Buffer, isUtf8 } from 'node:buffer';
import { open } from 'node:fs/promises';

/** Options of {@link forEachLine}. */
export interface ForEachLineOptions {
  /** Bytes read at a time; default 1 MiB. Tests use tiny values to cut lines across chunk boundaries. */
  highWaterMark?: number;
  /** Longest line accepted, in bytes (integer ≥ 1). Default: unbounded. */
  maxLineBytes?: number;
}

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
  const fh = await open(file, 'r');
  const stream = fh.createReadStream({ highWaterMark });
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
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
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
        carry.push(chunk.subarray(pos));
      }
    }
    if (carry.length > 0) emit(Buffer.concat(carry));
  } finally {
    stream.destroy();
    await fh.close().catch(() => undefined);
  }
  return lineNo;
}

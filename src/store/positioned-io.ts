/**
 * Positioned reads and writes of whole byte ranges, and the quiet close-and-delete of a scratch file: the loops the
 * document text store (load/text-store.ts) and the vector file (retrieve/vector-file.ts) share. `readSync` and
 * `writeSync` may move fewer bytes than asked, so each call loops until the range is done; the caller supplies its
 * own error (its code, file and remedy) for a file that ends early or cannot be written.
 */
import { closeSync, readSync, rmSync, write, writeSync } from 'node:fs';

/**
 * Reads bytes [position, position + length) of the open file `fd` into `into[offset, offset + length)` (length ≥ 0
 * bytes; `into` must have room). Throws the error `ended(at)` returns when the file ends first, `at` being the byte
 * offset in the file where it ended; errors of `readSync` (a closed fd, EIO) pass through.
 */
export function readFullyAt(
  fd: number,
  into: Uint8Array,
  offset: number,
  length: number,
  position: number,
  ended: (at: number) => Error,
): void {
  let done = 0;
  while (done < length) {
    const got = readSync(fd, into, offset + done, length - done, position + done);
    if (got === 0) throw ended(position + done);
    done += got;
  }
}

/**
 * Writes all of `bytes` to the open file `fd` at byte offset `position`. Any error of `writeSync` (a full disk,
 * a closed fd) is thrown as the error `failed(cause)` returns.
 */
export function writeFullyAt(fd: number, bytes: Uint8Array, position: number, failed: (cause: unknown) => Error): void {
  let done = 0;
  try {
    while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done, position + done);
  } catch (e) {
    throw failed(e);
  }
}

/**
 * Writes all of `bytes` to the open file `fd` at byte offset `position` on libuv's thread pool (`fs.write`, looping
 * over partial writes), then calls `done(null)`, or `done(error)` with the first error of `fs.write`. `bytes` must
 * not change, and `fd` must stay open, until `done` is called.
 */
export function writeFullyAtAsync(fd: number, bytes: Uint8Array, position: number, done: (error: NodeJS.ErrnoException | null) => void): void {
  const step = (from: number): void => {
    write(fd, bytes, from, bytes.length - from, position + from, (error, written) => {
      if (error !== null) done(error);
      else if (from + written >= bytes.length) done(null);
      else step(from + written);
    });
  };
  if (bytes.length === 0) queueMicrotask(() => done(null));
  else step(0);
}

/**
 * Closes `fd` (unless null) and deletes `file`, ignoring every error (an fd already closed, a file already gone or
 * not removable: a scratch file left behind is removed by the next run's sweep of dead temporaries). Never throws.
 */
export function discardFile(fd: number | null, file: string): void {
  try {
    if (fd !== null) closeSync(fd);
  } catch {
    /* already closed */
  }
  try {
    rmSync(file, { force: true });
  } catch {
    /* left for the next run's sweep of dead temporaries */
  }
}

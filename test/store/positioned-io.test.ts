/**
 * The shared positioned I/O of the text store and the vector file (src/store/positioned-io.ts): whole ranges read
 * and written at an offset, the caller's error at the byte where a short file ends, and the quiet discard.
 */
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { discardFile, readFullyAt, writeFullyAt } from '../../src/store/positioned-io.js';

const dirs: string[] = [];
function scratch(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'positioned-io-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('positioned I/O', () => {
  it('writes a range at an offset and reads any sub-range back into an offset of the buffer', () => {
    const file = path.join(scratch(), 'f.bin');
    const fd = openSync(file, 'w+');
    try {
      writeFullyAt(fd, Uint8Array.from([1, 2, 3, 4, 5]), 3, (e) => new Error(String(e)));
      // Bytes 0-2 are the hole before the offset (zeros), then 1..5.
      expect([...readFileSync(file)]).toEqual([0, 0, 0, 1, 2, 3, 4, 5]);
      const into = new Uint8Array(6).fill(9);
      readFullyAt(fd, into, 2, 3, 4, () => new Error('ended'));
      expect([...into]).toEqual([9, 9, 2, 3, 4, 9]);
      readFullyAt(fd, into, 0, 0, 100, () => new Error('ended')); // nothing asked: no read, no error
    } finally {
      closeSync(fd);
    }
  });

  it("a file that ends early throws the caller's error, told the byte where the file ended", () => {
    const file = path.join(scratch(), 'short.bin');
    writeFileSync(file, Uint8Array.from([7, 7, 7, 7]));
    const fd = openSync(file, 'r');
    try {
      // Bytes [2, 8) asked of a 4-byte file: 2 bytes come back, then the end at byte 4.
      expect(() => readFullyAt(fd, new Uint8Array(6), 0, 6, 2, (at) => new Error(`ended at ${at}`))).toThrow('ended at 4');
    } finally {
      closeSync(fd);
    }
  });

  it("a failed write throws the caller's error with the cause", () => {
    const file = path.join(scratch(), 'ro.bin');
    writeFileSync(file, '');
    const fd = openSync(file, 'r');
    try {
      let cause: unknown;
      expect(() => writeFullyAt(fd, Uint8Array.from([1]), 0, (e) => ((cause = e), new Error('cannot write')))).toThrow('cannot write');
      expect((cause as NodeJS.ErrnoException).code).toBe('EBADF');
    } finally {
      closeSync(fd);
    }
  });

  it('discardFile closes and deletes, and never throws (closed fd, missing file, null fd)', () => {
    const file = path.join(scratch(), 'gone.bin');
    writeFileSync(file, 'x');
    const fd = openSync(file, 'r');
    discardFile(fd, file);
    expect(existsSync(file)).toBe(false);
    expect(() => discardFile(fd, file)).not.toThrow();
    expect(() => discardFile(null, path.join(scratch(), 'never-made.bin'))).not.toThrow();
  });
});

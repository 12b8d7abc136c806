/**
 * File fingerprints for cache keys and manifests: sha256 over a list of files, memoised per process by each file's
 * path, size and modification time (so a changed file is hashed again).
 */
// A namespace import: a named import of `hash` would fail to link on Node 20 before 20.12, where it does not exist.
import * as crypto from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';
import path from 'node:path';

const memo = new Map<string, string>();

/** sha256 hex of one file, streamed (constant memory). Memoised by absolute path + size + mtime. */
export async function sha256File(file: string): Promise<string> {
  const abs = path.resolve(file);
  const st = statSync(abs);
  const key = `${abs}\u0000${st.size}\u0000${st.mtimeMs}`;
  const hit = memo.get(key);
  if (hit !== undefined) return hit;
  const hash = crypto.createHash('sha256');
  await new Promise<void>((resolve, reject) => {
    createReadStream(abs)
      .on('data', (chunk) => hash.update(chunk))
      .on('end', () => resolve())
      .on('error', reject);
  });
  const hex = hash.digest('hex');
  memo.set(key, hex);
  return hex;
}

/**
 * sha256 hex over several files: sha256 of the lines `<name>\t<sha256 of file>\n` for each file, in the given order,
 * where `<name>` is the path relative to `root`. Renaming, adding, dropping or changing a file changes the result.
 */
export async function sha256Files(root: string, files: readonly string[]): Promise<string> {
  const hash = crypto.createHash('sha256');
  for (const f of files) {
    const abs = path.resolve(root, f);
    const rel = path.relative(root, abs).split(path.sep).join('/');
    hash.update(`${rel}\t${await sha256File(abs)}\n`);
  }
  return hash.digest('hex');
}

/** Node's one-shot `crypto.hash` (Node ≥ 20.12, 21.7), absent before. */
const oneShot: typeof crypto.hash | undefined = crypto.hash;

/**
 * SHA-256 of `text` as UTF-8 (a lone surrogate encoded as U+FFFD, as `Buffer.from(text)` does): 32 bytes. Node's
 * one-shot `crypto.hash` where there is one (about 1.3 µs a text less than `crypto.createHash(...).update(...).digest()`
 * on 840-character texts here: the embedding's deduplication hashes every chunk text, 24 million at 10M documents),
 * else `createHash`; the same bytes either way (test/embed/hash-utf8.test.ts).
 */
export const sha256Utf8: (text: string) => Buffer = oneShot
  ? (text) => oneShot('sha256', text, 'buffer')
  : (text) => crypto.createHash('sha256').update(text, 'utf8').digest();

/** sha256 hex of a UTF-8 string. */
export function sha256Text(text: string): string {
  return crypto.createHash('sha256').update(text, 'utf8').digest('hex');
}

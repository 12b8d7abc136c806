/**
 * File fingerprints for cache keys and manifests: sha256 over a list of files, memoised per process by each file's
 * path, size and modification time (so a changed file is hashed again).
 */
import { createHash } from 'node:crypto';
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
  const hash = createHash('sha256');
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
  const hash = createHash('sha256');
  for (const f of files) {
    const abs = path.resolve(root, f);
    const rel = path.relative(root, abs).split(path.sep).join('/');
    hash.update(`${rel}\t${await sha256File(abs)}\n`);
  }
  return hash.digest('hex');
}

/** sha256 hex of a UTF-8 string. */
export function sha256Text(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

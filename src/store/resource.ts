/**
 * One error boundary for the machine's resources (issue 24 §3): a full disk, a permission, a path through a file, a
 * read-only file system or too many open files is the user's problem to fix, not a bug of ours. The CLI passes any
 * error that escapes a command through {@link resourceError}; one that carries such an errno (itself or in its cause
 * chain) becomes a `HarnessError('RESOURCE_UNAVAILABLE')` naming the path and the remedy, exit 1.
 */
import { HarnessError, isHarnessError } from '../errors.js';

/** The errnos treated as the user's resource problems, with what they mean and what to do. */
export const RESOURCE_ERRNOS: Readonly<Record<string, { what: string; remedy: string }>> = {
  ENOSPC: { what: 'no space left on the device', remedy: 'free disk space there, or point --out / cacheDir at a disk with room' },
  EDQUOT: { what: 'the disk quota is exhausted', remedy: 'free space within your quota, or point --out / cacheDir elsewhere' },
  EACCES: { what: 'permission denied', remedy: 'make the folder writable for this user, or point --out / cacheDir at one that is' },
  EPERM: { what: 'operation not permitted', remedy: 'make the folder writable for this user, or point --out / cacheDir at one that is' },
  ENOTDIR: { what: 'a part of the path is a file, not a folder', remedy: 'remove or rename that file, or choose another --out / cacheDir' },
  EROFS: { what: 'the file system is read-only', remedy: 'point --out / cacheDir at a writable file system' },
  EMFILE: { what: 'too many open files in this process', remedy: 'raise the open-file limit (ulimit -n 4096) or lower concurrency' },
  ENFILE: { what: 'too many open files on this system', remedy: 'close other programs or raise the system open-file limit' },
};

/** The first error in `e`'s cause chain (at most 8 deep) that carries a string `code`, with its `path` if any. */
function errnoOf(e: unknown): { code: string; path?: string; syscall?: string } | undefined {
  let cur: unknown = e;
  for (let i = 0; i < 8 && cur !== null && typeof cur === 'object'; i++) {
    const o = cur as { code?: unknown; path?: unknown; syscall?: unknown; cause?: unknown };
    if (typeof o.code === 'string' && o.code in RESOURCE_ERRNOS)
      return { code: o.code, ...(typeof o.path === 'string' ? { path: o.path } : {}), ...(typeof o.syscall === 'string' ? { syscall: o.syscall } : {}) };
    cur = o.cause;
  }
  return undefined;
}

/**
 * `e` as a `HarnessError('RESOURCE_UNAVAILABLE')` when it (or its cause chain) carries one of {@link RESOURCE_ERRNOS}
 * and is not already a HarnessError; otherwise undefined. The message names the errno, its meaning, the path and the
 * operation; the remedy says what to change.
 */
export function resourceError(e: unknown): HarnessError | undefined {
  if (isHarnessError(e)) return undefined;
  const found = errnoOf(e);
  if (!found) return undefined;
  const { what, remedy } = RESOURCE_ERRNOS[found.code];
  const where = found.path ? ` at ${found.path}` : '';
  const op = found.syscall ? ` (${found.syscall})` : '';
  return new HarnessError('RESOURCE_UNAVAILABLE', `${found.code}: ${what}${where}${op}`, {
    ...(found.path ? { location: { file: found.path } } : {}),
    remedy,
    cause: e,
  });
}

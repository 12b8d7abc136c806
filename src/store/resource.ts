/**
 * One error boundary for the machine's resources (issue 24 §3): a full disk, a permission, a path through a file, a
 * read-only file system or too many open files is the user's problem to fix, not a bug of ours. The CLI passes any
 * error that escapes a command through {@link resourceError}; one that carries such an errno (itself or in its cause
 * chain) becomes a `HarnessError('RESOURCE_UNAVAILABLE')` naming the path and the remedy, exit 1.
 */
import path from 'node:path';
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

/**
 * SQLite's result codes that are the same resource problems as an errno (better-sqlite3 puts them in `code`):
 * `SQLITE_FULL` is a full disk, `SQLITE_READONLY*` a file or folder the process may not write.
 */
const SQLITE_CODES: Readonly<Record<string, string>> = { SQLITE_FULL: 'ENOSPC', SQLITE_READONLY: 'EROFS', SQLITE_READONLY_DIRECTORY: 'EROFS', SQLITE_READONLY_DBMOVED: 'EROFS' };

/** The resource problem an error carries: the errno (SQLite codes mapped), its path if any, the operation. */
export interface ResourceErrno {
  code: string;
  path?: string;
  syscall?: string;
}

/**
 * The first error in `e`'s cause chain (at most 8 deep) that carries one of {@link RESOURCE_ERRNOS} (or a SQLite code
 * of {@link SQLITE_CODES}) as its `code`, with a path: its own `path`, else the `location.file` of a HarnessError
 * met on the way (a cache's error names its file; SQLite's own does not). Undefined when there is none.
 */
export function resourceErrnoOf(e: unknown): ResourceErrno | undefined {
  let cur: unknown = e;
  let file: string | undefined;
  for (let i = 0; i < 8 && cur !== null && typeof cur === 'object'; i++) {
    const o = cur as { code?: unknown; path?: unknown; syscall?: unknown; cause?: unknown };
    if (isHarnessError(cur) && file === undefined && cur.location.file !== undefined) file = cur.location.file;
    const code = typeof o.code === 'string' ? (SQLITE_CODES[o.code] ?? o.code) : undefined;
    if (code !== undefined && code in RESOURCE_ERRNOS) {
      const p = typeof o.path === 'string' ? o.path : file;
      return { code, ...(p !== undefined ? { path: p } : {}), ...(typeof o.syscall === 'string' ? { syscall: o.syscall } : {}) };
    }
    cur = o.cause;
  }
  return undefined;
}

/** Where a path was chosen: a folder and the config key or flag that chose it (`--out`, `cacheDir`). */
export interface ResourcePlace {
  dir: string;
  key: string;
}

/** The remedy for `code` at a place chosen by `key` (RESOURCE_ERRNOS' generic one without a key). */
function remedyFor(code: string, key: string | undefined): string {
  if (key === undefined) return RESOURCE_ERRNOS[code].remedy;
  switch (code) {
    case 'ENOSPC':
    case 'EDQUOT':
      return `free disk space there, or point ${key} at a disk with room`;
    case 'EACCES':
    case 'EPERM':
      return `make the folder writable for this user, or point ${key} at one that is`;
    case 'ENOTDIR':
      return `remove or rename that file, or point ${key} elsewhere`;
    case 'EROFS':
      return `point ${key} at a writable file system`;
    default:
      return RESOURCE_ERRNOS[code].remedy;
  }
}

/**
 * `e` as a `HarnessError('RESOURCE_UNAVAILABLE')` when it (or its cause chain, HarnessErrors included) carries one of
 * {@link RESOURCE_ERRNOS}; otherwise undefined. The message names the errno, its meaning, the path, and the config
 * key or flag of the first of `places` whose folder holds the path (the only place when the error has no path: a
 * `write` on a descriptor); the remedy names that key. An error already `RESOURCE_UNAVAILABLE` is returned as is.
 * @param places where the command writes, e.g. `[{ dir: out, key: '--out' }, { dir: cacheDir, key: 'cacheDir' }]`.
 */
export function resourceFailure(e: unknown, places: readonly ResourcePlace[] = []): HarnessError | undefined {
  if (isHarnessError(e, 'RESOURCE_UNAVAILABLE')) return e;
  const found = resourceErrnoOf(e);
  if (!found) return undefined;
  const inside = (dir: string, p: string) => {
    const rel = path.relative(path.resolve(dir), path.resolve(p));
    return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
  };
  const place = found.path !== undefined ? places.find((pl) => inside(pl.dir, found.path!)) : places.length === 1 ? places[0] : undefined;
  const { what } = RESOURCE_ERRNOS[found.code];
  const where = found.path ? ` at ${found.path}` : '';
  const op = found.syscall ? ` (${found.syscall})` : '';
  const chosen = place ? `, under ${place.key} ${path.resolve(place.dir)}` : '';
  return new HarnessError('RESOURCE_UNAVAILABLE', `${found.code}: ${what}${where}${op}${chosen}`, {
    ...(found.path ? { location: { file: found.path } } : {}),
    remedy: remedyFor(found.code, place?.key),
    cause: e,
  });
}

/**
 * `e` as a `HarnessError('RESOURCE_UNAVAILABLE')` when it (or its cause chain) carries one of {@link RESOURCE_ERRNOS}
 * and is not already a HarnessError; otherwise undefined. The message names the errno, its meaning, the path and the
 * operation; the remedy says what to change. (The CLI's last resort; {@link resourceFailure} names the config key.)
 */
export function resourceError(e: unknown): HarnessError | undefined {
  if (isHarnessError(e)) return undefined;
  return resourceFailure(e);
}

/**
 * Temporary files of the cache folder (issue 24 §3): every file the tool writes there is first written to
 * `<final name>.tmp-<pid>-<ms>` and then renamed, so a kill leaves at most such a temporary, and the next run removes
 * those whose owner process is gone ({@link removeDeadTemporaries}), as `--out` temporaries already are
 * (src/run/lock.ts). Used by ranking checkpoints and chunk files (run/checkpoint.ts), the GloVe table (embed/glove.ts)
 * and LanceDB sidecars (retrieve/lancedb.ts); each removes its folder's dead temporaries when it opens the folder.
 */
import { closeSync, fsyncSync, openSync, readdirSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { HarnessError } from '../errors.js';

/** `<file>.tmp-<pid>-<ms since the epoch>`: a temporary name for `file` owned by this process. */
export function tempPathFor(file: string): string {
  return `${file}.tmp-${process.pid}-${Date.now()}`;
}

const TEMP_RE = /\.tmp-(\d+)-(\d+)$/;

/** True unless signalling `pid` says no such process (ESRCH). A process of another user (EPERM) counts as alive. */
export function processAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as { code?: string }).code === 'EPERM';
  }
}

/**
 * Removes the entries of `dir` named `*.tmp-<pid>-<ms>` whose owner `pid` is not running (a killed run's leftovers);
 * keeps those of live processes (another sweep writing right now). A missing `dir` is nothing to do. Returns the
 * removed paths. Never throws: a temporary that cannot be removed is left for the next run.
 */
export function removeDeadTemporaries(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const m = TEMP_RE.exec(name);
    if (!m || processAlive(Number(m[1]))) continue;
    const p = path.join(dir, name);
    try {
      rmSync(p, { recursive: true, force: true });
      removed.push(p);
    } catch {
      /* left for the next run */
    }
  }
  return removed;
}

/**
 * Writes `data` to {@link tempPathFor}'s name beside `file`, then renames it to `file`. On any failure (a full disk
 * half-way through the write, a rename refused) the temporary is removed before the error is rethrown as it came (its
 * errno intact, and `path` set to `file` when the system gave none, as for a write's ENOSPC), so a failing write
 * leaves nothing behind and the caller's boundary can name the file. No fsync: for cache
 * files that are verified on read (a checkpoint's hash, a chunk file's checksum).
 */
export function writeThenRename(file: string, data: string | NodeJS.ArrayBufferView): void {
  const tmp = tempPathFor(file);
  try {
    writeFileSync(tmp, data);
    renameSync(tmp, file);
  } catch (e) {
    rmSync(tmp, { force: true });
    // A write's ENOSPC carries no path (it is an fd's): name the file, so the error boundary can say where.
    if (e !== null && typeof e === 'object' && (e as { path?: unknown }).path === undefined) (e as { path?: string }).path = file;
    throw e;
  }
}

/**
 * Writes `text` to `file` all or nothing: into {@link tempPathFor}'s name beside it, fsynced, then one rename. On any
 * failure the temporary is removed and nothing at `file` changes.
 * @param remedy what the user should do when the write fails (named in the error).
 * @throws HarnessError `OUTPUT_INVALID` naming the file and the system's code (ENOSPC, EACCES, ...).
 */
export function writeFileAtomic(file: string, text: string, remedy: string): void {
  const tmp = tempPathFor(file);
  try {
    writeFileSync(tmp, text);
    const fd = openSync(tmp, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
  } catch (e) {
    try {
      unlinkSync(tmp);
    } catch {
      /* nothing was written */
    }
    throw new HarnessError('OUTPUT_INVALID', `cannot write ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`, {
      location: { file },
      remedy,
      cause: e,
    });
  }
}

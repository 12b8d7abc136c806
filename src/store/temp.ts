/**
 * Temporary files of the cache folder (issue 24 §3): every file the tool writes there is first written to
 * `<final name>.tmp-<pid>-<ms>` and then renamed, so a kill leaves at most such a temporary, and the next run removes
 * those whose owner process is gone ({@link removeDeadTemporaries}), as `--out` temporaries already are
 * (src/run/lock.ts). Used by checkpoints and the GloVe table.
 */
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';

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

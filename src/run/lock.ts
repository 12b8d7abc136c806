/**
 * Who owns a results folder: owner records, the `--out` lock, and cleanup of what a killed run left behind
 * (issue 13 §1, "interruption costs only the unfinished stage").
 *
 * An owner is a process identified by its PID and, on Linux, its start time (field 22 of `/proc/<pid>/stat`, clock
 * ticks since boot), so a PID the kernel has since handed to another process is not mistaken for the original owner.
 * Elsewhere only the PID is recorded and compared.
 *
 * - `<out>.lock`: created with O_EXCL (`wx`) before the sweep starts and removed when the run ends; it holds the
 *   owner record as JSON. A second run on the same `--out` finds the lock, sees its owner alive and stops at once; a
 *   lock whose owner is gone (kill -9, out-of-memory stop, Ctrl-C) is taken over.
 * - `.<out>.tmp-<pid>-<ms>/`: the folder `writeArtifacts` fills before its rename; `.owner.json` inside names the
 *   owner. `<out>.old-<pid>-<ms>/`: the previous results while the new ones are renamed in. Both are removed by the
 *   next run once their owner is gone (an `.old-` folder is first put back when `<out>` itself is missing, so a kill
 *   between the two renames loses nothing); a live owner's folders are never touched.
 */
import { closeSync, existsSync, linkSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { HarnessError } from '../errors.js';

/** A process that owns a lock or a temporary folder. */
export interface OwnerRecord {
  pid: number;
  /** Linux: field 22 of /proc/<pid>/stat (clock ticks after boot); null where /proc is absent. */
  startTime: number | null;
  hostname: string;
  /** ISO time the record was made. */
  createdAt: string;
}

/** Name of the owner record inside a temporary results folder. */
export const OWNER_FILE = '.owner.json';

/**
 * The start time of process `pid` from `/proc/<pid>/stat` field 22 (clock ticks after boot), or null when it cannot
 * be read (no /proc, or no such process). The command name (field 2) is in parentheses and may hold spaces and
 * parentheses, so fields are counted after the last `)`.
 */
export function processStartTime(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // `rest[0]` is field 3 (state), so field 22 is rest[19].
    const v = Number(rest[19]);
    return Number.isFinite(v) ? v : null;
  } catch {
    return null;
  }
}

/** The owner record of this process. */
export function ownerRecord(): OwnerRecord {
  return { pid: process.pid, startTime: processStartTime(process.pid), hostname: hostname(), createdAt: new Date().toISOString() };
}

/**
 * True when the owner may still be running: its PID exists (signal 0 succeeds or fails with EPERM) and, when both
 * start times are known, the running process started at the recorded time. A record from another host is treated as
 * alive (we cannot look), so it is never removed.
 */
export function isOwnerAlive(owner: Pick<OwnerRecord, 'pid' | 'startTime'> & { hostname?: string }): boolean {
  if (owner.hostname !== undefined && owner.hostname !== hostname()) return true;
  if (!Number.isInteger(owner.pid) || owner.pid <= 0) return false;
  try {
    process.kill(owner.pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (owner.startTime === null || owner.startTime === undefined) return true;
  const now = processStartTime(owner.pid);
  return now === null || now === owner.startTime;
}

function readOwner(file: string): OwnerRecord | undefined {
  try {
    const o = JSON.parse(readFileSync(file, 'utf8')) as OwnerRecord;
    return Number.isInteger(o?.pid) ? o : undefined;
  } catch {
    return undefined;
  }
}

function describeOwner(o: OwnerRecord): string {
  return `process ${o.pid}${o.hostname && o.hostname !== hostname() ? ` on ${o.hostname}` : ''} (since ${o.createdAt})`;
}

/** The lock file of a results folder: `<out>.lock`, beside it. */
export function lockFileOf(outDir: string): string {
  return `${path.resolve(outDir)}.lock`;
}

/** A lock file that is still being written (created, not yet filled) is given this long before it counts as stale. */
const UNFILLED_GRACE_MS = 5_000;

/**
 * Takes the lock of results folder `outDir` (`<out>.lock`, created with O_EXCL and holding this process's owner
 * record). A lock left by a process that is gone is taken over. Call before the sweep starts; call the returned
 * function when the run ends (it is also called on process exit). Releasing twice is harmless; releasing never removes
 * a lock another process has taken over since.
 * @returns release: removes the lock if it is still this process's.
 * @throws HarnessError('OUTPUT_INVALID') naming the lock file and the PID of the live process that holds it.
 */
export function acquireOutputLock(outDir: string): () => void {
  const file = lockFileOf(outDir);
  const me = ownerRecord();
  // The parent of --out may not exist yet (results/ in a fresh clone): create it, as writeArtifacts would.
  try {
    mkdirSync(path.dirname(file), { recursive: true });
  } catch {
    /* the open below reports the problem with the remedy */
  }
  for (let attempt = 0; attempt < 3; attempt++) {
    let fd: number;
    try {
      fd = openSync(file, 'wx');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new HarnessError('OUTPUT_INVALID', `cannot create the lock file ${file}: ${(e as Error).message}`, {
          location: { file },
          remedy: 'pass --out a folder in a writable place',
          cause: e,
        });
      }
      // Issue 24: a folder (or anything but a file) where the lock file goes is named as such, not "wait a moment".
      let kind: 'file' | 'folder' | 'other' | 'gone' = 'gone';
      try {
        const st = statSync(file);
        kind = st.isFile() ? 'file' : st.isDirectory() ? 'folder' : 'other';
      } catch {
        kind = 'gone';
      }
      if (kind === 'folder' || kind === 'other') {
        throw new HarnessError('OUTPUT_INVALID', `the lock path ${file} is a ${kind === 'folder' ? 'folder' : 'special file'}, not a lock file`, {
          location: { file },
          remedy: `remove or rename ${file} (retrieval-sweep creates it as a file while a run writes ${path.resolve(outDir)}), or pass another --out`,
        });
      }
      const holder = readOwner(file);
      if (holder === undefined) {
        // Just created by another run and not yet filled, or a damaged file: wait out the grace period.
        let age = Infinity;
        try {
          age = Date.now() - statSync(file).mtimeMs;
        } catch {
          continue; // gone in between: try again
        }
        if (age < UNFILLED_GRACE_MS) throw heldError(file, outDir, undefined);
      } else if (holder.pid === me.pid && holder.startTime === me.startTime) {
        throw heldError(file, outDir, holder);
      } else if (isOwnerAlive(holder)) {
        throw heldError(file, outDir, holder);
      }
      takeOver(file, holder);
      continue;
    }
    try {
      writeSync(fd, JSON.stringify({ ...me, out: path.resolve(outDir) }) + '\n');
    } finally {
      closeSync(fd);
    }
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      process.off('exit', release);
      const now = readOwner(file);
      if (now && now.pid === me.pid && now.startTime === me.startTime && now.createdAt === me.createdAt) {
        try {
          unlinkSync(file);
        } catch {
          /* already gone */
        }
      }
    };
    process.on('exit', release);
    return release;
  }
  throw heldError(file, outDir, readOwner(file));
}

/**
 * Moves a stale lock aside (rename is atomic: of two runs taking over at once only one moves it). If what was moved
 * is not the stale lock that was judged (another run took over in between), it is put back with `link` (which never
 * overwrites) and the caller's next attempt finds it held.
 */
function takeOver(file: string, judged: OwnerRecord | undefined): void {
  const aside = `${file}.stale-${process.pid}-${Date.now()}`;
  try {
    renameSync(file, aside);
  } catch {
    return; // someone else moved it first
  }
  const moved = readOwner(aside);
  const same = judged === undefined ? moved === undefined : moved !== undefined && moved.pid === judged.pid && moved.createdAt === judged.createdAt;
  if (!same) {
    try {
      linkSync(aside, file);
    } catch {
      /* a third run holds it now */
    }
  }
  try {
    unlinkSync(aside);
  } catch {
    /* already gone */
  }
}

function heldError(file: string, outDir: string, holder: OwnerRecord | undefined): HarnessError {
  return new HarnessError(
    'OUTPUT_INVALID',
    holder
      ? `--out ${path.resolve(outDir)} is in use by ${describeOwner(holder)}: another run is writing the same results folder (lock ${file})`
      : `--out ${path.resolve(outDir)} is being locked by another run right now (lock ${file})`,
    {
      location: { file },
      remedy: holder
        ? `wait for process ${holder.pid} to finish, or pass a different --out; if that process is not a retrieval-sweep run, delete ${file}`
        : `wait a moment and try again, or pass a different --out`,
    },
  );
}

/**
 * Throws when a live process other than this one holds the lock of `outDir` (for writers that did not take the lock
 * themselves, such as library callers of `writeArtifacts`). A missing or stale lock passes.
 * @throws HarnessError('OUTPUT_INVALID') naming the holder's PID.
 */
export function assertNotLockedByOther(outDir: string): void {
  const file = lockFileOf(outDir);
  if (!existsSync(file)) return;
  const holder = readOwner(file);
  if (!holder) return;
  if (holder.pid === process.pid && holder.startTime === processStartTime(process.pid)) return;
  if (isOwnerAlive(holder)) throw heldError(file, outDir, holder);
}

/** What {@link removeStaleTemporaries} did. */
export interface CleanupReport {
  /** Temporary and `.old-` folders removed (absolute paths). */
  removed: string[];
  /** Folders left alone because their owner is alive. */
  kept: string[];
  /** An `.old-` folder renamed back to `<out>` because `<out>` was missing. */
  restored: string | null;
}

/**
 * Removes what killed runs left beside results folder `outDir`: `.<name>.tmp-*` folders whose `.owner.json` names a
 * process that is gone (a folder without a readable record falls back to the PID in its name, and is kept while a
 * process with that PID started before the folder was made), `.<name>.probe-*` folders of dead PIDs, and
 * `<name>.old-<pid>-<ms>` folders of dead PIDs. When `<out>` does not exist, the newest dead `.old-` folder (a kill
 * between writeArtifacts' two renames) is renamed back to `<out>` instead of being removed. Never touches a live
 * owner's folder. Call at the start of a run, after taking the lock.
 */
export function removeStaleTemporaries(outDir: string): CleanupReport {
  const target = path.resolve(outDir);
  const parent = path.dirname(target);
  const base = path.basename(target);
  const report: CleanupReport = { removed: [], kept: [], restored: null };
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return report;
  }
  const esc = base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const tmpRe = new RegExp(`^\\.${esc}\\.(tmp|probe)-(\\d+)-(\\d+)$`);
  const oldRe = new RegExp(`^${esc}\\.old-(\\d+)-(\\d+)$`);
  const olds: { dir: string; ms: number }[] = [];
  for (const name of names) {
    const dir = path.join(parent, name);
    const t = tmpRe.exec(name);
    const o = oldRe.exec(name);
    if (!t && !o) continue;
    const pid = Number(t ? t[2] : o![1]);
    const ms = Number(t ? t[3] : o![2]);
    const rec = t ? readOwner(path.join(dir, OWNER_FILE)) : undefined;
    const alive = rec ? isOwnerAlive(rec) : pidMayOwn(pid, ms);
    if (alive) {
      report.kept.push(dir);
      continue;
    }
    if (o) {
      olds.push({ dir, ms });
      continue;
    }
    rmSync(dir, { recursive: true, force: true });
    report.removed.push(dir);
  }
  olds.sort((a, b) => b.ms - a.ms);
  for (const [i, { dir }] of olds.entries()) {
    if (i === 0 && !existsSync(target)) {
      renameSync(dir, target);
      report.restored = dir;
      continue;
    }
    rmSync(dir, { recursive: true, force: true });
    report.removed.push(dir);
  }
  return report;
}

/** Whether a running process `pid` may be the one that named a folder at `ms` (epoch ms): it started no later. */
function pidMayOwn(pid: number, ms: number): boolean {
  if (!isOwnerAlive({ pid, startTime: null })) return false;
  const ticks = processStartTime(pid);
  const boot = bootTimeMs();
  if (ticks === null || boot === null) return true;
  // USER_HZ is 100 on every Linux Node supports; a second of slack for rounding.
  return boot + ticks * 10 <= ms + 1000;
}

function bootTimeMs(): number | null {
  try {
    const m = /^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'));
    return m ? Number(m[1]) * 1000 : null;
  } catch {
    return null;
  }
}
